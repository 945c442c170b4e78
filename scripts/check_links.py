#!/usr/bin/env python3
"""Check that every relative link in the tracked Markdown files resolves.

    python3 scripts/check_links.py [ROOT]

For each file of `git ls-files '*.md'` (under ROOT, default: the top of the
tree this script is in), every inline link or image `[text](target)` and
every reference definition `[label]: target` whose target is not a URL
(http, https, mailto, ...) must name a file or folder that exists, relative
to the Markdown file; a `#anchor` must match a heading of the Markdown file
it points into (the same file when the link is only `#anchor`), by GitHub's
rules: lower case, punctuation other than `-` and `_` removed, each space a
`-`, and the second and later headings of the same text `-1`, `-2`, ...
Links inside code blocks and code spans are not links and are skipped.

Prints one line per broken link (`file:line: link: why`) and exits 1 when
there is any, 0 otherwise. Python 3 standard library only.
"""
import os
import re
import subprocess
import sys
import unicodedata

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODESPAN = re.compile(r"(`+)(?:.+?)\1")
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"`([^`]*)`", r"\1", text)                  # code spans keep their text
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)    # links keep their text
    text = re.sub(r"<[^>]+>", "", text)                       # inline HTML goes
    text = text.strip().lower()
    out = []
    for ch in text:
        if ch in "-_" or ch == " ":
            out.append("-" if ch == " " else ch)
        elif unicodedata.category(ch)[0] in "LNM":             # letters, digits, marks
            out.append(ch)
    return "".join(out)


def lines_outside_code(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def anchors(path, cache={}):
    """The anchors of a Markdown file's headings (and explicit <a name>)."""
    if path not in cache:
        seen = {}
        found = set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in lines_outside_code(text):
            for name in HTML_ANCHOR.findall(line):
                found.add(name)
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else "%s-%d" % (base, n))
        cache[path] = found
    return cache[path]


def check(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "*.md"], check=True,
                           capture_output=True, text=True).stdout.split()
    broken = []
    for name in files:
        path = os.path.join(root, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for number, line in lines_outside_code(text):
            targets = [m.group(1) for m in INLINE.finditer(CODESPAN.sub("", line))]
            m = REFDEF.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if not target or URL.match(target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(dest):
                    broken.append("%s:%d: %s: no file %s" % (name, number, target,
                                                            os.path.relpath(dest, root)))
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append("%s:%d: %s: no heading #%s in %s" % (
                        name, number, target, anchor, os.path.relpath(dest, root)))
    return files, broken


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    files, broken = check(os.path.abspath(root))
    for line in broken:
        print(line)
    if broken:
        print("check_links: %d broken link(s) in %d Markdown file(s)" % (len(broken), len(files)))
        return 1
    print("check_links: every relative link and anchor of %d Markdown file(s) resolves" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
