"""Builds the one extension module; Cython finds cybpe's .pxd files next to the installed package."""

import os

import cybpe
from Cython.Build import cythonize
from setuptools import Extension, setup

CYBPE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cybpe.__file__)))

setup(
    ext_modules=cythonize(
        [Extension("cybpe_ascii_words.scanner", ["cybpe_ascii_words/scanner.pyx"], extra_compile_args=["-O3"])],
        include_path=[CYBPE_ROOT],
        compiler_directives={"language_level": 3},
    ),
)
