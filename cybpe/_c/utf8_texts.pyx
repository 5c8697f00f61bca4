"""The UTF-8 of a list of texts, read once with the GIL so that a loop over it can run without.

A compact ASCII string lends its own data (it is its UTF-8, no copy); any other string is
encoded once (by the C API, from its code points: a ``str`` subclass's ``encode`` method is
never called) and the bytes are kept here for as long as the object lives. With
``cache_chars``, a string of up to that many characters lends instead the UTF-8 form CPython
keeps inside the str once asked for it (``PyUnicode_AsUTF8AndSize``), as a single
``encode_ordinary`` call does: encoding the same texts again skips the conversion.

Why ``cache_chars``: without it, ``encode_ordinary_batch`` would re-encode every non-ASCII
document on each call, with the GIL held, while the other threads wait for it (the profile:
docs/history.md, "Batch encoding"). The chunk counter leaves it off: a corpus read once would
gain a lasting second copy.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String
from libc.stdlib cimport free, malloc


cdef class Utf8Texts:
    """``Utf8Texts(texts, repair=None, cache_chars=0)``: TypeError naming the type of an item
    that is not a str; on lone surrogates, UnicodeEncodeError, or ``repair(text)`` encoded
    when given. Texts of up to ``cache_chars`` characters lend CPython's cached UTF-8 form."""

    def __cinit__(self, list texts not None, repair=None, Py_ssize_t cache_chars=0):
        cdef Py_ssize_t j, size, m = len(texts)
        cdef bytes encoded
        cdef const uint8_t* utf8
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
            utf8 = str_utf8(text, cache_chars, &size)
            if utf8 != NULL:  # the str's own data, or the UTF-8 CPython keeps in it
                self.keep.append(text)
                self.starts[j] = utf8
                self.lengths[j] = size
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
