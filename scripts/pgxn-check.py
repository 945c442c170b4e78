#!/usr/bin/env python3
"""Check a PGXN distribution: its META.json against the PGXN Meta Spec 1.0.0
(https://pgxn.org/meta/spec.txt) and its files against what the build needs.

    pgxn-check.py META.json          # the source tree META.json sits in
    pgxn-check.py jobqueue-1.2.0.zip # a distribution archive (make dist)

Checked:
  - META.json: the spec's required keys (name, abstract, version, maintainer,
    license, provides, meta-spec), the type and form of every key it uses,
    semantic versions (distribution, each provided extension) and version
    ranges (prereqs); keys outside the spec only as x_/X_ custom keys.
  - the files: META.json, Makefile and a README exist; every file named in
    provides exists; every source, header, SQL script and control file the
    Makefile names exists; each provided extension's control file is
    installed by the Makefile, its default_version is the version META.json
    gives the extension, and the installed SQL scripts reach that version
    (an install script, then upgrade scripts).
  - an archive: every entry lies under <name>-<version>/ as PGXN expects.

PGXN's own validator (PGXN::Meta::Validator) is not packaged for Debian,
hence this one.  Prints "<what> is OK" or the list of errors; exit status 1
on any error, 2 on bad usage.
"""

import json
import os
import re
import sys
import zipfile

SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")
RANGE_PART = re.compile(r"(?:(?:[=!]=|[<>]=?)\s*)?(?P<version>\S+)")
TERM = re.compile(r"[^/\\\s\x00-\x1f\x7f]{2,}")
TAG = re.compile(r"[^/\\\x00-\x1f\x7f]{2,255}")
CUSTOM_KEY = re.compile(r"[xX]_.")

LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
    "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
    "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
    "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
    "restricted", "unrestricted", "unknown",
}
REQUIRED_KEYS = ("name", "abstract", "version", "maintainer", "license",
                 "provides", "meta-spec")
PREREQ_PHASES = {"configure", "build", "test", "runtime", "develop"}
PREREQ_RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
META_SPEC_URLS = {"https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"}
URI = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:\S+")


