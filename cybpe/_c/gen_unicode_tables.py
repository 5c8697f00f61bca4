"""Generate ``cybpe/_c/unicode_tables.h``: the per-code-point classes the compiled scanners use.

Run from the repository root (the output is committed; rerun after upgrading ``regex``)::

    python cybpe/_c/gen_unicode_tables.py            # writes cybpe/_c/unicode_tables.h
    python cybpe/_c/gen_unicode_tables.py --check    # exit 1 when the committed file is stale

The source of truth is the ``regex`` module itself: every code point U+0000..U+10FFFF (lone
surrogates included) is tested against ``\\p{Lu}``, ``\\p{Ll}``, ``\\p{Lt}``, ``\\p{Lm}``, ``\\p{Lo}``,
``\\p{M}``, ``\\p{N}`` and ``\\s``, so the scanners agree with the regex oracle by construction,
whatever Unicode version that ``regex`` release implements.

Output: one class byte per code point, stored as a two-stage table (``stage1[cp >> SHIFT]``
picks a block of ``1 << SHIFT`` bytes in ``stage2``; identical blocks are shared; the block
size is the one that makes the two arrays smallest), plus a 256-entry table indexed by the
first UTF-8 byte for the ASCII fast path, and the non-ASCII code points that case-fold onto a
contraction letter (``(?i:'s)`` also matches ``'ſ``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from pathlib import Path

MAX_CP = 0x110000

#: Class bits of one code point (bit -> property tested with ``regex``).
CLASS_BITS = [
    ("CYBPE_LU", r"\p{Lu}"),
    ("CYBPE_LT", r"\p{Lt}"),
    ("CYBPE_LL", r"\p{Ll}"),
    ("CYBPE_LM", r"\p{Lm}"),
    ("CYBPE_LO", r"\p{Lo}"),
    ("CYBPE_M", r"\p{M}"),
    ("CYBPE_N", r"\p{N}"),
    ("CYBPE_S", r"\s"),
]

#: Extra bits that only the byte table carries (all of these characters are ASCII).
BYTE_BITS = [
    ("CYBPE_CRLF", "\r\n"),
    ("CYBPE_SPACE", " "),
    ("CYBPE_APOS", "'"),
    ("CYBPE_SLASH", "/"),
]
NONASCII_BIT = "CYBPE_NONASCII"

#: Letters that start or continue a contraction ('s 't 're 've 'm 'll 'd).
CONTRACTION_LETTERS = "sdmtlver"

OUTPUT = Path(__file__).resolve().parent / "unicode_tables.h"


def regex_unicode_version() -> str | None:
    """The Unicode version the installed ``regex`` release says it implements ("This module
    supports Unicode 18.0.0." in its package metadata), or None when it does not say."""
    try:
        text = importlib.metadata.distribution("regex").read_text("METADATA") or ""
    except importlib.metadata.PackageNotFoundError:
        return None
    found = re.search(r"supports Unicode (\d+\.\d+(?:\.\d+)?)", text)
    return found.group(1) if found else None


def class_bytes() -> bytearray:
    """One class byte per code point, each bit set where ``regex`` says the property holds."""
    import regex  # here, not at the top: gen_nfc_tables.py borrows this file's helpers without it

    every = "".join(map(chr, range(MAX_CP)))
    classes = bytearray(MAX_CP)
    for bit, (_, prop) in enumerate(CLASS_BITS):
        for m in regex.finditer(prop + "+", every):
            for cp in range(m.start(), m.end()):
                classes[cp] |= 1 << bit
    # Self-checks: \p{L} is exactly the union of the five letter categories, and the
    # categories are disjoint, which the scanners rely on.
    letters = bytearray(MAX_CP)
    for m in regex.finditer(r"\p{L}+", every):
        letters[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    letter_mask = 0b11111
    for cp in range(MAX_CP):
        c = classes[cp] & letter_mask
        if bool(c) != bool(letters[cp]) or (c & (c - 1)):
            raise SystemExit(f"U+{cp:04X}: letter categories are not a partition of \\p{{L}}")
    return classes


def contraction_folds() -> list[tuple[int, str]]:
    """Every code point that ``(?i:x)`` matches, for each contraction letter x, sorted."""
    import regex

    every = "".join(map(chr, range(MAX_CP)))
    folds = []
    for letter in CONTRACTION_LETTERS:
        single = [m.start() for m in regex.finditer(f"(?i:{letter})", every)]
        in_set = [m.start() for m in regex.finditer(f"(?i:[{letter}])", every)]
        if single != in_set:
            raise SystemExit(f"(?i:{letter}): literal and set case folding disagree")
        folds += [(cp, letter) for cp in single]
    return sorted(folds)


def two_stage(classes: bytearray) -> tuple[int, list[int], list[bytes]]:
    """The smallest (shift, stage1, blocks) table for ``classes``."""
    best = None
    for shift in range(4, 11):
        size = 1 << shift
        index: dict[bytes, int] = {}
        stage1 = []
        for start in range(0, MAX_CP, size):
            block = bytes(classes[start:start + size])
            stage1.append(index.setdefault(block, len(index)))
        entry_bytes = 1 if len(index) <= 256 else 2
        total = len(stage1) * entry_bytes + len(index) * size
        if best is None or total < best[0]:
            best = (total, shift, stage1, list(index))
    _, shift, stage1, blocks = best
    return shift, stage1, blocks


def c_array(ctype: str, name: str, values, per_line: int = 24) -> str:
    values = list(values)
    lines = []
    for start in range(0, len(values), per_line):
        lines.append("    " + ",".join(str(v) for v in values[start:start + per_line]) + ",")
    return f"static const {ctype} {name}[{len(values)}] = {{\n" + "\n".join(lines) + "\n};\n"


def c_two_stage(stage1: list[int], blocks: list[bytes], tables: str, macros: str, function: str,
                beyond: str, comment: str) -> list[str]:
    """The C lines of a two-stage table (``{tables}_stage1``, ``{tables}_stage2``; shift and
    block size in ``{macros}_SHIFT``, ``{macros}_BLOCK``) and of ``function(cp)``, the byte of
    cp in it (``beyond`` at and past ``{macros}_MAX``), under ``comment``."""
    stage1_type = "uint8_t" if len(blocks) <= 256 else "uint16_t"
    return [
        c_array(stage1_type, f"{tables}_stage1", stage1, per_line=32),
        c_array("uint8_t", f"{tables}_stage2", b"".join(blocks), per_line=32),
        f"/* {comment} */",
        f"static inline uint32_t {function}(uint32_t cp) {{",
        f"    if (cp >= {macros}_MAX) return {beyond};",
        f"    return {tables}_stage2[((uint32_t){tables}_stage1[cp >> {macros}_SHIFT] << {macros}_SHIFT)",
        f"                            | (cp & ({macros}_BLOCK - 1))];",
        "}",
    ]


def render(classes: bytearray, folds: list[tuple[int, str]]) -> str:
    import regex

    shift, stage1, blocks = two_stage(classes)
    ascii_fold = [0] * 128
    for cp, letter in folds:
        if cp < 128:
            ascii_fold[cp] = ord(letter)
    extras = [(cp, letter) for cp, letter in folds if cp >= 128]
    byte_class = []
    for b in range(256):
        value = classes[b] if b < 0x80 else 0
        for bit, (_, chars) in enumerate(BYTE_BITS, start=len(CLASS_BITS)):
            if b < 0x80 and chr(b) in chars:
                value |= 1 << bit
        if b >= 0x80:
            value |= 1 << (len(CLASS_BITS) + len(BYTE_BITS))
        byte_class.append(value)
    counts = {name: sum(1 for c in classes if c & (1 << bit)) for bit, (name, _) in enumerate(CLASS_BITS)}
    out = [
        "/* Generated by cybpe/_c/gen_unicode_tables.py -- do not edit.",
        " *",
        " *   command:  python cybpe/_c/gen_unicode_tables.py   (from the repository root)",
        f" *   source:   the `regex` module {regex.__version__}, which implements Unicode {regex_unicode_version() or 'unknown'}",
        " *   (Python's own unicodedata is older on every supported Python, and so are"
        " tiktoken 0.14's Rust tables,",
        " *   so parity tests against tiktoken must leave out code points assigned after its version.)",
        " *",
        " * Class byte of a code point: stage2[stage1[cp >> CYBPE_UNI_SHIFT] * CYBPE_UNI_BLOCK",
        " *                                   + (cp & (CYBPE_UNI_BLOCK - 1))]",
        " * Lone surrogates (U+D800..DFFF) are Cs: no bit set, exactly as `regex` treats them.",
        " * Code points per bit: " + ", ".join(f"{k[6:]}={v}" for k, v in counts.items()),
        " */",
        "#ifndef CYBPE_UNICODE_TABLES_H",
        "#define CYBPE_UNICODE_TABLES_H",
        "#include <stdint.h>",
        "",
    ]
    for bit, (name, prop) in enumerate(CLASS_BITS):
        out.append(f"#define {name} {1 << bit}  /* {prop} */")
    for bit, (name, chars) in enumerate(BYTE_BITS, start=len(CLASS_BITS)):
        out.append(f"#define {name} {1 << bit}  /* {chars!r}, byte table only */")
    out.append(f"#define {NONASCII_BIT} {1 << (len(CLASS_BITS) + len(BYTE_BITS))}"
               "  /* byte >= 0x80: decode first */")
    out += [
        "",
        "/* Unions the scanners test (o200k's two letter classes share Lm, Lo and marks). */",
        "#define CYBPE_L (CYBPE_LU | CYBPE_LT | CYBPE_LL | CYBPE_LM | CYBPE_LO)",
        "#define CYBPE_UPPER (CYBPE_LU | CYBPE_LT | CYBPE_LM | CYBPE_LO | CYBPE_M)",
        "#define CYBPE_LOWER (CYBPE_LL | CYBPE_LM | CYBPE_LO | CYBPE_M)",
        "#define CYBPE_BOTH (CYBPE_LM | CYBPE_LO | CYBPE_M)",
        "",
        f"#define CYBPE_UNI_SHIFT {shift}",
        f"#define CYBPE_UNI_BLOCK {1 << shift}",
        f"#define CYBPE_UNI_MAX 0x{MAX_CP:X}",
        f"#define CYBPE_FOLD_EXTRA_COUNT {len(extras)}",
        "",
        "/* ASCII byte -> the contraction letter (s d m t l v e r) it case-folds to, else 0. */",
        c_array("char", "cybpe_ascii_fold", ascii_fold, per_line=32),
        "/* Non-ASCII code points that case-fold onto a contraction letter. */",
        c_array("uint32_t", "cybpe_fold_extra_cp", [cp for cp, _ in extras] or [0]),
        c_array("char", "cybpe_fold_extra_letter", [ord(x) for _, x in extras] or [0]),
        "/* Class bits per first byte of a UTF-8 sequence (ASCII bytes are whole code points). */",
        c_array("uint16_t", "cybpe_byte_class", byte_class, per_line=16),
        *c_two_stage(stage1, blocks, "cybpe_uni", "CYBPE_UNI", "cybpe_cp_class", "0",
                     "Class bits of a code point (0 beyond U+10FFFF)."),
        "",
        "/* The contraction letter a non-ASCII code point case-folds to, else 0. */",
        "static inline char cybpe_fold_extra(uint32_t cp) {",
        "    int i;",
        "    for (i = 0; i < CYBPE_FOLD_EXTRA_COUNT; i++)",
        "        if (cybpe_fold_extra_cp[i] == cp) return cybpe_fold_extra_letter[i];",
        "    return 0;",
        "}",
        "",
        "#endif",
        "",
    ]
    return "\n".join(out)


_RELEASE = re.compile(r"the `regex` module [^,\n]+,")


def same_tables(committed: str, generated: str) -> bool:
    """Whether two renderings of the header hold the same tables: equal but for the ``regex``
    release named in the comment (a release that changes no class leaves the header current)."""
    return _RELEASE.sub("the `regex` module RELEASE,", committed) == _RELEASE.sub(
        "the `regex` module RELEASE,", generated)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed header")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render(class_bytes(), contraction_folds())
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if not same_tables(current, text):
            print(f"{args.output} is stale; rerun cybpe/_c/gen_unicode_tables.py", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date (regex {importlib.metadata.version('regex')} gives the same tables)")
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
