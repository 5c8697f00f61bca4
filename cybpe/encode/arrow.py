"""Arrow in, Arrow out: ``Tokenizer.encode_arrow`` and ``Tokenizer.count_arrow``.

A ``pyarrow`` string array is one UTF-8 buffer and an offsets buffer. This module reads both as
numpy views (``array.buffers()``; no Python ``str`` per text) and hands row ranges of them to
:func:`cybpe.encode.fastpath.encode_utf8_rows`, the same compiled scan + encode loop that
``encode_ordinary_batch`` runs, with the GIL released, on the process's batch threads
(:mod:`cybpe.encode.worker_threads`). The flat ids and the per-row ends it returns become the
values and offsets buffers of the resulting ``ListArray`` without another copy.

What is accepted: ``pyarrow`` ``string``, ``large_string``, ``binary``, ``large_binary``,
``string_view``/``binary_view`` (cast to the large type first) and dictionary-encoded strings,
each as an ``Array`` or a ``ChunkedArray``; anything else that converts to one (a Polars
``Series`` through ``to_arrow()``, an object with ``__arrow_c_array__`` or
``__arrow_c_stream__``, a NumPy string array or a list through ``pyarrow.array``).

The rules (tests/encode/test_arrow.py checks each against ``encode_ordinary_batch``):

* Text is encoded as ordinary text (``encode_ordinary``: special-token strings are text).
* A null text gives a null list (``count_arrow``: a null count); an empty text an empty list.
* The result type follows the input's offsets: ``list<...>`` for ``string``/``binary`` (32-bit
  offsets; a row's ids never outnumber its bytes, so they fit), ``large_list<...>`` for the
  large types (and the view types, which are cast to them). A ``ChunkedArray`` gives a
  ``ChunkedArray`` with one result chunk per chunk.
* ``dtype``: ``"uint32"`` (default), ``"int32"``, ``"int64"`` or ``"uint16"``. A dtype that
  cannot hold the vocabulary's largest id is refused before anything is encoded
  (:class:`~cybpe.errors.TooLargeError`, an ``InvalidParameterError`` and an ``OverflowError``).
* Invalid UTF-8 (possible in a binary array, and in a string array built without validation):
  ``errors="strict"`` (default) raises :class:`~cybpe.errors.EncodingError` naming the row and
  the byte; any other codecs handler (``"replace"``, ``"ignore"``...) decodes that row as
  ``bytes.decode("utf-8", errors)`` does and encodes the result (a lone surrogate that
  ``"surrogateescape"`` makes becomes U+FFFD, as in ``encode_ordinary``).
* ``offsets=True`` also returns each token's ``(start, end)`` character offsets into its text
  (:meth:`~cybpe.Tokenizer.encode_with_offsets`' rule) as a second list array whose items are
  ``fixed_size_list<int64>[2]``.
* Tokenizers the compiled loop cannot serve (a regex pre-tokenizer, a normalizer,
  ``CYBPE_FORCE_REGEX``) still work: each text is decoded and encoded one by one (slower; same
  ids). So are single texts a compiled scanner gives up on.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from cybpe.encode.fastpath import encode_utf8_rows
from cybpe.encode.spans import ordinary_spans
from cybpe.encode.worker_threads import run_sliced
from cybpe.errors import (
    EncodingError,
    InvalidParameterError,
    ParameterTypeError,
    TooLargeError,
    check_error_handler,
)

#: The id types ``encode_arrow`` writes, by name.
ID_DTYPES = {"uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
             "int32": np.dtype(np.int32), "int64": np.dtype(np.int64)}
#: Rows are handed to the threads in parts of about this many bytes (several per thread, so
#: that long and short texts even out and an interrupted call stops after the part in hand).
PART_BYTES = 1 << 20
_INT32_MAX = 2**31 - 1


def _pyarrow():
    try:
        import pyarrow
    except ImportError:
        raise ImportError("encode_arrow() and count_arrow() need pyarrow: pip install 'cybpe[arrow]'") from None
    return pyarrow


def as_arrow(data: Any):
    """``data`` as a pyarrow ``Array`` or ``ChunkedArray`` of strings or binaries."""
    pa = _pyarrow()
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        found = data
    elif isinstance(data, (str, bytes, bytearray)):
        raise ParameterTypeError(f"encode_arrow() takes an array of texts, not a single {type(data).__name__}")
    elif hasattr(data, "__arrow_c_array__"):
        found = pa.array(data)
    elif hasattr(data, "__arrow_c_stream__"):
        found = pa.chunked_array(data)
    elif hasattr(data, "to_arrow") and callable(data.to_arrow):  # a Polars Series
        found = data.to_arrow()
        if isinstance(found, (pa.Table, pa.RecordBatch)):
            raise ParameterTypeError("encode_arrow() takes one column of texts, not a table")
    elif isinstance(data, np.ndarray):
        if data.ndim != 1:
            raise ParameterTypeError(f"encode_arrow() takes a 1-D array of texts, not {data.ndim}-D")
        if data.dtype.kind == "O":
            found = _from_python(pa, data.tolist())
        elif data.dtype.kind in "USTa":
            found = pa.array(data)  # converted in C, no str per item
        else:
            raise ParameterTypeError(f"encode_arrow() takes an array of texts, not of {data.dtype}")
    elif isinstance(data, (list, tuple)):
        found = _from_python(pa, data)
    else:
        raise ParameterTypeError(
            f"encode_arrow() takes a pyarrow string array (Array or ChunkedArray), not {type(data).__name__}")
    if isinstance(found, pa.ChunkedArray):
        return pa.chunked_array([_text_chunk(c) for c in found.chunks], type=_text_type(found.type))
    return _text_chunk(found)


def _from_python(pa, items) -> Any:
    """A list of str (or of bytes), None for a null, as an Arrow array."""
    if all(item is None or isinstance(item, str) for item in items):
        kind = pa.large_string()
        if not all(item is None or type(item) is str for item in items):  # str subclasses: their code points
            items = [None if item is None else str.__str__(item) for item in items]
    elif all(item is None or isinstance(item, (bytes, bytearray, memoryview)) for item in items):
        kind = pa.large_binary()
    else:
        bad = next((item for item in items if item is not None and not isinstance(item, (str, bytes, bytearray, memoryview))), None)
        raise ParameterTypeError(f"encode_arrow() takes texts (str, or bytes; None for a null), not {type(bad).__name__}"
                                 if bad is not None else "encode_arrow(): the texts mix str and bytes")
    try:
        return pa.array(items, type=kind)
    except (UnicodeError, pa.ArrowException) as exc:  # a lone surrogate: no UTF-8 for Arrow
        raise EncodingError(f"encode_arrow(): a text cannot be stored as Arrow UTF-8 ({exc})") from None


def _text_type(dtype):
    pa = _pyarrow()
    t = pa.types
    if t.is_dictionary(dtype):
        return _text_type(dtype.value_type)
    if t.is_string(dtype) or t.is_large_string(dtype) or t.is_binary(dtype) or t.is_large_binary(dtype):
        return dtype
    if t.is_null(dtype):
        return pa.string()
    if dtype == pa.string_view():
        return pa.large_string()
    if dtype == pa.binary_view():
        return pa.large_binary()
    raise ParameterTypeError(f"encode_arrow() takes an array of strings or binaries, not of {dtype}")


def _text_chunk(array):
    """One array of a text type (``_text_type``), dictionaries and views cast to plain ones."""
    pa = _pyarrow()
    want = _text_type(array.type)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if array.type != want:
        array = array.cast(want)
    return array


def id_dtype(tokenizer, dtype: Any) -> np.dtype:
    """The numpy dtype named by ``dtype``; TooLargeError when the vocabulary's largest id does not
    fit in it (checked before anything is encoded, so the answer never depends on the texts)."""
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        dtype = np.dtype(dtype).name
    if not isinstance(dtype, str):
        raise ParameterTypeError(f"dtype must be a str ({', '.join(ID_DTYPES)}), not {type(dtype).__name__}")
    if dtype not in ID_DTYPES:
        raise InvalidParameterError(f"dtype must be one of {', '.join(ID_DTYPES)}, not {dtype!r}")
    found = ID_DTYPES[dtype]
    largest = tokenizer.n_vocab - 1
    if largest > np.iinfo(found).max:
        raise TooLargeError(f"the vocabulary's ids go up to {largest}, which does not fit in {dtype} "
                            f"(at most {np.iinfo(found).max}); use uint32")
    return found


class _Rows:
    """One text array's buffers as numpy views: ``data`` (uint8), ``offsets`` (int64, one more
    than the rows; copied from int32 for the 32-bit types), ``valid`` (uint8 per row, or None
    when there is no null)."""

    def __init__(self, array) -> None:
        pa = _pyarrow()
        self.n = len(array)
        self.large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
        if pa.types.is_null(array.type) or self.n == 0:
            self.data = np.empty(0, dtype=np.uint8)
            self.offsets = np.zeros(self.n + 1, dtype=np.int64)
            self.valid = np.zeros(self.n, dtype=np.uint8) if self.n else None
            return
        validity, offsets, data = array.buffers()[:3]
        start = array.offset
        kind = np.int64 if self.large else np.int32
        self.offsets = np.frombuffer(offsets, dtype=kind)[start:start + self.n + 1].astype(np.int64, copy=False)
        self.data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, dtype=np.uint8)
        if array.null_count and validity is not None:
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            self.valid = np.ascontiguousarray(bits[start:start + self.n])
        else:
            self.valid = None

    def parts(self, threads: int) -> list[tuple[int, int]]:
        """Row ranges ``[lo, hi)`` of about PART_BYTES each (at least ``threads`` of them when
        there are that many rows), covering every row in order."""
        if self.n == 0:
            return []
        total = int(self.offsets[-1] - self.offsets[0])
        k = max(threads, -(-total // PART_BYTES)) if threads > 1 else 1
        k = min(k, self.n)
        targets = self.offsets[0] + (np.arange(1, k) * total) // k
        cuts = np.searchsorted(self.offsets[1:], targets, side="left") + 1
        bounds = sorted({0, self.n, *(int(c) for c in cuts if 0 < c < self.n)})
        return list(zip(bounds[:-1], bounds[1:]))

    def row_bytes(self, row: int) -> bytes:
        return self.data[self.offsets[row]:self.offsets[row + 1]].tobytes()


class _Encoder:
    """What one call encodes with: the tokenizer's encoder and, when the compiled loop can serve
    it, its scanner (else None: every text takes the one-by-one path)."""

    def __init__(self, tokenizer, errors: str, offsets: bool, count_only: bool) -> None:
        from cybpe.pretokenize.pretokenizer import regex_forced

        check_error_handler(errors, "encode_arrow(): ")
        self.tokenizer = tokenizer
        self.errors = errors
        self.offsets = offsets
        self.count_only = count_only
        scanner = tokenizer._fast_scanner
        self.scanner = None if scanner is None or regex_forced() else scanner

    def slow_row(self, rows: _Rows, row: int) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(ids, spans) of one row by the one-by-one path (its bytes decoded with ``errors``)."""
        raw = rows.row_bytes(row)
        try:
            text = raw.decode("utf-8", self.errors)
        except UnicodeDecodeError as exc:
            raise EncodingError(
                f"text {row} is not valid UTF-8 (byte {exc.start}: {exc.reason}); pass errors='replace' "
                f"to encode it with U+FFFD in place of the bad bytes") from None
        tok = self.tokenizer
        ids, spans = ordinary_spans(tok._encoder, tok.pretokenizer, tok.normalizer, text, -1,
                                    self.offsets and not self.count_only)
        return ids, spans

    def part(self, rows: _Rows, lo: int, hi: int):
        """(ids, row_ends, spans) of rows lo..hi-1, row_ends counted from the part's start."""
        valid = None if rows.valid is None else rows.valid[lo:hi]
        if self.scanner is not None:
            ids, row_ends, spans, skipped = encode_utf8_rows(
                self.tokenizer._encoder, self.scanner, rows.data, rows.offsets[lo:hi + 1], valid,
                self.offsets and not self.count_only, self.count_only)
            if not skipped:
                return ids, row_ends, spans
        else:
            skipped = [(j, -1) for j in range(hi - lo)
                       if (valid is None or valid[j]) and rows.offsets[lo + j + 1] > rows.offsets[lo + j]]
            ids = np.zeros(0, dtype=np.uint32)
            row_ends = np.zeros(hi - lo, dtype=np.int64)
            spans = np.zeros((0, 2), dtype=np.int64) if self.offsets and not self.count_only else None
        return self._splice(rows, lo, ids, row_ends, spans, skipped)

    def _splice(self, rows: _Rows, lo: int, ids, row_ends, spans, skipped):
        """The part's arrays with the skipped rows encoded one by one and put in their places."""
        starts = np.concatenate(([0], row_ends[:-1]))
        counts = row_ends - starts
        id_rows = [ids[a:b] for a, b in zip(starts, row_ends)] if not self.count_only else None
        span_rows = [spans[a:b] for a, b in zip(starts, row_ends)] if spans is not None else None
        for j, bad in skipped:
            if bad >= 0 and self.errors == "strict":
                raise EncodingError(
                    f"text {lo + j} is not valid UTF-8 (byte {bad}); pass errors='replace' to encode "
                    f"it with U+FFFD in place of the bad bytes")
            row_ids, row_spans = self.slow_row(rows, lo + j)
            counts[j] = len(row_ids)
            if id_rows is not None:
                id_rows[j] = row_ids
            if span_rows is not None:
                span_rows[j] = row_spans
        new_ends = np.cumsum(counts, dtype=np.int64)
        if self.count_only:
            return np.zeros(0, dtype=np.uint32), new_ends, None
        out_ids = np.concatenate(id_rows).astype(np.uint32, copy=False) if id_rows else np.zeros(0, np.uint32)
        out_spans = None
        if span_rows is not None:
            out_spans = np.concatenate(span_rows).astype(np.int64, copy=False) if span_rows else np.zeros((0, 2), np.int64)
        return out_ids, new_ends, out_spans