class MetaChecker:
    """Collects every violation of the spec instead of stopping at the first."""

    def __init__(self):
        self.errors = []

    def error(self, where, message):
        self.errors.append(f"{where}: {message}")

    def is_string(self, where, value, min_length=1):
        if not isinstance(value, str):
            self.error(where, f"must be a string, not {type(value).__name__}")
            return False
        if len(value) < min_length:
            self.error(where, f"must be at least {min_length} characters long")
            return False
        return True

    def is_object(self, where, value, min_keys=0):
        if not isinstance(value, dict):
            self.error(where, f"must be an object, not {type(value).__name__}")
            return False
        if len(value) < min_keys:
            self.error(where, f"must have at least {min_keys} key(s)")
            return False
        return True

    def known_keys(self, where, value, allowed):
        for key in value:
            if key not in allowed and not CUSTOM_KEY.fullmatch(key):
                self.error(f"{where}.{key}", "is not a key of the spec (custom keys start with x_)")

    def term(self, where, value):
        if self.is_string(where, value, 2) and not TERM.fullmatch(value):
            self.error(where, f"{value!r} is not a term (no slash, backslash, space or control character)")

    def semver(self, where, value):
        if self.is_string(where, value) and not SEMVER.fullmatch(value):
            self.error(where, f"{value!r} is not a semantic version (MAJOR.MINOR.PATCH)")

    def path(self, where, value):
        if self.is_string(where, value, 2) and (value.startswith("/") or "\\" in value
                                                 or ".." in value.split("/")):
            self.error(where, f"{value!r} is not a relative unix path inside the distribution")

    def version_range(self, where, value):
        if value == 0 or value == "0":
            return
        if not self.is_string(where, value):
            return
        for part in value.split(","):
            match = RANGE_PART.fullmatch(part.strip())
            if not match or not SEMVER.fullmatch(match.group("version")):
                self.error(where, f"{value!r} is not a version range (e.g. \">= 1.2.0, < 2.0.0\")")
                return

    def maintainer(self, where, value):
        if isinstance(value, list):
            if not value:
                self.error(where, "must list at least one maintainer")
            for i, item in enumerate(value):
                self.is_string(f"{where}[{i}]", item)
        else:
            self.is_string(where, value)

    def license(self, where, value):
        if isinstance(value, str):
            if value not in LICENSES:
                self.error(where, f"{value!r} is not a license name of the spec")
        elif isinstance(value, list):
            if not value:
                self.error(where, "must list at least one license")
            for i, item in enumerate(value):
                if item not in LICENSES:
                    self.error(f"{where}[{i}]", f"{item!r} is not a license name of the spec")
        elif self.is_object(where, value, 1):
            for name, url in value.items():
                if self.is_string(f"{where}.{name}", url) and not URI.fullmatch(url):
                    self.error(f"{where}.{name}", f"{url!r} is not a URI")

    def provides(self, where, value):
        if not self.is_object(where, value, 1):
            return
        for name, extension in value.items():
            here = f"{where}.{name}"
            self.term(f"{here} (name)", name)
            if not self.is_object(here, extension):
                continue
            self.known_keys(here, extension, {"file", "version", "abstract", "docfile"})
            for key in ("file", "version"):
                if key not in extension:
                    self.error(here, f"lacks the required key {key!r}")
            if "file" in extension:
                self.path(f"{here}.file", extension["file"])
            if "version" in extension:
                self.semver(f"{here}.version", extension["version"])
            if "abstract" in extension:
                self.is_string(f"{here}.abstract", extension["abstract"])
            if "docfile" in extension:
                self.path(f"{here}.docfile", extension["docfile"])

    def meta_spec(self, where, value):
        if not self.is_object(where, value):
            return
        self.known_keys(where, value, {"version", "url"})
        if "version" not in value:
            self.error(where, "lacks the required key 'version'")
        elif not (isinstance(value["version"], str) and re.fullmatch(r"1\.0\.\d+", value["version"])):
            self.error(f"{where}.version", f"{value['version']!r} is not a 1.0.x spec version")
        if "url" in value and value["url"] not in META_SPEC_URLS:
            self.error(f"{where}.url", f"{value['url']!r} is not the spec's URL")

    def prereqs(self, where, value):
        if not self.is_object(where, value, 1):
            return
        self.known_keys(where, value, PREREQ_PHASES)
        for phase in PREREQ_PHASES & value.keys():
            here = f"{where}.{phase}"
            if not self.is_object(here, value[phase], 1):
                continue
            self.known_keys(here, value[phase], PREREQ_RELATIONS)
            for relation in PREREQ_RELATIONS & value[phase].keys():
                there = f"{here}.{relation}"
                if not self.is_object(there, value[phase][relation], 1):
                    continue
                for name, version_range in value[phase][relation].items():
                    self.term(f"{there}.{name} (name)", name)
                    self.version_range(f"{there}.{name}", version_range)

    def tags(self, where, value):
        if not isinstance(value, list) or not value:
            self.error(where, "must be a non-empty array of strings")
            return
        for i, tag in enumerate(value):
            if self.is_string(f"{where}[{i}]", tag, 2) and not TAG.fullmatch(tag):
                self.error(f"{where}[{i}]", f"{tag!r} is not a tag (2-255 characters, no slash, backslash or control character)")

    def resources(self, where, value):
        if not self.is_object(where, value, 1):
            return
        self.known_keys(where, value, {"homepage", "bugtracker", "repository"})
        if "homepage" in value and self.is_string(f"{where}.homepage", value["homepage"]) \
                and not URI.fullmatch(value["homepage"]):
            self.error(f"{where}.homepage", "is not a URI")
        for key, fields in (("bugtracker", {"web", "mailto"}), ("repository", {"url", "web", "type"})):
            if key in value and self.is_object(f"{where}.{key}", value[key], 1):
                self.known_keys(f"{where}.{key}", value[key], fields)
                for field in fields & value[key].keys():
                    self.is_string(f"{where}.{key}.{field}", value[key][field])

    def no_index(self, where, value):
        if not self.is_object(where, value, 1):
            return
        self.known_keys(where, value, {"file", "directory"})
        for key in {"file", "directory"} & value.keys():
            paths = value[key] if isinstance(value[key], list) else [value[key]]
            for i, path in enumerate(paths):
                self.path(f"{where}.{key}[{i}]", path)

    def check(self, meta):
        """Validates a parsed META.json; returns the list of errors."""
        if not self.is_object("META.json", meta):
            return self.errors
        for key in REQUIRED_KEYS:
            if key not in meta:
                self.error("META.json", f"lacks the required key {key!r}")
        checks = {
            "name": self.term,
            "abstract": self.is_string,
            "description": self.is_string,
            "version": self.semver,
            "maintainer": self.maintainer,
            "license": self.license,
            "provides": self.provides,
            "meta-spec": self.meta_spec,
            "prereqs": self.prereqs,
            "tags": self.tags,
            "resources": self.resources,
            "no_index": self.no_index,
            "generated_by": self.is_string,
            "release_status": self.release_status,
        }
        self.known_keys("META.json", meta, checks.keys())
        for key, check in checks.items():
            if key in meta:
                check(key, meta[key])
        return self.errors

    def release_status(self, where, value):
        if value not in ("stable", "testing", "unstable"):
            self.error(where, f"{value!r} is not one of stable, testing, unstable")


