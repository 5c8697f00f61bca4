"""The automaton backend of the pattern matcher: the regex module's spans (the oracle) and the
backtracking matcher's, on every published pattern, real and hostile text and random patterns
of its subset; patterns outside it (or past the state cap) stay on the backtracking matcher."""

from __future__ import annotations

import functools
import json
import pickle
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cybpe.errors import InvalidParameterError
from cybpe.pretokenize.dfa_compiler import NotDeterministic
from cybpe.pretokenize.pattern_compiler import UnsupportedPattern
from cybpe.pretokenize.pattern_scanner import PatternScanner, compile_scanner
from cybpe.pretokenize.regex_spans import regex_spans as oracle_spans
from support import shared_path
from test_pattern_scanner import ALL_PATTERNS, _bundled_texts, hostile_text


def _published() -> dict[str, str]:
    """The pre-tokenizer strings the shared vocabularies ship with (empty when absent)."""
    shared = shared_path()
    found: dict[str, str] = {}
    if shared is None:
        return found
    encodings = shared / "vocab" / "tiktoken_encodings.json"
    if encodings.is_file():
        for name, spec in json.loads(encodings.read_text()).items():
            found[f"tiktoken-{name}"] = spec["pat_str"]
    for path in sorted((shared / "vocab").glob("*/tokenizer.json")):
        pre = json.loads(path.read_text(encoding="utf-8")).get("pre_tokenizer") or {}
        for step in pre.get("pretokenizers", [pre]):
            if step.get("type") == "Split" and "Regex" in step.get("pattern", {}):
                found[f"{path.parent.name}-split"] = step["pattern"]["Regex"]
    return found


def _greedy(pattern: str) -> str:
    """The pattern with its possessive repeats made greedy ("\\p{L}++" -> "\\p{L}+")."""
    return re.sub(r"(?<!\\)([+*?]|\{\d+(?:,\d*)?\})\+", r"\1", pattern)


PATTERNS = ALL_PATTERNS | {f"{name} (greedy)": _greedy(p) for name, p in ALL_PATTERNS.items()
                           if _greedy(p) != p}
PUBLISHED = _published()


def _in_subset(pattern: str) -> bool:
    try:
        PatternScanner(pattern, "dfa")
    except UnsupportedPattern:  # NotDeterministic included
        return False
    return True


IN_SUBSET = sorted({p for p in list(PATTERNS.values()) + list(PUBLISHED.values()) if _in_subset(p)})


@functools.lru_cache(maxsize=None)
def _both(pattern: str) -> tuple[PatternScanner, PatternScanner]:
    """Both matchers of ``pattern``, built once per pattern (scanners are read-only, so the
    many texts checked against one pattern can share them)."""
    return PatternScanner(pattern, "dfa"), PatternScanner(pattern, "backtrack")


def _agree(pattern: str, text: str) -> None:
    automaton, backtracking = _both(pattern)
    expected = automaton._regex_spans(text)
    assert automaton.split_spans(text) == expected, (pattern, text)
    assert backtracking.split_spans(text) == expected, (pattern, text)
    ends = automaton._compiled_ends(text.encode("utf-8", "surrogatepass"))
    assert ends is not None
    assert ends.tolist() == backtracking._compiled_ends(text.encode("utf-8", "surrogatepass")).tolist()


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
        for form in (pattern, _greedy(pattern)):
            scanner = compile_scanner(form)
            assert scanner is not None and scanner.backend == "dfa", (name, form)


@pytest.mark.parametrize("pattern", IN_SUBSET)
def test_bundled_texts_agree(pattern):
    for text in _bundled_texts().values():
        _agree(pattern, text)


def eval_texts() -> list[str]:
    """The first 60,000 characters of each shared eval text; skips the calling test when the
    shared material (or its published patterns) is absent."""
    shared = shared_path()
    if shared is None or not PUBLISHED:
        pytest.skip("needs $CYBPE_SHARED/corpora/eval and $CYBPE_SHARED/vocab")
    paths = sorted((shared / "corpora" / "eval").glob("*/*.txt"))
    assert paths
    return [p.read_text(encoding="utf-8")[:60_000] for p in paths]


def test_shared_corpora_agree_on_published_patterns():
    texts = eval_texts()
    for pattern in set(PUBLISHED.values()) | {_greedy(p) for p in PUBLISHED.values()}:
        for text in texts:
            _agree(pattern, text)


@pytest.mark.parametrize("pattern", IN_SUBSET)
@settings(max_examples=150, deadline=None)
@given(text=hostile_text)
def test_hostile_text_agrees(pattern, text):
    _agree(pattern, text)


# -- random patterns from the subset -------------------------------------------------------

_CLASSES = ["a", "b", "'", " ", r"\n", r"\r", r"\s", r"\S", r"\p{L}", r"\p{N}", r"\p{Lu}",
            r"\p{Ll}", r"\p{M}", r"[^\s\p{L}\p{N}]", r"[^\r\n\p{L}\p{N}]", r"[a-c]", r"[\u00e0-\u00ff]",
            "é", ".", r"(?i:s)", r"(?i:k)", r"\P{L}", "[ab']"]


def _patterns() -> st.SearchStrategy[str]:
    """Alternations of sequences that each start with something that reads a character (so
    the pattern cannot match the empty string), then any repeats, groups and a lookahead."""
    cls = st.sampled_from(_CLASSES)
    at_least_one = st.sampled_from(["", "+", "{1,3}", "{2}", "+?", "++", "{1,3}+", "{1,3}?"])
    any_count = st.sampled_from(["", "+", "*", "?", "+?", "*?", "??", "{0,2}", "{1,3}?", "*+", "?+"])
    look = st.sampled_from(["", "", "", r"(?!\S)", r"(?=\s)", r"(?!\p{L})", r"(?=a)", "$", r"\Z"])

    def sequence(inner):
        group = st.builds(lambda alts, r: "(?:" + "|".join(alts) + ")" + r,
                          st.lists(inner, min_size=1, max_size=3), st.sampled_from(["", "+", "{1,2}"]))
        optional_group = st.builds(lambda g, r: g + r, group, st.sampled_from(["?", "*", "*?"]))
        head = st.builds(lambda c, r: c + r, cls, at_least_one) | group
        tail = st.lists(st.builds(lambda c, r: c + r, cls, any_count) | group | optional_group, max_size=2)
        return st.builds(lambda h, t, la: h + "".join(t) + la, head, tail, look)

    leaf = st.builds(lambda c, r: c + r, cls, at_least_one)
    alternative = st.recursive(leaf, sequence, max_leaves=5)
    return st.builds(lambda alts, last: "|".join(alts + ([last] if last else [])),
                     st.lists(alternative, min_size=1, max_size=4), st.sampled_from(["", r"\s", "."]))


_RANDOM_TEXT = st.lists(st.sampled_from(["a", "b", "'", "s", "S", "ſ", "K", "k", "é", "É", "中", "\u0301",
                                         "7", " ", "  ", "\n", "\r\n", "\t", "!", ".", "ab", "\u00a0"]),
                        max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(pattern=_patterns(), texts=st.lists(_RANDOM_TEXT, min_size=1, max_size=4))
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


def regex_spans(pattern: str, text: str) -> list[tuple[int, int]]:
    return oracle_spans(regex.compile(pattern), text)


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
