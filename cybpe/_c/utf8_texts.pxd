# The UTF-8 of a str or a list of texts as C pointers, for GIL-free loops (the chunk counter,
# single and batch encoding). See utf8_texts.pyx.
#
# Usage (with the GIL):
#
#     from cybpe._c.utf8_texts cimport Utf8Texts, str_utf8
#
#     utf8 = str_utf8(text, max_chars, &size)   # text's UTF-8 without a copy of ours, or NULL
#     batch = Utf8Texts(texts, repair, max_chars)  # batch.starts[j][0:batch.lengths[j]]
#
# Thread safety: str_utf8 and Utf8Texts() need the GIL; a built Utf8Texts is read-only, and its
# pointers may be read from any thread without it while the object lives.
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport uint8_t

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)


cdef inline const uint8_t* str_utf8(object text, Py_ssize_t max_chars,
                                    Py_ssize_t* size) except? NULL:
    """The UTF-8 of str ``text`` (a str subclass included) held by the str itself: a compact
    ASCII str's own data; else, for up to ``max_chars`` characters, the UTF-8 form CPython keeps
    inside the str once asked for it (``PyUnicode_AsUTF8AndSize``: the next call reads it
    again). NULL, with no error set, for a longer text or one with a lone surrogate: the caller
    then encodes a copy. Valid while the str lives."""
    if PyUnicode_IS_COMPACT_ASCII(text):
        size[0] = PyUnicode_GET_LENGTH(text)
        return <const uint8_t*>PyUnicode_DATA(text)
    if PyUnicode_GET_LENGTH(text) > max_chars:
        return NULL
    try:
        return <const uint8_t*>PyUnicode_AsUTF8AndSize(text, size)
    except UnicodeEncodeError:  # a lone surrogate
        return NULL


cdef class Utf8Texts:
    cdef list keep                  # what the pointers point into, kept alive
    cdef const uint8_t** starts     # text j is starts[j][0:lengths[j]]
    cdef Py_ssize_t* lengths
    cdef readonly Py_ssize_t count
