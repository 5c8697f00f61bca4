"""Build script: cythonizes every ``cybpe/**/*.pyx`` with one set of compiler directives.

Environment switches (for development only):

* ``CYBPE_DEBUG=1``     rebuild with bounds, wraparound and initialization checks on.
* ``CYBPE_ANNOTATE=1``  write Cython's HTML annotation next to each ``.pyx``.
* ``CYBPE_BUILD_ONLY=trainer,encoder``  build only these modules (by file stem; faster edit loops).
* ``CYBPE_KEEP_SYMBOLS=1``  keep the symbol table and debug info in wheels (they are stripped).
* ``CYBPE_BUILD_JOBS=N``  cythonize and compile N modules at a time (default: every CPU).
* ``CYBPE_PORTABLE=1``  plain C only: no compiler builtins, no SIMD intrinsics (the scalar twins
  and the plain-C definitions of ``cybpe/_c/portable.pxd``, what an unknown compiler gets). CI
  builds it with ``CFLAGS=-funsigned-char`` (``.ci/stage-portable.sh``); slower, never shipped.

Wheels (``bdist_wheel``, which ``python -m build`` and ``pip wheel`` run) get stripped
extensions: ``-s`` at link time drops the symbol table and the debug info Python's own CFLAGS
ask for (``-g``): 1.8 MB instead of 10.8 MB for the eight modules. Editable and in-place builds
keep them, for profilers.
"""

import os
import sys
from glob import glob

from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup

DEBUG = os.environ.get("CYBPE_DEBUG", "") not in ("", "0")
ANNOTATE = os.environ.get("CYBPE_ANNOTATE", "") not in ("", "0")
ONLY = {m for m in os.environ.get("CYBPE_BUILD_ONLY", "").split(",") if m}

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "nonecheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
}

PORTABLE = os.environ.get("CYBPE_PORTABLE", "") not in ("", "0")
MSVC = sys.platform == "win32"  # setuptools builds CPython extensions with MSVC there
if MSVC:
    EXTRA_COMPILE_ARGS = ["/Od", "/Zi"] if DEBUG else ["/O2"]
else:
    EXTRA_COMPILE_ARGS = ["-O0", "-g"] if DEBUG else ["-O3"]
DEFINE_MACROS = [("CYBPE_PORTABLE", "1")] if PORTABLE else []
KEEP_SYMBOLS = DEBUG or os.environ.get("CYBPE_KEEP_SYMBOLS", "") not in ("", "0")
# setuptools' PEP 517 backend runs this file with the command in sys.argv ("bdist_wheel").
STRIP = "bdist_wheel" in sys.argv and sys.platform.startswith("linux") and not KEEP_SYMBOLS
EXTRA_LINK_ARGS = ["-s"] if STRIP else []
JOBS = int(os.environ.get("CYBPE_BUILD_JOBS", "0")) or os.cpu_count() or 1


def extensions():
    exts = []
    for path in sorted(glob(os.path.join("cybpe", "**", "*.pyx"), recursive=True)):
        module = os.path.splitext(path)[0].replace(os.sep, ".")
        if ONLY and module.rsplit(".", 1)[-1] not in ONLY:
            continue
        exts.append(
            Extension(
                module,
                [path],
                include_dirs=[os.path.join("cybpe", "_c")],
                define_macros=DEFINE_MACROS,
                extra_compile_args=EXTRA_COMPILE_ARGS,
                extra_link_args=EXTRA_LINK_ARGS,
            )
        )
    return cythonize(exts, compiler_directives=COMPILER_DIRECTIVES, annotate=ANNOTATE, nthreads=JOBS)


setup(
    # cybpe.data* are folders of sample texts, listed so setuptools ships them without a warning.
    packages=find_packages(include=["cybpe", "cybpe.*"]) + ["cybpe.data", "cybpe.data.udhr", "cybpe_pretokenizers"],
    package_dir={"cybpe_pretokenizers": "pretokenizers"},
    # The wheel: .pxd and .h (to cimport cybpe from Cython), .pyi stubs, the sample texts; not
    # the .pyx sources or the C that Cython generates (the sdist has the .pyx, see MANIFEST.in).
    package_data={"": ["*.pxd", "*.pyi", "*.h"], "cybpe": ["py.typed"],
                  "cybpe.data": ["README.md"], "cybpe.data.udhr": ["*.txt"]},
    exclude_package_data={"": ["*.pyx", "*.c", "*.cpp", "*.html"]},
    ext_modules=extensions(),
    options={"build_ext": {"parallel": JOBS}},
    zip_safe=False,
)
