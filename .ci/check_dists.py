"""Checks on the built distributions that an index (and a user of the sdist) relies on.

    python .ci/check_dists.py --sdist dist/cybpe-X.tar.gz --wheel wheelhouse/cybpe-X-....whl \
        --tracked-tests tracked.txt      # `git ls-files tests` of the checkout
    python .ci/check_dists.py --claimed-pythons pyproject.toml   # prints 3.10, 3.11, ... one a line

The wheel: a manylinux tag, no generated C or Cython sources, every extension stripped (no
symbol table, no debug sections) and with a ``.pyi`` stub beside it, the LICENSE, an SPDX
license, the bundled sample texts. The sdist: the LICENSE, every tracked file under ``tests/``
(so its tests run), the Cython sources, and no generated C or built extensions.
Exit status 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import PurePosixPath

SAMPLE_DIR = "cybpe/data/udhr/"


def claimed_pythons(pyproject: str) -> list[str]:
    """The ``Programming Language :: Python :: 3.X`` classifiers, in order."""
    text = open(pyproject, encoding="utf-8").read()
    return re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text)


def elf_section_names(data: bytes) -> list[str]:
    """Section names of a 64-bit little-endian ELF file (enough for x86_64/aarch64 Linux)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i: int) -> tuple[int, int, int]:
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, offset, size

    _, str_off, str_size = section(shstrndx)
    names = data[str_off:str_off + str_size]
    return [names[n:names.index(b"\0", n)].decode() for n, _, _ in (section(i) for i in range(shnum))]


def check_wheel(path: str) -> list[str]:
    problems = []
    name = PurePosixPath(path).name
    if "manylinux" not in name:
        problems.append(f"wheel {name}: no manylinux tag (run auditwheel repair)")
    with zipfile.ZipFile(path) as whl:
        files = whl.namelist()
        for f in files:
            if f.endswith((".c", ".cpp", ".pyx", ".html")):
                problems.append(f"wheel: {f} is a source or build file")
        extensions = [f for f in files if f.endswith(".so") and f.startswith("cybpe/")]
        if not extensions:
            problems.append("wheel: no compiled extension")
        for f in extensions:
            sections = elf_section_names(whl.read(f))
            unstripped = [s for s in sections if s == ".symtab" or s.startswith(".debug")]
            if unstripped:
                problems.append(f"wheel: {f} is not stripped ({', '.join(unstripped)})")
            stub = f.split(".", 1)[0] + ".pyi"
            if stub not in files:
                problems.append(f"wheel: {f} has no {stub}")
        dist_info = {f.split("/", 1)[0] for f in files if ".dist-info/" in f}.pop()
        if not any(f.startswith(f"{dist_info}/licenses/") and f.endswith("LICENSE") for f in files):
            problems.append(f"wheel: no LICENSE under {dist_info}/licenses/")
        metadata = Parser().parsestr(whl.read(f"{dist_info}/METADATA").decode())
        if metadata.get("License-Expression") != "MIT":
            problems.append(f"wheel: License-Expression is {metadata.get('License-Expression')!r}, not 'MIT'")
        if metadata.get("License"):
            problems.append("wheel: a free-text License field besides License-Expression")
        samples = [f for f in files if f.startswith(SAMPLE_DIR) and f.endswith(".txt")]
        if len(samples) < 20:
            problems.append(f"wheel: {len(samples)} sample texts under {SAMPLE_DIR}, expected the UDHR sample")
        if SAMPLE_DIR.rstrip("/").rsplit("/", 1)[0] + "/README.md" not in files:
            problems.append("wheel: the sample texts' README (their license) is missing")
    return problems


def check_sdist(path: str, tracked_tests: list[str]) -> list[str]:
    problems = []
    with tarfile.open(path) as sdist:
        names = sdist.getnames()
    root = names[0].split("/", 1)[0]
    files = {n.split("/", 1)[1] for n in names if "/" in n}
    for required in ("LICENSE", "README.md", "pyproject.toml", "setup.py", "MANIFEST.in"):
        if required not in files:
            problems.append(f"sdist: no {required}")
    missing = [t for t in tracked_tests if t not in files]
    if missing:
        problems.append(f"sdist: {len(missing)} tracked test files missing, e.g. {missing[:5]}")
    for f in files:
        if f.endswith((".c", ".cpp", ".so", ".html", ".pyc")) or "__pycache__" in f:
            problems.append(f"sdist: {f} is generated")
    if not any(f.endswith(".pyx") for f in files):
        problems.append("sdist: no Cython sources")
    if not any(f.startswith(SAMPLE_DIR) for f in files):
        problems.append(f"sdist: no {SAMPLE_DIR}")
    print(f"sdist {root}: {len(files)} files, {len(tracked_tests) - len(missing)} of {len(tracked_tests)} tracked test files")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist")
    parser.add_argument("--wheel")
    parser.add_argument("--tracked-tests", help="file with `git ls-files tests`, one path a line")
    parser.add_argument("--claimed-pythons", metavar="PYPROJECT")
    args = parser.parse_args(argv)
    if args.claimed_pythons:
        versions = claimed_pythons(args.claimed_pythons)
        if not versions:
            print("no 'Programming Language :: Python :: 3.X' classifiers", file=sys.stderr)
            return 1
        print("\n".join(versions))
        return 0
    problems = []
    if args.wheel:
        problems += check_wheel(args.wheel)
    if args.sdist:
        tracked = open(args.tracked_tests).read().split() if args.tracked_tests else []
        problems += check_sdist(args.sdist, tracked)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print("distributions ok:", *(p for p in (args.sdist, args.wheel) if p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
