"""Text → ids in one GIL-free call: a compiled scanner feeding the rank encoder.

Performance notes
-----------------
* Splitting and encoding used to be two Python-level calls (``Scanner.split_utf8`` then
  ``RankEncoder.encode_utf8``), with a numpy array of piece ends and its validation between
  them. Here the ends stay a malloc'ed C buffer and both loops run under one ``nogil`` block,
  so threads of ``encode_batch`` hold the GIL only to enter and to build the result array.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from cybpe.encode.encoder cimport RankEncoder
from cybpe.pretokenize.pattern_scanner cimport PatternScanner
from cybpe.pretokenize.scanner cimport Scanner, scan_all
from cybpe._c.types cimport IdBuffer
from cybpe._c.utf8_texts cimport Utf8Texts

import numpy as np

from cybpe.pretokenize.text import clean_surrogates
from cybpe.errors import EncodingError


cdef object ids_array(IdBuffer* buf):
    out = np.empty(buf.size, dtype=np.uint32)
    cdef uint32_t[::1] view
    if buf.size:
        view = out
        memcpy(&view[0], buf.data, buf.size * sizeof(uint32_t))
    return out


def encode_scanned(RankEncoder encoder, scanner, const uint8_t[::1] data):
    """The uint32 ids of UTF-8 ``data``, split by ``scanner`` (a Scanner or a PatternScanner)
    and encoded by ``encoder``. None when a PatternScanner ran past its step budget (the
    caller then splits with the regex module)."""
    cdef Py_ssize_t n = data.shape[0]
    cdef int kind = -1
    cdef PatternScanner matcher = None
    if isinstance(scanner, Scanner):
        kind = (<Scanner>scanner).kind
    elif isinstance(scanner, PatternScanner):
        matcher = <PatternScanner>scanner
    else:
        raise TypeError(f"not a scanner: {scanner!r}")
    if n == 0:
        return np.empty(0, dtype=np.uint32)
    cdef int64_t* ends = NULL
    cdef Py_ssize_t capacity = 0
    cdef Py_ssize_t pieces = 0
    cdef int rc = 0
    cdef IdBuffer buf
    buf.data = NULL
    buf.size = buf.capacity = 0
    try:
        with nogil:
            if kind >= 0:
                pieces = scan_all(kind, &data[0], n, &ends, &capacity)
            else:
                pieces = matcher.scan_all(&data[0], n, &ends, &capacity)
            if pieces >= 0:
                rc = encoder.encode_pieces_into(&data[0], ends, pieces, &buf)
        if pieces == -2:
            return None
        if pieces < 0 or rc != 0:
            raise MemoryError()
        return ids_array(&buf)
    finally:
        free(ends)
        free(buf.data)


def encode_texts_scanned(RankEncoder encoder, Scanner scanner, list texts):
    """The id lists of many texts, each split by ``scanner`` and encoded, all in one GIL-free
    pass (one call per thread lets threads scale: per-text calls hold the GIL between texts).
    Lone surrogates become U+FFFD first, as in Tokenizer.encode."""
    cdef Py_ssize_t j, pieces = 0, capacity = 0
    cdef int kind = scanner.kind
    cdef int rc = 0
    cdef Utf8Texts batch
    try:
        batch = Utf8Texts(texts, clean_surrogates)
    except TypeError:
        bad = next(t for t in texts if not isinstance(t, str))
        raise EncodingError(f"encode() takes a str, not {type(bad).__name__}") from None
    cdef int64_t* offsets = <int64_t*>malloc((batch.count + 1) * sizeof(int64_t))
    cdef int64_t* ends = NULL
    cdef IdBuffer buf
    buf.data = NULL
    buf.size = buf.capacity = 0
    try:
        if offsets == NULL:
            raise MemoryError()
        offsets[0] = 0
        with nogil:
            for j in range(batch.count):
                if batch.lengths[j]:
                    pieces = scan_all(kind, batch.starts[j], batch.lengths[j], &ends, &capacity)
                    if pieces < 0:
                        rc = -1
                        break
                    rc = encoder.encode_pieces_into(batch.starts[j], ends, pieces, &buf)
                    if rc != 0:
                        break
                offsets[j + 1] = buf.size
        if rc != 0:
            raise MemoryError()
        return [encoder.ids_to_list(buf.data + offsets[j], offsets[j + 1] - offsets[j])
                for j in range(batch.count)]
    finally:
        free(offsets)
        free(ends)
        free(buf.data)