def _first_invalid_row(rows: _Rows) -> Optional[tuple[int, UnicodeDecodeError]]:
    """(row, its decode error) of the first non-null row that is not valid UTF-8, or None."""
    for row in range(rows.n):
        if rows.valid is not None and not rows.valid[row]:
            continue
        try:
            rows.row_bytes(row).decode("utf-8")
        except UnicodeDecodeError as exc:
            return row, exc
    return None


def _encode_chunk(enc: _Encoder, array, threads: int, dtype: np.dtype):
    """(flat ids, list offsets, flat spans or None, rows) of one text array."""
    rows = _Rows(array)
    parts = rows.parts(threads)
    try:
        results = run_sliced(lambda todo: [enc.part(rows, lo, hi) for lo, hi in todo], parts, threads) if parts else []
    except EncodingError:
        # The threads stop at the first bad row any of them meets; the error names the first in
        # the array's order, whichever thread found one, so that it does not change run to run.
        first = _first_invalid_row(rows) if enc.errors == "strict" else None
        if first is None:
            raise
        row, exc = first
        raise EncodingError(
            f"text {row} is not valid UTF-8 (byte {exc.start}: {exc.reason}); pass errors='replace' "
            "to encode it with U+FFFD in place of the bad bytes") from None
    list_offsets = np.zeros(rows.n + 1, dtype=np.int64)
    base = 0
    for (lo, hi), (_, row_ends, _) in zip(parts, results):
        list_offsets[lo + 1:hi + 1] = row_ends + base
        base += int(row_ends[-1]) if len(row_ends) else 0
    if enc.count_only:
        return None, list_offsets, None, rows
    ids = np.concatenate([r[0] for r in results]) if results else np.zeros(0, dtype=np.uint32)
    ids = ids.astype(dtype, copy=False)
    spans = None
    if enc.offsets:
        spans = np.concatenate([r[2] for r in results]) if results else np.zeros((0, 2), dtype=np.int64)
    return ids, list_offsets, spans, rows


