# C-level API of the compiled pre-tokenizer scanners (see _scanner.pyx).
#
# A scanner walks UTF-8 bytes (lone surrogates encoded as 3 bytes, "surrogatepass", are read
# as their code points) and returns piece ends; the pieces are exactly those of the regex
# pattern of the built-in pre-tokenizer with the same name.
from libc.stdint cimport int64_t, uint8_t

# Scanner kinds (values are stable: saved nowhere, but the encoder may switch on them).
cdef enum:
    SCAN_GPT2 = 0
    SCAN_CL100K = 1
    SCAN_O200K = 2
    SCAN_LLAMA3 = 3
    SCAN_QWEN2 = 4
    SCAN_GPT4_DIGITS1 = 5
    SCAN_GPT4_DIGITS2 = 6
    SCAN_GPT4_DIGITS3 = 7
    SCAN_GPT4_DIGITS_RTL = 8
    SCAN_ABUGIDA = 9
    SCAN_KIND_COUNT = 10


cdef Py_ssize_t scan_next(int kind, const uint8_t* s, Py_ssize_t n, Py_ssize_t pos) noexcept nogil
    # Byte offset of the end of the piece that starts at byte `pos` (< n) of the UTF-8 text
    # s[0:n]. `pos` must be 0 or an end this function returned for the same text (the
    # right-to-left digit grouping of SCAN_GPT4_DIGITS_RTL relies on it).

cdef Py_ssize_t scan_all(int kind, const uint8_t* s, Py_ssize_t n,
                         int64_t** ends, Py_ssize_t* capacity) noexcept nogil
    # Every piece end of s[0:n], in order, written to the malloc'ed buffer *ends (of
    # *capacity entries; grown with realloc as needed, *ends may be NULL with *capacity 0).
    # Returns the number of pieces, or -1 when out of memory (the buffer stays valid and
    # owned by the caller, who frees it in every case).


cdef class Scanner:
    cdef readonly str name
    cdef readonly int kind
