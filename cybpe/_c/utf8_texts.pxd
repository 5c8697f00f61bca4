# The UTF-8 of a list of texts as C pointers and lengths, for GIL-free loops over a batch
# (the chunk counter and batch encoding). See _utf8_texts.pyx.
from libc.stdint cimport uint8_t


cdef class Utf8Texts:
    cdef list keep                  # what the pointers point into, kept alive
    cdef const uint8_t** starts     # text j is starts[j][0:lengths[j]]
    cdef Py_ssize_t* lengths
    cdef readonly Py_ssize_t count
