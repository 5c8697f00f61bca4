"""A tokenizer with a Unicode normalizer (NFC, as Qwen's) encodes each text as the
normalized text, lone surrogates replaced first: single calls (where ASCII text skips the
normalizer, being every form already) and the batch path (which normalizes each text, then
encodes the batch in GIL-free passes), against the same tokenizer without a normalizer given
the normalized text."""

from __future__ import annotations

import unicodedata

import pytest

import cybpe
from cybpe.errors import EncodingError
from cybpe.pretokenize.text import clean_surrogates
from support import UDHR_DIR


class Sub(str):
    pass


TEXTS = [
    "plain ASCII, with digits 12345 and punctuation!", "", " ", "cafe\u0301 na\u0308ive e\u0301e\u0301",
    "caf\u00e9 already composed", "\ufb01ne \ufb02ow \u2460 \uff21\uff22", "\u1100\u1161\u11a8 \uac01",
    "A\u030a \u212b \u00c5", "lone \ud800 surrogate e\u0301", "\u0915\u094d\u0937 \u0e01\u0e33",
    "x" * 3000 + "e\u0301" * 500, Sub("subclass e\u0301"), Sub("ascii subclass"),
]


@pytest.fixture(scope="module")
def plain():
    return cybpe.train([(UDHR_DIR / "en.txt").read_text(encoding="utf-8"),
                        (UDHR_DIR / "ko.txt").read_text(encoding="utf-8")], vocab_size=400, progress=False)


@pytest.mark.parametrize("form", ["NFC"])
def test_single_and_batch_equal_the_normalized_text(plain, form):
    tok = cybpe.Tokenizer(plain.vocab, plain.pretokenizer, normalizer=form)
    expected = [plain.encode_ordinary(unicodedata.normalize(form, clean_surrogates(str(t)))) for t in TEXTS]
    assert [tok.encode_ordinary(t) for t in TEXTS] == expected
    for threads in (None, 1, 2):
        assert tok.encode_ordinary_batch(TEXTS, num_threads=threads) == expected, threads
    assert tok.encode_ordinary_batch(TEXTS * 40)[len(TEXTS) * 39:] == expected  # a long batch


def test_batch_with_a_normalizer_refuses_what_is_not_text(plain):
    tok = cybpe.Tokenizer(plain.vocab, plain.pretokenizer, normalizer="NFC")
    with pytest.raises(EncodingError):
        tok.encode_ordinary_batch(["ok", b"bytes"])
    with pytest.raises(EncodingError):
        tok.encode_ordinary_batch(["ok", 5])
