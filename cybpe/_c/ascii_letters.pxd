# ASCII letter runs 8 bytes at a time (SWAR), shared by the hand-written scanners
# (pretokenize/scanner.pyx) and the automaton runner (pretokenize/dfa_runner.pxd).
#
# Usage:
#     from cybpe._c.ascii_letters cimport cybpe_ascii_letters8
#     while p + 8 <= n:
#         k = cybpe_ascii_letters8(s + p, lower_only)   # letters among s[p:p+8], from the first
#         p += k
#         if k < 8:
#             break
#
# Thread safety: a pure function of the 8 bytes it reads; call it from any thread.
from libc.stdint cimport uint8_t

from cybpe._c.portable cimport ctz64   # (its C first: the function below uses it)

cdef extern from *:
    """
    #include <string.h>
    /* How many of the 8 bytes at p, from the first, are ASCII letters: [a-z] when lower_only,
       else [A-Za-z]. SWAR: per byte, y = byte (case-folded, high bit cleared) is a letter when
       0x61 <= y <= 0x7A, i.e. y + 0x1F has its high bit set and y + 0x05 has not; adding to
       bytes below 0x80 never carries into the next byte. */
    static inline unsigned cybpe_ascii_letters8(const uint8_t* p, int lower_only) {
        uint64_t w = cybpe_load64_le(p), y, hit, miss;
        y = (lower_only ? w : (w | 0x2020202020202020ULL)) & 0x7F7F7F7F7F7F7F7FULL;
        hit = (y + 0x1F1F1F1F1F1F1F1FULL) & ~(y + 0x0505050505050505ULL) & ~w;
        miss = ~hit & 0x8080808080808080ULL;
        if (!miss) return 8;
        return (unsigned)(CYBPE_CTZ64(miss) >> 3);
    }
    """
    unsigned cybpe_ascii_letters8(const uint8_t* p, int lower_only) noexcept nogil
