# Data structures of the BPE merge trainer (``trainer.pyx``), with their nogil helpers.
#
# * Node: one per byte of every unique chunk, linked into the chunk's current token sequence
#   (for modules that cimport it; trainer.pyx itself keeps 8-byte unlinked ByteNodes, see its docstring).
# * PairTable: open-addressing hash (linear probing, backward-shift deletion) from the pair key
#   ``left << 32 | right`` to its int64 count and its occurrence block.
# * OccPool: the occurrence lists (left-node ids), in power-of-two blocks of one growable arena.
# * Heap: lazy binary max-heap of (count, key).
# * TokenStore: the bytes of every token, with a bytes -> id index.
#
# * MergeRun: the cdef class both loops' owners subclass: the run's MemPool (cybpe/_c/mem_pool.pxd)
#   that every structure above allocates from, freed at once in __dealloc__, and the Python side
#   they share (byte order, token store set-up, the veto, error codes to exceptions).
#
# Helpers that allocate take the run's MemPool first and return ERR_NOMEM (or -1 where they
# return an index or id) when out of memory.
#
# Used by the merge trainer (trainer.pyx) and the parity-aware merge loop (parity_merge.pyx):
#
#     from cybpe.training.trainer cimport MergeRun, TokenStore, tokens_concat, token_as_bytes
#     cdef class _Loop(MergeRun):          # self.mem owns every buffer; no __dealloc__ needed
#         ...
#         self.set_byte_order(byte_order, id_of_byte)
#         self.init_tokens(&self.t.tokens, seed_tokens)
#         merged = tokens_concat(&self.mem, &self.t.tokens, left, right, &is_new)  # bytes(l) + bytes(r)
#
# Thread safety: structs and inline functions only; a structure belongs to one training run, which
# one thread drives at a time (a MergeRun is not shared between threads).
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memcmp

from cybpe._c.cpu cimport FIBONACCI
from cybpe._c.system cimport drop_pages   # whole OS pages back (the OS's page size, not 4 KiB)
from cybpe._c.mem_pool cimport MemPool, mem_alloc, mem_realloc, mem_free, mem_grow
from cybpe._c.types cimport token_t, count_t, node_t


cdef extern from *:
    """
    #define CYBPE_TRAINER_EMPTY_KEY UINT64_MAX
    """
    const uint64_t EMPTY_KEY "CYBPE_TRAINER_EMPTY_KEY"   # marks a free pair slot
    const uint32_t FREE_END "UINT32_MAX"                 # ends a pool free list


cdef enum:
    ERR_NOMEM = -1
    ERR_INTERNAL = -2
    ERR_CALLBACK = -3      # a Python callback (the merge veto) raised
    OCC_UNIT = 4           # occurrence entries per pool unit; a class-c block holds OCC_UNIT << c
    OCC_NONE = 255         # occ_class of a pair without an occurrence block
    OCC_CLASSES = 32
    OCC_DROP_CLASS = 12    # released blocks of this class and up (>= 64 KiB) leave the RSS
    MAX_NODE_IDS = 2147483646  # node ids are int32 with -1 as "none": INT32_MAX - 1 nodes


cdef enum StopReason:
    RUNNING = 0
    STOP_VOCAB = 1
    STOP_MIN_FREQUENCY = 2
    STOP_NO_PAIRS = 3


# ---------------------------------------------------------------------------------------------
# C data structures
# ---------------------------------------------------------------------------------------------

cdef struct Node:
    token_t sym        # current token starting here; -1 once merged into the left neighbour
    node_t prev        # -1 at the start of a chunk
    node_t next        # -1 at the end of a chunk
    int32_t chunk


