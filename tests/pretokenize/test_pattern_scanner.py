"""The compiled-pattern matcher against the regex module: same spans on every pattern it takes."""

from __future__ import annotations

import pickle

import pytest
import regex
from hypothesis import given, settings

import cybpe
from cybpe.pretokenize.pattern_compiler import UnsupportedPattern, compile_pattern
from cybpe.pretokenize.pattern_scanner import PatternScanner, compile_scanner
from support import CUSTOM_PATTERNS as CUSTOM, examples
from support import all_patterns, hostile_text, shared_path
from support import bundled_texts as _bundled_texts

ALL_PATTERNS = all_patterns()

UNSUPPORTED = {
    "word class": r"\w+|\W",  # \w and \d differ between re and regex
    "digit class": r"\d+|\D",
    "lookbehind": r"(?<=a)b|.",
    "backreference": r"(a)\1|.",
    "script property": r"\p{Han}+|.",
    "nullable": r"a*",
    "POSIX class": r"[[:alpha:]]+|.|\n",  # re reads this as a different set
    "set intersection": r"[\p{L}&&a-z]+|.",
    "word boundary": r"\b\p{L}+|.",
}

def _scanner(pattern: str) -> PatternScanner:
    scanner = compile_scanner(pattern)
    assert scanner is not None, pattern
    return scanner




@pytest.mark.parametrize("name", list(ALL_PATTERNS))
def test_bundled_texts_give_the_regex_spans(name):
    scanner = _scanner(ALL_PATTERNS[name])
    for label, text in _bundled_texts().items():
        assert scanner.split_spans(text) == scanner._regex_spans(text), (name, label)


@pytest.mark.parametrize("name", list(ALL_PATTERNS))
@settings(max_examples=examples(120), deadline=None)
@given(text=hostile_text)
def test_hostile_text_gives_the_regex_spans(name, text):
    scanner = _scanner(ALL_PATTERNS[name])
    assert scanner.split_spans(text) == scanner._regex_spans(text)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALL_PATTERNS))
def test_eval_corpora_give_the_regex_spans(name):
    shared = shared_path()
    if shared is None:
        pytest.skip("needs $CYBPE_SHARED/corpora/eval (the shared corpora)")
    scanner = _scanner(ALL_PATTERNS[name])
    for path in sorted((shared / "corpora" / "eval").glob("*/*.txt")):
        text = path.read_text(encoding="utf-8")[:150_000]
        assert scanner.split_spans(text) == scanner._regex_spans(text), (name, path.name)


def test_long_runs_and_utf8_ends():
    scanner = _scanner(ALL_PATTERNS["cl100k"])
    for text in (" " * 100_000 + "a", "\n" * 50_000, "a" * 100_000, "1" * 10_000 + "x",
                 "é" * 30_000 + " " + "中" * 30_000, "'" * 5000 + "ll"):
        spans = scanner.split_spans(text)
        assert spans == scanner._regex_spans(text)
        data = text.encode("utf-8")
        ends = scanner.split_utf8(data).tolist()
        assert ends == [len(text[:end].encode("utf-8")) for _, end in spans]


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_patterns_stay_on_the_regex_module(name):
    pattern = UNSUPPORTED[name]
    assert compile_scanner(pattern) is None
    pre = cybpe.get_pretokenizer("regex", pattern=pattern)
    assert not pre.uses_scanner
    text = "Hello wörld 123 ab abab ÀB\n"
    assert "".join(pre.split(text)) == text


def test_compiler_rejects_what_it_cannot_translate():
    with pytest.raises(UnsupportedPattern):
        compile_pattern(r"(?m)^a|.")  # multiline anchors
    with pytest.raises(UnsupportedPattern):
        compile_pattern("\U000f0001|.")  # the placeholders' private-use range
    with pytest.raises(UnsupportedPattern):
        compile_pattern(r"(?i:\p{Lu})|.")  # a cased property under (?i)


def test_step_budget_falls_back_to_the_regex_module():
    """A pattern that backtracks quadratically here: past the budget the compiled scan gives
    up (None) and split/split_utf8 still give the regex module's spans."""
    pattern = r"\s*y|\s|."
    scanner = _scanner(pattern)
    text = " " * 5000 + "x"
    assert scanner._compiled_ends(text.encode()) is None
    expected = scanner._regex_spans(text)
    assert scanner.split_spans(text) == expected
    assert scanner.split_utf8(text.encode()).tolist() == [end for _, end in expected]
    assert scanner._compiled_ends((" " * 100 + "x").encode()) is not None


def test_custom_pretokenizer_uses_the_compiled_pattern_and_matches_forced_regex(force_regex):
    pattern = ALL_PATTERNS["cl100k"]
    pre = cybpe.get_pretokenizer("regex", pattern=pattern)
    assert isinstance(pre.scanner, PatternScanner) and pre.uses_scanner
    trained = cybpe.train(list(_bundled_texts().values()), vocab_size=600, pretokenizer=pre)
    assert isinstance(trained.pretokenizer.scanner, PatternScanner)
    force_regex(True)
    forced = cybpe.train(list(_bundled_texts().values()), vocab_size=600, pretokenizer=pre)
    assert not forced.pretokenizer.uses_scanner
    assert forced.vocab.tokens == trained.vocab.tokens
    for text in list(_bundled_texts().values()) + [" " * 3000 + "a", "x\ud800y"]:
        force_regex(True)
        expected = trained.encode_ordinary(text)
        force_regex(False)
        assert trained.encode_ordinary(text) == expected


