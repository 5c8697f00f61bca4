# The one place where cybpe's C names a compiler: every builtin and intrinsic the compiled modules
# use is a macro or an inline function here, with a GCC/Clang definition, an MSVC one and a plain-C
# one. Header-only (the C below is pasted, once, into each module that cimports this, directly or
# through cpu.pxd, ascii_letters.pxd, ascii_masks.pxd or system.pxd). tests/test_portable_sources.py
# fails when a builtin or an intrinsic appears anywhere else.
#
# Which definition a build gets:
#
#   CYBPE_GNU     gcc, clang (and compilers that define __GNUC__): the GCC builtins, 1:1, so the
#                 machine code is the one the builtins gave before this file existed
#   CYBPE_MSVC    Microsoft's compiler: its intrinsics (<intrin.h>)
#   (neither)     plain C99/C11: bit tricks, byte loops, C11 atomics
#   CYBPE_SSE2    x86-64 (SSE2 is part of the architecture): the 16-byte classifier of ascii_masks
#
# CYBPE_PORTABLE (setup.py: CYBPE_PORTABLE=1) forces the plain-C definitions and the scalar twins
# with any compiler: that build, with CFLAGS=-funsigned-char, is CI's stage-portable.sh, so the
# code MSVC-on-ARM or an unknown compiler would run is tested on this machine too.
#
# Byte order is a compile-time fact (CYBPE_LITTLE_ENDIAN or CYBPE_BIG_ENDIAN, from Python's own
# PY_LITTLE_ENDIAN, cross-checked against the compiler's __BYTE_ORDER__): code that reads bytes as
# a word and cares which byte is which uses cybpe_load64_le, never a bare memcpy.
#
# Usage (from Cython, the names below; from C in another verbatim block, the macros):
#
#     from cybpe._c.portable cimport atomic_cas_int, atomic_store_int, ctz64, load64_le
#     k = ctz64(mask)                 # x != 0
#     w = load64_le(p)                # p[0] is the lowest byte of w, on every machine
#     if not atomic_cas_int(&flag, 0, 1): ...   # another thread holds the flag
#
# Thread safety: pure functions and macros; the atomics are atomic (with GCC/Clang, MSVC or C11;
# the last-resort plain-C forms rely on the GIL, and refuse a free-threaded build).
from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #ifndef CYBPE_PORTABLE_H
    #define CYBPE_PORTABLE_H
    #include <limits.h>
    #include <stddef.h>
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>

    /* ---- which compiler ---- */
    #if defined(CYBPE_PORTABLE)
    /* plain C, whatever the compiler */
    #elif defined(__GNUC__) || defined(__clang__)
    #define CYBPE_GNU 1
    #elif defined(_MSC_VER)
    #define CYBPE_MSVC 1
    #include <intrin.h>
    #endif

    /* ---- SIMD: each path has a scalar twin, chosen here at compile time ---- */
    #if !defined(CYBPE_PORTABLE) && (defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64))
    #define CYBPE_SSE2 1
    #include <emmintrin.h>
    #endif

    /* ---- byte order: known at compile time, or no build ---- */
    #if !defined(CYBPE_LITTLE_ENDIAN) && !defined(CYBPE_BIG_ENDIAN)
    #if defined(PY_LITTLE_ENDIAN)
    #if PY_LITTLE_ENDIAN
    #define CYBPE_LITTLE_ENDIAN 1
    #else
    #define CYBPE_BIG_ENDIAN 1
    #endif
    #elif defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    #define CYBPE_LITTLE_ENDIAN 1
    #elif defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    #define CYBPE_BIG_ENDIAN 1
    #elif defined(_MSC_VER)
    #define CYBPE_LITTLE_ENDIAN 1   /* every MSVC target is */
    #else
    #error "cybpe: unknown byte order; build with -DCYBPE_LITTLE_ENDIAN=1 or -DCYBPE_BIG_ENDIAN=1"
    #endif
    #endif
    #if defined(CYBPE_LITTLE_ENDIAN) && defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    #error "cybpe: CYBPE_LITTLE_ENDIAN on a compiler that says otherwise (__BYTE_ORDER__)"
    #endif
    #if defined(CYBPE_BIG_ENDIAN) && defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
    #error "cybpe: CYBPE_BIG_ENDIAN on a compiler that says otherwise (__BYTE_ORDER__)"
    #endif
    #if CHAR_BIT != 8
    #error "cybpe: needs 8-bit bytes"
    #endif

    /* ---- a function kept out of line (a cold path, so that its callers stay small); one put in
       line wherever it is called (a per-character step of a hot loop, which the compiler's size
       limits would otherwise leave as a call at some places); a static function that some of
       the modules it is pasted into never call (no warning) ---- */
    #if defined(CYBPE_GNU)
    #define CYBPE_NOINLINE __attribute__((noinline))
    #define CYBPE_ALWAYS_INLINE static inline __attribute__((always_inline))
    #define CYBPE_MAYBE_UNUSED __attribute__((unused))
    #elif defined(CYBPE_MSVC)
    #define CYBPE_NOINLINE __declspec(noinline)
    #define CYBPE_ALWAYS_INLINE static __forceinline
    #define CYBPE_MAYBE_UNUSED
    #else
    #define CYBPE_NOINLINE
    #define CYBPE_ALWAYS_INLINE static inline
    #define CYBPE_MAYBE_UNUSED
    #endif

    /* ---- prefetch: a hint, never a fault; rw 0 read / 1 write, locality 0..3 ---- */
    #if defined(CYBPE_GNU)
    #define CYBPE_PREFETCH(p, rw, locality) __builtin_prefetch((p), (rw), (locality))
    #elif defined(CYBPE_MSVC) && (defined(_M_X64) || defined(_M_AMD64))
    #define CYBPE_PREFETCH(p, rw, locality) _mm_prefetch((const char*)(p), _MM_HINT_T0)
    #else
    #define CYBPE_PREFETCH(p, rw, locality) ((void)(p))
    #endif

    /* ---- the index of the lowest set bit of a 64-bit word (x != 0) ---- */
    #if defined(CYBPE_GNU)
    #define CYBPE_CTZ64(x) __builtin_ctzll(x)
    #elif defined(CYBPE_MSVC) && (defined(_M_X64) || defined(_M_AMD64) || defined(_M_ARM64))
    static inline int cybpe_ctz64_msvc(uint64_t x) {
        unsigned long k;
        _BitScanForward64(&k, x);
        return (int)k;
    }
    #define CYBPE_CTZ64(x) cybpe_ctz64_msvc(x)
    #else
    /* De Bruijn: the lowest set bit (x & -x) times the sequence puts a unique 6-bit index on top. */
    static const unsigned char cybpe_debruijn64[64] = {
         0,  1, 48,  2, 57, 49, 28,  3, 61, 58, 50, 42, 38, 29, 17,  4,
        62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12,  5,
        63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
        46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19,  9, 13,  8,  7,  6};
    static inline int cybpe_ctz64_plain(uint64_t x) {
        return cybpe_debruijn64[((x & (0 - x)) * 0x03F79D71B4CB0A89ULL) >> 58];
    }
    #define CYBPE_CTZ64(x) cybpe_ctz64_plain(x)
    #endif

    /* ---- byte swap of a 64-bit word ---- */
    #if defined(CYBPE_GNU)
    #define CYBPE_BSWAP64(x) __builtin_bswap64(x)
    #elif defined(CYBPE_MSVC)
    #define CYBPE_BSWAP64(x) _byteswap_uint64(x)
    #else
    static inline uint64_t cybpe_bswap64_plain(uint64_t x) {
        x = ((x & 0x00FF00FF00FF00FFULL) << 8) | ((x >> 8) & 0x00FF00FF00FF00FFULL);
        x = ((x & 0x0000FFFF0000FFFFULL) << 16) | ((x >> 16) & 0x0000FFFF0000FFFFULL);
        return (x << 32) | (x >> 32);
    }
    #define CYBPE_BSWAP64(x) cybpe_bswap64_plain(x)
    #endif

    /* The 8 bytes at p as a word whose lowest byte is p[0], on every machine. */
    static inline uint64_t cybpe_load64_le(const void* p) {
        uint64_t w;
        memcpy(&w, p, 8);
    #if defined(CYBPE_BIG_ENDIAN)
        w = CYBPE_BSWAP64(w);
    #endif
        return w;
    }

    /* ---- the full 128-bit product of two 64-bit words: the low half, *hi the high one ---- */
    #if !defined(CYBPE_PORTABLE) && defined(__SIZEOF_INT128__)
    static inline uint64_t cybpe_mul128(uint64_t a, uint64_t b, uint64_t* hi) {
        unsigned __int128 r = (unsigned __int128)a * b;
        *hi = (uint64_t)(r >> 64);
        return (uint64_t)r;
    }
    #elif defined(CYBPE_MSVC) && (defined(_M_X64) || defined(_M_AMD64))
    static inline uint64_t cybpe_mul128(uint64_t a, uint64_t b, uint64_t* hi) {
        return _umul128(a, b, hi);
    }
    #elif defined(CYBPE_MSVC) && defined(_M_ARM64)
    static inline uint64_t cybpe_mul128(uint64_t a, uint64_t b, uint64_t* hi) {
        *hi = __umulh(a, b);
        return a * b;
    }
    #else
    static inline uint64_t cybpe_mul128(uint64_t a, uint64_t b, uint64_t* hi) {
        uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
        uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
        uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
        *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
        return (mid << 32) | (uint32_t)p00;
    }
    #endif

    /* ---- relaxed atomic add on a uint64_t, the new value ---- */
    #if defined(CYBPE_GNU)
    #define CYBPE_ATOMIC_ADD_FETCH_U64(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
    #elif defined(CYBPE_MSVC)
    #define CYBPE_ATOMIC_ADD_FETCH_U64(p, v) ((uint64_t)_InterlockedExchangeAdd64((volatile long long*)(p), (long long)(v)) + (uint64_t)(v))
    #elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
    #include <stdatomic.h>
    #define CYBPE_ATOMIC_ADD_FETCH_U64(p, v) (atomic_fetch_add_explicit((_Atomic uint64_t*)(p), (v), memory_order_relaxed) + (v))
    #elif defined(Py_GIL_DISABLED)
    #error "cybpe: a free-threaded build needs atomics (C11 <stdatomic.h>, GCC or MSVC)"
    #else
    /* No atomics known: the callers hold the GIL (docs/guide/free-threading.md). */
    #define CYBPE_ATOMIC_ADD_FETCH_U64(p, v) (*(p) += (v))
    #endif

    /* ---- a flag claimed by one thread at a time: compare-and-swap an int (1: swapped), and a
       release store; under the GIL they cost what a plain check and store do, and they are what
       a free-threaded build needs (docs/guide/free-threading.md) ---- */
    #if defined(CYBPE_GNU)
    static inline int cybpe_atomic_cas_int(int* p, int expected, int desired) {
        return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    #define CYBPE_ATOMIC_STORE_INT(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
    #elif defined(CYBPE_MSVC)
    static inline int cybpe_atomic_cas_int(int* p, int expected, int desired) {
        return _InterlockedCompareExchange((volatile long*)p, (long)desired, (long)expected) == (long)expected;
    }
    #define CYBPE_ATOMIC_STORE_INT(p, v) ((void)_InterlockedExchange((volatile long*)(p), (long)(v)))
    #elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
    static inline int cybpe_atomic_cas_int(int* p, int expected, int desired) {
        return atomic_compare_exchange_strong_explicit((_Atomic int*)p, &expected, desired,
                                                       memory_order_acq_rel, memory_order_acquire);
    }
    #define CYBPE_ATOMIC_STORE_INT(p, v) atomic_store_explicit((_Atomic int*)(p), (v), memory_order_release)
    #else
    static inline int cybpe_atomic_cas_int(int* p, int expected, int desired) {
        if (*p != expected) return 0;
        *p = desired;
        return 1;
    }
    #define CYBPE_ATOMIC_STORE_INT(p, v) ((void)(*(p) = (v)))
    #endif

    /* What this build chose, for cybpe._c.build_info (and the CI stages that check it). */
    #if defined(CYBPE_GNU)
    #define CYBPE_BUILTINS "gnu"
    #elif defined(CYBPE_MSVC)
    #define CYBPE_BUILTINS "msvc"
    #else
    #define CYBPE_BUILTINS "plain"
    #endif
    #if defined(CYBPE_SSE2)
    #define CYBPE_SIMD "sse2"
    #else
    #define CYBPE_SIMD "scalar"
    #endif
    #if defined(CYBPE_LITTLE_ENDIAN)
    #define CYBPE_BYTE_ORDER "little"
    #else
    #define CYBPE_BYTE_ORDER "big"
    #endif
    #if defined(CYBPE_PORTABLE)
    #define CYBPE_PORTABLE_BUILD 1
    #else
    #define CYBPE_PORTABLE_BUILD 0
    #endif
    #define CYBPE_CHAR_IS_SIGNED (CHAR_MIN < 0)
    #if defined(__VERSION__)
    #define CYBPE_COMPILER __VERSION__
    #elif defined(_MSC_FULL_VER)
    #define CYBPE_COMPILER "MSVC"
    #else
    #define CYBPE_COMPILER "unknown"
    #endif
    #endif
    """
    int ctz64 "CYBPE_CTZ64"(uint64_t x) noexcept nogil          # x != 0
    uint64_t bswap64 "CYBPE_BSWAP64"(uint64_t x) noexcept nogil
    uint64_t load64_le "cybpe_load64_le"(const void* p) noexcept nogil
    uint64_t mul128 "cybpe_mul128"(uint64_t a, uint64_t b, uint64_t* hi) noexcept nogil
    bint atomic_cas_int "cybpe_atomic_cas_int"(int* p, int expected, int desired) noexcept nogil
    void atomic_store_int "CYBPE_ATOMIC_STORE_INT"(int* p, int value) noexcept nogil
    const char* BUILTINS "CYBPE_BUILTINS"
    const char* SIMD "CYBPE_SIMD"
    const char* BYTE_ORDER "CYBPE_BYTE_ORDER"
    const bint PORTABLE_BUILD "CYBPE_PORTABLE_BUILD"
    const bint CHAR_IS_SIGNED "CYBPE_CHAR_IS_SIGNED"
    const char* COMPILER "CYBPE_COMPILER"