cdef struct PairSlot:       # 32 bytes: two per cache line
    uint64_t key       # left << 32 | right, EMPTY_KEY when free
    count_t count
    uint32_t occ_block # occurrence block in the pool: left-node ids where the pair was created
    int32_t occ_len    #   (stale entries allowed)
    int32_t rise_step  # last step in which the count went up
    uint8_t occ_class  # the block holds OCC_UNIT << occ_class entries; OCC_NONE: no block
    uint8_t unsorted   # the entries may be out of node order
    uint8_t excluded   # a merge rule (max length, veto) refused the pair when it topped the heap


cdef struct PairTable:
    PairSlot* slots    # 64-byte aligned inside slots_raw
    void* slots_raw
    uint64_t mask
    int shift          # 64 - log2(capacity)
    int64_t live


cdef struct OccPool:
    # One growable arena of node ids cut into power-of-two blocks with a free list per size class.
    # Blocks are named by their offset (in units of OCC_UNIT entries), so growing the arena with
    # realloc keeps every name valid; pointers into it are only held between two allocations.
    node_t* base
    int64_t used       # units handed out
    int64_t cap        # units allocated
    uint32_t free_head[OCC_CLASSES]


cdef struct HeapEntry:
    count_t count
    uint64_t key


cdef struct Heap:
    HeapEntry* data
    int64_t size
    int64_t cap


cdef struct TokenStore:
    uint8_t* data      # bytes of every token, back to back
    int64_t data_len
    int64_t data_cap
    int64_t* offset    # per token id
    int32_t* length
    int32_t n
    int32_t cap
    int32_t* index     # open addressing over token ids, -1 when free
    uint64_t index_mask


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

cdef inline uint64_t pair_key(token_t left, token_t right) noexcept nogil:
    return ((<uint64_t><uint32_t>left) << 32) | <uint64_t><uint32_t>right


cdef inline uint64_t home_slot(const PairTable* t, uint64_t key) noexcept nogil:
    return (key * FIBONACCI) >> t.shift


cdef inline int grow_array(MemPool* mem, void** arr, int64_t* cap, int64_t need,
                           size_t item) noexcept nogil:
    """Make ``*arr`` (a block of ``mem``, or NULL) hold at least ``need`` items (doubling, from
    16). ERR_NOMEM when out of memory."""
    cdef Py_ssize_t capacity = cap[0]
    if mem_grow(mem, arr, &capacity, need, item, 16) != 0:
        return ERR_NOMEM
    cap[0] = capacity
    return 0


cdef inline int compare_nodes(const void* x, const void* y) noexcept nogil:
    cdef node_t a = (<const node_t*>x)[0]
    cdef node_t b = (<const node_t*>y)[0]
    return (a > b) - (a < b)


# ---------------------------------------------------------------------------------------------
# Pair table
# ---------------------------------------------------------------------------------------------

cdef inline int64_t pairs_find(const PairTable* t, uint64_t key) noexcept nogil:
    cdef uint64_t i = home_slot(t, key)
    cdef uint64_t k
    while True:
        k = t.slots[i].key
        if k == key:
            return <int64_t>i
        if k == EMPTY_KEY:
            return -1
        i = (i + 1) & t.mask


cdef inline int64_t pairs_find_or_add(PairTable* t, uint64_t key) noexcept nogil:
    """Index of ``key``'s slot, adding an empty one. The caller reserved room (pairs_reserve)."""
    cdef uint64_t i = home_slot(t, key)
    cdef uint64_t k
    cdef PairSlot* s
    while True:
        k = t.slots[i].key
        if k == key:
            return <int64_t>i
        if k == EMPTY_KEY:
            s = &t.slots[i]
            s.key = key
            s.count = 0
            s.occ_block = 0
            s.occ_len = 0
            s.occ_class = OCC_NONE
            s.rise_step = -1
            s.unsorted = 0
            s.excluded = 0
            t.live += 1
            return <int64_t>i
        i = (i + 1) & t.mask


