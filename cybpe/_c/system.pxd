# The one place where cybpe's C names an operating system: the page size, giving pages back,
# aligned blocks and per-thread keys, for POSIX (Linux, macOS, the BSDs) and Windows. Header-only
# (the C below is pasted, once, into each module that cimports this; only the modules that need it
# do, so <windows.h> stays out of the others). tests/test_portable_sources.py fails when these OS
# interfaces are named anywhere else.
#
#   page_size()            the OS page size, asked once (sysconf(_SC_PAGESIZE) / GetSystemInfo):
#                          4 KiB on x86-64 Linux, 16 KiB on Apple silicon, 64 KiB on some ARM kernels
#   drop_pages(p, n)       give the whole pages inside [p, p + n) back to the OS (madvise
#                          MADV_DONTNEED); their contents are undefined afterwards (zeros on
#                          Linux). Does nothing where there is no madvise (Windows).
#   aligned_block(&b, a, n)  posix_memalign; on Windows malloc (16-byte aligned, what correctness
#                          needs; the 64-byte alignment asked for is for cache lines), so that
#                          free() releases the block everywhere. 0 or an error number.
#   big_table_alloc(n, huge)  n bytes, zeroed, 64-byte aligned, for a big table read at random;
#                          with huge, on Linux, a table of 2 MiB or more gets a mapping of its own
#                          aligned to 2 MiB with transparent huge pages advised on its whole 2 MiB
#                          blocks (the tail stays in small pages: no memory added), since tables of
#                          megabytes in 4 KiB pages turn most random reads into TLB misses too.
#                          The first touch of a huge page may wait while the kernel compacts
#                          memory, so only tables filled at load ask for them (the encoder's token
#                          and pair tables); elsewhere, and without huge, aligned_block + memset.
#                          big_table_free(b, n, huge) frees it (the same n and huge).
#   pthread_key_t, pthread_once, pthread_key_create, pthread_getspecific, pthread_setspecific:
#                          POSIX threads' keys; on Windows the same names over fiber-local
#                          storage (FlsAlloc runs the destructor when a thread exits).
#
# Thread safety: page_size() caches the value in a plain static: threads racing on the first call
# all store the same value. The rest are the OS's own calls.
from cybpe._c.portable cimport ctz64   # (its C first: CYBPE_NOINLINE)

