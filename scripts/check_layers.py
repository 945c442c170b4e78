#!/usr/bin/env python3
"""Check the layers of the extension's C source (extension/src).

extension/src/README.md lists the folders bottom to top, one numbered line
each ("1. `base/` - ...", under "## Layers").  A file includes its own
folder's header and those of folders below it, never above.  Checked here:

  - every #include "..." of a project header (a file under extension/src)
    names its folder ("exec/exec.h", not "exec.h" or "../exec/exec.h"),
    and that folder is the including file's own or a lower one;
  - each folder has its one header, <folder>.h; another header of the
    folder is a part of that one: only <folder>.h includes it;
  - every C file is in a listed folder (or is jobqueue.c, above them all).

    python3 scripts/check_layers.py [ROOT]

Exit status 1 and one line per violation when the rule is broken.
"""
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent).resolve()
SRC = ROOT / "extension/src"
TOP_FILES = {"jobqueue.c"}          # _PG_init: above every layer

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
LAYER_RE = re.compile(r"^\d+\.\s+`([a-z_]+)/`", re.MULTILINE)


def layers():
    text = (SRC / "README.md").read_text()
    start = text.find("## Layers")
    if start < 0:
        sys.exit("check_layers: extension/src/README.md has no \"## Layers\" section")
    end = text.find("\n## ", start + 1)
    order = LAYER_RE.findall(text[start:end if end > 0 else len(text)])
    if not order:
        sys.exit("check_layers: no numbered layers under \"## Layers\" in extension/src/README.md")
    return {name: rank for rank, name in enumerate(order)}


def main():
    rank = layers()
    failures = []
    sources = sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h"))
    for path in sources:
        rel = path.relative_to(SRC)
        if len(rel.parts) == 1:
            if rel.name not in TOP_FILES:
                failures.append(f"{rel}: outside every layer folder")
            own = None
        elif len(rel.parts) == 2 and rel.parts[0] in rank:
            own = rel.parts[0]
        else:
            failures.append(f"{rel}: not in a folder of extension/src/README.md's layers")
            continue
        text = path.read_text()
        for m in INCLUDE_RE.finditer(text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{rel}:{line}"
            target = (path.parent / name).resolve()
            if target.is_file() and SRC in target.parents and name != target.relative_to(SRC).as_posix():
                failures.append(f'{where}: "{name}": include project headers with their folder '
                                f'("{target.relative_to(SRC).as_posix()}")')
                continue
            parts = name.split("/")
            if not (SRC / name).is_file():
                continue                # PostgreSQL's or the system's
            if len(parts) != 2 or parts[0] not in rank:
                failures.append(f'{where}: "{name}" is not in a layer folder')
                continue
            folder, header = parts
            if own is not None and rank[folder] > rank[own]:
                failures.append(f'{where}: "{name}" is a layer above {own}/ '
                                f'({folder}/ is {rank[folder] + 1}, {own}/ is {rank[own] + 1})')
            if header != f"{folder}.h" and rel.as_posix() != f"{folder}/{folder}.h":
                failures.append(f'{where}: "{name}" is part of {folder}/{folder}.h: include that')
    for folder in rank:
        if not (SRC / folder / f"{folder}.h").is_file():
            failures.append(f"{folder}/: has no header {folder}/{folder}.h")
    for failure in failures:
        print(f"check-layers: {failure}")
    if failures:
        print(f"check-layers: {len(failures)} violation(s) of the layers in extension/src/README.md")
        return 1
    print(f"check-layers: {len(sources)} files, every include within the {len(rank)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