cdef inline int pairs_reserve(MemPool* mem, PairTable* t, int64_t extra) noexcept nogil:
    """Grow (and rehash) so that ``extra`` more pairs keep the load factor <= 1/2."""
    cdef uint64_t old_cap = t.mask + 1 if t.slots != NULL else 0
    cdef uint64_t cap = old_cap if old_cap else 64
    cdef int shift = 58
    cdef PairSlot* old = t.slots
    cdef void* old_raw = t.slots_raw
    cdef void* raw
    cdef PairSlot* fresh
    cdef uint64_t i, j
    while <uint64_t>(t.live + extra) * 2 > cap:
        cap *= 2
    if cap == old_cap:
        return 0
    while (<uint64_t>1 << (64 - shift)) < cap:
        shift -= 1
    raw = mem_alloc(mem, <Py_ssize_t>(cap * sizeof(PairSlot) + 64), 1)
    if raw == NULL:
        return ERR_NOMEM
    fresh = <PairSlot*>((<uintptr_t>raw + 63) & ~<uintptr_t>63)
    for i in range(cap):
        fresh[i].key = EMPTY_KEY
    t.slots = fresh
    t.slots_raw = raw
    t.mask = cap - 1
    t.shift = shift
    for i in range(old_cap):
        if old[i].key != EMPTY_KEY:
            j = home_slot(t, old[i].key)
            while fresh[j].key != EMPTY_KEY:
                j = (j + 1) & t.mask
            fresh[j] = old[i]
    mem_free(mem, old_raw)
    return 0


cdef inline void pairs_delete(PairTable* t, uint64_t key) noexcept nogil:
    """Remove ``key`` (its occurrence list must be freed already); backward-shift deletion."""
    cdef int64_t found = pairs_find(t, key)
    cdef uint64_t i, j, h
    if found < 0:
        return
    i = <uint64_t>found
    j = i
    while True:
        j = (j + 1) & t.mask
        if t.slots[j].key == EMPTY_KEY:
            break
        h = home_slot(t, t.slots[j].key)
        # the entry at j may move back to i unless its home lies cyclically in (i, j]
        if (i < h <= j) if i <= j else (i < h or h <= j):
            continue
        t.slots[i] = t.slots[j]
        i = j
    t.slots[i].key = EMPTY_KEY
    t.live -= 1


# ---------------------------------------------------------------------------------------------
# Occurrence pool
# ---------------------------------------------------------------------------------------------

cdef inline void pool_init(OccPool* pool) noexcept nogil:
    cdef int c
    for c in range(OCC_CLASSES):
        pool.free_head[c] = FREE_END


cdef inline node_t* pool_block(const OccPool* pool, uint32_t block) noexcept nogil:
    return pool.base + <int64_t>block * OCC_UNIT


cdef inline int64_t pool_alloc(MemPool* mem, OccPool* pool, int cls) noexcept nogil:
    """A block of OCC_UNIT << cls entries (its offset), or -1 when out of memory."""
    cdef uint32_t block = pool.free_head[cls]
    cdef int64_t units = <int64_t>1 << cls
    cdef int64_t cap
    cdef node_t* grown
    if block != FREE_END:
        pool.free_head[cls] = <uint32_t>pool_block(pool, block)[0]
        return block
    if pool.used + units > pool.cap:
        cap = pool.cap if pool.cap else 4096
        while cap < pool.used + units:
            cap *= 2
        if cap > FREE_END:
            cap = FREE_END
            if pool.used + units > cap:
                return -1
        grown = <node_t*>mem_realloc(mem, pool.base, cap * OCC_UNIT, sizeof(node_t))
        if grown == NULL:
            return -1
        pool.base = grown
        pool.cap = cap
    block = <uint32_t>pool.used
    pool.used += units
    return block


cdef inline void pool_release(OccPool* pool, uint32_t block, int cls) noexcept nogil:
    # A big free block keeps only its first entry (the free-list link) resident: its other pages
    # go back to the OS until the block is reused (trainer.pyx, module docstring: "Pool pages").
    if cls >= OCC_DROP_CLASS:
        drop_pages(pool_block(pool, block) + 1,
                   ((<size_t>OCC_UNIT << cls) - 1) * sizeof(node_t))
    pool_block(pool, block)[0] = <node_t>pool.free_head[cls]
    pool.free_head[cls] = block


