#!/usr/bin/env python3
"""Every test that README.md, CHANGELOG.md and docs/*.md cite must exist.

A claim in the documents names the test that performs it: `Module.Class.testName`, `Class.testName` or
a bare `testName` in backticks. This reads every XCTest method under Tests/ (class by class, extensions
included) and fails, listing each one, when a cited test is not there: a renamed or deleted test leaves
no sentence pointing at nothing. Prints "N passed, M failed" (N cited tests found, M missing).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "Tests")

# Top-level declarations only (no indentation): a class nested in a test class does not own its methods.
CLASS_RE = re.compile(r"^(?:@\w+\s+)*(?:(?:public|private|fileprivate|internal|final|open)\s+)*"
                      r"(?:class|extension|struct|enum|actor)\s+([A-Z]\w*)\b", re.M)
FUNC_RE = re.compile(r"^\s*(?:@\w+\s+)*(?:override\s+)?func\s+(test\w*)\s*\(", re.M)


def index():
    """{module: {class: {methods}}}, and every method name."""
    modules, every = {}, set()
    for module in sorted(os.listdir(TESTS)):
        mdir = os.path.join(TESTS, module)
        if not os.path.isdir(mdir):
            continue
        classes = modules.setdefault(module, {})
        for dirpath, _, files in os.walk(mdir):
            for name in files:
                if not name.endswith(".swift"):
                    continue
                text = open(os.path.join(dirpath, name), encoding="utf-8", errors="replace").read()
                # Each method belongs to the nearest class or extension declared above it.
                marks = [(m.start(), m.group(1)) for m in CLASS_RE.finditer(text)]
                for f in FUNC_RE.finditer(text):
                    owner = None
                    for pos, cls in marks:
                        if pos < f.start():
                            owner = cls
                    classes.setdefault(owner, set()).add(f.group(1))
                    every.add(f.group(1))
                for _, cls in marks:
                    classes.setdefault(cls, set())
    return modules, every


def documents():
    paths = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "CHANGELOG.md")]
    docs = os.path.join(ROOT, "docs")
    for dirpath, _, files in os.walk(docs):
        paths += [os.path.join(dirpath, f) for f in sorted(files) if f.endswith(".md")]
    return [p for p in paths if os.path.exists(p)]


QUALIFIED = re.compile(r"\b([A-Z]\w*Tests)\.([A-Z]\w*)\.(test\w+)")
CLASSED = re.compile(r"(?<![\w.])([A-Z]\w*)\.(test\w+)")
BARE = re.compile(r"`(test[A-Z]\w*)`")


def main():
    modules, every = index()
    found, missing = 0, []
    for path in documents():
        rel = os.path.relpath(path, ROOT)
        for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
            seen = set()
            for m in QUALIFIED.finditer(line):
                module, cls, test = m.groups()
                seen.add((m.start(2), test))
                ok = test in modules.get(module, {}).get(cls, set())
                found += ok
                if not ok:
                    missing.append(f"{rel}:{lineno}: {module}.{cls}.{test}")
            for m in CLASSED.finditer(line):
                cls, test = m.groups()
                if (m.start(1), test) in seen:
                    continue
                seen.add((m.start(1), test))
                ok = any(test in classes.get(cls, set()) for classes in modules.values())
                found += ok
                if not ok:
                    missing.append(f"{rel}:{lineno}: {cls}.{test}")
            for m in BARE.finditer(line):
                test = m.group(1)
                ok = test in every
                found += ok
                if not ok:
                    missing.append(f"{rel}:{lineno}: {test}")
    for line in missing:
        print(f"missing test: {line}")
    print(f"claims: {found} passed, {len(missing)} failed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
