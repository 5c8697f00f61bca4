"""The base class of every compiled pre-tokenizer scanner (the C contract is in scanner_api.pxd).

A subclass overrides the C method ``scan_all``; the Python methods here (``split_utf8``,
``split_spans``, ``split``) are built on it, so a scanner written in Cython needs nothing else.

Performance notes (the measurements: docs/history.md, "Scanner base class")
-----------------
* The piece-end buffer goes to numpy without a copy (EndsBuffer) and is shrunk only when more
  than a quarter is unused: shrinking every time made glibc serve the next call with fresh mmap
  pages (page faults on every call).
* Dispatch is one vtable call per text (encode, batch encode, counting), never per piece.
* An ASCII str is scanned in place (its data is its UTF-8); any other str is encoded once with
  "surrogatepass" and the byte ends are turned into code-point offsets in C.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, realloc

from cybpe._c.utf8 cimport ends_to_code_points

import numpy as np

from cybpe.errors import PluginError


cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)


@cython.final
cdef class EndsBuffer:
    """Owns a malloc'ed int64 array and lends it to numpy without a copy (buffer protocol)."""
    cdef int64_t* data
    cdef Py_ssize_t count
    cdef Py_ssize_t itemsize

    def __dealloc__(self):
        free(self.data)

    def __getbuffer__(self, Py_buffer* view, int flags):
        view.buf = self.data
        view.obj = self
        view.len = self.count * sizeof(int64_t)
        view.readonly = 0
        view.itemsize = sizeof(int64_t)
        view.format = "q"
        view.ndim = 1
        view.shape = &self.count
        view.strides = &self.itemsize
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef object piece_ends(BaseScanner scanner, const uint8_t* s, Py_ssize_t n, bint code_points):
    """Piece ends of s[0:n] (n >= 1) as an int64 numpy array, in bytes or code points (GIL
    released while scanning); None when the scanner gives up on the text."""
    cdef EndsBuffer owner = EndsBuffer.__new__(EndsBuffer)
    cdef Py_ssize_t capacity = 0
    cdef Py_ssize_t count
    cdef int64_t* shrunk
    with nogil:
        count = scanner.scan_all(s, n, &owner.data, &capacity)
        if count >= 0 and code_points:
            ends_to_code_points(s, owner.data, count)
        if 0 < count < capacity - capacity // 4:  # see the performance notes
            shrunk = <int64_t*> realloc(owner.data, count * sizeof(int64_t))
            if shrunk != NULL:
                owner.data = shrunk
    if count == SCAN_GAVE_UP:
        return None
    if count < 0:
        raise MemoryError(f"{type(scanner).__name__}: out of memory for the piece ends")
    if count == 0:
        return np.empty(0, dtype=np.int64)
    owner.count = count
    owner.itemsize = sizeof(int64_t)
    return np.frombuffer(owner, dtype=np.int64)


cdef class BaseScanner:
    """Base of the compiled scanners: built-in, compiled-pattern and third-party ones.

    A subclass overrides the C method ``scan_all`` (see ``scanner_api.pxd`` for the contract);
    every method here is then safe to call from several threads at once.
    """

    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil:
        return SCAN_GAVE_UP

    def _gave_up(self, text):
        raise PluginError(
            f"{type(self).__name__}.scan_all declined a text and the class defines no "
            "split_spans() to split it otherwise"
        )

    def split_utf8(self, data) -> np.ndarray:
        """int64 array of the piece END byte offsets of UTF-8 ``data`` (bytes-like)."""
        cdef const uint8_t[::1] buf = data
        if buf.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        ends = piece_ends(self, &buf[0], buf.shape[0], False)
        if ends is None:
            text = bytes(buf).decode("utf-8", "surrogatepass")
            sizes = [len(text[a:b].encode("utf-8", "surrogatepass")) for a, b in self.split_spans(text)]
            ends = np.cumsum(np.array(sizes, dtype=np.int64))
        return ends

    def split_spans(self, str text) -> list:
        """``(start, end)`` code-point offsets of the pieces, covering ``text``."""
        cdef bytes encoded
        cdef const uint8_t* s
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        cdef Py_ssize_t k, start = 0, end
        cdef int64_t[::1] ends
        cdef list spans = []
        if n == 0:
            return spans
        if PyUnicode_IS_COMPACT_ASCII(text):
            found = piece_ends(self, <const uint8_t*> PyUnicode_DATA(text), n, False)
        else:
            encoded = text.encode("utf-8", "surrogatepass")
            s = <const uint8_t*> PyBytes_AS_STRING(encoded)
            found = piece_ends(self, s, PyBytes_GET_SIZE(encoded), True)
        if found is None:
            self._gave_up(text)
        ends = found
        for k in range(ends.shape[0]):
            end = ends[k]
            spans.append((start, end))
            start = end
        return spans

    def split(self, str text) -> list:
        """The pieces of ``text``; they concatenate back to it."""
        cdef Py_ssize_t start, end
        return [text[start:end] for start, end in self.split_spans(text)]
