"""The compiled fast path of the ``.tiktoken`` reader (cybpe/formats/tiktoken.py): every
``<base64> <rank>`` line checked and decoded in one pass over the file's bytes.

``rank_lines_tokens(body)`` answers for the whole file or gives up (returns None) at the first
thing it does not accept; the caller then walks the lines in Python, which finds the same line
and raises the error that names it (so the messages live in one place). What it accepts is
exactly what the Python path accepts: lines ``<b64> <rank>\\n`` with one space, ranks written as
``b"%d" % i`` for line ``i``, and canonical base64 (cybpe/formats/b64.py: the alphabet, padding
only where the last group needs it, no stray bits in the last character -- the strings that
re-encode to themselves). ``tests/formats/test_tiktoken_lines.py`` checks it against
:func:`cybpe.formats.b64.strict_b64decode_all` on hostile fields and whole files.

One compiled pass replaces a Python fast path of ``translate`` + ``split`` + rank-text compare
+ two ``map`` passes of base64 decoding and re-encoding, several times slower; most of the time
left is making the ``bytes`` objects (docs/history.md, "Loading vocabularies").

Thread safety: a pure function over an immutable ``bytes``; safe from any thread.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int8_t, uint8_t, uint32_t
from libc.string cimport memcmp


# base64 character -> its 6-bit value, or -1 (also for "=", handled apart).
cdef int8_t[256] B64_VALUE


def _fill_b64_table():
    cdef int c
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for c in range(256):
        B64_VALUE[c] = -1
    for c in range(64):
        B64_VALUE[alphabet[c]] = <int8_t>c


_fill_b64_table()


cdef Py_ssize_t decoded_length(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """The length of canonical base64 ``s[:n]`` decoded, or -1 when it is not canonical."""
    cdef Py_ssize_t pad = 0, i
    if n == 0 or n & 3:
        return -1
    if s[n - 1] == b'=':
        pad = 2 if s[n - 2] == b'=' else 1
    for i in range(n - pad):
        if B64_VALUE[s[i]] < 0:
            return -1
    # The last data character's unused low bits must be zero (4 bits before "==", 2 before "=").
    if pad == 2 and (B64_VALUE[s[n - 3]] & 0x0F):
        return -1
    if pad == 1 and (B64_VALUE[s[n - 2]] & 0x03):
        return -1
    return (n >> 2) * 3 - pad


cdef void decode_into(const uint8_t* s, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """Decode canonical base64 ``s[:n]`` (checked by decoded_length) into ``out``."""
    cdef Py_ssize_t i
    cdef uint32_t v
    for i in range(0, n - 4, 4):
        v = ((<uint32_t>B64_VALUE[s[i]] << 18) | (<uint32_t>B64_VALUE[s[i + 1]] << 12)
             | (<uint32_t>B64_VALUE[s[i + 2]] << 6) | <uint32_t>B64_VALUE[s[i + 3]])
        out[0] = <uint8_t>(v >> 16)
        out[1] = <uint8_t>(v >> 8)
        out[2] = <uint8_t>v
        out += 3
    i = n - 4  # the last group, which may be padded
    v = (<uint32_t>B64_VALUE[s[i]] << 18) | (<uint32_t>B64_VALUE[s[i + 1]] << 12)
    out[0] = <uint8_t>(v >> 16)
    if s[i + 2] != b'=':
        v |= <uint32_t>B64_VALUE[s[i + 2]] << 6
        out[1] = <uint8_t>(v >> 8)
        if s[i + 3] != b'=':
            v |= <uint32_t>B64_VALUE[s[i + 3]]
            out[2] = <uint8_t>v


cdef inline void next_rank_text(char* digits, Py_ssize_t* width) noexcept nogil:
    """Add one to the decimal number ``digits[:width]`` (no leading zeros), in place."""
    cdef Py_ssize_t i = width[0] - 1
    while i >= 0 and digits[i] == b'9':
        digits[i] = b'0'
        i -= 1
    if i >= 0:
        digits[i] += 1
    else:  # 99..9 -> 100..0
        digits[0] = b'1'
        digits[width[0]] = b'0'
        width[0] += 1


def rank_lines_tokens(bytes body):
    """The decoded tokens of ``body`` (a ``.tiktoken`` file without its final newline or
    trailing blank lines, LF line ends) when every line ``i`` is ``<canonical base64> <i>``;
    None otherwise."""
    cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(body)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(body), pos = 0, start, end, n_lines = 1, i
    cdef Py_ssize_t width = 1, length
    cdef char digits[24]
    cdef object token
    cdef list out
    if size == 0:
        return None
    for i in range(size):  # one line per "\n" (the file has no final newline)
        n_lines += s[i] == b'\n'
    out = PyList_New(n_lines)  # (slots NULL until set; a list given up on is freed as such)
    digits[0] = b'0'
    for i in range(n_lines):
        start = pos
        while pos < size and s[pos] != b' ' and s[pos] != b'\n':
            pos += 1
        if pos >= size or s[pos] != b' ':
            return None
        end = pos
        pos += 1
        if size - pos < width or memcmp(s + pos, digits, width) != 0:
            return None
        pos += width
        if pos < size:
            if s[pos] != b'\n':
                return None
            pos += 1
        elif i != n_lines - 1:
            return None
        next_rank_text(digits, &width)
        length = decoded_length(s + start, end - start)
        if length < 0:
            return None
        token = PyBytes_FromStringAndSize(NULL, length)
        decode_into(s + start, end - start, <uint8_t*>PyBytes_AS_STRING(token))
        Py_INCREF(token)
        PyList_SET_ITEM(out, i, token)
    return out
