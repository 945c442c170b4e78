#!/usr/bin/env python3
"""scripts/pgxn-check.py accepts the archive `make dist` built and refuses
every broken variant of it: each case below changes one thing (META.json, a
missing file, the top directory) and must fail with its own message.

    python3 tests/package/test_pgxn_check.py jobqueue-1.2.0.zip
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
import zipfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "pgxn-check.py")
GOOD_ZIP = None  # set from the command line


def load_checker():
    spec = importlib.util.spec_from_file_location("pgxn_check", CHECKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pgxn_check = load_checker()


def run_checker(path):
    """The checker's exit status and output for one file, run in-process."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = pgxn_check.main(["pgxn-check.py", path])
    return code, output.getvalue()


class Variant:
    """The good archive's entries, to be changed and written as a new zip."""

    def __init__(self, path):
        with zipfile.ZipFile(path) as z:
            self.entries = {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
        self.prefix = next(n for n in self.entries if n.endswith("/META.json"))[:-len("META.json")]
        self.meta = json.loads(self.entries[self.prefix + "META.json"])
        self.raw_meta = None

    def drop(self, path):
        del self.entries[self.prefix + path]

    def move_under(self, prefix):
        self.entries = {prefix + n[len(self.prefix):]: data for n, data in self.entries.items()}
        self.prefix = prefix

    def write(self, directory):
        path = os.path.join(directory, "variant.zip")
        meta = self.raw_meta if self.raw_meta is not None else json.dumps(self.meta).encode()
        self.entries[self.prefix + "META.json"] = meta
        with zipfile.ZipFile(path, "w") as z:
            for name, data in self.entries.items():
                z.writestr(name, data)
        return path


def set_key(*keys, value):
    def change(v):
        target = v.meta
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


def del_key(*keys):
    def change(v):
        target = v.meta
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return change


def drop_file(path):
    return lambda v: v.drop(path)


def raw_meta(text):
    def change(v):
        v.raw_meta = text.encode()
    return change


# (what is broken, change, a piece of the message it must produce)
CASES = [
    ("no license", del_key("license"), "lacks the required key 'license'"),
    ("no provides", del_key("provides"), "lacks the required key 'provides'"),
    ("no meta-spec", del_key("meta-spec"), "lacks the required key 'meta-spec'"),
    ("two-part version", set_key("version", value="1.2"), "version: '1.2' is not a semantic version"),
    ("leading zero in the version", set_key("version", value="1.02.0"), "is not a semantic version"),
    ("provided extension's version not semver",
     set_key("provides", "jobqueue", "version", value="1.2"), "'1.2' is not a semantic version"),
    ("provided extension's version not the control file's",
     set_key("provides", "jobqueue", "version", value="9.9.0"), "is not the control file's default_version"),
    ("provided extension without its file", del_key("provides", "jobqueue", "file"), "lacks the required key 'file'"),
    ("provided extension's file missing",
     set_key("provides", "jobqueue", "file", value="sql/jobqueue.sql"), "'sql/jobqueue.sql' is missing"),
    ("unknown key in a provided extension",
     set_key("provides", "jobqueue", "docs", value="README.md"), "provides.jobqueue.docs: is not a key of the spec"),
    ("license name outside the spec", set_key("license", value="PostgreSQL License"), "is not a license name"),
    ("maintainer not a string", set_key("maintainer", value=42), "maintainer: must be a string"),
    ("empty abstract", set_key("abstract", value=""), "abstract: must be at least 1 characters long"),
    ("name with a space", set_key("name", value="job queue"), "is not a term"),
    ("meta-spec 2", set_key("meta-spec", "version", value="2.0.0"), "is not a 1.0.x spec version"),
    ("prereq version not a range",
     set_key("prereqs", "runtime", "requires", "PostgreSQL", value="15"), "is not a version range"),
    ("unknown prereq phase", set_key("prereqs", "install", value={"requires": {"plpgsql": 0}}),
     "prereqs.install: is not a key of the spec"),
    ("top-level key outside the spec", set_key("homepage", value="https://example.org"),
     "homepage: is not a key of the spec"),
    ("bad release_status", set_key("release_status", value="final"), "is not one of stable, testing, unstable"),
    ("META.json not JSON", raw_meta("{\"name\": \"jobqueue\","), "not valid JSON"),
    ("control file missing", drop_file("extension/jobqueue.control"), "extension/jobqueue.control"),
    ("C source missing", drop_file("extension/src/api/push.c"), "extension/src/api/push.c (named in the Makefile) is missing"),
    ("header missing", drop_file("extension/src/exec/exec.h"), "extension/src/exec/exec.h (named in the Makefile) is missing"),
    ("part of the router's built install script missing", drop_file("extension/router/parts/push.sql"),
     "extension/router/parts/push.sql (named in the Makefile) is missing"),
    ("upgrade script missing", drop_file("extension/scripts/jobqueue--1.6--1.7.sql"),
     "the installed SQL scripts do not reach jobqueue 1.7"),
    ("Makefile missing", drop_file("Makefile"), "Makefile is missing"),
    ("README missing", drop_file("README.md"), "no README"),
    ("top directory without the version", lambda v: v.move_under("jobqueue/"),
     "entries lie under 'jobqueue/', not 'jobqueue-"),
]


class PgxnCheckTest(unittest.TestCase):
    def test_good_archive_passes(self):
        code, output = run_checker(GOOD_ZIP)
        self.assertEqual(code, 0, output)
        self.assertIn("is OK", output)

    def test_broken_archives_fail(self):
        for what, change, message in CASES:
            with self.subTest(what), tempfile.TemporaryDirectory() as tmp:
                variant = Variant(GOOD_ZIP)
                change(variant)
                code, output = run_checker(variant.write(tmp))
                self.assertEqual(code, 1, f"{what}: accepted\n{output}")
                self.assertIn(message, output, what)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
        sys.exit("usage: test_pgxn_check.py DIST.zip")
    GOOD_ZIP = sys.argv.pop(1)
    unittest.main(verbosity=1)
