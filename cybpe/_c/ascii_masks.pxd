# Class bitmasks of 64 bytes at once, for the window scanner of the cl100k-like patterns
# (pretokenize/cl100k_window.pxd: cl100k, Llama 3, Qwen2, o200k). Bit i of each mask describes byte p[i].
#
# Usage:
#     from cybpe._c.ascii_masks cimport AsciiMasks, cybpe_ascii_masks64
#     from cybpe._c.cpu cimport lowest_bit
#     cdef AsciiMasks m
#     cybpe_ascii_masks64(s + pos, &m)          # reads exactly 64 bytes: s[pos:pos + 64]
#     ascii_length = 64 if m.high == 0 else lowest_bit(m.high)
#
# The classes are those of the `regex` module on ASCII: letters [A-Za-z] (\p{L}), digits [0-9]
# (\p{N}), whitespace [\t\n\v\f\r ] (\s; 0x1C-0x1F are not \s there). A byte >= 0x80 is in
# `high` and in no other mask. x86-64 (SSE2, always present there) classifies 16 bytes per
# instruction; other machines, and every CYBPE_PORTABLE=1 build (CI's stage-portable.sh), use the
# byte loop, its scalar twin (the choice: CYBPE_SSE2 in portable.pxd).
# tests/pretokenize/test_cl100k_window.py compares the two through scanner.pyx's _ascii_masks_both.
#
# Thread safety: pure functions of the 64 bytes they read; call them from any thread.
from libc.stdint cimport uint8_t, uint64_t

from cybpe._c.portable cimport ctz64   # (its C first: CYBPE_SSE2 and <emmintrin.h> come from there)

cdef extern from *:
    """
    #ifndef CYBPE_ASCII_MASKS
    #define CYBPE_ASCII_MASKS
    #include <stdint.h>
    #include <string.h>
    typedef struct {
        uint64_t high;        /* bytes >= 0x80 */
        uint64_t letter;      /* [A-Za-z] */
        uint64_t digit;       /* [0-9] */
        uint64_t space;       /* [\\t\\n\\v\\f\\r ] */
        uint64_t newline;     /* [\\r\\n] */
        uint64_t blank;       /* ' ' */
        uint64_t apostrophe;  /* '\\'' */
        uint64_t upper;       /* [A-Z] (o200k splits letter runs where one follows [a-z]) */
        uint64_t slash;       /* '/' (o200k's punctuation pieces take [\\r\\n/]* after them) */
    } CybpeAsciiMasks;

    static inline void cybpe_ascii_masks64_bytes(const uint8_t* p, CybpeAsciiMasks* m) {
        int i;
        uint8_t b, lower;
        uint64_t bit;
        m->high = m->letter = m->digit = m->space = m->newline = m->blank = m->apostrophe = 0;
        m->upper = m->slash = 0;
        for (i = 0; i < 64; i++) {
            b = p[i];
            bit = (uint64_t)1 << i;
            lower = (uint8_t)(b | 0x20);
            if (b >= 0x80) m->high |= bit;
            else if (lower >= 'a' && lower <= 'z') {
                m->letter |= bit;
                if (b <= 'Z') m->upper |= bit;
            }
            else if (b >= '0' && b <= '9') m->digit |= bit;
            else if ((b >= 0x09 && b <= 0x0D) || b == ' ') {
                m->space |= bit;
                if (b == '\\n' || b == '\\r') m->newline |= bit;
                if (b == ' ') m->blank |= bit;
            }
            else if (b == '\\'') m->apostrophe |= bit;
            else if (b == '/') m->slash |= bit;
        }
    }

    /* The 8 bytes at p are all ASCII. */
    static inline int cybpe_ascii8(const uint8_t* p) {
        uint64_t w;
        memcpy(&w, p, 8);
        return !(w & 0x8080808080808080ULL);
    }

    /* Every one of the 16 bytes at p is below `limit` (0x80 < limit <= 0xFF): per byte,
       (b & 0x7F) + (0x80 - (limit & 0x7F)) reaches bit 7 when b & 0x7F >= limit & 0x7F, with
       no carry into the next byte; anded with b's own bit 7, that is b >= limit. */
    static inline int cybpe_bytes_below16(const uint8_t* p, uint8_t limit) {
        uint64_t a, b, add = 0x0101010101010101ULL * (uint64_t)(0x80 - (limit & 0x7F));
        const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL, top = 0x8080808080808080ULL;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        return !(((((a & low7) + add) & a) | (((b & low7) + add) & b)) & top);
    }

    #if defined(CYBPE_SSE2)
    static inline void cybpe_ascii_masks64(const uint8_t* p, CybpeAsciiMasks* m) {
        int k;
        uint64_t shift;
        __m128i x, lower, t;
        m->high = m->letter = m->digit = m->space = m->newline = m->blank = m->apostrophe = 0;
        m->upper = m->slash = 0;
        for (k = 0; k < 4; k++) {
            shift = 16 * (uint64_t)k;
            x = _mm_loadu_si128((const __m128i*)(p + 16 * k));
            /* Signed compares: bytes >= 0x80 are negative, so in none of the ranges below. */
            m->high |= (uint64_t)(uint16_t)_mm_movemask_epi8(x) << shift;
            lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
            t = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                              _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
            m->letter |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
                              _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
            m->digit |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_or_si128(_mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8(0x08)),
                                           _mm_cmplt_epi8(x, _mm_set1_epi8(0x0E))),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8(' ')));
            m->space |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\\n')),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8('\\r')));
            m->newline |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_cmpeq_epi8(x, _mm_set1_epi8(' '));
            m->blank |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\''));
            m->apostrophe |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('A' - 1)),
                              _mm_cmplt_epi8(x, _mm_set1_epi8('Z' + 1)));
            m->upper |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
            t = _mm_cmpeq_epi8(x, _mm_set1_epi8('/'));
            m->slash |= (uint64_t)(uint16_t)_mm_movemask_epi8(t) << shift;
        }
    }
    #else
    #define cybpe_ascii_masks64 cybpe_ascii_masks64_bytes
    #endif
    #endif
    """
    ctypedef struct AsciiMasks "CybpeAsciiMasks":
        uint64_t high
        uint64_t letter
        uint64_t digit
        uint64_t space
        uint64_t newline
        uint64_t blank
        uint64_t apostrophe
        uint64_t upper
        uint64_t slash
    void cybpe_ascii_masks64(const uint8_t* p, AsciiMasks* m) noexcept nogil
    void cybpe_ascii_masks64_bytes(const uint8_t* p, AsciiMasks* m) noexcept nogil
    bint ascii8 "cybpe_ascii8"(const uint8_t* p) noexcept nogil   # reads p[0:8]
    bint bytes_below16 "cybpe_bytes_below16"(const uint8_t* p, uint8_t limit) noexcept nogil   # reads p[0:16]
