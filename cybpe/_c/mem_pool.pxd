# One owner for a compiled object's C memory: every block comes from a MemPool, which remembers
# it, and mem_free_all hands them all back. A cdef class that holds a MemPool frees every buffer
# it ever allocated with one call in __dealloc__, also after an error half-way through a build
# (the memory the trainer and the parity loop own; see training/trainer.pxd, MergeRun).
#
# Each block carries a 16-byte header (two links of a doubly linked list), so alloc, realloc and
# free are O(1) and a block keeps malloc's alignment on 64-bit platforms (8 bytes on 32-bit ones,
# enough for int64 and double). The functions are C kept out of line (CYBPE_NOINLINE,
# _c/portable.pxd): they are cold paths that call malloc anyway, and out of line they leave the
# hot loops that may grow a buffer as small as when those called realloc directly (so gcc inlines
# the same helpers into them). A block must go back through its pool (mem_free, mem_realloc,
# mem_free_all), never through free() or realloc(). Allocation failure returns NULL (or -1 for
# mem_grow) and leaves the pool and the old block as they were; the caller turns it into
# MemoryError (with the GIL) or an error code (without it).
#
# Usage:
#
#     from cybpe._c.mem_pool cimport MemPool, mem_alloc, mem_grow, mem_free_all
#
#     cdef class Owner:
#         cdef MemPool mem        # zeroed with the object: an empty pool
#         cdef int64_t* data
#         cdef Py_ssize_t capacity
#
#         def __dealloc__(self):
#             mem_free_all(&self.mem)                    # every block the owner allocated
#
#         cdef build(self, Py_ssize_t n):
#             self.data = <int64_t*>mem_alloc(&self.mem, n, sizeof(int64_t))
#             if self.data == NULL:
#                 raise MemoryError()
#             self.capacity = n
#             with nogil:                                # growing needs no GIL
#                 if mem_grow(&self.mem, <void**>&self.data, &self.capacity, 2 * n,
#                             sizeof(int64_t), 16) != 0:
#                     ...                                # out of memory: data is unchanged
#
# cymem's Pool does the same job, but it is a Python object whose alloc/realloc need the GIL
# (a dict of addresses, PyMem_Malloc) and zero every block; the trainers grow their buffers inside
# nogil loops and allocate node arrays of hundreds of MB that need no zeroing.
#
# Thread safety: a MemPool belongs to one owner and is used by one thread at a time (the owner's
# nogil loop, or its methods with the GIL); different pools share nothing (malloc is thread-safe).
from cybpe._c.portable cimport ctz64   # (its C first: CYBPE_NOINLINE, CYBPE_MAYBE_UNUSED)
from cybpe._c.types cimport grown_capacity