class Tree:
    """The files of a source tree or of an archive, by path relative to its top."""

    def __init__(self, location):
        self.location = location
        self.prefix = ""
        if zipfile.is_zipfile(location):
            self.archive = zipfile.ZipFile(location)
            self.names = {n for n in self.archive.namelist() if not n.endswith("/")}
            # The top directory holding META.json (else the first entry's):
            # the layout check then names whatever lies outside it.
            tops = sorted(n.split("/")[0] for n in self.names if re.fullmatch(r"[^/]+/META\.json", n))
            self.prefix = (tops or sorted(n.split("/")[0] for n in self.names) or [""])[0] + "/"
        else:
            self.archive = None
            self.top = os.path.dirname(os.path.abspath(location))

    def exists(self, path):
        if self.archive:
            return self.prefix + path in self.names
        return os.path.isfile(os.path.join(self.top, path))

    def read(self, path):
        if self.archive:
            return self.archive.read(self.prefix + path).decode()
        with open(os.path.join(self.top, path), encoding="utf-8") as f:
            return f.read()


def control_default_version(text):
    match = re.search(r"^\s*default_version\s*=\s*'([^']*)'", text, re.MULTILINE)
    return match.group(1) if match else None


def as_semver(version):
    """PostgreSQL extension versions like 1.2 become 1.2.0 on PGXN."""
    if re.fullmatch(r"\d+\.\d+", version):
        return version + ".0"
    return version


def reaches(scripts, extension, version):
    """True if the SQL scripts (basenames) install `version`: some
    ext--A.sql, then ext--A--B.sql upgrades leading to it."""
    install = re.compile(re.escape(extension) + r"--(.+)\.sql")
    upgrade = re.compile(re.escape(extension) + r"--(.+?)--(.+)\.sql")
    edges, reached = [], set()
    for script in scripts:
        if m := upgrade.fullmatch(script):
            edges.append((m.group(1), m.group(2)))
        elif m := install.fullmatch(script):
            reached.add(m.group(1))
    grown = True
    while grown:
        grown = False
        for old, new in edges:
            if old in reached and new not in reached:
                reached.add(new)
                grown = True
    return version in reached


