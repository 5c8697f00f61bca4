"""The automaton backend of the pattern matcher: the regex module's spans (the oracle) and the
backtracking matcher's, on every published pattern, real and hostile text and random patterns
of its subset; patterns outside it (or past the state cap) stay on the backtracking matcher."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import pytest
import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cybpe.errors import InvalidParameterError
from cybpe.pretokenize.dfa_compiler import NotDeterministic
from cybpe.pretokenize.pattern_compiler import UnsupportedPattern
from cybpe.pretokenize.pattern_scanner import PatternScanner, compile_scanner
from support import all_patterns, examples, hostile_text, random_patterns, regex_spans
from support import assert_matchers_agree as _agree
from support import bundled_texts as _bundled_texts
from support import dfa_eval_texts as eval_texts
from support import dfa_patterns, greedy, in_subset_patterns, published_patterns

ALL_PATTERNS = all_patterns()
PATTERNS = dfa_patterns()
PUBLISHED = published_patterns()
IN_SUBSET = in_subset_patterns()


@pytest.mark.parametrize("name", list(PATTERNS))
def test_built_in_and_custom_patterns_take_the_automaton(name):
    """Every built-in pattern and the test suite's custom ones, possessive or greedy, except
    those with constructs outside the subset (atomic groups, longer lookaheads, ^)."""
    scanner = compile_scanner(PATTERNS[name])
    assert scanner is not None
    outside = {"atomic-and-folded", "lazy", "counted-groups", "anchors"}
    expected = "backtrack" if name in outside else "dfa"
    assert scanner.backend == expected, name


def test_published_patterns_take_the_automaton():
    if not PUBLISHED:
        pytest.skip("needs $CYBPE_SHARED/vocab (the shared vocabularies)")
    assert {"tiktoken-cl100k_base", "tiktoken-o200k_base", "tiktoken-gpt2", "llama3-split",
            "qwen3-split"} <= set(PUBLISHED)
    for name, pattern in PUBLISHED.items():
        for form in (pattern, greedy(pattern)):
            scanner = compile_scanner(form)
            assert scanner is not None and scanner.backend == "dfa", (name, form)


@pytest.mark.parametrize("pattern", IN_SUBSET)
def test_bundled_texts_agree(pattern):
    for text in _bundled_texts().values():
        _agree(pattern, text)


@pytest.mark.slow
def test_shared_corpora_agree_on_published_patterns():
    texts = eval_texts()
    for pattern in set(PUBLISHED.values()) | {greedy(p) for p in PUBLISHED.values()}:
        for text in texts:
            _agree(pattern, text)


@pytest.mark.parametrize("pattern", IN_SUBSET)
@settings(max_examples=examples(150), deadline=None)
@given(text=hostile_text)
def test_hostile_text_agrees(pattern, text):
    _agree(pattern, text)


# -- random patterns from the subset -------------------------------------------------------

_RANDOM_TEXT = st.lists(st.sampled_from(["a", "b", "'", "s", "S", "ſ", "K", "k", "é", "É", "中", "\u0301",
                                         "7", " ", "  ", "\n", "\r\n", "\t", "!", ".", "ab", "\u00a0"]),
                        max_size=30).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(pattern=random_patterns(), texts=st.lists(_RANDOM_TEXT, min_size=1, max_size=4))
def test_random_patterns_agree_with_the_regex_module(pattern, texts):
    try:
        automaton = PatternScanner(pattern, "dfa", 512)
    except NotDeterministic:
        assume(False)  # past the state cap: the backtracking matcher's case
    except UnsupportedPattern:
        assume(False)  # nullable and the like: the regex module's case
    backtracking = PatternScanner(pattern, "backtrack")
    for text in texts + ["ab 'S\n", ""]:
        expected = regex_spans(pattern, text)
        assert automaton.split_spans(text) == expected, (pattern, text)
        assert backtracking.split_spans(text) == expected, (pattern, text)


# -- what stays on the backtracking matcher --------------------------------------------------

OUTSIDE = {
    "atomic group": r"(?>\p{L}+|\p{N}+)x|.|\n",
    "possessive group": r"(?:ab)++|.|\n",
    "longer lookahead": r"\p{L}+(?=\p{L}{2})|.|\n",
    "lookahead alternation": r"\p{L}+(?=\s|$)|.|\n",
    "beginning anchor": r"^\p{L}+|.|\n",
}


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_patterns_outside_the_subset_stay_on_the_backtracking_matcher(name):
    pattern = OUTSIDE[name]
    with pytest.raises(NotDeterministic):
        PatternScanner(pattern, "dfa")
    scanner = compile_scanner(pattern)
    assert scanner is not None and scanner.backend == "backtrack"
    text = "Hello wörld 123 ab abab ÀB\n  x"
    assert scanner.split_spans(text) == scanner._regex_spans(text)


def test_the_state_cap_falls_back_to_backtracking():
    """"an a twelve characters from the end" needs 2**13 states: past the cap (4096)."""
    pattern = r"(?:a|b)*a(?:a|b){12}|[\s\S]"
    with pytest.raises(NotDeterministic):
        PatternScanner(pattern, "dfa")
    scanner = compile_scanner(pattern)
    assert scanner is not None and scanner.backend == "backtrack" and scanner.dfa_states == 0
    small = PatternScanner(ALL_PATTERNS["cl100k"], max_dfa_states=5)
    assert small.backend == "backtrack"
    assert PatternScanner(ALL_PATTERNS["cl100k"]).dfa_states > 5
    text = "ab" * 50 + "a" + "b" * 20
    assert scanner.split_spans(text) == scanner._regex_spans(text)


def test_building_past_the_work_budget_gives_up():
    """Big kernels times many states would make compile_scanner hang: past the budget of node
    visits the automaton is refused (the backtracking matcher takes the pattern)."""
    from cybpe.pretokenize.dfa_compiler import build_dfa
    from cybpe.pretokenize.pattern_compiler import compile_pattern
    from cybpe.pretokenize.pattern_scanner import _cp_props

    program = compile_pattern(ALL_PATTERNS["cl100k"])
    assert build_dfa(program, _cp_props).n_states > 5
    with pytest.raises(NotDeterministic):
        build_dfa(program, _cp_props, max_work=1000)
    scanner = compile_scanner(r"[ab]{1,400}c|[\s\S]")
    assert scanner is not None
    text = "ab" * 300 + "c " + "a" * 500
    assert scanner.split_spans(text) == scanner._regex_spans(text)


def test_rescanning_patterns_give_up_to_the_regex_module():
    """Every start rescans the spaces: past the byte budget the automaton gives up (None) and
    split_spans asks the regex module, as the backtracking matcher does."""
    scanner = PatternScanner(r"\s*y|\s|.", "dfa")
    text = " " * 5000 + "x"
    assert scanner._compiled_ends(text.encode()) is None
    assert scanner.split_spans(text) == scanner._regex_spans(text)


def test_pickle_keeps_the_backend_and_threads_share_a_scanner():
    """PatternScanner is safe to share between threads: its tables are read-only."""
    for backend in ("dfa", "backtrack"):
        scanner = PatternScanner(ALL_PATTERNS["o200k"], backend)
        clone = pickle.loads(pickle.dumps(scanner))
        assert clone.backend == backend and f"backend={backend!r}" in repr(clone)
        data = "".join(_bundled_texts().values()).encode("utf-8")
        expected = scanner.split_utf8(data).tolist()
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: clone.split_utf8(data).tolist(), range(8)))
        assert all(r == expected for r in results)
    with pytest.raises(ValueError):
        PatternScanner("a|.", "nfa")


def test_final_newline_and_end_anchors():
    """"$" holds at the end and before a final "\\n" only; "\\Z" at the end only."""
    for pattern in (r"\s+$|\s|\S+", r"a+\Z|a|\n|\s", r"\s++$|\s*[\r\n]|\s+(?!\S)|\s|[^\s]+"):
        for text in ("a \n", "a \n\n", "a\n b", " \n", "\n", "aa", "a a\r\n", "a\n\n "):
            _agree(pattern, text)
    assert regex.findall(r"\s+$", "a \n") == [" \n"]


@pytest.mark.parametrize("backend", ["DFA", "", "regex", None, 3])
def test_an_unknown_backend_is_a_typed_error(backend):
    with pytest.raises(InvalidParameterError, match="backend must be"):
        PatternScanner(r"\w+|\s+", backend)


# States that stay on every ASCII letter (or every lowercase one) skip letters 8 bytes at a
# time before the bitmap loop (dfa_runner.pxd): runs of every length around 8 and 16, ending
# at the text's end, at an uppercase letter, a digit, an apostrophe or a non-ASCII letter.
_LETTER_LOOPS = [r"\p{L}+", r"[a-z]+", r"\p{Ll}+", r"[A-Za-z0-9_]+", r"[\p{L}\p{N}_]+", r"[a-zA-Z]+(?=\s)|\s",
                 r" ?[a-z]+| ?[A-Z][a-z]*|\p{N}|\s+|.", r"[^\s\p{N}]+", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|\S",
                 r"(?i:[a-z])+|.", r"[a-y]+|."]


def _letter_runs() -> list[str]:
    texts = []
    for length in list(range(1, 20)) + [23, 24, 25, 31, 32, 33]:
        run = ("abcdefghijklmnopqrstuvwxyz" * 2)[:length]
        for stop in ["", "Q", "7", "'", "é", "\u0301", " ", "\n", "z", "aBc"]:
            texts.append(run + stop)
            texts.append(" " + run.upper() + stop + run)
            texts.append(run[: length // 2] + "ſ" + run + stop)
    return texts


@pytest.mark.parametrize("pattern", _LETTER_LOOPS)
def test_letter_loops_eight_bytes_at_a_time_agree(pattern):
    texts = _letter_runs()
    for text in texts:
        _agree(pattern, text)
    _agree(pattern, " ".join(texts))