cdef extern from *:
    """
    #ifndef CYBPE_MEM_POOL_H
    #define CYBPE_MEM_POOL_H
    #include <stdlib.h>

    typedef struct cybpe_mem_block {      /* the header in front of every block */
        struct cybpe_mem_block* prev;
        struct cybpe_mem_block* next;
    } cybpe_mem_block;

    typedef struct {
        cybpe_mem_block* first;           /* the most recent block; NULL when the pool is empty */
        Py_ssize_t blocks;                /* blocks held (for tests and stats) */
    } cybpe_mem_pool;

    /* The bytes of a block of n items (at least one, so that NULL always means out of memory)
       with its header, or 0 when that overflows. */
    static size_t cybpe_mem_bytes(Py_ssize_t n, size_t item) {
        size_t count = n > 0 ? (size_t)n : 1;
        if (item == 0 || count > ((size_t)-1 - sizeof(cybpe_mem_block)) / item) return 0;
        return count * item + sizeof(cybpe_mem_block);
    }

    static CYBPE_MAYBE_UNUSED void cybpe_mem_init(cybpe_mem_pool* pool) {
        pool->first = NULL;
        pool->blocks = 0;
    }

    static void* cybpe_mem_link(cybpe_mem_pool* pool, cybpe_mem_block* h) {
        h->prev = NULL;
        h->next = pool->first;
        if (pool->first != NULL) pool->first->prev = h;
        pool->first = h;
        pool->blocks += 1;
        return (void*)(h + 1);
    }

    static CYBPE_NOINLINE CYBPE_MAYBE_UNUSED void* cybpe_mem_alloc(cybpe_mem_pool* pool, Py_ssize_t n, size_t item) {
        size_t size = cybpe_mem_bytes(n, item);
        cybpe_mem_block* h = size ? (cybpe_mem_block*)malloc(size) : NULL;
        return h == NULL ? NULL : cybpe_mem_link(pool, h);
    }

    static CYBPE_NOINLINE CYBPE_MAYBE_UNUSED void* cybpe_mem_calloc(cybpe_mem_pool* pool, Py_ssize_t n, size_t item) {
        size_t size = cybpe_mem_bytes(n, item);
        cybpe_mem_block* h = size ? (cybpe_mem_block*)calloc(1, size) : NULL;
        return h == NULL ? NULL : cybpe_mem_link(pool, h);
    }

    static CYBPE_NOINLINE CYBPE_MAYBE_UNUSED void* cybpe_mem_realloc(cybpe_mem_pool* pool, void* block, Py_ssize_t n, size_t item) {
        size_t size = cybpe_mem_bytes(n, item);
        cybpe_mem_block* h;
        if (block == NULL) return cybpe_mem_alloc(pool, n, item);
        if (size == 0) return NULL;
        h = (cybpe_mem_block*)realloc((cybpe_mem_block*)block - 1, size);
        if (h == NULL) return NULL;           /* the old block is unchanged and still linked */
        if (h->prev != NULL) h->prev->next = h; else pool->first = h;
        if (h->next != NULL) h->next->prev = h;
        return (void*)(h + 1);
    }

    static CYBPE_NOINLINE CYBPE_MAYBE_UNUSED void cybpe_mem_free(cybpe_mem_pool* pool, void* block) {
        cybpe_mem_block* h;
        if (block == NULL) return;
        h = (cybpe_mem_block*)block - 1;
        if (h->prev != NULL) h->prev->next = h->next; else pool->first = h->next;
        if (h->next != NULL) h->next->prev = h->prev;
        pool->blocks -= 1;
        free(h);
    }

    static CYBPE_NOINLINE CYBPE_MAYBE_UNUSED void cybpe_mem_free_all(cybpe_mem_pool* pool) {
        cybpe_mem_block* h = pool->first;
        while (h != NULL) {
            cybpe_mem_block* next = h->next;
            free(h);
            h = next;
        }
        pool->first = NULL;
        pool->blocks = 0;
    }
    #endif
    """
    ctypedef struct MemPool "cybpe_mem_pool":
        Py_ssize_t blocks       # blocks held (for tests and stats); zeroed = an empty pool

    # an empty pool (a MemPool inside a cdef class is one already: the object starts zeroed)
    void mem_init "cybpe_mem_init"(MemPool* pool) nogil
    # n uninitialised items of item bytes owned by pool (at least one item), or NULL
    void* mem_alloc "cybpe_mem_alloc"(MemPool* pool, Py_ssize_t n, size_t item) nogil
    # n zeroed items of item bytes owned by pool, or NULL
    void* mem_calloc "cybpe_mem_calloc"(MemPool* pool, Py_ssize_t n, size_t item) nogil
    # block (of pool, or NULL) resized to n items, its contents kept up to the smaller size: the
    # new address, or NULL with block unchanged and still owned
    void* mem_realloc "cybpe_mem_realloc"(MemPool* pool, void* block, Py_ssize_t n, size_t item) nogil
    # one block of pool given back early (NULL: nothing)
    void mem_free "cybpe_mem_free"(MemPool* pool, void* block) nogil
    # every block of pool freed; the pool is empty (and usable) afterwards
    void mem_free_all "cybpe_mem_free_all"(MemPool* pool) nogil


cdef inline int mem_grow(MemPool* pool, void** data, Py_ssize_t* capacity, Py_ssize_t want,
                         size_t item, Py_ssize_t minimum) noexcept nogil:
    """``grow_buffer`` (cybpe/_c/types.pxd, the same doubling rule) for a block of ``pool``
    (``*data`` may be NULL): 0, or -1 when out of memory, with ``*data`` and ``*capacity``
    unchanged."""
    cdef Py_ssize_t cap
    cdef void* grown
    if want <= capacity[0]:
        return 0
    cap = grown_capacity(capacity[0], want, item, minimum)
    if cap < 0:
        return -1
    grown = mem_realloc(pool, data[0], cap, item)
    if grown == NULL:
        return -1
    data[0] = grown
    capacity[0] = cap
    return 0
