"""Offsets (against HF tokenizers, tiktoken and a pure-Python reference) and token budgets
(truncate, count(limit=), chunks, padded batches), each checked against the full encode."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

import cybpe
from cybpe.errors import DisallowedSpecialTokenError, EncodingError, InvalidParameterError
from cybpe.reference.offsets import reference_offsets

HOSTILE_ATOMS = [
    " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u3000", "\xa0", "'s", "'LL", "a", "Z", "ǅ", "ſ", "中文",
    "한", "ж", "\u0301", "e\u0301", "\u093f", "हिन्दी", "ภาษาไทย", "😀", "👨\u200d👩\u200d👧", "👍🏽",
    "\u200d", "0", "1234567", "١٢٣", "½", "!", "—", "\x00", "\ufeff", "\U0010ffff", "\ud800", "\udfff",
    "ᄀ", "ᅡ", "ᆨ", "Å", "A\u030a", "<|endoftext|>",
]


def hostile_texts(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(HOSTILE_ATOMS) for _ in range(rng.randrange(0, 40))) for _ in range(n)]


@pytest.fixture(scope="module")
def cl100k(shared_dir):
    return cybpe.Tokenizer.from_tiktoken(shared_dir / "vocab" / "cl100k_base.tiktoken")


def real_texts(shared_dir, size: int = 6000) -> list[str]:
    docs = sorted((shared_dir / "corpora" / "eval" / "docs").glob("*.txt"))
    return [p.read_text(encoding="utf-8")[:size] for p in docs]


def trained() -> cybpe.Tokenizer:
    text = "hello world, héllo wörld 中文字符 😀😀 " * 20
    return cybpe.train([text], 300, "cl100k", ["<|endoftext|>"])


# -- offsets ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("model", ["llama3", "gpt4o-hf", "qwen3"])
def test_offsets_equal_hf_tokenizers(shared_dir, model):
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_dir / "vocab" / model / "tokenizer.json"
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = cybpe.Tokenizer.from_hf(path)
    texts = real_texts(shared_dir) + [t for t in hostile_texts(7) if not any("\ud800" <= c <= "\udfff" for c in t)]
    texts = [t.replace("<|endoftext|>", "<|x|>") for t in texts]
    for text in texts:
        enc = hf.encode(text, add_special_tokens=False)
        ids, spans = tok.encode_with_offsets(text)
        assert ids == enc.ids, text[:80]
        assert spans == [tuple(o) for o in enc.offsets], text[:80]


@pytest.mark.parametrize("make", ["cl100k", "trained", "regex"])
def test_offsets_equal_the_reference_on_hostile_text(shared_dir, make, cl100k):
    if make == "cl100k":
        tok = cl100k
    elif make == "trained":
        tok = trained()
    else:  # a pre-tokenizer with no compiled scanner: the Python path
        tok = cybpe.Tokenizer(cl100k.vocab, cybpe.get_pretokenizer("cl100k").with_regex_only())
    for text in hostile_texts(11) + real_texts(shared_dir, 2000):
        ids, spans = tok.encode_with_offsets(text, disallowed_special=())
        assert ids == tok.encode(text, disallowed_special=())
        assert spans == reference_offsets(text, tok.decode_tokens_bytes(ids)), repr(text)


def test_offset_rule_on_examples(cl100k):
    ids, spans = cl100k.encode_with_offsets("i⭢j")
    assert len(ids) > 2 and all(spans[k] == (1, 2) for k in range(1, len(ids) - 1))
    assert cl100k.encode_with_offsets("") == ([], [])
    # a lone surrogate is one character, encoded as U+FFFD
    ids, spans = cl100k.encode_with_offsets("a\ud800b")
    assert ids == cl100k.encode("a\ufffdb") and spans[-1][1] == 3


def test_offsets_with_special_tokens(cl100k):
    text = "hi <|endoftext|> there😀"
    ids, spans = cl100k.encode_with_offsets(text, allowed_special="all")
    assert ids == cl100k.encode(text, allowed_special="all")
    k = ids.index(cl100k.special_tokens["<|endoftext|>"])
    assert text[spans[k][0]:spans[k][1]] == "<|endoftext|>"
    assert spans[-1][1] == len(text)
    with pytest.raises(DisallowedSpecialTokenError):
        cl100k.encode_with_offsets(text)
    with pytest.raises(EncodingError):
        cl100k.encode_with_offsets(b"bytes")  # type: ignore[arg-type]


def test_offsets_under_an_nfc_normalizer(shared_dir):
    tok = cybpe.Tokenizer.from_hf(shared_dir / "vocab" / "qwen3" / "tokenizer.json")
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(shared_dir / "vocab" / "qwen3" / "tokenizer.json"))
    for text in ["cafe\u0301 au lait", "A\u030a\u0301x", "e\u0301\u0301 q\u0301", "한국 \u1100\u1161\u11a8 ok"]:
        enc = hf.encode(text, add_special_tokens=False)
        ids, spans = tok.encode_with_offsets(text)
        assert ids == enc.ids
        assert spans == [tuple(o) for o in enc.offsets], text


def test_numpy_and_batch_offsets(shared_dir, cl100k):
    texts = hostile_texts(3, 200) + real_texts(shared_dir, 3000)
    texts = [t.replace("<|endoftext|>", "") for t in texts]
    for threads in (1, 3):
        batch = cl100k.encode_batch_with_offsets(texts, num_threads=threads)
        for text, (ids, spans) in zip(texts, batch):
            one_ids, one_spans = cl100k.encode_with_offsets_to_numpy(text)
            assert ids.dtype == np.uint32 and spans.dtype == np.int64 and spans.shape == (len(ids), 2)
            assert ids.tolist() == one_ids.tolist() and spans.tolist() == one_spans.tolist()
    with pytest.raises(DisallowedSpecialTokenError):
        cl100k.encode_batch_with_offsets(["ok", "<|endoftext|>"])


def test_decode_with_offsets_equals_tiktoken(shared_dir, cl100k):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(shared_dir / "vocab" / "cl100k_base.tiktoken"))
    enc = tiktoken.Encoding("cl100k_base", pat_str=cl100k.pretokenizer.pattern, mergeable_ranks=ranks,
                            special_tokens=cl100k.special_tokens)
    for text in hostile_texts(5) + real_texts(shared_dir, 1500):
        text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates out
        ids = cl100k.encode(text, allowed_special="all")
        assert cl100k.decode_with_offsets(ids) == enc.decode_with_offsets(ids)
    bad = cl100k.encode("中")[:1] if len(cl100k.encode("中")) > 1 else cl100k.encode("😀")[:1]
    with pytest.raises(EncodingError):
        cl100k.decode_with_offsets(bad)


# -- budgets ---------------------------------------------------------------------------------------
def test_count_with_a_limit_is_the_capped_count(shared_dir, cl100k):
    for text in hostile_texts(13, 150) + real_texts(shared_dir, 4000):
        full = cl100k.count(text)
        for limit in (0, 1, 2, 5, full - 1, full, full + 3, 1000):
            if limit < 0:
                continue
            assert cl100k.count(text, limit=limit) == min(full, limit + 1)
    with pytest.raises(InvalidParameterError):
        cl100k.count("x", limit=-1)


def test_truncate_is_a_prefix_at_a_character_boundary(shared_dir, cl100k):
    for tok in (cl100k, cybpe.Tokenizer(cl100k.vocab, cybpe.get_pretokenizer("cl100k").with_regex_only())):
        for text in hostile_texts(17, 120) + real_texts(shared_dir, 1500):
            text = text.encode("utf-8", "replace").decode("utf-8").replace("<|endoftext|>", "")
            full = tok.encode(text)
            for n in (0, 1, 2, 3, 7, len(full) - 1, len(full), len(full) + 1):
                if n < 0:
                    continue
                ids, stop = tok.truncate(text, n)
                assert len(ids) <= n and ids == full[:len(ids)]
                assert tok.decode(ids) == text[:stop]
                assert tok.encode(text, max_tokens=n) == ids
                if len(full) <= n:
                    assert (ids, stop) == (full, len(text))
                else:  # maximal: no longer prefix within n ends between characters
                    for k in range(len(ids) + 1, n + 1):
                        assert not _clean_prefix(tok, full, k, text)


def _clean_prefix(tok, full, k, text):
    try:
        decoded = tok.decode_bytes(full[:k]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.startswith(decoded)


def test_truncate_with_specials_and_errors(cl100k):
    text = "a <|endoftext|> b"
    ids, stop = cl100k.truncate(text, 2, allowed_special="all")
    assert ids == cl100k.encode(text, allowed_special="all")[:2] and text[:stop] == "a <|endoftext|>"[:stop]
    with pytest.raises(DisallowedSpecialTokenError):
        cl100k.truncate(text, 2)
    with pytest.raises(InvalidParameterError):
        cl100k.truncate(text, -1)
    # an emoji of several byte tokens is never cut
    ids, stop = cl100k.truncate("😀😀", 1)
    assert cl100k.decode(ids) == "😀😀"[:stop]


@pytest.mark.parametrize("overlap", [0, 3])
def test_chunks_fit_and_tile(shared_dir, cl100k, overlap):
    for text in real_texts(shared_dir, 5000)[:8] + hostile_texts(19, 40):
        text = text.replace("<|endoftext|>", "")
        chunks = list(cl100k.chunks(text, 50, overlap=overlap))
        if not text:
            assert chunks == []
            continue
        assert chunks[0].start == 0 and chunks[-1].end == len(text)
        for a, b in zip(chunks, chunks[1:]):
            assert b.start > a.start
            assert b.start == a.end if overlap == 0 else b.start <= a.end
        for c in chunks:
            assert c.text == text[c.start:c.end] and 0 < cl100k.count(c.text) <= 50
        if overlap == 0:
            assert "".join(c.text for c in chunks) == text
    with pytest.raises(InvalidParameterError):
        list(cl100k.chunks("abc", 5, overlap=5))
    with pytest.raises(InvalidParameterError):
        list(cl100k.chunks("😀", 1))  # one character needs more ids than the budget


# -- padded batches --------------------------------------------------------------------------------
def test_padded_batch(shared_dir, cl100k):
    texts = hostile_texts(23, 60) + real_texts(shared_dir, 300)
    texts = [t.replace("<|endoftext|>", "") for t in texts]
    full = [cl100k.encode(t) for t in texts]
    for side in ("right", "left"):
        for threads in (1, 4):
            ids, mask = cl100k.encode_batch_to_numpy(texts, max_length=16, padding="max_length",
                                                     truncation=True, padding_side=side, pad_id=7,
                                                     num_threads=threads)
            assert ids.shape == mask.shape == (len(texts), 16) and ids.dtype == np.int64
            for row, m, want in zip(ids, mask, full):
                want = want[:16]
                kept = row[m.astype(bool)].tolist()
                assert kept == want and int(m.sum()) == len(want)
                pads = row[~m.astype(bool)]
                assert (pads == 7).all()
                if side == "right":
                    assert m[:len(want)].all()
                else:
                    assert m[16 - len(want):].all()
    ids, mask = cl100k.encode_batch_to_numpy(["a b c", "a"], pad_id=0)
    assert ids.shape == (2, 3) and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    with pytest.raises(InvalidParameterError):
        cl100k.encode_batch_to_numpy(["a b c d"], max_length=2, pad_id=0)
    with pytest.raises(InvalidParameterError):
        cl100k.encode_batch_to_numpy(["a"])
    with pytest.raises(InvalidParameterError):
        cl100k.encode_batch_to_numpy(["a"], pad_id=0, padding="max_length")


def test_offsets_and_budgets_are_thread_safe(shared_dir, cl100k):
    texts = real_texts(shared_dir, 3000)
    want = [cl100k.encode_with_offsets(t) for t in texts]
    errors = []

    def work():
        for _ in range(3):
            for t, w in zip(texts, want):
                if cl100k.encode_with_offsets(t) != w or cl100k.truncate(t, 10)[0] != w[0][:len(cl100k.truncate(t, 10)[0])]:
                    errors.append(t)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
