#!/usr/bin/env python3
"""check_packages.py: every dependency is installed by the command that needs it.

    python3 scripts/check_packages.py [ROOT]

scripts/packages.txt lists, per purpose (extension, client, demo, test,
bench), the Debian packages the project's commands install, and says which
package provides each CMake package, program and Python module. This checks,
for each command (demo: scripts/demo.sh; test: scripts/test.sh; bench:
bench/run.sh), that its list covers

  * every find_package, pkg_check_modules and find_program of the CMake
    files that command configures,
  * every program its shell scripts run (a light parse of bash: the first
    word of each simple command, after prefixes such as timeout or env;
    functions defined in the scripts, builtins and the project's own files
    are left out), and the programs its Python files start with subprocess,
  * every module its Python files import (the standard library and the
    project's own modules left out),
  * and, for the test command (the package suite runs dpkg-buildpackage),
    that debian/control's Build-Depends names the packages the client's
    CMake files need.

A name that packages.txt does not know is an error too: a new tool has to be
given its package. Prints one line per problem; exit status 1 if any.
"""

import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))

# Which files each command runs or configures (globs relative to ROOT).
COMMANDS = {
    "demo": {
        "cmake": ["client/CMakeLists.txt", "client/cli/CMakeLists.txt", "client/dashboard/CMakeLists.txt",
                  "client/examples/CMakeLists.txt"],
        "shell": ["scripts/demo.sh", "scripts/demo-handler.sh", "scripts/cluster.sh", "scripts/install-deps.sh"],
        "python": [],
    },
    "test": {
        "cmake": ["client/CMakeLists.txt", "client/cli/CMakeLists.txt", "client/dashboard/CMakeLists.txt",
                  "client/examples/CMakeLists.txt", "tests/**/CMakeLists.txt"],
        "shell": ["scripts/test.sh", "scripts/cluster.sh", "scripts/restart-cluster.sh", "scripts/install-deps.sh",
                  "tests/**/*.sh", "tests/**/*.bash", "tests/**/*.bats"],
        "python": ["scripts/*.py", "tests/**/*.py"],
        "other": ["tests/**/*.js"],
    },
    "bench": {
        # bench/CMakeLists.txt adds client/ with the tool and examples off
        "cmake": ["bench/CMakeLists.txt", "client/CMakeLists.txt"],
        "shell": ["bench/*.sh", "bench/lib/*.sh", "scripts/cluster.sh", "scripts/install-deps.sh"],
        "python": ["bench/*.py"],
    },
}

BASH_WORDS = set("""
if then else elif fi case esac for select while until do done in function time coproc
alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs
disown echo enable eval exec exit export fc fg getopts hash help history jobs kill let local
logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source
suspend test times trap type typeset ulimit umask unalias unset wait . : [ [[ ]] ] { } !
""".split())
# bats' own commands, in .bats files and the helpers they load
BATS_WORDS = {"bats_require_minimum_version", "run", "load", "skip", "setup", "teardown", "setup_file", "teardown_file", "bats_load_library"}
# commands that run the next word as a command (after their own options and
# arguments, which the parser skips: words starting with - or holding =,
# and timeout's duration)
PREFIX_OPTIONS = {"env": {"-u"}, "timeout": {"-s", "-k"}, "sudo": {"-u", "-g"}, "nice": {"-n"},
                  "xargs": {"-I", "-n", "-P", "-d", "-L", "-s"}}
PREFIXES = {"timeout", "env", "sudo", "exec", "nohup", "setsid", "nice", "xargs", "time", "builtin", "stdbuf"}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def expand(patterns):
    import glob
    files = []
    for p in patterns:
        for f in sorted(glob.glob(os.path.join(ROOT, p), recursive=True)):
            if "/node_modules/" in f or "/build/" in f[len(ROOT):]:
                continue
            if f not in files:
                files.append(f)
    return files


def rel(path):
    return os.path.relpath(path, ROOT)


