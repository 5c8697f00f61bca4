# CPU-level helpers shared by the compiled modules: memory prefetch hints and the Fibonacci
# hashing multiplier. Header-only (the C below is pasted into each module that cimports this).
#
# Usage:
#
#     from cybpe._c.cpu cimport FIBONACCI, prefetch_read, prefetch_write
#
#     slot = (key * FIBONACCI) >> shift        # multiplicative (Fibonacci) hashing
#     prefetch_read(&table[next_slot])         # a hint, never a fault: any address is allowed
#
# Thread safety: pure functions and constants; safe from any thread, with or without the GIL.

from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #ifndef CYBPE_CPU_HELPERS
    #define CYBPE_CPU_HELPERS
    #if defined(__GNUC__) || defined(__clang__)
    #define CYBPE_PREFETCH_READ(p) __builtin_prefetch((const void*)(p), 0, 3)
    #define CYBPE_PREFETCH_WRITE(p) __builtin_prefetch((const void*)(p), 1, 3)
    #else
    #define CYBPE_PREFETCH_READ(p) ((void)(p))
    #define CYBPE_PREFETCH_WRITE(p) ((void)(p))
    #endif
    /* 2^64 / golden ratio: multiplicative hashing spreads consecutive keys over the table. */
    #define CYBPE_FIBONACCI 0x9E3779B97F4A7C15ULL
    #endif
    """
    void prefetch_read "CYBPE_PREFETCH_READ"(const void* address) noexcept nogil
    void prefetch_write "CYBPE_PREFETCH_WRITE"(const void* address) noexcept nogil
    const uint64_t FIBONACCI "CYBPE_FIBONACCI"
