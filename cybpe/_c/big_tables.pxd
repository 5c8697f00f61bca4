# Memory for the big tables the encoder reads at random (the token and pair hash tables, the
# per-thread piece cache). Header-only (the C below is pasted into each module that cimports
# this).
#
# Usage:
#
#     from cybpe._c.big_tables cimport big_table_alloc, big_table_free
#
#     slots = <TokenSlot*>big_table_alloc(n * sizeof(TokenSlot), True)   # zeroed, 64-byte aligned
#     if slots == NULL:
#         raise MemoryError()
#     ...
#     big_table_free(slots, n * sizeof(TokenSlot), True)            # the same size and flag
#
# Why: one encode call reads these tables at places no cache line predicts, and tables of
# megabytes in 4 KiB pages turn most of those reads into TLB misses too. On Linux, with
# huge=True, a table of 2 MiB or more gets a mapping of its own, aligned to 2 MiB, with
# transparent huge pages advised for the whole 2 MiB blocks inside it (the tail stays in small
# pages, so no memory is added). The first touch of a huge page may wait while the kernel
# compacts memory to find one (milliseconds on a fragmented host), and fresh pages cost a fault
# each: tables filled at load take both at load. Without huge (the thread cache, first touched
# while encoding) the memory comes from the C allocator, which mostly hands back pages the
# process has touched already, such as the buffers freed after loading. Where the system has no THP, or disables them, the advice is ignored and the pages
# stay small: the result is the same memory, only slower. Elsewhere (and for small tables)
# the memory comes from the C allocator. The measurements: docs/performance.md.
#
# Thread safety: big_table_alloc and big_table_free only call the OS or the C allocator; safe
# from any thread, with or without the GIL. A table is as thread-safe as its owner makes it.

cdef extern from *:
    """
    #ifndef CYBPE_BIG_TABLES
    #define CYBPE_BIG_TABLES
    #include <stddef.h>
    #include <stdint.h>
    #include <stdlib.h>
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
    #if defined(_WIN32)
        block = _aligned_malloc(size ? size : 1, 64);
    #else
        if (posix_memalign(&block, 64, size ? size : 1) != 0) block = NULL;
    #endif
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
    #if defined(_WIN32)
        _aligned_free(block);
    #else
        free(block);
    #endif
    }
    #endif
    """
    void* big_table_alloc "cybpe_big_table_alloc"(size_t size, bint huge) noexcept nogil
    void big_table_free "cybpe_big_table_free"(void* block, size_t size, bint huge) noexcept nogil