# ------------------------------------------------------------ packages.txt
def load_packages(path):
    lists, provides, errors = {}, {}, []
    for n, line in enumerate(read(path).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("provide "):
            parts = line.split()
            if len(parts) != 4 or parts[1] not in ("cmake", "program", "python"):
                errors.append(f"{rel(path)}:{n}: expected 'provide cmake|program|python NAME PACKAGE'")
                continue
            provides[(parts[1], parts[2])] = parts[3]
            continue
        m = re.match(r"^([a-z_]+):\s*(.*)$", line)
        if not m:
            errors.append(f"{rel(path)}:{n}: not a list nor a provide line: {line}")
            continue
        lists.setdefault(m.group(1), []).extend(m.group(2).split())
    return lists, provides, errors


def resolve(lists, purpose, seen=()):
    """The packages of a purpose, @references expanded, PKG(CMD) as PKG."""
    out = []
    for item in lists.get(purpose, []):
        if item.startswith("@"):
            if item[1:] in seen or item[1:] not in lists:
                raise ValueError(f"{purpose}: bad reference {item}")
            out += [p for p in resolve(lists, item[1:], seen + (purpose,)) if p not in out]
        else:
            p = re.sub(r"\(.*\)$", "", item)
            if p not in out:
                out.append(p)
    return out


# ------------------------------------------------------------ CMake
def cmake_needs(path):
    """(kind, name, line) for find_package, pkg_check_modules, find_program."""
    text = re.sub(r"#[^\n]*", "", read(path))
    needs = []
    for m in re.finditer(r"\b(find_package|find_dependency|pkg_check_modules|pkg_search_module|find_program)\s*\(([^)]*)\)",
                         text, re.I):
        call, args = m.group(1).lower(), m.group(2).split()
        line = text.count("\n", 0, m.start()) + 1
        if call in ("find_package", "find_dependency"):
            needs.append(("cmake", args[0], line))
        elif call in ("pkg_check_modules", "pkg_search_module"):
            needs.append(("cmake", "PkgConfig", line))   # the pkg-config tool itself
            for a in args[1:]:
                if a in ("REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH"):
                    continue
                needs.append(("cmake", re.split(r"[<>=]", a)[0], line))
        else:   # find_program(VAR name | NAMES n1 n2 ...)
            names = args[1:]
            if names and names[0] == "NAMES":
                names = names[1:]
            for a in names:
                if a.isupper():
                    break
                needs.append(("program", a, line))
    return needs


# ------------------------------------------------------------ shell
SEPARATORS = {"\n", ";", "&", "&&", "||", "|", "|&", "(", ")", "{", "}", "$(", "`", ";;", ";&", ";;&", "!"}


def shell_tokens(text):
    """Yields (token, line) for a bash text: words and separators, quotes
    removed; $( ) inside double quotes is tokenised too; heredoc bodies,
    comments and single-quoted text are skipped."""
    i, n, line = 0, len(text), 1
    word, quoted = [], False
    heredocs = []  # terminators pending after this line
    stack = []     # what we are inside: '"' (double quotes), '$(' or '`'

    def flush():
        nonlocal word, quoted
        if word or quoted:
            w = "".join(word)
            if quoted and (w in SEPARATORS or w in BASH_WORDS):
                w += "\x01"   # a quoted "}" or "then" is a plain word
            word, quoted = [], False
            return [(w, line)]
        return []

    out = []
    while i < n:
        c = text[i]
        in_dq = bool(stack) and stack[-1] == '"'
        if in_dq:
            if c == "\\" and i + 1 < n:
                word.append(text[i + 1]); i += 2; continue
            if c == '"':
                stack.pop(); i += 1; continue
            if text.startswith("$(", i) and not text.startswith("$((", i):
                out += flush(); out.append(("$(", line)); stack.append("$("); i += 2; continue
            if c == "`":
                out += flush(); out.append(("`", line)); stack.append("`"); i += 1; continue
            if c == "\n":
                line += 1
            word.append(c); i += 1; continue
        # unquoted
        if c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                line += 1
            else:
                word.append(text[i + 1])
            i += 2; continue
        if c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j
            seg = text[i + 1:j]
            line += seg.count("\n")
            word.append(seg.replace("\n", " ")); quoted = True
            i = j + 1; continue
        if c == '"':
            stack.append('"'); quoted = True; i += 1; continue
        if c == "#" and not word:
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("$((", i) or (text.startswith("((", i) and not word) or (c == "(" and word and word[-1] == "="):
            # arithmetic $(( )) and (( )), an array assignment a=( ): skip to the matching )
            depth, j = 0, i + (1 if text[i] == "$" else 0)
            while j < n:
                if text[j] == "(":
                    depth += 1
                elif text[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            word.append("$((...))"); line += text.count("\n", i, j); i = j + 1; continue
        if text.startswith("$(", i):
            out += flush(); out.append(("$(", line)); stack.append("$("); i += 2; continue
        if text.startswith("${", i):
            j = text.find("}", i)
            j = n if j < 0 else j
            word.append(text[i:j + 1]); i = j + 1; continue
        if c == "`":
            out += flush()
            if stack and stack[-1] == "`":
                stack.pop(); out.append((")", line))
            else:
                stack.append("`"); out.append(("`", line))
            i += 1; continue
        if c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            m = re.match(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z_0-9]*)\1", text[i:])
            if m:
                out += flush()
                heredocs.append((m.group(2), text[i + 2] == "-"))
                i += m.end(); continue
        if c in " \t":
            out += flush(); i += 1; continue
        if c == "\n":
            out += flush(); out.append(("\n", line)); line += 1; i += 1
            for term, dash in heredocs:     # skip the bodies
                while i < n:
                    j = text.find("\n", i)
                    j = n if j < 0 else j
                    body_line = text[i:j]
                    i = j + 1; line += 1
                    if (body_line.strip() if dash else body_line) == term:
                        break
            heredocs = []
            continue
        if c in ";&|()":
            out += flush()
            two = text[i:i + 2]
            three = text[i:i + 3]
            if three == ";;&":
                out.append((three, line)); i += 3; continue
            if two in ("&&", "||", ";;", ";&", "|&"):
                out.append((two, line)); i += 2; continue
            if c == ")" and stack and stack[-1] == "$(":
                stack.pop()
            out.append((c, line)); i += 1; continue
        if c in "<>" or (c == "&" and text.startswith("&>", i)):   # a redirection
            if word and all(ch.isdigit() for ch in word) and not quoted:
                word = []          # the file descriptor: 2>...
            out += flush()
            m = re.match(r"(&>>|&>|>>|>\||<>|>&|<&|<<<|>|<)\s*(\d+-?|-)?", text[i:])
            i += m.end()
            if m.group(1) in (">&", "<&") and m.group(2):
                continue           # 2>&1: no file to skip
            if m.group(2) and m.group(1) not in (">&", "<&"):
                i -= len(m.group(2)) + (m.end() - m.start() - len(m.group(1)) - len(m.group(2)))
            out.append(("<redirect>", line))   # drop the target word that follows
            continue
        word.append(c); i += 1
    out += flush()
    return out


def shell_commands(text):
    """(command, line) for the first word of each simple command."""
    toks = shell_tokens(text)
    result = []
    at_start = True
    case_pattern = False
    expect_case_in = False
    in_for_list = False
    skip_next = False        # a redirection's target
    prefix = None            # the prefix command being skipped over
    timeout_needs_duration = False
    k = 0
    while k < len(toks):
        tok, line = toks[k]
        k += 1
        if tok == "<redirect>":
            skip_next = True
            continue
        if tok in SEPARATORS:
            skip_next = False
            if tok == ";;" or tok == ";&" or tok == ";;&":
                case_pattern = True
            elif tok == ")" and case_pattern:
                case_pattern = False
            at_start = tok not in (")",) or case_pattern is False
            if tok == ")":
                at_start = True
            if in_for_list and tok in ("\n", ";"):
                in_for_list = False
            prefix = None
            continue
        if skip_next:
            skip_next = False
            continue
        if expect_case_in:
            if tok == "in":
                expect_case_in = False
                case_pattern = True
            continue
        if case_pattern:
            if tok == "esac":
                case_pattern = False
                at_start = False
            continue
        if in_for_list:
            continue
        if not at_start:
            continue
        # command position
        if re.match(r"^[A-Za-z_][A-Za-z_0-9]*(\[[^]]*\])?\+?=", tok):   # assignment
            continue
        if prefix:
            if tok in PREFIX_OPTIONS.get(prefix, ()):
                skip_next = True
                continue
            if tok.startswith("-") or "=" in tok:
                continue
            if prefix == "timeout" and timeout_needs_duration:
                timeout_needs_duration = False
                continue
        if tok == "case":
            expect_case_in = True
            at_start = False
            continue
        if tok == "[[":   # a test: its words are not commands
            while k < len(toks) and toks[k][0] != "]]":
                k += 1
            k += 1
            at_start = False
            continue
        if tok in ("for", "select"):
            in_for_list = True
            continue
        if tok in ("then", "else", "elif", "do", "if", "while", "until", "!", "time", "{", "}", "fi", "done", "esac",
                   "[[", "]]", "coproc", "function"):
            if tok in ("fi", "done", "esac", "}"):
                at_start = False
            continue
        if tok == "command" and k < len(toks) and toks[k][0] in ("-v", "-V"):
            at_start = False   # command -v X: a probe, not a use
            continue
        if tok in PREFIXES:
            result.append((tok, line))
            prefix = tok
            timeout_needs_duration = tok == "timeout"
            continue
        result.append((tok, line))
        prefix = None
        at_start = False
    return result


# ------------------------------------------------------------ python
def python_needs(path):
    text = read(path)
    needs = []
    for m in re.finditer(r"^\s*(?:import\s+([\w.]+(?:\s*,\s*[\w.]+)*)|from\s+([\w.]+)\s+import)", text, re.M):
        line = text.count("\n", 0, m.start()) + 1
        names = m.group(1).split(",") if m.group(1) else [m.group(2)]
        for name in names:
            name = name.strip().split(" as ")[0].split(".")[0]
            if name:
                needs.append(("python", name, line))
    for m in re.finditer(r"subprocess\.\w+\(\s*\[\s*(?:[\w.]+\s*\+\s*)?[\"']([\w./+-]+)[\"']", text):
        line = text.count("\n", 0, m.start()) + 1
        needs.append(("program", os.path.basename(m.group(1)), line))
    return needs


def main():
    pkg_file = os.path.join(ROOT, "scripts", "packages.txt")
    lists, provides, problems = load_packages(pkg_file)
    functions = set()
    shell_files = set()
    for cmd in COMMANDS.values():
        shell_files.update(expand(cmd["shell"]))
    for f in shell_files:
        for m in re.finditer(r"^\s*(?:function\s+)?([\w:.-]+)\s*\(\)", read(f), re.M):
            functions.add(m.group(1))
    own_modules = {os.path.splitext(f)[0] for dp, dn, fn in os.walk(ROOT) for f in fn if f.endswith(".py")}
    stdlib = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    checked = 0
    for command, spec in COMMANDS.items():
        try:
            installed = set(resolve(lists, command))
        except ValueError as e:
            problems.append(f"scripts/packages.txt: {e}")
            continue
        needs = []   # (kind, name, where)
        for f in expand(spec["cmake"]):
            needs += [(kind, name, f"{rel(f)}:{line}") for kind, name, line in cmake_needs(f)]
        for f in expand(spec["shell"]):
            is_bats = f.endswith(".bats")
            for word, line in shell_commands(read(f)):
                if "$" in word or "`" in word or not re.match(r"^[A-Za-z0-9_./+@:-]+$", word):
                    continue   # a variable, or not a command name
                if word.startswith("/"):
                    if word.startswith(("/usr/", "/bin/", "/sbin/")):
                        word = os.path.basename(word)
                    else:
                        continue
                elif "/" in word:
                    continue   # the project's own files
                if word in BASH_WORDS or word in functions or word.startswith("@") or word.startswith("-"):
                    continue
                if is_bats and word in BATS_WORDS:
                    continue
                needs.append(("program", word, f"{rel(f)}:{line}"))
        for f in expand(spec["python"]):
            for kind, name, line in python_needs(f):
                if kind == "python" and (name in stdlib or name in own_modules or name == "__future__"):
                    continue
                needs.append((kind, name, f"{rel(f)}:{line}"))
        # programs named by their path anywhere (a default such as JQ_PGB_BIN=...,
        # the executablePath of Chromium in a test's JavaScript)
        for f in expand(spec["shell"] + spec["python"] + spec.get("other", [])):
            text = read(f)
            for m in re.finditer(r"(?<![\w.])/usr/s?bin/([A-Za-z0-9_.+-]+)", text):
                needs.append(("program", m.group(1), f"{rel(f)}:{text.count(chr(10), 0, m.start()) + 1}"))
        for kind, name, where in needs:
            checked += 1
            pkg = provides.get((kind, name))
            if pkg is None:
                problems.append(f"{where}: {command}: {kind} {name}: not in scripts/packages.txt "
                                f"(add 'provide {kind} {name} PACKAGE')")
            elif pkg not in ("-", "self") and pkg not in installed:
                problems.append(f"{where}: {command}: {kind} {name} needs package {pkg}, "
                                f"which the '{command}' list in scripts/packages.txt does not install")
    # dpkg-buildpackage (the package suite) checks Build-Depends, not our lists.
    control = os.path.join(ROOT, "debian", "control")
    if os.path.exists(control):
        m = re.search(r"^Build-Depends:(.*?)(?=^\S)", read(control), re.M | re.S)
        build_deps = {re.split(r"[\s(]", d.strip())[0] for d in (m.group(1) if m else "").split(",") if d.strip()}
        for f in expand(["client/CMakeLists.txt", "client/cli/CMakeLists.txt", "client/dashboard/CMakeLists.txt"]):
            for kind, name, line in cmake_needs(f):
                pkg = provides.get((kind, name))
                checked += 1
                if pkg and pkg not in ("-", "self", "g++") and pkg not in build_deps:
                    problems.append(f"{rel(f)}:{line}: {kind} {name} needs {pkg}, "
                                    f"missing from Build-Depends in debian/control")
    for p in problems:
        print(p)
    print(f"check_packages: {checked} needs of demo, test and bench checked against scripts/packages.txt, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
