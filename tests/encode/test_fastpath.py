"""The one-call encode path (encode_text, encode_texts_scanned) against the two-step path it
replaced (split by the regex module, then RankEncoder.encode_str_pieces), for hand-written
scanners and compiled patterns, on real text, hostile text and past the matcher's budget."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.encode.fastpath import (
    OUTPUT_ARRAY, OUTPUT_COUNT, OUTPUT_LIST, encode_text, encode_texts_flat, encode_texts_scanned,
)
from cybpe.pretokenize.pattern_scanner import PatternScanner
from cybpe.pretokenize.scanner import Scanner
from cybpe.pretokenize.text import clean_surrogates
from support import DATA_DIR, UDHR_DIR, examples

ATOMS = ["a", "Z", "é", "ß", "ſ", "中", "ि", "्", "٣", "½", "7", "0", " ", "  ", "\t", "\n", "\r",
         "\u00a0", "\u3000", "\u2028", "\x85", "\x0b", "'", "s", "ll", "LL", "!", ".", "\ud800",
         "\udfff", "🙂", "\u200d", "\x00", "\u0301", "<|endoftext|>", "<|", "|>", "hello", " world"]
hostile_text = st.lists(st.sampled_from(ATOMS), max_size=60).map("".join) | st.text(max_size=80)

# Quadratic for a backtracking matcher on "a" * n + "c" (every start gives back the whole run):
# past its step budget it gives up and the regex module splits.
BACKTRACKING = r"\p{L}+b|\p{L}|\s+|[^\s\p{L}]+"


def _texts() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
    texts.append((DATA_DIR / "python_sample.txt").read_text(encoding="utf-8"))
    return texts + ["", "a", " ", "x\ud800y \udfff", "a" * 2000, " " * 3000 + "a", "12345678 ½²"]


def _tokenizer(trained=[]) -> cybpe.Tokenizer:
    if not trained:  # trained once per session on the bundled texts, cl100k pattern
        trained.append(cybpe.train(_texts()[:8], vocab_size=700, pretokenizer="cl100k"))
    return trained[0]


def _pretokenizers(built={}):
    if not built:
        cl100k = _tokenizer().pretokenizer
        built.update({
            "cl100k-scanner": cl100k,
            "cl100k-pattern": cybpe.get_pretokenizer("regex", pattern=cl100k.pattern),
            "backtracking-pattern": cybpe.get_pretokenizer("regex", pattern=BACKTRACKING),
        })
    return built


def _with(pre, built={}) -> cybpe.Tokenizer:
    """The trained vocabulary with pre-tokenizer ``pre`` (built once per pre-tokenizer)."""
    if pre.pattern not in built:
        built[pre.pattern] = cybpe.Tokenizer(_tokenizer().vocab, pre)
    return built[pre.pattern]


@pytest.fixture(scope="module", params=["cl100k-scanner", "cl100k-pattern", "backtracking-pattern"])
def case(request):
    pre = _pretokenizers()[request.param]
    kind = Scanner if request.param.endswith("scanner") else PatternScanner
    assert isinstance(pre.compiled_scanner, kind)
    return _tokenizer(), pre


def _reference(tok: cybpe.Tokenizer, pre, text: str) -> list[int]:
    pieces = pre.with_regex_only().split(clean_surrogates(text))
    return tok._encoder.encode_str_pieces(pieces).tolist()


def _check(tok, pre, text: str) -> None:
    expected = _reference(tok, pre, text)
    got = encode_text(tok._encoder, pre.compiled_scanner, text, OUTPUT_LIST)
    if got is None:  # past the matcher's budget: only a backtracking pattern may give up
        assert isinstance(pre.compiled_scanner, PatternScanner)
    else:
        assert got == expected
        array = encode_text(tok._encoder, pre.compiled_scanner, text, OUTPUT_ARRAY)
        assert array.dtype == np.uint32 and array.tolist() == expected
        assert encode_text(tok._encoder, pre.compiled_scanner, text, OUTPUT_COUNT) == len(expected)
    custom = _with(pre)
    assert custom.encode_ordinary(text) == expected
    assert custom.count(text) == len(expected)
    assert custom.encode_to_numpy(text).tolist() == expected


def test_one_call_path_equals_split_then_encode(case):
    tok, pre = case
    for text in _texts():
        _check(tok, pre, text)


@settings(max_examples=examples(150), deadline=None)
@given(text=hostile_text)
def test_one_call_path_on_hostile_text(text):
    tok = _tokenizer()
    for pre in _pretokenizers().values():
        _check(tok, pre, text)


def test_backtracking_pattern_gives_up_and_the_regex_module_decides():
    tok = _tokenizer()
    pre = _pretokenizers()["backtracking-pattern"]
    text = "a" * 3000 + "c"
    assert encode_text(tok._encoder, pre.compiled_scanner, text) is None
    custom = _with(pre)
    assert custom.encode_ordinary(text) == _reference(tok, pre, text)
    batch = ["ab", text, "hello world", text + " x"]
    assert custom.encode_ordinary_batch(batch, num_threads=2) == [_reference(tok, pre, t) for t in batch]


def test_batch_equals_single_calls(case):
    tok, pre = case
    custom = _with(pre)
    texts = _texts()
    expected = [_reference(tok, pre, t) for t in texts]
    for threads in (1, 2, 3):
        assert custom.encode_ordinary_batch(texts, num_threads=threads) == expected
    assert encode_texts_scanned(tok._encoder, pre.compiled_scanner, texts) == expected


def test_output_kind_is_checked():
    tok = _tokenizer()
    with pytest.raises(ValueError):
        encode_text(tok._encoder, tok.pretokenizer.compiled_scanner, "abc", 7)


def test_encode_default_arguments_take_the_fast_path_only_without_specials():
    tok = cybpe.Tokenizer(_tokenizer().vocab, "cl100k")
    specials = {"<|endoftext|>": tok.n_vocab, "<|fim|>": tok.n_vocab + 1}
    vocab = cybpe.Vocab(tok.vocab.tokens, tok.vocab.merges, specials, tok.vocab.ignore_merges)
    with_specials = cybpe.Tokenizer(vocab, "cl100k")
    for text in ["plain text <| not special |>", "<|fim", "a <|endoftext|> b", "<|fim|>"]:
        expected = with_specials.encode_ordinary(text)
        if "<|endoftext|>" in text or "<|fim|>" in text:
            with pytest.raises(cybpe.errors.DisallowedSpecialTokenError):
                with_specials.encode(text)
            assert with_specials.encode(text, disallowed_special=()) == expected
        else:
            assert with_specials.encode(text) == expected
            assert with_specials.encode(text, allowed_special=[]) == expected


def test_force_regex_switch_is_read_per_call(force_regex):
    tok = _tokenizer()
    text = "Hello world, 12345 " * 3
    fast = tok.encode_ordinary(text)
    force_regex(True)
    assert not tok.pretokenizer.uses_scanner
    assert tok.encode_ordinary(text) == fast and tok.count(text) == len(fast)
    force_regex(False)
    assert tok.pretokenizer.uses_scanner


@pytest.mark.slow
@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_non_ascii_text_around_the_cached_utf8_limit(extra):
    """A non-ASCII str up to 2**20 characters is read through the UTF-8 form CPython keeps in
    it, a longer one through a temporary copy: either way, and on a second call, the same ids;
    a lone surrogate at the end still becomes U+FFFD. The batch calls read texts the same way
    (Utf8Texts' cache_chars)."""
    tok, pre = _tokenizer(), _pretokenizers()["cl100k-scanner"]
    unit = "Grüße, 世界 and ½ more. "
    text = (unit * (((1 << 20) + extra) // len(unit) + 1))[:(1 << 20) + extra]
    assert len(text) == (1 << 20) + extra
    expected = _reference(tok, pre, text)
    for _ in range(2):
        assert encode_text(tok._encoder, pre.compiled_scanner, text, OUTPUT_LIST) == expected
    with_surrogate = text[:-1] + "\ud800"
    assert encode_text(tok._encoder, pre.compiled_scanner, with_surrogate, OUTPUT_LIST) == \
        _reference(tok, pre, with_surrogate)
    batch = [text, with_surrogate, "Grüße \udfff", text]
    expected_batch = [expected, _reference(tok, pre, with_surrogate),
                      _reference(tok, pre, "Grüße \udfff"), expected]
    for _ in range(2):
        assert encode_texts_scanned(tok._encoder, pre.compiled_scanner, batch) == expected_batch
    ids, row_ends, _spans = encode_texts_flat(tok._encoder, pre.compiled_scanner, batch)
    assert [row.tolist() for row in np.split(ids, row_ends[:-1])] == expected_batch
