"""Build script: cythonizes every ``cybpe/**/*.pyx`` with one set of compiler directives.

Environment switches (for development only):

* ``CYBPE_DEBUG=1``     rebuild with bounds, wraparound and initialization checks on.
* ``CYBPE_ANNOTATE=1``  write Cython's HTML annotation next to each ``.pyx``.
* ``CYBPE_BUILD_ONLY=trainer,encoder``  build only these modules (by file stem; faster edit loops).
"""

import os
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

EXTRA_COMPILE_ARGS = ["-O0", "-g"] if DEBUG else ["-O3"]


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
                extra_compile_args=EXTRA_COMPILE_ARGS,
            )
        )
    return cythonize(exts, compiler_directives=COMPILER_DIRECTIVES, annotate=ANNOTATE)


setup(
    packages=find_packages(include=["cybpe", "cybpe.*"]) + ["cybpe_pretokenizers"],
    package_dir={"cybpe_pretokenizers": "pretokenizers"},
    package_data={"cybpe": ["py.typed", "data/*"], "": ["*.pyx", "*.pxd", "*.pyi", "*.h"]},
    ext_modules=extensions(),
    zip_safe=False,
)
