"""Text → ids in one GIL-free call: a compiled scanner feeding the rank encoder.

Performance notes
-----------------
* Splitting and encoding used to be two Python-level calls (``Scanner.split_utf8`` then
  ``RankEncoder.encode_utf8``), with a numpy array of piece ends and its validation between
  them. Here the ends stay a malloc'ed C buffer and both loops run under one ``nogil`` block,
  so threads of ``encode_batch`` hold the GIL only to enter and to build the result array.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.stdlib cimport free
from libc.string cimport memcpy

import numpy as np

from cybpe._encoder cimport RankEncoder
from cybpe._pattern_scanner cimport PatternScanner
from cybpe._scanner cimport Scanner, scan_all
from cybpe._types cimport IdBuffer


cdef object ids_array(IdBuffer* buf):
    out = np.empty(buf.size, dtype=np.uint32)
    cdef uint32_t[::1] view
    if buf.size:
        view = out
        memcpy(&view[0], buf.data, buf.size * sizeof(uint32_t))
    return out


def encode_scanned(RankEncoder encoder, Scanner scanner, const uint8_t[::1] data):
    """The uint32 ids of UTF-8 ``data``, split by ``scanner`` and encoded by ``encoder``."""
    cdef Py_ssize_t n = data.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint32)
    cdef int64_t* ends = NULL
    cdef Py_ssize_t capacity = 0
    cdef Py_ssize_t pieces = 0
    cdef int kind = scanner.kind
    cdef int rc = 0
    cdef IdBuffer buf
    buf.data = NULL
    buf.size = buf.capacity = 0
    try:
        with nogil:
            pieces = scan_all(kind, &data[0], n, &ends, &capacity)
            if pieces >= 0:
                rc = encoder.encode_pieces_into(&data[0], ends, pieces, &buf)
        if pieces < 0 or rc != 0:
            raise MemoryError()
        return ids_array(&buf)
    finally:
        free(ends)
        free(buf.data)


def encode_pattern_scanned(RankEncoder encoder, PatternScanner scanner, const uint8_t[::1] data):
    """encode_scanned for a compiled regex pattern; None when the matcher ran past its step
    budget (the caller then splits with the regex module)."""
    cdef Py_ssize_t n = data.shape[0]
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
            pieces = scanner.scan_all(&data[0], n, &ends, &capacity)
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
