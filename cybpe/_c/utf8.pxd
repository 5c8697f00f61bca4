# Reading UTF-8, shared by the compiled scanners (cybpe/pretokenize/scanner.pyx) and the
# pattern matcher (cybpe/pretokenize/pattern_scanner.pyx), so that both see the same characters
# in the same bytes.
from libc.stdint cimport int64_t, uint8_t, uint32_t

cdef extern from *:
    """
    #define CYBPE_INVALID_CP 0xFFFFFFFFu
    """
    const uint32_t INVALID_CP "CYBPE_INVALID_CP"  # a malformed byte: no code point, no class


cdef inline bint is_cont(uint8_t b) noexcept nogil:
    return (b & 0xC0) == 0x80


cdef inline uint32_t decode_cp(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t* q) noexcept nogil:
    """The code point of the multi-byte sequence at p (s[p] >= 0x80); *q = where the next starts.

    Well-formed sequences (surrogates allowed, as "surrogatepass" writes them) decode to their
    code point; anything else (stray continuation byte, overlong or truncated sequence, a value
    past U+10FFFF) consumes one byte and gives INVALID_CP, which has no class bit ("other").
    """
    cdef uint32_t b0 = s[p]
    cdef uint32_t b1, b2, b3
    if 0xC2 <= b0 <= 0xDF:
        if p + 1 < n and is_cont(s[p + 1]):
            q[0] = p + 2
            return ((b0 & 0x1F) << 6) | (s[p + 1] & 0x3F)
    elif 0xE0 <= b0 <= 0xEF:
        if p + 2 < n and is_cont(s[p + 1]) and is_cont(s[p + 2]):
            b1 = s[p + 1]
            if b0 != 0xE0 or b1 >= 0xA0:
                q[0] = p + 3
                return ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (s[p + 2] & 0x3F)
    elif 0xF0 <= b0 <= 0xF4:
        if p + 3 < n and is_cont(s[p + 1]) and is_cont(s[p + 2]) and is_cont(s[p + 3]):
            b1 = s[p + 1]
            if (b0 != 0xF0 or b1 >= 0x90) and (b0 != 0xF4 or b1 < 0x90):
                b2 = s[p + 2]
                b3 = s[p + 3]
                q[0] = p + 4
                return ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    q[0] = p + 1
    return INVALID_CP


cdef inline Py_ssize_t ends_to_code_points(const uint8_t* s, int64_t* ends, Py_ssize_t count) noexcept nogil:
    """Rewrite byte ends as code-point ends (counting the bytes that start a code point)."""
    cdef Py_ssize_t k
    cdef int64_t p = 0
    cdef int64_t cps = 0
    cdef int64_t stop
    for k in range(count):
        stop = ends[k]
        while p < stop:
            cps += not is_cont(s[p])
            p += 1
        ends[k] = cps
    return count