cdef inline int occ_class_for(int64_t n) noexcept nogil:
    cdef int c = 0
    while (<int64_t>OCC_UNIT << c) < n:
        c += 1
    return c


cdef inline void occ_drop(OccPool* pool, PairSlot* s) noexcept nogil:
    if s.occ_class != OCC_NONE:
        pool_release(pool, s.occ_block, s.occ_class)
    s.occ_class = OCC_NONE
    s.occ_len = 0
    s.unsorted = 0


cdef inline int occ_append(MemPool* mem, OccPool* pool, PairSlot* s, node_t node) noexcept nogil:
    cdef int64_t block
    cdef node_t* entries
    if s.occ_class == OCC_NONE or s.occ_len == (<int64_t>OCC_UNIT << s.occ_class):
        block = pool_alloc(mem, pool, 0 if s.occ_class == OCC_NONE else s.occ_class + 1)
        if block < 0:
            return ERR_NOMEM
        if s.occ_class != OCC_NONE:
            memcpy(pool_block(pool, <uint32_t>block), pool_block(pool, s.occ_block),
                   <size_t>s.occ_len * sizeof(node_t))
            pool_release(pool, s.occ_block, s.occ_class)
            s.occ_class += 1
        else:
            s.occ_class = 0
        s.occ_block = <uint32_t>block
    entries = pool_block(pool, s.occ_block)
    if s.occ_len and entries[s.occ_len - 1] > node:
        s.unsorted = 1
    entries[s.occ_len] = node
    s.occ_len += 1
    return 0


# ---------------------------------------------------------------------------------------------
# Lazy max-heap: larger count first, then smaller key (= smaller (left, right))
# ---------------------------------------------------------------------------------------------

cdef inline bint ranks_above(const HeapEntry* x, const HeapEntry* y) noexcept nogil:
    return x.count > y.count or (x.count == y.count and x.key < y.key)


cdef inline void heap_sift_down(Heap* h, int64_t i) noexcept nogil:
    cdef HeapEntry item = h.data[i]
    cdef int64_t child
    while True:
        child = 2 * i + 1
        if child >= h.size:
            break
        if child + 1 < h.size and ranks_above(&h.data[child + 1], &h.data[child]):
            child += 1
        if not ranks_above(&h.data[child], &item):
            break
        h.data[i] = h.data[child]
        i = child
    h.data[i] = item


cdef inline int heap_push(MemPool* mem, Heap* h, count_t count, uint64_t key) noexcept nogil:
    cdef int64_t i, parent
    cdef HeapEntry item
    if h.size == h.cap and grow_array(mem, <void**>&h.data, &h.cap, h.size + 1, sizeof(HeapEntry)) != 0:
        return ERR_NOMEM
    item.count = count
    item.key = key
    i = h.size
    h.size += 1
    while i > 0:
        parent = (i - 1) // 2
        if not ranks_above(&item, &h.data[parent]):
            break
        h.data[i] = h.data[parent]
        i = parent
    h.data[i] = item
    return 0


cdef inline HeapEntry heap_pop(Heap* h) noexcept nogil:
    cdef HeapEntry top = h.data[0]
    h.size -= 1
    if h.size > 0:
        h.data[0] = h.data[h.size]
        heap_sift_down(h, 0)
    return top


# ---------------------------------------------------------------------------------------------
# Token bytes, with a bytes -> id index (to detect merges that spell an existing token)
# ---------------------------------------------------------------------------------------------

cdef inline uint64_t hash_bytes(const uint8_t* p, int64_t n) noexcept nogil:
    cdef uint64_t h = 0xCBF29CE484222325
    cdef int64_t i
    for i in range(n):
        h = (h ^ p[i]) * <uint64_t>0x100000001B3
    return h ^ (h >> 29)


