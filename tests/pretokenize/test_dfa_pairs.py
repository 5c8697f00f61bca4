"""The automaton's paired layout (dfa_runner.pxd, dfa_lane_pair_step): in the two-lane walk, two
ASCII characters take one move; a non-ASCII character, or a walk that dies inside the pair,
takes the one-character step. The pieces must not change: every case compares the paired
scanner with the same pattern built without pairs (pattern_scanner.PAIR_MAX_STATES = 0) and
with the regex module (the oracle)."""

from __future__ import annotations

import functools
import random

import pytest
from hypothesis import given, settings

from cybpe.pretokenize import pattern_scanner
from cybpe.pretokenize.pattern_scanner import PatternScanner
from support import all_patterns, examples, hostile_text, in_subset_patterns, published_patterns
from support import bundled_texts as _bundled_texts
from support import dfa_eval_texts as eval_texts

ALL_PATTERNS = all_patterns()
IN_SUBSET = in_subset_patterns()
PUBLISHED = published_patterns()

WITH_PAIRS = [p for p in IN_SUBSET if PatternScanner(p, "dfa").dfa_pair_moves]


@functools.lru_cache(maxsize=None)
def _scanners(pattern: str) -> tuple[PatternScanner, PatternScanner]:
    """The pattern's automaton with pair moves, and without (built with the cap at 0)."""
    paired = PatternScanner(pattern, "dfa")
    cap = pattern_scanner.PAIR_MAX_STATES
    pattern_scanner.PAIR_MAX_STATES = 0
    try:
        single = PatternScanner(pattern, "dfa")
    finally:
        pattern_scanner.PAIR_MAX_STATES = cap
    assert paired.dfa_pair_moves and not single.dfa_pair_moves
    return paired, single


def _same(pattern: str, text: str) -> None:
    paired, single = _scanners(pattern)
    data = text.encode("utf-8", "surrogatepass")
    assert paired._compiled_ends(data).tolist() == single._compiled_ends(data).tolist(), (pattern, text)
    assert paired.split_spans(text) == paired._regex_spans(text), (pattern, text)


def test_published_patterns_take_pair_moves():
    """The GPT-2, cl100k, Llama 3 and Qwen2 strings fit the paired layout (o200k's does not: it
    tells upper from lower case: 25 ASCII classes)."""
    for name in ("gpt2", "cl100k", "llama3", "qwen2"):
        assert PatternScanner(ALL_PATTERNS[name], "dfa").dfa_pair_moves, name
    assert len(WITH_PAIRS) >= 10


def test_patterns_past_the_layout_walk_one_character_at_a_time():
    """More than 16 ASCII classes (o200k's string), or more states than PAIR_MAX_STATES: no pair
    moves, same pieces."""
    wide = PatternScanner(ALL_PATTERNS["o200k"], "dfa")
    assert wide.backend == "dfa" and not wide.dfa_pair_moves
    many = r"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij|\S|\s"
    scanner = PatternScanner(many, "dfa")
    assert scanner.dfa_states > pattern_scanner.PAIR_MAX_STATES and not scanner.dfa_pair_moves
    text = ("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij xyz " * 12)
    assert scanner.split_spans(text) == scanner._regex_spans(text)
    text = "The Quick brown FOX's 42 jumps.\n" * 30
    assert wide.split_spans(text) == wide._regex_spans(text)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", WITH_PAIRS)
def test_bundled_texts_at_every_parity(pattern):
    """Each bundled text, and the same text one byte later, so that every pair of characters is
    read both as a pair and across two pairs."""
    for text in _bundled_texts().values():
        _same(pattern, text)
        _same(pattern, "x" + text)


@pytest.mark.parametrize("pattern", WITH_PAIRS)
def test_walks_that_die_inside_a_pair(pattern):
    """Spaces before a word (``\\s+(?!\\S)`` dies on the letter and restarts at the last space),
    unmatched characters, and non-ASCII characters next to ASCII, at both parities."""
    rng = random.Random(hash(pattern) & 0xFFFF)
    parts = ["  a", "   b", " \t c", "\n\n x", "a'", "'s", "'LL", "1234", " 12345", "!", "..",
             "é", "中", "\u0301", "\U0001F600", "a\u00a0b", "\r\n", " ", "x"]
    for _ in range(30):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(200, 500)))
        _same(pattern, text)
        _same(pattern, " " + text)


@pytest.mark.slow
def test_shared_corpora_with_and_without_pairs():
    texts = eval_texts()
    patterns = [p for p in set(PUBLISHED.values()) if p in WITH_PAIRS]
    assert patterns
    for pattern in patterns:
        for text in texts:
            _same(pattern, text)


@pytest.mark.parametrize("pattern", WITH_PAIRS[:6])
@settings(max_examples=examples(80), deadline=None)
@given(text=hostile_text)
def test_hostile_text_with_and_without_pairs(pattern, text):
    _same(pattern, text * 3)