def _validity(pa, rows: _Rows):
    if rows.valid is None:
        return None, 0
    return pa.py_buffer(np.packbits(rows.valid, bitorder="little")), int(rows.n - rows.valid.sum())


def _list_array(pa, rows: _Rows, list_offsets: np.ndarray, values):
    """A list (or large list, for large inputs) array of ``values`` cut at ``list_offsets``."""
    validity, nulls = _validity(pa, rows)
    if rows.large:
        kind, offsets = pa.large_list(values.type), list_offsets
    else:
        if list_offsets[-1] > _INT32_MAX:
            raise TooLargeError(f"{list_offsets[-1]} ids do not fit a list array's 32-bit offsets; "
                                f"pass a large_string array to get a large_list")
        kind, offsets = pa.list_(values.type), list_offsets.astype(np.int32)
    return pa.Array.from_buffers(kind, rows.n, [validity, pa.py_buffer(offsets)], null_count=nulls,
                                 children=[values])


def _values(pa, ids: np.ndarray):
    return pa.Array.from_buffers(pa.from_numpy_dtype(ids.dtype), len(ids), [None, pa.py_buffer(ids)])


def _chunks(array):
    pa = _pyarrow()
    return (array.chunks, True) if isinstance(array, pa.ChunkedArray) else ([array], False)