cdef inline int tokens_rebuild_index(MemPool* mem, TokenStore* ts, uint64_t cap) noexcept nogil:
    cdef int32_t* index = <int32_t*>mem_alloc(mem, <Py_ssize_t>cap, sizeof(int32_t))
    cdef uint64_t i, j
    cdef int32_t t
    if index == NULL:
        return ERR_NOMEM
    for i in range(cap):
        index[i] = -1
    for t in range(ts.n):
        j = hash_bytes(ts.data + ts.offset[t], ts.length[t]) & (cap - 1)
        while index[j] >= 0:
            j = (j + 1) & (cap - 1)
        index[j] = t
    mem_free(mem, ts.index)
    ts.index = index
    ts.index_mask = cap - 1
    return 0


cdef inline int32_t tokens_intern_tail(MemPool* mem, TokenStore* ts, int64_t n,
                                       bint* is_new) noexcept nogil:
    """Id of the ``n`` bytes written just past the stored tokens: the existing id if they are a
    token already, else a fresh id (the bytes become that token). Returns -1 when out of memory."""
    cdef const uint8_t* tail = ts.data + ts.data_len
    cdef int64_t cap
    cdef uint64_t j = hash_bytes(tail, n) & ts.index_mask
    cdef int32_t t
    while ts.index[j] >= 0:
        t = ts.index[j]
        if ts.length[t] == n and memcmp(ts.data + ts.offset[t], tail, n) == 0:
            is_new[0] = False
            return t
        j = (j + 1) & ts.index_mask
    if ts.n == ts.cap:
        cap = ts.cap
        if grow_array(mem, <void**>&ts.offset, &cap, ts.n + 1, sizeof(int64_t)) != 0:
            return -1
        cap = ts.cap
        if grow_array(mem, <void**>&ts.length, &cap, ts.n + 1, sizeof(int32_t)) != 0:
            return -1
        ts.cap = <int32_t>cap
    t = ts.n
    ts.offset[t] = ts.data_len
    ts.length[t] = <int32_t>n
    ts.data_len += n
    ts.n += 1
    if <uint64_t>ts.n * 2 > ts.index_mask + 1:
        if tokens_rebuild_index(mem, ts, (ts.index_mask + 1) * 2) != 0:
            return -1
    else:
        ts.index[j] = t
    is_new[0] = True
    return t


cdef inline int32_t tokens_add(MemPool* mem, TokenStore* ts, const uint8_t* text, int64_t n,
                               bint* is_new) noexcept nogil:
    """Id of ``text`` (existing, or fresh). -1 when out of memory."""
    if grow_array(mem, <void**>&ts.data, &ts.data_cap, ts.data_len + n, 1) != 0:
        return -1
    memcpy(ts.data + ts.data_len, text, n)
    return tokens_intern_tail(mem, ts, n, is_new)


cdef inline int32_t tokens_concat(MemPool* mem, TokenStore* ts, int32_t left, int32_t right,
                                  bint* is_new) noexcept nogil:
    """Id of bytes(left) + bytes(right) (existing, or fresh). -1 when out of memory."""
    cdef int64_t n_left = ts.length[left]
    cdef int64_t n_right = ts.length[right]
    cdef uint8_t* tail
    if grow_array(mem, <void**>&ts.data, &ts.data_cap, ts.data_len + n_left + n_right, 1) != 0:
        return -1
    tail = ts.data + ts.data_len
    memcpy(tail, ts.data + ts.offset[left], n_left)
    memcpy(tail + n_left, ts.data + ts.offset[right], n_right)
    return tokens_intern_tail(mem, ts, n_left + n_right, is_new)


