"""Build script: cythonizes every ``cybpe/*.pyx`` with one set of compiler directives.

Environment switches (for development only):

* ``CYBPE_DEBUG=1``     rebuild with bounds, wraparound and initialization checks on.
* ``CYBPE_ANNOTATE=1``  write Cython's HTML annotation next to each ``.pyx``.
* ``CYBPE_BUILD_ONLY=_trainer,_encoder``  build only these modules (faster edit loops).
"""

import os
from glob import glob

from Cython.Build import cythonize
from setuptools import Extension, setup

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
    for path in sorted(glob(os.path.join("cybpe", "*.pyx"))):
        mod = os.path.splitext(os.path.basename(path))[0]
        if ONLY and mod not in ONLY:
            continue
        exts.append(
            Extension(
                f"cybpe.{mod}",
                [path],
                include_dirs=["cybpe"],
                extra_compile_args=EXTRA_COMPILE_ARGS,
            )
        )
    return cythonize(exts, compiler_directives=COMPILER_DIRECTIVES, annotate=ANNOTATE)


setup(
    packages=["cybpe", "cybpe.encode", "cybpe.io", "cybpe.reference", "cybpe_pretokenizers"],
    package_dir={"cybpe_pretokenizers": "pretokenizers"},
    package_data={"cybpe": ["*.pyx", "*.pxd", "*.pyi", "*.h", "py.typed", "data/*"]},
    ext_modules=extensions(),
    zip_safe=False,
)
