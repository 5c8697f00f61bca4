"""What the C of this build chose (cybpe/_c/portable.pxd, system.pxd): which builtins, which SIMD
path, the byte order, whether ``char`` is signed, the page size the OS reports.

CI's build stages (.ci/stage-portable.sh, .ci/stage-clang.sh, .ci/platforms) print it and check
that the build they made is the one they meant to test (a CYBPE_PORTABLE=1 build must say
``builtins="plain"``, ``simd="scalar"``):

    python -c "from cybpe._c.build_info import build_info; print(build_info())"

Thread safety: a pure function (the page size is asked once and cached); any thread.
"""

from cybpe._c.portable cimport BUILTINS, BYTE_ORDER, CHAR_IS_SIGNED, COMPILER, PORTABLE_BUILD, SIMD
from cybpe._c.system cimport page_size


def build_info() -> dict:
    """The compile-time choices of this build: ``builtins`` ("gnu", "msvc" or "plain"), ``simd``
    ("sse2" or "scalar"), ``byte_order`` ("little" or "big"), ``portable`` (built with
    CYBPE_PORTABLE=1), ``char_signed``, ``compiler`` (its version string where it has one), and
    ``page_size`` (the OS's, in bytes)."""
    return {
        "builtins": BUILTINS.decode("ascii"),
        "simd": SIMD.decode("ascii"),
        "byte_order": BYTE_ORDER.decode("ascii"),
        "portable": bool(PORTABLE_BUILD),
        "char_signed": bool(CHAR_IS_SIGNED),
        "compiler": COMPILER.decode("utf-8", "replace"),
        "page_size": page_size(),
    }
