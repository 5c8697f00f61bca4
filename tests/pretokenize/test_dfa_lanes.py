"""The automaton's two-lane scan (dfa_runner.pxd, dfa_scan_lanes): a text of 512 bytes or more
is walked from its start and from its middle at once, and the second lane's ends are taken from
the first piece start both lanes share. Every case here compares with the regex module (the
oracle) and the backtracking matcher, on texts long enough for two lanes, with the middle
falling at every offset of the structures where a lane's first piece is wrong: whitespace runs
that end before a letter, digit groups, contractions, CJK, combining marks, unmatched text,
a final newline under "$", invalid UTF-8, and patterns whose lanes never agree."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cybpe.errors import PatternTimeoutError
from cybpe.pretokenize.dfa_compiler import NotDeterministic
from cybpe.pretokenize.pattern_compiler import UnsupportedPattern
from cybpe.pretokenize.pattern_scanner import PatternScanner
from support import assert_matchers_agree as _agree, examples
from support import both_matchers as _both
from support import in_subset_patterns, random_patterns, regex_spans

IN_SUBSET = in_subset_patterns()

LANE_MIN_BYTES = 512  # dfa_runner.pxd's DFA_LANE_MIN_BYTES

# Structures around which the middle of the text is moved one byte at a time.
SEAMS = ["word    \tnext", "x  \n\n   y", "1234567 89", "don't I'LL we've",
         "中文字符，标点。",
         "e\u0301\u0301e\u0301 a\u0300", "!!!...\n\n\r\n", "  \U0001F600\U0001F600 ok",
         "a\u00a0\u00a0b", "ſſK\u212a s"]


def _seam_texts(seam: str) -> list[str]:
    """Texts of 512 bytes and more whose middle falls on each byte of `seam` in turn."""
    texts = []
    body = ("The quick brown fox's 42 jumps.\n" * 20)[:300]
    width = len(seam.encode()) + 2
    for shift in range(width + 1):  # the middle stays put; the seam slides across it
        texts.append(body + "q" * shift + seam + "q" * (width - shift) + body)
    assert all(len(t.encode()) >= LANE_MIN_BYTES for t in texts)
    return texts


@pytest.mark.parametrize("pattern", IN_SUBSET)
def test_every_middle_around_hard_seams_agrees(pattern):
    for seam in SEAMS:
        texts = _seam_texts(seam)
        assert texts
        for text in texts:
            _agree(pattern, text)
            _agree(pattern, text + "\n")  # a final newline, which "$" patterns treat apart


_EDGE = ["a", "b", "'", "s", "S", "ll", "K", "é", "\u0301", "中", "7", "77", " ", "  ", "\t",
         "\n", "\r\n", "!", ".", "\u00a0", "\U0001F600", "ab", "Th", "  \n"]


@pytest.mark.parametrize("pattern", IN_SUBSET)
def test_random_long_texts_agree(pattern):
    rng = random.Random(hash(pattern) & 0xFFFF)
    for _ in range(12):
        text = "".join(rng.choice(_EDGE) for _ in range(rng.randrange(260, 900)))
        _agree(pattern, text)


@settings(max_examples=examples(120), deadline=None)
@given(pattern=random_patterns(), pieces=st.lists(st.sampled_from(_EDGE), min_size=300, max_size=700))
def test_random_patterns_on_two_lane_texts(pattern, pieces):
    try:
        automaton = PatternScanner(pattern, "dfa", 512)
        backtracking = PatternScanner(pattern, "backtrack")
    except (NotDeterministic, UnsupportedPattern):
        assume(False)
    text = "".join(pieces)
    assume(len(text.encode()) >= LANE_MIN_BYTES)
    try:
        expected = regex_spans(pattern, text)
    except PatternTimeoutError:
        # The reference (the regex module) backtracks past its time bound on this pattern: no
        # answer to compare with. On a loaded machine the bound is met sooner.
        assume(False)
    assert automaton.split_spans(text) == expected, (pattern, text)
    assert backtracking.split_spans(text) == expected, (pattern, text)


@pytest.mark.parametrize("pattern", [r".{2}|.|\n", r"(?:ab)+|[\s\S]", r"\S{3}|\s"])
def test_lanes_that_never_share_a_piece_start(pattern):
    """Pairs counted from the start: a lane from an odd middle is off by one to the end, so the
    first lane scans the whole text."""
    for text in ("ab" * 300, "ab" * 300 + "a", "x" * 777, "abc " * 200):
        _agree(pattern, text)


def test_unmatched_text_in_either_lane():
    """Text no match covers is a piece of its own, in the first lane, the second, and across the
    middle."""
    for pattern in (r"a+", r"[a-c]+|\s", r"\p{L}+(?=\s)|\s"):
        for text in ("a" * 300 + "!" * 300 + "a" * 50, "!" * 600 + "a", "ab c " * 150 + "???",
                     "x" * 520 + " ", "aaa" + "." * 700):
            _agree(pattern, text)


@pytest.mark.parametrize("pattern", IN_SUBSET[:8])
def test_invalid_utf8_agrees_with_the_backtracking_matcher(pattern):
    """split_utf8 takes any bytes: a bad byte is a character of its own in both matchers, and
    the middle skips only continuation bytes."""
    automaton, backtracking = _both(pattern)
    rng = random.Random(7)
    alphabet = [b"a", b" ", b"\n", b"\x80", b"\xbf", b"\xe4\xb8", b"\xe4\xb8\xad", b"\xf0\x9f",
                b"\xff", b"'s", b"12", b"\xc3\xa9", b"\xed\xa0\x80"]
    for _ in range(40):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(300, 700)))
        if len(data) < LANE_MIN_BYTES:
            continue
        assert automaton._compiled_ends(data).tolist() == backtracking._compiled_ends(data).tolist()
    data = b"a" * 300 + b"\x80" * 400 + b" b"  # no character starts near the middle
    assert automaton._compiled_ends(data).tolist() == backtracking._compiled_ends(data).tolist()
