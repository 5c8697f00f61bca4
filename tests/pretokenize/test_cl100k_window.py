"""The cl100k scanner's 64-byte window path (cl100k_window.pxd) splits exactly like the regex.

The window path runs only where 64 bytes of text remain and the next 16 hold no lead byte of
a character that would end it at once; it takes ASCII and two-byte letters (o200k: only upper-
and lower-case ones). So these texts are long, mostly ASCII or two-byte letters, and built to
put each rule (contractions, letter prefixes, digit groups, newlines after punctuation,
whitespace runs) and each character that ends a window at every offset of a window and across
window edges. The references are the `regex` module and the scanner's own
one-piece-at-a-time path (scan_next, which test_scanner.py checks against `regex`).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.pretokenize.scanner import Scanner, _ascii_masks_both, _ends_by_scan_next
from support import examples

# The kinds that take the window path.
NAMES = ["cl100k", "gpt4-digits3", "llama3", "qwen2", "gpt4-digits1", "gpt4-digits2", "o200k"]

ATOMS = [
    " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", "\x0b", "\x0c", "\x1c", "\x1f",
    "'", "''", "'s", "'S", "'t", "'m", "'d", "'ll", "'lL", "'LL", "'l", "'ve", "'VE", "'re", "'rE",
    "'r", "'v", "'x", "a", "s", "l", "e", "v", "r", "T", "word", "Word", "WORD", "0", "1", "12",
    "123", "1234", "12345", ".", ",", "(", ")", "!", "\"", "\x00", "\x7f", "//", "_", "-", "{",
    "}", ";", "/", "\n/", "/\n", "Ab", "aB", "ABc", "xY", "'Ll", "'S", "'D",
]
RARE_ATOMS = ["é", "中", "\u00a0", "\u2028", "\u3000", "ſ", "\u212a", "١", "\u0301", "😀"]
# Two-byte characters (U+0080..U+07FF): the letters a window takes (cl100k_window.pxd,
# two_byte_letters) and the ones it stops at: digits (\p{N}: ² ٣ ߁), spaces (NBSP, NEL),
# punctuation and symbols (« » × ÷ ҂ ־), marks (\p{M}: combining acute, Cyrillic titlo).
TWO_BYTE_LETTERS = ["é", "É", "ß", "ñ", "ç", "œ", "ÿ", "ª", "µ", "ʰ", "ˆ", "ς", "Ω", "п", "Привет",
                    "ї", "Ґ", "א", "ب", "ܐ", "ހ", "ߊ", "Ա", "ſ", "ĳ", "ǅ", "Ж", "ÉTÉ"]
TWO_BYTE_OTHERS = ["«", "»", "×", "÷", "²", "\u00a0", "\u0085", "\u0301", "\u0483", "҂", "־", "٣",
                   "߁", "¡", "¿", "·", "¬", "\u00ad"]


def oracles(name: str) -> tuple[Scanner, cybpe.PreTokenizer]:
    if name.startswith("gpt4-digits"):
        return Scanner(name), cybpe.get_pretokenizer("gpt4-digits", digits=int(name[-1])).with_regex_only()
    return Scanner(name), cybpe.get_pretokenizer(name).with_regex_only()


def assert_window_split(name: str, text: str, label: str) -> None:
    scanner, regex_only = oracles(name)
    got = scanner.split_spans(text)
    want = regex_only.split_spans(text)
    if got != want:
        k = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
        lo = (want[k] if k < len(want) else got[k])[0]
        raise AssertionError(f"{name} {label}: piece {k} near {text[max(0, lo - 20):lo + 30]!r}\n"
                             f"  scanner: {[text[s:e] for s, e in got[k:k + 4]]}\n"
                             f"  regex:   {[text[s:e] for s, e in want[k:k + 4]]}")
    data = text.encode("utf-8", "surrogatepass")
    assert scanner.split_utf8(data).tolist() == _ends_by_scan_next(scanner.kind, data), label


def random_text(rng: random.Random, rare: bool) -> str:
    alphabet = rng.sample(ATOMS, rng.randrange(2, 14))
    if rare:
        alphabet += rng.sample(RARE_ATOMS, 2)
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(30, 260)))


@pytest.mark.parametrize("name", NAMES)
def test_random_ascii_texts(name):
    rng = random.Random(20261204 + NAMES.index(name))
    for k in range(3000):
        assert_window_split(name, random_text(rng, rare=k % 4 == 0), f"text #{k}")


@pytest.mark.parametrize("name", NAMES)
def test_every_rule_at_every_offset(name):
    """Short patterns of each rule, shifted through all 64 offsets of the first window."""
    cases = ["don't 's 'LL", "x.\n\n  y", "a  \n  b", "a \n\tb", "(word ((word \t(word",
             "1234567 x12 ", " 'sun x'sun ''s", "end.\r\n\r\n   \n next", "a\n\n\n\n\n\n\n\n",
             "tab\t\t\tx", "x!!!\n\n\ny", "     \n", "'ll'll'll",
             # o200k: case changes, contractions after words, [\r\n/]* after punctuation
             "HTTPServer fooBar aBC", "x./\n/\n//y ./(", "don'tKnow it'S's 'lL'lL", "a.\n/\n \nb"]
    for case in cases:
        for offset in range(70):
            text = "q" * offset + case + " filler text" * 8
            assert_window_split(name, text, f"{case!r} at {offset}")
            text = " " * offset + case + "\n" * 70
            assert_window_split(name, text, f"{case!r} after {offset} spaces")


@pytest.mark.parametrize("name", NAMES)
def test_random_texts_with_two_byte_characters(name):
    """Accented Latin, Greek, Cyrillic, Hebrew, Arabic... letters (which cl100k-like windows
    take) among ASCII, and the two-byte characters that end a window's known part."""
    rng = random.Random(20261207 + NAMES.index(name))
    for k in range(2000):
        alphabet = rng.sample(ATOMS, rng.randrange(2, 10)) + rng.sample(TWO_BYTE_LETTERS, rng.randrange(1, 6))
        if k % 3 == 0:
            alphabet += rng.sample(TWO_BYTE_OTHERS, rng.randrange(1, 3))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(30, 260)))
        assert_window_split(name, text, f"text #{k}")


