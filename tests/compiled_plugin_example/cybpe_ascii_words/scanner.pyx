"""The compiled scanner of the ``ascii-words`` pre-tokenizer (registered in __init__.py).

The pre-tokenizer is defined by its regex, PATTERN; AsciiWordScanner gives the
same pieces by walking the UTF-8 bytes. Every class of the pattern is ASCII, so a byte >= 0x80
(any byte of a non-ASCII character) is always "other": the scanner never decodes UTF-8 and any
byte string is cut on character boundaries.
"""

from libc.stdint cimport int64_t, uint8_t

from cybpe.pretokenize.scanner_api cimport BaseScanner, SCAN_NO_MEMORY, push_end, reserve_ends

PATTERN = r" ?[A-Za-z]+|[0-9]{1,3}|[^A-Za-z0-9 ]+| +"


cdef inline bint is_letter(uint8_t b) noexcept nogil:
    return (b | 0x20) >= c'a' and (b | 0x20) <= c'z'


cdef inline bint is_digit(uint8_t b) noexcept nogil:
    return c'0' <= b <= c'9'


cdef inline bint is_other(uint8_t b) noexcept nogil:
    return not is_letter(b) and not is_digit(b) and b != c' '


cdef class AsciiWordScanner(BaseScanner):
    """PATTERN's pieces, compiled. Immutable, so safe to share between threads."""

    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil:
        cdef Py_ssize_t pos = 0, count = 0, start
        if reserve_ends(ends, capacity, n // 4 + 16) != 0:
            return SCAN_NO_MEMORY
        while pos < n:
            start = pos
            if s[pos] == c' ' and pos + 1 < n and is_letter(s[pos + 1]):   # ' ?[A-Za-z]+'
                pos += 2
                while pos < n and is_letter(s[pos]):
                    pos += 1
            elif is_letter(s[pos]):
                while pos < n and is_letter(s[pos]):
                    pos += 1
            elif is_digit(s[pos]):                                          # [0-9]{1,3}
                while pos < n and pos - start < 3 and is_digit(s[pos]):
                    pos += 1
            elif s[pos] != c' ':                                            # [^A-Za-z0-9 ]+
                while pos < n and is_other(s[pos]):
                    pos += 1
            else:                                                           # ' +'
                while pos < n and s[pos] == c' ':
                    pos += 1
            if push_end(ends, capacity, &count, pos):
                return SCAN_NO_MEMORY
        return count

    def __reduce__(self):
        return (AsciiWordScanner, ())

