"""``encode_scanned_words`` (cybpe/encode/fastpath.pyx): one compiled pass giving a text's ids,
their character spans and, for each id, the index of the pre-tokenizer piece it comes from
(the word ids of a patched transformers tokenizer). Checked against the two-step reference:
``encode_scanned_spans`` for the ids and spans, and each piece of ``PreTokenizer.split``
encoded on its own for the piece indexes, on real text of many scripts and on hostile text,
with hand-written and compiled-pattern scanners."""

from __future__ import annotations

import random

import numpy as np
import pytest

import cybpe
from cybpe.encode.fastpath import encode_scanned_spans, encode_scanned_words
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.text import clean_surrogates
from support import UDHR_DIR, shared_path

ODD = ["", " ", "  \n\n", "\r\n", "'s 'LL", "e\u0301", "\u093f\u093f", "😀👨\u200d👩\u200d👧", "\x00",
       "\U0010ffff", "\ufeff", "123456789", "١٢٣", "\u3000中文", "각", "a" * 300, "\u0301" * 50,
       "\ud800 lone", "!!!???", "\t\t x"]


def _texts() -> list[str]:
    samples = [p.read_text(encoding="utf-8")[:3000] for p in sorted(UDHR_DIR.glob("*.txt"))]
    rng = random.Random(4)
    chars = sorted(set("".join(samples)))
    mixed = ["".join(rng.choice(chars + ODD) for _ in range(rng.randint(1, 60))) for _ in range(200)]
    return samples + mixed + ODD


def _expected_words(tok: cybpe.Tokenizer, text: str) -> list[int]:
    out: list[int] = []
    for k, piece in enumerate(tok.pretokenizer.split(text)):
        out += [k] * len(tok._encoder.encode_str_pieces([piece]))
    return out


def _check(tok: cybpe.Tokenizer, scanner, texts: list[str]) -> None:
    for text in texts:
        text = clean_surrogates(text)  # (what the patch passes: a text that encodes as UTF-8)
        data = text.encode("utf-8")
        got = encode_scanned_words(tok._encoder, scanner, data)
        assert got is not None
        ids, spans, words = got
        want_ids, want_spans = encode_scanned_spans(tok._encoder, scanner, data)
        assert ids.tolist() == want_ids.tolist(), text
        assert np.array_equal(spans, want_spans), text
        assert words.dtype == np.int64 and words.tolist() == _expected_words(tok, text), text


@pytest.fixture(scope="module")
def trained() -> cybpe.Tokenizer:
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
    return cybpe.train(texts, vocab_size=700, progress=False)


def test_piece_indexes_on_a_trained_vocabulary(trained):
    _check(trained, trained.pretokenizer.compiled_scanner, _texts())


def test_piece_indexes_with_a_compiled_pattern(trained):
    """A pattern of the user's own, split by the compiled-pattern scanner."""
    custom = PreTokenizer("words-and-rest", r"\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+")
    tok = cybpe.Tokenizer(trained.vocab, custom)
    assert custom.compiled_scanner is not None
    _check(tok, custom.compiled_scanner, _texts())


@pytest.mark.skipif(shared_path() is None, reason="needs the shared vocabularies (CYBPE_SHARED)")
@pytest.mark.parametrize("name", ["cl100k_base", "llama3"])
def test_piece_indexes_on_real_vocabularies(name):
    shared = shared_path()
    tok = (cybpe.Tokenizer.from_hf(shared / "vocab" / "llama3" / "tokenizer.json") if name == "llama3"
           else cybpe.Tokenizer.from_tiktoken(shared / "vocab" / f"{name}.tiktoken"))
    docs = [p.read_text(encoding="utf-8")[:4000] for p in sorted((shared / "corpora" / "eval" / "docs").glob("*.txt"))]
    _check(tok, tok.pretokenizer.compiled_scanner, docs + _texts())