@pytest.mark.parametrize("name", NAMES)
def test_two_byte_characters_at_every_offset(name):
    """A two-byte letter or other character at each byte offset of a window, its lead byte on
    the window's last byte included, after ASCII and after other two-byte letters."""
    cases = ["é", "«x", "x»", "a×b", "1²3", "x\u00a0 y", "e\u0301t", "'é", "'s", "é's", "ДОМ'S",
             "Ωmega", "12ß34", "x\u0085\ny", "!é", "!!é", " «é", "ç123", "п.\n\nж", "ва  \n  ш",
             # o200k's case rules: an upper-case letter after a lower-case one, titlecase (Lt)
             # and modifier (Lm) letters, which are on both sides of them
             "жЖж", "ÉcoleÉTÉ", "aÉ", "Éa", "ǅx", "xǅ", "ʰA", "Aʰa", "aªB", "ÄÖÜäöü", "ΣΑΣ'S σ"]
    for case in cases:
        for offset in range(70):
            for fill in ("q", "ж", " "):
                text = fill * offset + case + " жёлтый день" * 8
                assert_window_split(name, text, f"{case!r} after {offset} x {fill!r}")


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
@settings(max_examples=examples(300), deadline=None)
@given(atoms=st.lists(st.sampled_from(ATOMS + TWO_BYTE_LETTERS + TWO_BYTE_OTHERS), min_size=40, max_size=200))
def test_hypothesis_two_byte_atoms(name, atoms):
    assert_window_split(name, "".join(atoms), "hypothesis")


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
@settings(max_examples=examples(300), deadline=None)
@given(atoms=st.lists(st.sampled_from(ATOMS + RARE_ATOMS), min_size=40, max_size=200))
def test_hypothesis_atoms(name, atoms):
    assert_window_split(name, "".join(atoms), "hypothesis")


@pytest.mark.parametrize("name", ["cl100k", "llama3", "qwen2", "o200k"])
def test_long_runs_cross_windows(name):
    for atom in [" ", "\t", "\n", "\r\n", " \n", "a", "1", "!", "'s", ".\n", "x ", "x\n  "]:
        for tail in ["", "x", " x", "\n", "!", "  \n ", " \n\n"]:  # ends where the two differ
            assert_window_split(name, "w " + atom * 300 + tail + " after" * 20 + tail, f"run of {atom!r}")


def test_vector_masks_match_the_byte_loop():
    """The SSE2 masks (x86-64) and the portable byte loop classify every byte value alike."""
    rng = random.Random(7)
    blocks = [bytes(range(k, k + 64)) for k in range(0, 256, 64)]
    blocks += [bytes(rng.randrange(256) for _ in range(64)) for _ in range(500)]
    blocks += [bytes(rng.choice(b" \t\n\r\x0b\x0c'azAZ09.\x80\xff") for _ in range(64)) for _ in range(500)]
    for block in blocks:
        vector, loop = _ascii_masks_both(block)
        assert vector == loop, block
    high, letter, digit, space, newline, blank, apostrophe, upper, slash = _ascii_masks_both(bytes(range(64, 128)))[1]
    assert letter == ((1 << 26) - 1) << 1 | ((1 << 26) - 1) << 33  # A-Z at 65.., a-z at 97..
    assert upper == ((1 << 26) - 1) << 1
    assert _ascii_masks_both(bytes(range(64)))[1][8] == 1 << ord("/")
    assert _ascii_masks_both(b" " * 64)[1][5] == (1 << 64) - 1


def test_masks_need_64_bytes():
    with pytest.raises(ValueError):
        _ascii_masks_both(b"x" * 63)