def makefile_inputs(text):
    """Files the Makefile names: sources (for objects), headers, SQL scripts,
    control files; and the SQL scripts it builds (a rule's target, its
    directory given by a variable such as $(CURDIR)), by file name.
    Comments are left out."""
    text = re.sub(r"#.*", "", text)
    built = {os.path.basename(name) for name in
             re.findall(r"^\S*?([\w./-]+\.sql)\s*:(?!=)", text, re.MULTILINE)}
    files = set()
    for name in re.findall(r"[\w./-]+\.(?:o|c|h|sql|control)\b", text):
        if os.path.basename(name) not in built:
            files.add(name[:-2] + ".c" if name.endswith(".o") else name)
    return files, built


def check_files(tree, meta, errors):
    for required in ("META.json", "Makefile"):
        if not tree.exists(required):
            errors.append(f"files: {required} is missing")
    if not any(tree.exists(n) for n in ("README", "README.md", "README.txt", "README.rst")):
        errors.append("files: no README")
    provides = meta.get("provides") if isinstance(meta.get("provides"), dict) else {}
    for name, extension in provides.items():
        for key in ("file", "docfile"):
            if isinstance(extension, dict) and isinstance(extension.get(key), str) \
                    and not tree.exists(extension[key]):
                errors.append(f"files: provides.{name}.{key} {extension[key]!r} is missing")
    if not tree.exists("Makefile"):
        return
    inputs, built_scripts = makefile_inputs(tree.read("Makefile"))
    for path in sorted(inputs):
        if not tree.exists(path):
            errors.append(f"files: {path} (named in the Makefile) is missing")
    installed_scripts = built_scripts | {
        os.path.basename(p) for p in inputs if p.endswith(".sql") and tree.exists(p)}
    for name, extension in provides.items():
        controls = [p for p in inputs if os.path.basename(p) == name + ".control"]
        if not controls:
            errors.append(f"files: the Makefile installs no {name}.control")
            continue
        if not tree.exists(controls[0]):
            continue
        default_version = control_default_version(tree.read(controls[0]))
        if default_version is None:
            errors.append(f"files: {controls[0]} sets no default_version")
            continue
        if isinstance(extension, dict) and as_semver(default_version) != extension.get("version"):
            errors.append(f"provides.{name}.version: {extension.get('version')!r} is not the control"
                          f" file's default_version {default_version!r} (as semver"
                          f" {as_semver(default_version)!r})")
        if not reaches(installed_scripts, name, default_version):
            errors.append(f"files: the installed SQL scripts do not reach {name} {default_version}")


def check_archive_layout(tree, meta, errors):
    expected = f"{meta.get('name')}-{meta.get('version')}/"
    if tree.prefix != expected:
        errors.append(f"archive: entries lie under {tree.prefix!r}, not {expected!r}")
    stray = sorted(n for n in tree.names if not n.startswith(expected))
    if stray:
        more = f" and {len(stray) - 5} more" if len(stray) > 5 else ""
        errors.append(f"archive: entries outside {expected!r}: {', '.join(stray[:5])}{more}")


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    location = argv[1]
    if not os.path.isfile(location):
        print(f"pgxn-check: {location}: no such file", file=sys.stderr)
        return 2
    tree = Tree(location)
    errors = []
    meta = None
    if not tree.exists("META.json"):
        errors.append("files: META.json is missing")
    else:
        try:
            meta = json.loads(tree.read("META.json"))
        except ValueError as e:
            errors.append(f"META.json: not valid JSON: {e}")
    if meta is not None:
        errors += MetaChecker().check(meta)
        if isinstance(meta, dict):
            check_files(tree, meta, errors)
            if tree.archive:
                check_archive_layout(tree, meta, errors)
    if errors:
        print(f"{location} is invalid:")
        for e in errors:
            print(f"  {e}")
        return 1
    print(f"{location} is OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
