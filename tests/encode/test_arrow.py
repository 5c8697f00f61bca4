"""Tokenizer.encode_arrow / count_arrow (cybpe/encode/arrow.py) against encode_ordinary_batch.

Every result is compared with the list path on the same texts: the bundled samples, hostile
text, the shared evaluation corpora with the real cl100k vocabulary, nulls, empty texts,
sliced arrays (a non-zero offset), chunked arrays, large_string, binary arrays with invalid
UTF-8, and tokenizers the compiled loop cannot serve (regex pre-tokenizer, NFC normalizer, a
scanner that gives up)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.encode import arrow as arrow_module
from cybpe.errors import EncodingError, InvalidParameterError, ParameterTypeError, TooLargeError
from support import DATA_DIR, UDHR_DIR, eval_texts, examples, hostile_text

pa = pytest.importorskip("pyarrow")

BACKTRACKING = r"\p{L}+b|\p{L}|\s+|[^\s\p{L}]+"   # gives up on "a" * n + "c" (tests/encode/test_fastpath.py)


def _texts() -> list:
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
    texts.append((DATA_DIR / "python_sample.txt").read_text(encoding="utf-8"))
    return texts + ["", "a", " ", "a" * 2000, " " * 3000 + "a", "12345678 ½²", "héllo <|endoftext|> wörld",
                    "🙂\u200d🙂", "\x00\r\n\t"]


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train(_texts()[:8], vocab_size=700, pretokenizer="cl100k", special_tokens=["<|endoftext|>"])


def _expected(tok, texts, errors="strict") -> list:
    return [None if t is None else tok.encode_ordinary(t if isinstance(t, str) else t.decode("utf-8", errors))
            for t in texts]


def _no_surrogates(text: str) -> str:
    return "".join(c if not 0xD800 <= ord(c) <= 0xDFFF else "\ufffd" for c in text)


def test_equals_encode_ordinary_batch(tok):
    texts = _texts()
    expected = tok.encode_ordinary_batch(texts)
    for kind in (pa.string(), pa.large_string()):
        for threads in (1, 2, 5):
            out = tok.encode_arrow(pa.array(texts, type=kind), num_threads=threads)
            assert out.type == (pa.large_list if kind == pa.large_string() else pa.list_)(pa.uint32())
            assert out.to_pylist() == expected
            assert tok.count_arrow(pa.array(texts, type=kind), num_threads=threads).to_pylist() == [len(e) for e in expected]


def test_many_small_parts(tok, monkeypatch):
    monkeypatch.setattr(arrow_module, "PART_BYTES", 100)   # many parts per thread
    texts = _texts() * 3
    assert tok.encode_arrow(pa.array(texts), num_threads=3).to_pylist() == tok.encode_ordinary_batch(texts)


@settings(max_examples=examples(150), deadline=None)
@given(texts=st.lists(st.none() | hostile_text.map(_no_surrogates), max_size=12),
       cut=st.integers(0, 12), threads=st.integers(1, 4))
def test_hostile_text_with_nulls_and_slices(tok, texts, cut, threads):
    array = pa.array(texts, type=pa.string())
    expected = _expected(tok, texts)
    assert tok.encode_arrow(array, num_threads=threads).to_pylist() == expected
    sliced = array.slice(min(cut, len(texts)))
    assert tok.encode_arrow(sliced, num_threads=threads).to_pylist() == expected[min(cut, len(texts)):]
    counts = tok.count_arrow(sliced).to_pylist()
    assert counts == [None if e is None else len(e) for e in expected[min(cut, len(texts)):]]


def test_nulls_and_empty(tok):
    texts = [None, "", "a b", None, "", None]
    out = tok.encode_arrow(pa.array(texts))
    assert out.to_pylist() == [None, [], tok.encode_ordinary("a b"), None, [], None]
    assert out.null_count == 3
    assert tok.count_arrow(pa.array(texts)).to_pylist() == [None, 0, len(tok.encode_ordinary("a b")), None, 0, None]
    assert tok.encode_arrow(pa.array([], pa.string())).to_pylist() == []
    assert tok.encode_arrow(pa.nulls(3)).to_pylist() == [None, None, None]
    assert tok.encode_arrow(pa.array(["", ""])).to_pylist() == [[], []]


def test_null_slot_with_bytes_is_still_null(tok):
    # Arrow lets a null slot span bytes: they are not encoded
    data = pa.py_buffer(b"abcdef")
    offsets = pa.py_buffer(np.array([0, 3, 6], dtype=np.int32).tobytes())
    validity = pa.py_buffer(np.packbits([1, 0], bitorder="little").tobytes())
    array = pa.Array.from_buffers(pa.string(), 2, [validity, offsets, data], null_count=1)
    assert tok.encode_arrow(array).to_pylist() == [tok.encode_ordinary("abc"), None]


def test_slices_of_every_kind(tok):
    texts = _texts() + [None, "x"]
    expected = _expected(tok, texts)
    for kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        array = pa.array([None if t is None else (t if kind in (pa.string(), pa.large_string()) else t.encode())
                          for t in texts], type=kind)
        for start, length in ((0, len(texts)), (1, 3), (5, 7), (len(texts) - 2, 2), (3, 0)):
            assert tok.encode_arrow(array.slice(start, length), num_threads=2).to_pylist() == expected[start:start + length]


def test_chunked_arrays(tok):
    texts = _texts() + [None]
    chunked = pa.chunked_array([pa.array(part, pa.string()) for part in (texts[:3], texts[3:3], texts[3:])])
    out = tok.encode_arrow(chunked, dtype="int32", num_threads=2)
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 3 and out.type == pa.list_(pa.int32())
    assert out.to_pylist() == _expected(tok, texts)
    assert tok.count_arrow(chunked).to_pylist() == [None if e is None else len(e) for e in _expected(tok, texts)]
    empty = tok.encode_arrow(pa.chunked_array([], type=pa.large_string()))
    assert empty.type == pa.large_list(pa.uint32()) and len(empty) == 0


def test_dtypes_and_overflow(tok):
    texts = ["hello world", None]
    for dtype in ("uint16", "uint32", "int32", "int64", np.int64, np.dtype("uint32")):
        out = tok.encode_arrow(pa.array(texts), dtype=dtype)
        assert out.type.value_type == pa.from_numpy_dtype(np.dtype(dtype))
        assert out.to_pylist() == _expected(tok, texts)
    with pytest.raises(InvalidParameterError):
        tok.encode_arrow(pa.array(texts), dtype="float32")
    with pytest.raises(ParameterTypeError):
        tok.encode_arrow(pa.array(texts), dtype=3)
    big = cybpe.Tokenizer(cybpe.Vocab([bytes([b]) for b in range(256)] + [b"x%d" % i for i in range(70000)]),
                          "cl100k")
    with pytest.raises(TooLargeError, match="uint16"):
        big.encode_arrow(pa.array(["x"]), dtype="uint16")
    assert isinstance(TooLargeError("x"), OverflowError)
    assert big.encode_arrow(pa.array(["x"]), dtype="uint32").to_pylist() == [big.encode_ordinary("x")]


def test_offsets_column(tok):
    texts = _texts() + [None, "é🙂a"]
    for kind in (pa.string(), pa.large_string()):
        ids, offsets = tok.encode_arrow(pa.array(texts, type=kind), offsets=True, num_threads=2)
        assert ids.to_pylist() == _expected(tok, texts)
        assert offsets.type.value_type == pa.list_(pa.int64(), 2)
        for text, spans in zip(texts, offsets.to_pylist()):
            if text is None:
                assert spans is None
            else:
                assert [tuple(s) for s in spans] == tok.encode_with_offsets(text, disallowed_special=())[1]


def test_invalid_utf8_is_refused_or_decoded_as_bytes_decode_does(tok):
    rows = [b"fine", b"\xff\xfeab", None, b"a\xed\xa0\x80b", b"\xe2\x82", b"ok \xc3\xa9", b"\xf4\x90\x80\x80"]
    array = pa.array(rows, type=pa.binary())
    with pytest.raises(EncodingError, match="text 1 is not valid UTF-8"):
        tok.encode_arrow(array)
    with pytest.raises(EncodingError, match="text 1 "):
        tok.count_arrow(array)
    for _ in range(20):  # threads meet bad rows in any order; the error names the first row
        for call in (tok.encode_arrow, tok.count_arrow):
            with pytest.raises(EncodingError, match="text 1 is not valid UTF-8"):
                call(array, num_threads=3)
    for errors in ("replace", "ignore", "surrogateescape", "backslashreplace"):
        expected = [None if r is None else tok.encode_ordinary(r.decode("utf-8", errors)) for r in rows]
        assert tok.encode_arrow(array, errors=errors, num_threads=2).to_pylist() == expected
        assert tok.count_arrow(array, errors=errors).to_pylist() == [None if e is None else len(e) for e in expected]
    with pytest.raises(InvalidParameterError):
        tok.encode_arrow(array, errors="no-such-handler")
    # a string array built without validation: the same rule
    data = pa.py_buffer(b"ab\xffcd")
    offsets = pa.py_buffer(np.array([0, 2, 5], dtype=np.int32).tobytes())
    unchecked = pa.Array.from_buffers(pa.string(), 2, [None, offsets, data])
    with pytest.raises(EncodingError, match="text 1 "):
        tok.encode_arrow(unchecked)
    assert tok.encode_arrow(unchecked, errors="replace").to_pylist() == [
        tok.encode_ordinary("ab"), tok.encode_ordinary("\ufffdcd")]


@pytest.mark.parametrize("kind", ["regex", "nfc", "force-regex", "gives-up"])
def test_tokenizers_the_compiled_loop_cannot_serve(tok, kind, force_regex):
    if kind == "regex":
        other = cybpe.Tokenizer(tok.vocab, cybpe.get_pretokenizer("regex", pattern=tok.pretokenizer.pattern).with_regex_only())
    elif kind == "nfc":
        other = cybpe.Tokenizer(tok.vocab, tok.pretokenizer, normalizer="NFC")
    elif kind == "force-regex":
        other = tok
        force_regex(True)
    else:
        other = cybpe.Tokenizer(tok.vocab, cybpe.get_pretokenizer("regex", pattern=BACKTRACKING))
    texts = _texts() + [None, "a" * 3000 + "c", "e\u0301", b"\xff".decode("latin-1")]
    expected = _expected(other, texts)
    assert other.encode_arrow(pa.array(texts), num_threads=2).to_pylist() == expected
    assert other.count_arrow(pa.array(texts)).to_pylist() == [None if e is None else len(e) for e in expected]
    bad = pa.array([b"a\xffb", None], pa.binary())
    with pytest.raises(EncodingError):
        other.encode_arrow(bad)
    assert other.encode_arrow(bad, errors="replace").to_pylist() == [other.encode_ordinary("a\ufffdb"), None]
    if kind == "gives-up":
        ids, offsets = other.encode_arrow(pa.array(texts[-4:]), offsets=True)
        assert ids.to_pylist() == expected[-4:]
        assert [None if s is None else [tuple(x) for x in s] for s in offsets.to_pylist()] == [
            None if t is None else other.encode_with_offsets(t, disallowed_special=())[1] for t in texts[-4:]]


def test_other_inputs(tok):
    texts = ["hello world", "", "héllo"]
    expected = _expected(tok, texts)
    assert tok.encode_arrow(np.array(texts)).to_pylist() == expected
    assert tok.encode_arrow(np.array(texts, dtype=object)).to_pylist() == expected
    assert tok.encode_arrow(texts).to_pylist() == expected
    assert tok.encode_arrow(pa.array(texts).dictionary_encode()).to_pylist() == expected
    assert tok.encode_arrow(pa.array(texts, pa.string_view())).to_pylist() == expected
    assert tok.encode_arrow(pa.array([t.encode() for t in texts], pa.binary_view())).to_pylist() == expected
    with pytest.raises(ParameterTypeError):
        tok.encode_arrow("hello")
    with pytest.raises(ParameterTypeError):
        tok.encode_arrow(pa.array([1, 2]))
    with pytest.raises(ParameterTypeError):
        tok.encode_arrow(42)
    with pytest.raises(ParameterTypeError):
        tok.encode_arrow(pa.array(texts), num_threads="2")
    with pytest.raises(InvalidParameterError):
        tok.encode_arrow(pa.array(texts), num_threads=0)


def test_polars_series(tok):
    pl = pytest.importorskip("polars")
    texts = ["hello world", None, "héllo"]
    assert tok.encode_arrow(pl.Series(texts)).to_pylist() == _expected(tok, texts)


def test_shared_corpora_with_cl100k(shared_dir):
    enc = cybpe.Tokenizer.from_tiktoken(shared_dir / "vocab" / "cl100k_base.tiktoken")
    texts = [text for _, text in eval_texts(shared_dir, 200_000)]
    array = pa.array(texts, type=pa.large_string())
    assert enc.encode_arrow(array, num_threads=2).to_pylist() == enc.encode_ordinary_batch(texts)
    with pytest.raises(TooLargeError):
        enc.encode_arrow(array, dtype="uint16")


def test_python_lists(tok):
    class Sneaky(str):
        def encode(self, *args, **kwargs):
            return b"SNEAKY"

    assert tok.encode_arrow([Sneaky("hello"), None]).to_pylist() == [tok.encode_ordinary("hello"), None]
    assert tok.encode_arrow([b"ab", None, bytearray(b"c")]).to_pylist() == _expected(tok, [b"ab", None, b"c"])
    with pytest.raises(EncodingError, match="Arrow UTF-8"):
        tok.encode_arrow(["a\ud800b"])
    for bad in (["a", b"b"], [[1]], [1], np.array([1, 2]), np.array([[1]], dtype=object).reshape(1)):
        with pytest.raises(ParameterTypeError):
            tok.encode_arrow(bad)


def test_datasets_map_recipe(tok, tmp_path, monkeypatch):
    """The recipe of docs/guide/arrow.md: Arrow batches in, an ``ids`` column out, two processes."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    texts = _texts() * 3
    ds = datasets.Dataset.from_dict({"text": texts, "n": list(range(len(texts)))})

    def encode(batch):
        return batch.append_column("ids", tok.encode_arrow(batch["text"], num_threads=1))

    for num_proc in (None, 2):
        out = ds.with_format("arrow").map(encode, batched=True, num_proc=num_proc)
        assert out.with_format(None)["ids"] == tok.encode_ordinary_batch(texts)
        assert out.with_format(None)["n"] == list(range(len(texts)))