@pytest.mark.parametrize("ranks, pattern_source", [
    ("cl100k_base", "built-in"),  # cybpe's cl100k string (possessive repeats)
    ("cl100k_base", "tiktoken"),  # tiktoken's own string (greedy repeats)
    ("o200k_base", "tiktoken"),
])
def test_custom_pattern_ids_equal_tiktoken(ranks, pattern_source):
    """Through the custom-pattern path (the automaton backend): tiktoken's ids."""
    import json

    tiktoken = pytest.importorskip("tiktoken")
    shared = shared_path()
    if shared is None:
        pytest.skip(f"needs $CYBPE_SHARED/vocab/{ranks}.tiktoken")
    base = cybpe.Tokenizer.from_tiktoken(shared / "vocab" / f"{ranks}.tiktoken")
    pattern = base.pretokenizer.pattern
    if pattern_source == "tiktoken":
        encodings = json.loads((shared / "vocab" / "tiktoken_encodings.json").read_text())
        pattern = encodings[ranks]["pat_str"]
    custom = cybpe.Tokenizer(base.vocab, cybpe.get_pretokenizer("regex", pattern=pattern))
    assert isinstance(custom.pretokenizer.scanner, PatternScanner)
    assert custom.pretokenizer.scanner.backend == "dfa"
    enc = tiktoken.Encoding("custom", pat_str=pattern, special_tokens={},
                            mergeable_ranks={b: i for i, b in enumerate(base.vocab.tokens)})
    for path in sorted((shared / "corpora" / "eval").glob("*/*.txt"))[:20]:
        text = path.read_text(encoding="utf-8")[:100_000]
        assert custom.encode_ordinary(text) == enc.encode_ordinary(text), path.name


def test_pickle_and_repr():
    scanner = _scanner(CUSTOM["lazy"])
    clone = pickle.loads(pickle.dumps(scanner))
    text = "Pickled patterns split alike 12"
    assert clone.split(text) == scanner.split(text) == regex.findall(CUSTOM["lazy"], text)
    assert "PatternScanner(" in repr(scanner)


def test_hostile_patterns_compile_or_fall_back_and_agree():
    """Deep nesting, huge counted repeats (a class repeat stays one instruction; a group
    repeat past the program limit stays on the regex module), nested atomic groups and
    lookaheads: spans always equal the regex module's."""
    text = "aaabc xabab ab " * 200 + "a" * 5000
    cases = {
        "(" * 200 + "a" + ")" * 200 + "|.": True,
        r"\p{L}{1,100000}|.": True,
        r"(?:ab){1,20000}|.|\n": False,  # 40,000 instructions: too long a program
        r"(?>(?>(?>a+)b)c)|(?=x)x|[\s\S]": True,
        r"(?:a|bc)+?(?=\s|$)|(?:a|bc)+|[\s\S]": True,
    }
    for pattern, compiles in cases.items():
        scanner = compile_scanner(pattern)
        assert (scanner is not None) == compiles, pattern
        if scanner is not None:
            assert scanner.split_spans(text) == scanner._regex_spans(text), pattern


def test_backtrack_frames_are_bounded():
    """A loop over a group pushes frames per character; past the frame limit (4M) the
    compiled scan gives up and the regex module gives the spans. The automaton keeps no frames:
    it splits the same text itself."""
    pattern = r"(?:a|bc)+|\s+|."
    scanner = PatternScanner(pattern, "backtrack")
    text = "a" * 2_500_000  # two frames per character
    assert scanner._compiled_ends(text.encode()) is None
    assert scanner.split_spans(text) == [(0, len(text))]
    assert scanner._compiled_ends(("a" * 100_000).encode()) is not None
    automaton = _scanner(pattern)
    assert automaton.backend == "dfa"
    assert automaton._compiled_ends(text.encode()).tolist() == [len(text)]


def test_case_folding_follows_the_regex_module_not_python():
    """U+A7CB (Unicode 16) is the capital of U+0264; Python 3.11's tables (Unicode 14) do not
    know it, the regex module does, and (?i) must follow the regex module."""
    scanner = _scanner("(?i:\u0264+|straße|k)|.")
    text = "\u0264\ua7cb x \ua7cb\u0264 STRAẞE Kk\u212a"
    assert scanner.split_spans(text) == scanner._regex_spans(text)
    assert "\u0264\ua7cb" in scanner.split(text)


@pytest.mark.parametrize("name", list(ALL_PATTERNS) + list(UNSUPPORTED))
def test_the_python_310_parse_gives_the_same_program(name, monkeypatch):
    """Python 3.10's parser reads possessive repeats and atomic groups only after cybpe's
    rewrite (cybpe/pretokenize/re_parser.py); that path, run here on any Python, compiles to the same
    program as the native parse (and refuses the same patterns)."""
    import cybpe.pretokenize.pattern_compiler as compiler
    from cybpe.pretokenize.re_parser import parse_rewritten

    pattern = ALL_PATTERNS.get(name) or UNSUPPORTED[name]
    patterns = [pattern, r"a*+b|[+*]++|\++|x{2,3}+|(?:ab)?+c|a??b|a+?|[]a]++|[^]]*+|\[+|(?i:ab)++|(?>a|b)*|."]

    def program(text):
        try:
            compiled = compile_pattern(text)
        except UnsupportedPattern:
            return None
        return compiled.code, compiled.classes

    native = [program(p) for p in patterns]
    monkeypatch.setattr(compiler, "parse", parse_rewritten)
    assert [program(p) for p in patterns] == native
    assert (native[0] is None) == (name in UNSUPPORTED)