cdef inline int tokens_init(MemPool* mem, TokenStore* ts, const uint8_t* byte_of_id) noexcept nogil:
    """The 256 single-byte tokens (internal id ``r`` is the byte ``byte_of_id[r]``) and the index.
    ERR_NOMEM when out of memory (what was allocated stays in ``mem``, freed with it)."""
    cdef int r
    ts.data_cap = 4096
    ts.data = <uint8_t*>mem_alloc(mem, ts.data_cap, 1)
    ts.cap = 1024
    ts.offset = <int64_t*>mem_alloc(mem, ts.cap, sizeof(int64_t))
    ts.length = <int32_t*>mem_alloc(mem, ts.cap, sizeof(int32_t))
    if ts.data == NULL or ts.offset == NULL or ts.length == NULL:
        return ERR_NOMEM
    for r in range(256):
        ts.data[r] = byte_of_id[r]
        ts.offset[r] = r
        ts.length[r] = 1
    ts.data_len = 256
    ts.n = 256
    return tokens_rebuild_index(mem, ts, 1024)


cdef inline bint tokens_pair_too_long(const TokenStore* ts, int32_t left, int32_t right,
                                      int32_t max_token_length) noexcept nogil:
    """HF ``max_token_length``: a pair is a candidate only while its bytes are fewer than the
    limit, except a pair of two single bytes (HF counts those before the first merge)."""
    cdef int64_t n = <int64_t>ts.length[left] + ts.length[right]
    return n >= max_token_length and n > 2


cdef inline bytes token_as_bytes(const TokenStore* ts, int32_t token):
    """Token ``token``'s bytes as a Python ``bytes`` (needs the GIL)."""
    return PyBytes_FromStringAndSize(<const char*>(ts.data + ts.offset[token]), ts.length[token])


cdef inline list tokens_as_list(const TokenStore* ts):
    """Every token's bytes by external id: the 256 bytes in byte order, then the new tokens."""
    cdef int32_t token
    cdef list out = [bytes([b]) for b in range(256)]
    for token in range(256, ts.n):
        out.append(token_as_bytes(ts, token))
    return out


# ---------------------------------------------------------------------------------------------
# The owner of one run: its memory and the Python side both loops share
# ---------------------------------------------------------------------------------------------

cdef class MergeRun:
    # The base of _MergeTrainer (trainer.pyx) and _ParityTrainer (parity_merge.pyx). Every buffer
    # of the run comes from ``mem`` (the structures' helpers above take it), so __dealloc__ is one
    # mem_free_all, also after an error half-way through a load.
    cdef MemPool mem
    cdef list byte_of_id      # internal id (< 256) -> byte value
    cdef object veto          # None, or veto(left_bytes, right_bytes) -> true to refuse
    cdef object veto_error    # what the veto raised, re-raised by check
    cdef str doing            # what the run does, for MemoryError's message

    cdef void* alloc(self, Py_ssize_t n, size_t item, bint zeroed=*) except NULL
    cdef check(self, int rc)
    cdef set_byte_order(self, list byte_order, int32_t* id_of_byte)
    cdef init_tokens(self, TokenStore* ts, list seed_tokens)
    cdef void* set_veto(self, veto)
    cdef object external(self, int32_t token)


cdef inline int ask_veto(void* owner, const TokenStore* ts, token_t left, token_t right) noexcept with gil:
    """1 if the owner's (a MergeRun's) ``veto(left_bytes, right_bytes)`` refuses the merge, 0 if
    not, ERR_CALLBACK if it raised (the exception waits in ``veto_error``)."""
    cdef MergeRun run = <MergeRun>owner
    try:
        return 1 if run.veto(token_as_bytes(ts, left), token_as_bytes(ts, right)) else 0
    except BaseException as exc:
        run.veto_error = exc
        return ERR_CALLBACK


cdef inline str stop_name(int stop):
    """The ``stop_reason`` a result reports for a StopReason."""
    return ("running", "vocab_size", "min_frequency", "no_pairs")[stop]
