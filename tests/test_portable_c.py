"""The C of cybpe/_c/portable.pxd and system.pxd on its own (issue 40): each builtin's plain-C twin
gives the builtin's answer, and the Windows and MSVC definitions compile where a compiler for them
is installed.

The blocks are cut out of the .pxd files (the source tree's, or the installed package's: the wheel
ships them) and compiled into a small program with this machine's C compiler, once with the
builtins and once with CYBPE_PORTABLE (the plain-C definitions); both must print what Python
computes. Where ``x86_64-w64-mingw32-gcc`` is installed, the program is compiled for Windows too
(the fiber-local thread keys, GetSystemInfo); where ``clang`` is, the MSVC branch of portable.pxd
is type-checked in clang's MSVC mode (x64 and ARM64) against stand-in C library headers.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import cybpe
from support import TESTS_DIR

MASK = (1 << 64) - 1


def _pxd(name: str) -> Path:
    checkout = TESTS_DIR.parent / "cybpe" / "_c" / name
    return checkout if checkout.is_file() else Path(cybpe.__file__).resolve().parent / "_c" / name


def c_block(name: str) -> str:
    """The C of the first ``cdef extern from *`` block of cybpe/_c/NAME, as Cython pastes it."""
    text = _pxd(name).read_text(encoding="utf-8")
    body = re.search(r'cdef extern from \*:\n    """\n(.*?)\n    """', text, re.S).group(1)
    body = body.encode().decode("unicode_escape")  # Cython reads the block as a string literal
    return "\n".join(line[4:] if line.startswith("    ") else line for line in body.splitlines())


def _compiler() -> str | None:
    for cc in ((sysconfig.get_config_var("CC") or "").split()[:1] + ["cc", "gcc", "clang"]):
        if cc and shutil.which(cc):
            return cc
    return None


random.seed(40)
WORDS = [1, 2, 3, 1 << 63, MASK, 0x0102030405060708, 0x9E3779B97F4A7C15] + [random.getrandbits(64) for _ in range(40)]

HARNESS = r"""
#include <stdio.h>
static const uint64_t words[] = {%(words)s};
int main(void) {
    size_t i;
    int flag = 0;
    static uint64_t serial = 0;
    for (i = 0; i < sizeof words / sizeof words[0]; i++) {
        uint64_t hi, lo = cybpe_mul128(words[i], words[(i * 7 + 3) %% (sizeof words / sizeof words[0])], &hi);
        unsigned char bytes[8];
        memcpy(bytes, &words[i], 8);
        printf("%%d %%llu %%llu %%llu %%llu\n", CYBPE_CTZ64(words[i]), (unsigned long long)CYBPE_BSWAP64(words[i]),
               (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)cybpe_load64_le(bytes));
    }
    {   /* one call per statement: the order of a call's arguments is unspecified */
        int first = cybpe_atomic_cas_int(&flag, 0, 1), second;
        second = cybpe_atomic_cas_int(&flag, 0, 1);
        printf("cas %%d %%d\n", first, second);
    }
    CYBPE_ATOMIC_STORE_INT(&flag, 0);
    {
        unsigned long long a = (unsigned long long)CYBPE_ATOMIC_ADD_FETCH_U64(&serial, 5), b;
        b = (unsigned long long)CYBPE_ATOMIC_ADD_FETCH_U64(&serial, 1);
        printf("add %%llu %%llu flag %%d\n", a, b, flag);
    }
    printf("page %%zu\n", cybpe_page_size());
    printf("%%s %%s %%s\n", CYBPE_BUILTINS, CYBPE_SIMD, CYBPE_BYTE_ORDER);
    return 0;
}
"""


def program() -> str:
    words = ", ".join(f"{w:#x}ULL" for w in WORDS)
    return ("#include <Python.h>\n" + c_block("portable.pxd") + "\n" + c_block("system.pxd") + "\n"
            + HARNESS % {"words": words})


def expected_lines() -> list[str]:
    lines = []
    for i, w in enumerate(WORDS):
        other = WORDS[(i * 7 + 3) % len(WORDS)]
        product = w * other
        ctz = (w & -w).bit_length() - 1
        swapped = int.from_bytes(w.to_bytes(8, "little"), "big")
        native = w.to_bytes(8, "little" if cybpe_byte_order() == "little" else "big")
        lines.append(f"{ctz} {swapped} {product & MASK} {product >> 64} {int.from_bytes(native, 'little')}")
    return lines + ["cas 1 0", "add 5 6 flag 0"]


def cybpe_byte_order() -> str:
    import sys
    return sys.byteorder


@pytest.mark.parametrize("portable", [False, True], ids=["builtins", "plain-C"])
def test_each_twin_gives_the_builtins_answer(portable, tmp_path):
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler")
    source = tmp_path / "t.c"
    source.write_text(program(), encoding="utf-8")
    exe = tmp_path / "t"
    flags = ["-DCYBPE_PORTABLE"] if portable else []
    include = sysconfig.get_paths()["include"]
    built = subprocess.run([cc, "-O2", *flags, f"-I{include}", str(source), "-o", str(exe)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[:-2] == expected_lines()
    assert int(out[-2].split()[1]) >= 4096
    builtins, simd, order = out[-1].split()
    assert order == cybpe_byte_order()
    if portable:
        assert (builtins, simd) == ("plain", "scalar")


def test_the_windows_definitions_compile_with_mingw(tmp_path):
    cc = shutil.which("x86_64-w64-mingw32-gcc")
    if cc is None:
        pytest.skip("x86_64-w64-mingw32-gcc is not installed (Debian: gcc-mingw-w64-x86-64)")
    for flags in ([], ["-DCYBPE_PORTABLE"]):
        source = tmp_path / "w.c"
        # Python.h for Windows is not here: PY_LITTLE_ENDIAN is what it would say.
        source.write_text("#define PY_LITTLE_ENDIAN 1\n" + program().replace("#include <Python.h>\n", ""),
                          encoding="utf-8")
        built = subprocess.run([cc, "-O2", "-Wall", "-Werror", "-Wno-unused-function", *flags, "-c", str(source),
                                "-o", str(tmp_path / "w.o")], capture_output=True, text=True)
        assert built.returncode == 0, built.stderr


STUB_HEADERS = {
    "stdlib.h": "#pragma once\n#include <stddef.h>\nvoid* malloc(size_t);\nvoid free(void*);\n"
                "unsigned long long _byteswap_uint64(unsigned long long);\n",
    "string.h": "#pragma once\n#include <stddef.h>\nvoid* memcpy(void*, const void*, size_t);\n",
    "malloc.h": "#pragma once\n#include <stdlib.h>\n",
    "setjmp.h": "#pragma once\ntypedef int jmp_buf[16];\n",
}


@pytest.mark.parametrize("target", ["x86_64-pc-windows-msvc", "aarch64-pc-windows-msvc"])
def test_the_msvc_definitions_type_check(target, tmp_path):
    clang = shutil.which("clang")
    if clang is None:
        pytest.skip("clang is not installed")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in STUB_HEADERS.items():
        (stubs / name).write_text(text, encoding="utf-8")
    source = tmp_path / "m.c"
    source.write_text("#define PY_LITTLE_ENDIAN 1\n" + c_block("portable.pxd") + r"""
static uint64_t serial = 0;
int use(void) {
    uint64_t hi, lo = cybpe_mul128(3, 5, &hi);
    int flag = 0;
    CYBPE_PREFETCH(&flag, 0, 3);
    CYBPE_ATOMIC_STORE_INT(&flag, cybpe_atomic_cas_int(&flag, 0, 1));
    return (int)(CYBPE_CTZ64(lo) + CYBPE_BSWAP64(hi) + CYBPE_ATOMIC_ADD_FETCH_U64(&serial, 1) + cybpe_load64_le(&lo));
}
#if !defined(CYBPE_MSVC)
#error "not the MSVC branch"
#endif
""", encoding="utf-8")
    # Without __clang__ and __GNUC__ clang's MSVC mode is taken for MSVC by portable.pxd.
    checked = subprocess.run([clang, f"--target={target}", "-fms-extensions", "-fms-compatibility", "-U__clang__",
                              "-U__GNUC__", "-Wno-builtin-macro-redefined", "-Wall", "-Werror", "-Wno-unused-function",
                              "-fsyntax-only", "-isystem", str(stubs), str(source)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
