# CPU-level helpers shared by the compiled modules: memory prefetch hints, the Fibonacci
# hashing multiplier and bit scans of a 64-bit word. Header-only (the C below is pasted into
# each module that cimports this).
#
# Usage:
#
#     from cybpe._c.cpu cimport FIBONACCI, bit_count, lowest_bit, prefetch_read, prefetch_write
#
#     slot = (key * FIBONACCI) >> shift        # multiplicative (Fibonacci) hashing
#     prefetch_read(&table[next_slot])         # a hint, never a fault: any address is allowed
#     while bits:                              # the set bits of a word, lowest first
#         k = lowest_bit(bits)
#         bits &= bits - 1
#
# Thread safety: pure functions and constants; safe from any thread, with or without the GIL.

from libc.stdint cimport uint64_t

from cybpe._c.portable cimport ctz64   # (its C first: the macros below use it)

cdef extern from *:
    """
    #ifndef CYBPE_CPU_HELPERS
    #define CYBPE_CPU_HELPERS
    #include <stdint.h>
    #define CYBPE_PREFETCH_READ(p) CYBPE_PREFETCH((const void*)(p), 0, 3)
    #define CYBPE_PREFETCH_WRITE(p) CYBPE_PREFETCH((const void*)(p), 1, 3)
    /* 2^64 / golden ratio: multiplicative hashing spreads consecutive keys over the table. */
    #define CYBPE_FIBONACCI 0x9E3779B97F4A7C15ULL

    /* Index of the lowest set bit of x (x != 0). */
    static inline int cybpe_lowest_bit(uint64_t x) {
        return CYBPE_CTZ64(x);
    }

    /* Index of the lowest set bit of x, any value when x == 0 (branch-free). */
    static inline int cybpe_lowest_bit_any(uint64_t x) {
        return cybpe_lowest_bit(x | 0x8000000000000000ULL);
    }

    /* Number of set bits of x. Bit arithmetic, not a popcount builtin: without -mpopcnt
       (baseline x86-64, as wheels are built) gcc makes that a call into libgcc. */
    static inline int cybpe_bit_count(uint64_t x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    #endif
    """
    void prefetch_read "CYBPE_PREFETCH_READ"(const void* address) noexcept nogil
    void prefetch_write "CYBPE_PREFETCH_WRITE"(const void* address) noexcept nogil
    const uint64_t FIBONACCI "CYBPE_FIBONACCI"
    int lowest_bit "cybpe_lowest_bit"(uint64_t x) noexcept nogil  # x != 0
    int lowest_bit_any "cybpe_lowest_bit_any"(uint64_t x) noexcept nogil  # any value when x == 0
    int bit_count "cybpe_bit_count"(uint64_t x) noexcept nogil
