"""One contract, every registered pre-tokenizer, both the compiled and the regex path."""

from __future__ import annotations

import random

import pytest
import regex

import cybpe

# The `regex` pre-tokenizer needs its pattern; every other built-in has defaults for all params.
EXTRA_PARAMS = {"regex": {"pattern": r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+"}}
NAMES = [info["name"] for info in cybpe.list_pretokenizers()]

WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000"
HOSTILE = [
    "",
    " ",
    "\r\n\r\n  \r\n\t\n",
    "x'ſt", "I'LL we'Re they'VE it'S", "'s'S'''t",
    "हिन्दी विकिपीडिया", "ภาษาไทย", "မြန်မာ", "தமிழ்", "مَرْحَبًا", "e\u0301te\u0301",
    "👨\u200d👩\u200d👧 👍🏽 🏳️\u200d🌈",
    "١٢٣ १२३ ૧૨ ½ ² Ⅻ 12345678 abc123def",
    "a\ud800b \udfff", "\ud83d",  # lone surrogates: treated as non-letter, non-number characters
    "XMLHttpRequest ǅungla ABCdef",
    "path/to/file.py:12 // comment\n",
    WHITESPACE,
]


def build(name: str, force_regex: bool) -> cybpe.PreTokenizer:
    pre = cybpe.get_pretokenizer(name, **EXTRA_PARAMS.get(name, {}))
    return pre.with_regex_only() if force_regex else pre


@pytest.fixture(params=[False, True], ids=["default", "regex"])
def force_regex(request):
    return request.param


def fuzz_texts(seed: int, n: int = 200) -> list[str]:
    rng = random.Random(seed)
    alphabet = list(WHITESPACE) + list("aZ'sSlLdDtT09._/-") + [
        "ſ", "K", "ǅ", "ि", "्", "क", "ั", "ก", "၀", "١", "½", "👍", "\u200d", "🏽", "中", "\u0301", "\ud800",
    ]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(n)]


@pytest.mark.parametrize("name", NAMES)
def test_pieces_concatenate_and_spans_cover(name, force_regex):
    pre = build(name, force_regex)
    for text in HOSTILE + fuzz_texts(hash(name) & 0xFFFF):
        pieces = pre.split(text)
        assert "".join(pieces) == text
        assert all(pieces), "no empty pieces"
        spans = pre.split_spans(text)
        assert [text[s:e] for s, e in spans] == pieces
        pos = 0
        for s, e in spans:
            assert s == pos and e > s
            pos = e
        assert pos == len(text)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_and_empty(name, force_regex):
    pre = build(name, force_regex)
    assert pre.split("") == [] and pre.split_spans("") == []
    text = "".join(HOSTILE)
    assert pre.split(text) == pre.split(text) == build(name, force_regex).split(text)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("char", ["a", " ", "\n", "^", "1", "\u0301", "中", "\r\n"])
@pytest.mark.parametrize("size", [100_000, pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_long_runs_of_one_class(name, char, size):
    """A long run of one class (1M characters in the full run) finishes (no recursion limit, no
    hang) and splits as on the regex path, whose pieces are the pattern's matches read by the
    regex module itself."""
    text = char * (size // len(char)) + "a"
    fast, slow = build(name, False), build(name, True)
    pieces = slow.split(text)
    if slow.refine is None:  # the regex path is the pattern's matches (a refine step reshapes them)
        assert pieces == [m.group() for m in regex.finditer(slow.pattern, text)]
    assert "".join(pieces) == text
    assert fast.split(text) == pieces
    assert fast.split_spans(text) == slow.split_spans(text)


@pytest.mark.parametrize("name", NAMES)
def test_spec_round_trip_and_pickle(name):
    import pickle

    pre = build(name, False)
    spec = pre.spec()
    assert spec["name"] == name and spec["version"]
    again = cybpe.pretokenizer_from_spec(spec)
    assert cybpe.PreTokenizer.from_spec(spec) == again
    assert again == pre
    assert pickle.loads(pickle.dumps(pre)) == pre


@pytest.mark.parametrize("name", NAMES)
def test_rejects_non_str(name):
    pre = build(name, False)
    with pytest.raises(TypeError):
        pre.split(b"bytes")  # type: ignore[arg-type]
