"""The UTF-8 of a list of texts, read once with the GIL so that a loop over it can run without.

A compact ASCII string lends its own data (it is its UTF-8, no copy); any other string is
encoded once (by the C API, from its code points: a ``str`` subclass's ``encode`` method is
never called) and the bytes are kept here for as long as the object lives.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String
from libc.stdlib cimport free, malloc


cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)


cdef class Utf8Texts:
    """``Utf8Texts(texts, repair=None)``: TypeError naming the type of an item that is not a
    str; on lone surrogates, UnicodeEncodeError, or ``repair(text)`` encoded when given."""

    def __cinit__(self, list texts not None, repair=None):
        cdef Py_ssize_t j, m = len(texts)
        cdef bytes encoded
        self.keep = []
        self.count = m
        self.starts = <const uint8_t**>malloc((m + 1) * sizeof(uint8_t*))
        self.lengths = <Py_ssize_t*>malloc((m + 1) * sizeof(Py_ssize_t))
        if self.starts == NULL or self.lengths == NULL:
            raise MemoryError()
        for j in range(m):
            text = texts[j]
            if not isinstance(text, str):
                raise TypeError(f"expected str texts, not {type(text).__name__}")
            if PyUnicode_IS_COMPACT_ASCII(text):
                self.keep.append(text)
                self.starts[j] = <const uint8_t*>PyUnicode_DATA(text)
                self.lengths[j] = PyUnicode_GET_LENGTH(text)
                continue
            try:
                encoded = PyUnicode_AsUTF8String(text)
            except UnicodeEncodeError:
                if repair is None:
                    raise
                encoded = PyUnicode_AsUTF8String(repair(text))
            self.keep.append(encoded)
            self.starts[j] = <const uint8_t*>PyBytes_AS_STRING(encoded)
            self.lengths[j] = PyBytes_GET_SIZE(encoded)

    def __dealloc__(self):
        free(self.starts)
        free(self.lengths)

    def __len__(self) -> int:
        return self.count