cdef extern from *:
    """
    #ifndef CYBPE_SYSTEM_H
    #define CYBPE_SYSTEM_H
    #include <stddef.h>
    #include <stdint.h>
    #include <stdlib.h>
    #if defined(_WIN32)
    #ifndef WIN32_LEAN_AND_MEAN
    #define WIN32_LEAN_AND_MEAN
    #endif
    #ifndef NOMINMAX
    #define NOMINMAX
    #endif
    #include <windows.h>
    #else
    #include <pthread.h>
    #include <unistd.h>
    #include <sys/mman.h>
    #if defined(MADV_DONTNEED)
    #define CYBPE_HAVE_MADVISE 1
    #endif
    #endif

    static size_t cybpe_page_size_cached = 0;
    static CYBPE_NOINLINE size_t cybpe_page_size_ask(void) {
        size_t n;
    #if defined(_WIN32)
        SYSTEM_INFO info;
        GetSystemInfo(&info);
        n = (size_t)info.dwPageSize;
    #else
        long v = sysconf(_SC_PAGESIZE);
        n = v > 0 ? (size_t)v : 0;
    #endif
        if (n < 512 || (n & (n - 1)) != 0) n = 4096;   /* never seen: not a power of two */
        cybpe_page_size_cached = n;
        return n;
    }
    static inline size_t cybpe_page_size(void) {
        size_t n = cybpe_page_size_cached;
        return n ? n : cybpe_page_size_ask();
    }

    static CYBPE_NOINLINE CYBPE_MAYBE_UNUSED void cybpe_drop_pages(void* p, size_t n) {   /* cold: a madvise call */
    #if defined(CYBPE_HAVE_MADVISE)
        uintptr_t page = (uintptr_t)cybpe_page_size();
        uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
        uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
        if (hi > lo) madvise((void*)lo, hi - lo, MADV_DONTNEED);
    #else
        (void)p;
        (void)n;
    #endif
    }

    #if defined(_WIN32)
    static inline int cybpe_aligned_block(void** block, size_t alignment, size_t size) {
        (void)alignment;
        *block = malloc(size);
        return *block == NULL ? 12 : 0;   /* ENOMEM */
    }

    typedef DWORD pthread_key_t;
    typedef INIT_ONCE pthread_once_t;
    #define PTHREAD_ONCE_INIT INIT_ONCE_STATIC_INIT
    static BOOL CALLBACK cybpe_once_call(PINIT_ONCE once, PVOID routine, PVOID* context) {
        (void)once;
        (void)context;
        ((void (*)(void))routine)();
        return TRUE;
    }
    static int pthread_once(pthread_once_t* once, void (*routine)(void)) {
        return InitOnceExecuteOnce(once, cybpe_once_call, (PVOID)routine, NULL) ? 0 : -1;
    }
    static int pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
        DWORD k = FlsAlloc((PFLS_CALLBACK_FUNCTION)destructor);
        if (k == FLS_OUT_OF_INDEXES) return -1;
        *key = k;
        return 0;
    }
    static void* pthread_getspecific(pthread_key_t key) { return FlsGetValue(key); }
    static int pthread_setspecific(pthread_key_t key, const void* value) {
        return FlsSetValue(key, (PVOID)value) ? 0 : -1;
    }
    #else
    #define cybpe_aligned_block posix_memalign
    #endif
    #include <string.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
    #define CYBPE_HUGE_BLOCK ((size_t)1 << 21)
    #define CYBPE_HUGE_ROUND(n) (((n) + CYBPE_HUGE_BLOCK - 1) & ~(CYBPE_HUGE_BLOCK - 1))
    #endif

    /* size bytes, zeroed, aligned to 64 bytes at least; NULL without memory. huge: advise huge
       pages (the first touch of each 2 MiB block may then wait for the kernel to find one). */
    static void* cybpe_big_table_alloc(size_t size, int huge) {
        void* block = NULL;
    #if defined(CYBPE_HUGE_BLOCK)
        if (huge && size >= CYBPE_HUGE_BLOCK) {
            /* Map one block more than needed, then unmap the slack on both sides of the first
               2 MiB boundary: the table starts on a huge-page boundary. */
            size_t mapped = CYBPE_HUGE_ROUND(size), span = mapped + CYBPE_HUGE_BLOCK;
            char* raw = (char*)mmap(NULL, span, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            char* start;
            if (raw == (char*)MAP_FAILED) return NULL;
            start = (char*)(((uintptr_t)raw + CYBPE_HUGE_BLOCK - 1) & ~(uintptr_t)(CYBPE_HUGE_BLOCK - 1));
            if (start > raw) munmap(raw, (size_t)(start - raw));
            if (raw + span > start + mapped) munmap(start + mapped, (size_t)(raw + span - (start + mapped)));
            madvise(start, size & ~(CYBPE_HUGE_BLOCK - 1), MADV_HUGEPAGE);  /* a hint only */
            return start;  /* anonymous pages are zero */
        }
    #endif
        if (cybpe_aligned_block(&block, 64, size ? size : 1) != 0) block = NULL;
        if (block != NULL) memset(block, 0, size);
        return block;
    }

    /* Frees a table from cybpe_big_table_alloc(size, huge); NULL is ignored. */
    static void cybpe_big_table_free(void* block, size_t size, int huge) {
        if (block == NULL) return;
    #if defined(CYBPE_HUGE_BLOCK)
        if (huge && size >= CYBPE_HUGE_BLOCK) {
            munmap(block, CYBPE_HUGE_ROUND(size));
            return;
        }
    #endif
        free(block);
    }
    #endif
    """
    size_t page_size "cybpe_page_size"() noexcept nogil
    void drop_pages "cybpe_drop_pages"(void* p, size_t n) noexcept nogil
    int aligned_block "cybpe_aligned_block"(void** block, size_t alignment, size_t size) noexcept nogil
    void* big_table_alloc "cybpe_big_table_alloc"(size_t size, bint huge) noexcept nogil
    void big_table_free "cybpe_big_table_free"(void* block, size_t size, bint huge) noexcept nogil