def _threads(num_threads: Optional[int]) -> int:
    if num_threads is None:
        return os.cpu_count() or 1
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise ParameterTypeError(f"num_threads must be an int or None, not {type(num_threads).__name__}")
    if num_threads < 1:
        raise InvalidParameterError(f"num_threads must be at least 1, not {num_threads}")
    return num_threads


def encode_arrow(tokenizer, array: Any, dtype: Any = "uint32", offsets: bool = False,
                 num_threads: Optional[int] = None, errors: str = "strict"):
    """See :meth:`cybpe.Tokenizer.encode_arrow` (the rules: this module's docstring)."""
    pa = _pyarrow()
    found = id_dtype(tokenizer, dtype)
    threads = _threads(num_threads)
    texts = as_arrow(array)
    enc = _Encoder(tokenizer, errors, bool(offsets), False)
    chunks, chunked = _chunks(texts)
    id_chunks, span_chunks = [], []
    for chunk in chunks:
        ids, list_offsets, spans, rows = _encode_chunk(enc, chunk, threads, found)
        id_chunks.append(_list_array(pa, rows, list_offsets, _values(pa, ids)))
        if enc.offsets:
            pairs = pa.FixedSizeListArray.from_arrays(_values(pa, np.ascontiguousarray(spans).reshape(-1)), 2)
            span_chunks.append(_list_array(pa, rows, list_offsets, pairs))
    large = pa.types.is_large_string(_text_type(texts.type)) or pa.types.is_large_binary(_text_type(texts.type))
    id_type = (pa.large_list if large else pa.list_)(pa.from_numpy_dtype(found))
    span_type = (pa.large_list if large else pa.list_)(pa.list_(pa.int64(), 2))
    if chunked:
        out = pa.chunked_array(id_chunks, type=id_type)
        return (out, pa.chunked_array(span_chunks, type=span_type)) if enc.offsets else out
    return (id_chunks[0], span_chunks[0]) if enc.offsets else id_chunks[0]


def count_arrow(tokenizer, array: Any, num_threads: Optional[int] = None, errors: str = "strict"):
    """See :meth:`cybpe.Tokenizer.count_arrow`."""
    pa = _pyarrow()
    threads = _threads(num_threads)
    texts = as_arrow(array)
    enc = _Encoder(tokenizer, errors, False, True)
    chunks, chunked = _chunks(texts)
    out = []
    for chunk in chunks:
        _, list_offsets, _, rows = _encode_chunk(enc, chunk, threads, np.dtype(np.uint32))
        counts = np.diff(list_offsets)
        validity, nulls = _validity(pa, rows)
        out.append(pa.Array.from_buffers(pa.int64(), rows.n, [validity, pa.py_buffer(counts)], null_count=nulls))
    return pa.chunked_array(out, type=pa.int64()) if chunked else out[0]
