"""BPE merge trainer core: unique chunks with multiplicities in, ordered merges out.

Semantics are those of ``cybpe._reference_trainer`` (read its docstring); the differential tests in
``tests/test_trainer_core.py`` hold the two together.

Performance notes
-----------------
* Layout (notes §A.3): one node per byte of every unique chunk of length >= 2, chunks stored one
  after another, so node ids grow left to right inside a chunk and chunk by chunk. Nodes are an
  array of structs ``{sym, prev, next, chunk}`` (16 bytes) rather than four arrays: a merge site
  touches the four neighbouring nodes p, i, j, k, which then share one or two cache lines.
* Pairs live in an open-addressing table (linear probing, Fibonacci hashing of the uint64 key
  ``left << 32 | right``, load <= 1/2). A slot keeps the int64 count and the *occurrence list*: the
  left-node ids where the pair was created. Entries go stale when a neighbour merges; they are
  validated on use (a node's (sym, next sym) pair never takes the same value twice, so a stale entry
  never comes back to life). Per-merge work is therefore proportional to the merge sites, never to the
  chunk lengths or the table size.
* Before a step the table is grown for the worst case (2 new pairs per site) and zero-count pairs
  are deleted only after the step (backward-shift deletion), so slot pointers and indices stay
  valid inside the hot loop. A pair whose count falls to 0 has no valid occurrence left: its list is
  freed at once, which keeps memory at O(live occurrences).
* Lazy max-heap of (count, key): every live pair has an entry whose count is >= its live count; a
  popped entry that disagrees with the live count is re-pushed with the live count. With fresh ids
  counts only go down after a pair's first push; when a merge reuses an existing id (duplicate
  bytes), counts of older pairs can go up, so every pair whose count rose during a step is re-pushed
  at the end of the step with its final count.
* A reused id can also append an earlier node to an occurrence list that already holds later nodes;
  such lists are flagged on append and sorted (qsort) before they are applied, because application
  must run left to right.
* The initial byte-pair statistics use a dense 256x256 counting sort instead of the hash table: the
  occurrence lists come out sorted and exactly sized in two linear passes.
* ``tie_break="huggingface"`` costs nothing in the loop: the 256 byte ids are renamed into HF order
  on input and renamed back on output, so the heap always orders by the plain (left, right) pair.
* The loop runs without the GIL; it takes the GIL back only to call ``progress`` every
  ``PROGRESS_EVERY`` merges.
"""

from libc.stdint cimport (int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t, INT32_MAX,
                          INT64_MAX)
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memcpy, memcmp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize

from cybpe._types cimport token_t, count_t, node_t

import numpy as np

from cybpe.errors import InvalidParameterError, TrainingError

TIE_BREAKS = ("ids", "huggingface")
PROGRESS_EVERY = 256

cdef extern from *:
    """
    #define CYBPE_TRAINER_EMPTY_KEY UINT64_MAX
    """
    const uint64_t EMPTY_KEY "CYBPE_TRAINER_EMPTY_KEY"   # marks a free pair slot
    const uint32_t FREE_END "UINT32_MAX"                 # ends a pool free list


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define CYBPE_TRAINER_PREFETCH(p) __builtin_prefetch((const void*)(p), 1, 3)
    #else
    #define CYBPE_TRAINER_PREFETCH(p) ((void)0)
    #endif
    """
    void prefetch "CYBPE_TRAINER_PREFETCH"(const void* address) noexcept nogil


cdef enum:
    ERR_NOMEM = -1
    ERR_INTERNAL = -2
    PREFETCH_1 = 24        # prefetch pipeline: how many sites ahead each stage works
    PREFETCH_2 = 16
    PREFETCH_3 = 8
    PREFETCH_4 = 4
    OCC_UNIT = 4           # occurrence entries per pool unit; a class-c block holds OCC_UNIT << c
    OCC_NONE = 255         # occ_class of a pair without an occurrence block
    OCC_CLASSES = 32


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


cdef struct Trainer:
    Node* nodes
    int64_t n_nodes
    count_t* weight    # per chunk
    PairTable pairs
    OccPool pool
    Heap heap
    TokenStore tokens
    int32_t* log_left  # merge log, in merge order (internal ids)
    int32_t* log_right
    int32_t* log_new
    count_t* log_count
    int64_t n_log
    int64_t log_cap
    int64_t* risen     # slots whose count went up in the current step
    int64_t n_risen
    int64_t risen_cap
    uint64_t* emptied  # keys whose count fell to 0 in the current step
    int64_t n_emptied
    int64_t emptied_cap
    int32_t step
    int32_t n_target
    int32_t n_created
    count_t min_frequency
    int stop
    int64_t n_sites    # statistics: merge sites applied, stale occurrences skipped,
    int64_t n_stale    #   occurrence lists sorted, merges that reused an existing id
    int64_t n_sorted
    int64_t n_reused


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

cdef inline uint64_t pair_key(token_t left, token_t right) noexcept nogil:
    return ((<uint64_t><uint32_t>left) << 32) | <uint64_t><uint32_t>right


cdef inline uint64_t home_slot(const PairTable* t, uint64_t key) noexcept nogil:
    return (key * <uint64_t>0x9E3779B97F4A7C15) >> t.shift


cdef int grow_array(void** arr, int64_t* cap, int64_t need, size_t item) noexcept nogil:
    """Make ``*arr`` hold at least ``need`` items (doubling). -1 when out of memory."""
    cdef int64_t new_cap = cap[0]
    cdef void* grown
    if need <= new_cap:
        return 0
    if new_cap < 16:
        new_cap = 16
    while new_cap < need:
        new_cap *= 2
    grown = realloc(arr[0], <size_t>new_cap * item)
    if grown == NULL:
        return ERR_NOMEM
    arr[0] = grown
    cap[0] = new_cap
    return 0


cdef int compare_nodes(const void* x, const void* y) noexcept nogil:
    cdef node_t a = (<const node_t*>x)[0]
    cdef node_t b = (<const node_t*>y)[0]
    return (a > b) - (a < b)


# ---------------------------------------------------------------------------------------------
# Pair table
# ---------------------------------------------------------------------------------------------

cdef int64_t pairs_find(const PairTable* t, uint64_t key) noexcept nogil:
    cdef uint64_t i = home_slot(t, key)
    cdef uint64_t k
    while True:
        k = t.slots[i].key
        if k == key:
            return <int64_t>i
        if k == EMPTY_KEY:
            return -1
        i = (i + 1) & t.mask


cdef int64_t pairs_find_or_add(PairTable* t, uint64_t key) noexcept nogil:
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
            t.live += 1
            return <int64_t>i
        i = (i + 1) & t.mask


cdef int pairs_reserve(PairTable* t, int64_t extra) noexcept nogil:
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
    raw = malloc(cap * sizeof(PairSlot) + 64)
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
    free(old_raw)
    return 0


cdef void pairs_delete(PairTable* t, uint64_t key) noexcept nogil:
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

cdef void pool_init(OccPool* pool) noexcept nogil:
    cdef int c
    for c in range(OCC_CLASSES):
        pool.free_head[c] = FREE_END


cdef inline node_t* pool_block(const OccPool* pool, uint32_t block) noexcept nogil:
    return pool.base + <int64_t>block * OCC_UNIT


cdef int64_t pool_alloc(OccPool* pool, int cls) noexcept nogil:
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
        grown = <node_t*>realloc(pool.base, <size_t>cap * OCC_UNIT * sizeof(node_t))
        if grown == NULL:
            return -1
        pool.base = grown
        pool.cap = cap
    block = <uint32_t>pool.used
    pool.used += units
    return block


cdef inline void pool_release(OccPool* pool, uint32_t block, int cls) noexcept nogil:
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


cdef inline int occ_append(OccPool* pool, PairSlot* s, node_t node) noexcept nogil:
    cdef int64_t block
    cdef node_t* entries
    if s.occ_class == OCC_NONE or s.occ_len == (<int64_t>OCC_UNIT << s.occ_class):
        block = pool_alloc(pool, 0 if s.occ_class == OCC_NONE else s.occ_class + 1)
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


cdef void heap_sift_down(Heap* h, int64_t i) noexcept nogil:
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


cdef int heap_push(Heap* h, count_t count, uint64_t key) noexcept nogil:
    cdef int64_t i, parent
    cdef HeapEntry item
    if h.size == h.cap and grow_array(<void**>&h.data, &h.cap, h.size + 1, sizeof(HeapEntry)) != 0:
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


cdef HeapEntry heap_pop(Heap* h) noexcept nogil:
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


cdef int tokens_rebuild_index(TokenStore* ts, uint64_t cap) noexcept nogil:
    cdef int32_t* index = <int32_t*>malloc(cap * sizeof(int32_t))
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
    free(ts.index)
    ts.index = index
    ts.index_mask = cap - 1
    return 0


cdef int32_t tokens_intern_tail(TokenStore* ts, int64_t n, bint* is_new) noexcept nogil:
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
        if grow_array(<void**>&ts.offset, &cap, ts.n + 1, sizeof(int64_t)) != 0:
            return -1
        cap = ts.cap
        if grow_array(<void**>&ts.length, &cap, ts.n + 1, sizeof(int32_t)) != 0:
            return -1
        ts.cap = <int32_t>cap
    t = ts.n
    ts.offset[t] = ts.data_len
    ts.length[t] = <int32_t>n
    ts.data_len += n
    ts.n += 1
    if <uint64_t>ts.n * 2 > ts.index_mask + 1:
        if tokens_rebuild_index(ts, (ts.index_mask + 1) * 2) != 0:
            return -1
    else:
        ts.index[j] = t
    is_new[0] = True
    return t


cdef int32_t tokens_add(TokenStore* ts, const uint8_t* text, int64_t n, bint* is_new) noexcept nogil:
    """Id of ``text`` (existing, or fresh). -1 when out of memory."""
    if grow_array(<void**>&ts.data, &ts.data_cap, ts.data_len + n, 1) != 0:
        return -1
    memcpy(ts.data + ts.data_len, text, n)
    return tokens_intern_tail(ts, n, is_new)


cdef int32_t tokens_concat(TokenStore* ts, int32_t left, int32_t right, bint* is_new) noexcept nogil:
    """Id of bytes(left) + bytes(right) (existing, or fresh). -1 when out of memory."""
    cdef int64_t n_left = ts.length[left]
    cdef int64_t n_right = ts.length[right]
    cdef uint8_t* tail
    if grow_array(<void**>&ts.data, &ts.data_cap, ts.data_len + n_left + n_right, 1) != 0:
        return -1
    tail = ts.data + ts.data_len
    memcpy(tail, ts.data + ts.offset[left], n_left)
    memcpy(tail + n_left, ts.data + ts.offset[right], n_right)
    return tokens_intern_tail(ts, n_left + n_right, is_new)


# ---------------------------------------------------------------------------------------------
# The merge loop
# ---------------------------------------------------------------------------------------------

cdef inline int count_down(Trainer* t, uint64_t key, count_t w, const PairSlot* merging) noexcept nogil:
    cdef int64_t s = pairs_find(&t.pairs, key)
    cdef PairSlot* slot
    if s < 0:
        return ERR_INTERNAL
    slot = &t.pairs.slots[s]
    slot.count -= w
    if slot.count == 0 and slot != merging:
        # no valid occurrence is left: drop the list now, the slot after the step
        occ_drop(&t.pool, slot)
        t.emptied[t.n_emptied] = key
        t.n_emptied += 1
    return 0


cdef inline int count_up(Trainer* t, uint64_t key, count_t w, node_t left_node) noexcept nogil:
    cdef int64_t s = pairs_find_or_add(&t.pairs, key)
    cdef PairSlot* slot = &t.pairs.slots[s]
    slot.count += w
    if slot.rise_step != t.step:
        slot.rise_step = t.step
        t.risen[t.n_risen] = s
        t.n_risen += 1
    return occ_append(&t.pool, slot, left_node)


cdef inline void prefetch_slot(const PairTable* t, token_t left, token_t right) noexcept nogil:
    prefetch(&t.slots[home_slot(t, pair_key(left, right))])


cdef inline void prefetch_neighbours(const Trainer* t, node_t i) noexcept nogil:
    """Stage 2 for site ``i`` (its node has arrived): pull the chunk weight and both neighbours."""
    cdef const Node* node = &t.nodes[i]
    prefetch(&t.weight[node.chunk])
    if node.prev >= 0:
        prefetch(&t.nodes[node.prev])
    if node.next >= 0:
        prefetch(&t.nodes[node.next])


cdef inline void prefetch_left(const Trainer* t, node_t i, token_t a, token_t merged_id) noexcept nogil:
    """Stage 3: pull the slots of (prev, a) and (prev, merged_id), and the node after the pair."""
    cdef const Node* nodes = t.nodes
    cdef node_t p = nodes[i].prev
    cdef node_t j = nodes[i].next
    if p >= 0:
        prefetch_slot(&t.pairs, nodes[p].sym, a)
        prefetch_slot(&t.pairs, nodes[p].sym, merged_id)
    if j >= 0 and nodes[j].next >= 0:
        prefetch(&nodes[nodes[j].next])


cdef inline void prefetch_right(const Trainer* t, node_t i, token_t b, token_t merged_id) noexcept nogil:
    """Stage 4: pull the slots of (b, next) and (merged_id, next)."""
    cdef const Node* nodes = t.nodes
    cdef node_t j = nodes[i].next
    cdef node_t k
    if j >= 0:
        k = nodes[j].next
        if k >= 0:
            prefetch_slot(&t.pairs, b, nodes[k].sym)
            prefetch_slot(&t.pairs, merged_id, nodes[k].sym)


cdef int apply_merge(Trainer* t, uint64_t key, token_t merged_id) noexcept nogil:
    """Replace every occurrence of the pair ``key`` by ``merged_id``, left to right per chunk."""
    cdef token_t a = <token_t>(key >> 32)
    cdef token_t b = <token_t><uint32_t>key
    cdef Node* nodes = t.nodes
    cdef int64_t s = pairs_find(&t.pairs, key)
    cdef int64_t n_sites, idx, r
    cdef PairSlot* merging
    cdef const node_t* occ
    cdef node_t i, j, p, k
    cdef count_t w
    cdef int rc
    if s < 0:
        return ERR_INTERNAL
    n_sites = t.pairs.slots[s].occ_len
    # room for the worst case, so that no slot moves while the loop holds pointers and indices
    if pairs_reserve(&t.pairs, 2 * n_sites) != 0:
        return ERR_NOMEM
    if grow_array(<void**>&t.risen, &t.risen_cap, 2 * n_sites, sizeof(int64_t)) != 0:
        return ERR_NOMEM
    if grow_array(<void**>&t.emptied, &t.emptied_cap, 2 * n_sites, sizeof(uint64_t)) != 0:
        return ERR_NOMEM
    s = pairs_find(&t.pairs, key)
    merging = &t.pairs.slots[s]
    if merging.unsorted:
        qsort(pool_block(&t.pool, merging.occ_block), <size_t>n_sites, sizeof(node_t),
              compare_nodes)
        merging.unsorted = 0
        t.n_sorted += 1
    t.step += 1
    t.n_risen = 0
    t.n_emptied = 0
    for idx in range(n_sites):
        occ = pool_block(&t.pool, merging.occ_block)   # the pool may have moved (count_up)
        # software pipeline: each stage reads what the previous one pulled in
        if idx + PREFETCH_1 < n_sites:
            prefetch(&nodes[occ[idx + PREFETCH_1]])
        if idx + PREFETCH_2 < n_sites:
            prefetch_neighbours(t, occ[idx + PREFETCH_2])
        if idx + PREFETCH_3 < n_sites:
            prefetch_left(t, occ[idx + PREFETCH_3], a, merged_id)
        if idx + PREFETCH_4 < n_sites:
            prefetch_right(t, occ[idx + PREFETCH_4], b, merged_id)
        i = occ[idx]
        if nodes[i].sym != a:
            t.n_stale += 1
            continue
        j = nodes[i].next
        if j < 0 or nodes[j].sym != b:
            t.n_stale += 1
            continue
        t.n_sites += 1
        w = t.weight[nodes[i].chunk]
        p = nodes[i].prev
        k = nodes[j].next
        merging.count -= w
        if p >= 0 and count_down(t, pair_key(nodes[p].sym, a), w, merging) != 0:
            return ERR_INTERNAL
        if k >= 0 and count_down(t, pair_key(b, nodes[k].sym), w, merging) != 0:
            return ERR_INTERNAL
        nodes[i].sym = merged_id
        nodes[i].next = k
        nodes[j].sym = -1
        if k >= 0:
            nodes[k].prev = i
        if p >= 0 and count_up(t, pair_key(nodes[p].sym, merged_id), w, p) != 0:
            return ERR_NOMEM
        if k >= 0 and count_up(t, pair_key(merged_id, nodes[k].sym), w, i) != 0:
            return ERR_NOMEM
    if merging.count != 0:
        return ERR_INTERNAL
    occ_drop(&t.pool, merging)
    for r in range(t.n_risen):
        if t.pairs.slots[t.risen[r]].count > 0:
            rc = heap_push(&t.heap, t.pairs.slots[t.risen[r]].count, t.pairs.slots[t.risen[r]].key)
            if rc != 0:
                return rc
    # deletions move slots, so they come last
    pairs_delete(&t.pairs, key)
    for r in range(t.n_emptied):
        s = pairs_find(&t.pairs, t.emptied[r])
        if s >= 0 and t.pairs.slots[s].count == 0:
            pairs_delete(&t.pairs, t.emptied[r])
    return 0


cdef int log_merge(Trainer* t, token_t left, token_t right, token_t merged_id,
                   count_t count) noexcept nogil:
    cdef int64_t cap
    if t.n_log == t.log_cap:
        cap = t.log_cap
        if grow_array(<void**>&t.log_left, &cap, t.n_log + 1, sizeof(int32_t)) != 0:
            return ERR_NOMEM
        cap = t.log_cap
        if grow_array(<void**>&t.log_right, &cap, t.n_log + 1, sizeof(int32_t)) != 0:
            return ERR_NOMEM
        cap = t.log_cap
        if grow_array(<void**>&t.log_new, &cap, t.n_log + 1, sizeof(int32_t)) != 0:
            return ERR_NOMEM
        cap = t.log_cap
        if grow_array(<void**>&t.log_count, &cap, t.n_log + 1, sizeof(count_t)) != 0:
            return ERR_NOMEM
        t.log_cap = cap
    t.log_left[t.n_log] = left
    t.log_right[t.n_log] = right
    t.log_new[t.n_log] = merged_id
    t.log_count[t.n_log] = count
    t.n_log += 1
    return 0


cdef int merge_best(Trainer* t) noexcept nogil:
    """Pop the best live pair and merge it. 0 = done or stopped (``t.stop`` set), < 0 = error."""
    cdef HeapEntry top
    cdef int64_t s
    cdef count_t live
    cdef token_t left, right, merged_id
    cdef bint is_new = False
    cdef int rc
    while True:
        if t.heap.size == 0:
            t.stop = STOP_NO_PAIRS
            return 0
        top = heap_pop(&t.heap)
        s = pairs_find(&t.pairs, top.key)
        if s < 0:
            continue
        live = t.pairs.slots[s].count
        if live == top.count:
            break
        if live > 0 and heap_push(&t.heap, live, top.key) != 0:
            return ERR_NOMEM
    if top.count < t.min_frequency:
        t.stop = STOP_MIN_FREQUENCY
        return 0
    left = <token_t>(top.key >> 32)
    right = <token_t><uint32_t>top.key
    merged_id = tokens_concat(&t.tokens, left, right, &is_new)
    if merged_id < 0:
        return ERR_NOMEM
    rc = log_merge(t, left, right, merged_id, top.count)
    if rc != 0:
        return rc
    rc = apply_merge(t, top.key, merged_id)
    if rc != 0:
        return rc
    if is_new:
        t.n_created += 1
    else:
        t.n_reused += 1
    return 0


cdef int run_merges(Trainer* t, int64_t limit) noexcept nogil:
    """Do up to ``limit`` merges, or fewer if a stop condition is reached."""
    cdef int64_t done = 0
    cdef int rc
    while t.stop == RUNNING and done < limit:
        if t.n_created >= t.n_target:
            t.stop = STOP_VOCAB
            break
        rc = merge_best(t)
        if rc != 0:
            return rc
        done += 1
    if t.stop == RUNNING and t.n_created >= t.n_target:
        t.stop = STOP_VOCAB
    return 0


cdef int count_initial_pairs(Trainer* t) noexcept nogil:
    """Byte-pair counts and sorted occurrence lists by a dense 256x256 counting sort; fill the heap."""
    cdef count_t* pair_count = <count_t*>calloc(65536, sizeof(count_t))
    cdef int64_t* pair_n = <int64_t*>calloc(65536, sizeof(int64_t))
    cdef int64_t* pair_start = <int64_t*>malloc(65536 * sizeof(int64_t))
    cdef int rc = ERR_NOMEM
    if pair_count != NULL and pair_n != NULL and pair_start != NULL:
        rc = fill_initial_pairs(t, pair_count, pair_n, pair_start)
    free(pair_count)
    free(pair_n)
    free(pair_start)
    return rc


cdef int fill_initial_pairs(Trainer* t, count_t* pair_count, int64_t* pair_n,
                            int64_t* pair_start) noexcept nogil:
    # The second pass writes through dense per-pair cursors (L2-resident) rather than through the
    # hash slots: that halved the time of this function.
    cdef Node* nodes = t.nodes
    cdef int64_t i, n_distinct = 0, block
    cdef int pid
    cdef PairSlot* slot
    for i in range(t.n_nodes):
        if nodes[i].next >= 0:
            pid = nodes[i].sym * 256 + nodes[i + 1].sym
            pair_count[pid] += t.weight[nodes[i].chunk]
            pair_n[pid] += 1
    for pid in range(65536):
        n_distinct += pair_n[pid] > 0
    if pairs_reserve(&t.pairs, n_distinct) != 0:
        return ERR_NOMEM
    if grow_array(<void**>&t.heap.data, &t.heap.cap, n_distinct + 1, sizeof(HeapEntry)) != 0:
        return ERR_NOMEM
    for pid in range(65536):
        if pair_n[pid] == 0:
            continue
        slot = &t.pairs.slots[pairs_find_or_add(&t.pairs, pair_key(pid >> 8, pid & 255))]
        block = pool_alloc(&t.pool, occ_class_for(pair_n[pid]))
        if block < 0:
            return ERR_NOMEM
        slot.occ_block = <uint32_t>block
        slot.occ_class = <uint8_t>occ_class_for(pair_n[pid])
        slot.occ_len = <int32_t>pair_n[pid]
        slot.count = pair_count[pid]
        pair_start[pid] = block * OCC_UNIT    # the pool does not move after this loop
        t.heap.data[t.heap.size].count = slot.count
        t.heap.data[t.heap.size].key = slot.key
        t.heap.size += 1
    for i in range(t.n_nodes):
        if nodes[i].next >= 0:
            pid = nodes[i].sym * 256 + nodes[i + 1].sym
            t.pool.base[pair_start[pid]] = <node_t>i
            pair_start[pid] += 1
    for i in range(t.heap.size // 2 - 1, -1, -1):
        heap_sift_down(&t.heap, i)
    return 0


# ---------------------------------------------------------------------------------------------
# Python side
# ---------------------------------------------------------------------------------------------

# Nodes are int32 with -1 as "none"; keep one spare value.
MAX_NODES = INT32_MAX - 1

_STOP_NAMES = {STOP_VOCAB: "vocab_size", STOP_MIN_FREQUENCY: "min_frequency",
               STOP_NO_PAIRS: "no_pairs"}


class MergeResult:
    """The outcome of :func:`train_merges`.

    * ``merges[k]``: the ``(left_id, right_id)`` pair merged at step ``k``;
    * ``new_ids[k]``: the id it produced (an existing id when the bytes were a token already);
    * ``counts[k]``: the pair's count when it was merged;
    * ``token_bytes[i]``: the bytes of token ``i`` (ids 0..255 are the single bytes);
    * ``stop_reason``: ``"vocab_size"``, ``"min_frequency"`` or ``"no_pairs"``.
    """

    __slots__ = ("merges", "new_ids", "counts", "token_bytes", "stop_reason")

    def __init__(self, merges, new_ids, counts, token_bytes, stop_reason):
        self.merges = merges
        self.new_ids = new_ids
        self.counts = counts
        self.token_bytes = token_bytes
        self.stop_reason = stop_reason

    def __repr__(self):
        return (f"MergeResult({len(self.merges)} merges, {len(self.token_bytes)} tokens, "
                f"stop_reason={self.stop_reason!r})")


def huggingface_byte_order():
    """Bytes sorted the way HF's ByteLevel alphabet sorts them (by the code point each maps to)."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    seen = set(printable)
    return printable + [b for b in range(256) if b not in seen]


def _as_int(value, name):
    try:
        return value.__index__()
    except AttributeError:
        raise InvalidParameterError(f"{name} must be an integer; got {value!r}") from None


def _as_weights(weights, Py_ssize_t n_chunks):
    """Weights as a contiguous int64 array, validated (integers, > 0, same length as chunks)."""
    if not isinstance(weights, np.ndarray):
        weights = list(weights)
    try:
        array = np.asarray(weights)
    except (OverflowError, ValueError, TypeError) as exc:
        raise InvalidParameterError(f"weights must be integers that fit in int64 ({exc})") from None
    if array.ndim != 1 or array.shape[0] != n_chunks:
        raise InvalidParameterError(
            f"weights must be one-dimensional with one entry per chunk "
            f"({n_chunks} chunks, weights of shape {array.shape})")
    if n_chunks == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"weights must be integers that fit in int64; got dtype {array.dtype}")
    if array.dtype.kind == "u" and int(array.max()) > INT64_MAX:
        raise InvalidParameterError("weights must fit in int64")
    array = np.ascontiguousarray(array, dtype=np.int64)
    if int(array.min()) <= 0:
        raise InvalidParameterError("every weight must be > 0")
    return array


cdef class _MergeTrainer:
    """Owns every buffer of one training run (freed in ``__dealloc__``, also after errors)."""

    cdef Trainer t
    cdef list byte_of_id      # internal id (< 256) -> byte value

    def __dealloc__(self):
        free(self.t.nodes)
        free(self.t.weight)
        free(self.t.pairs.slots_raw)
        free(self.t.pool.base)
        free(self.t.heap.data)
        free(self.t.tokens.data)
        free(self.t.tokens.offset)
        free(self.t.tokens.length)
        free(self.t.tokens.index)
        free(self.t.log_left)
        free(self.t.log_right)
        free(self.t.log_new)
        free(self.t.log_count)
        free(self.t.risen)
        free(self.t.emptied)

    cdef _check(self, int rc):
        if rc == ERR_NOMEM:
            raise MemoryError("out of memory while training BPE merges")
        if rc != 0:
            raise RuntimeError("cybpe trainer: internal invariant broken (please report this bug)")

    def load(self, list chunks, const int64_t[::1] weights, list byte_order,
             Py_ssize_t n_target, count_t min_frequency, list seed_tokens):
        """Copy the chunks into nodes, count the byte pairs and fill the heap."""
        cdef int32_t id_of_byte[256]
        cdef int64_t total = 0, windows = 0, base = 0, m, n
        cdef int64_t ci = 0
        cdef Py_ssize_t idx
        cdef const uint8_t* text
        cdef Node* node
        cdef int r, rc
        cdef object chunk
        self.byte_of_id = byte_order
        for r in range(256):
            id_of_byte[<int>byte_order[r]] = r
        for idx in range(len(chunks)):
            chunk = chunks[idx]
            if not isinstance(chunk, bytes):
                raise InvalidParameterError(
                    f"chunks must be bytes; chunk {idx} is {type(chunk).__name__}")
            n = PyBytes_GET_SIZE(chunk)
            if n < 2:
                continue
            total += n
            ci += 1
            if total > MAX_NODES:
                raise TrainingError(
                    f"the unique chunks hold more than {MAX_NODES} bytes in total, the most one "
                    f"training run can index (int32 node ids); train on a sample or on fewer, "
                    f"more frequent chunks")
            if weights[idx] > (INT64_MAX - windows) // (n - 1):
                raise TrainingError("pair counts would overflow int64; use smaller weights")
            windows += weights[idx] * (n - 1)
        self.t.n_nodes = total
        self.t.nodes = <Node*>malloc(max(total, 1) * sizeof(Node))
        self.t.weight = <count_t*>malloc(max(ci, 1) * sizeof(count_t))
        if self.t.nodes == NULL or self.t.weight == NULL:
            raise MemoryError("out of memory while loading training chunks")
        ci = 0
        for idx in range(len(chunks)):
            chunk = chunks[idx]
            n = PyBytes_GET_SIZE(chunk)
            if n < 2:
                continue
            text = <const uint8_t*>PyBytes_AS_STRING(chunk)
            self.t.weight[ci] = weights[idx]
            for m in range(n):
                node = &self.t.nodes[base + m]
                node.sym = id_of_byte[text[m]]
                node.prev = <node_t>(base + m - 1) if m > 0 else -1
                node.next = <node_t>(base + m + 1) if m + 1 < n else -1
                node.chunk = <int32_t>ci
            base += n
            ci += 1
        self._init_tokens(seed_tokens)
        pool_init(&self.t.pool)
        self.t.n_target = <int32_t>n_target
        self.t.min_frequency = min_frequency
        with nogil:
            rc = count_initial_pairs(&self.t)
        self._check(rc)

    cdef _init_tokens(self, list seed_tokens):
        cdef TokenStore* ts = &self.t.tokens
        cdef int r
        cdef bint is_new = False
        cdef bytes seed
        ts.data_cap = 4096
        ts.data = <uint8_t*>malloc(ts.data_cap)
        ts.cap = 1024
        ts.offset = <int64_t*>malloc(ts.cap * sizeof(int64_t))
        ts.length = <int32_t*>malloc(ts.cap * sizeof(int32_t))
        if ts.data == NULL or ts.offset == NULL or ts.length == NULL:
            raise MemoryError("out of memory while training BPE merges")
        for r in range(256):
            ts.data[r] = <uint8_t>(<int>self.byte_of_id[r])
            ts.offset[r] = r
            ts.length[r] = 1
        ts.data_len = 256
        ts.n = 256
        self._check(tokens_rebuild_index(ts, 1024))
        for seed in seed_tokens:
            if tokens_add(ts, <const uint8_t*>PyBytes_AS_STRING(seed), len(seed), &is_new) < 0:
                raise MemoryError("out of memory while training BPE merges")
            if not is_new:
                raise InvalidParameterError(f"seed token {seed!r} is listed twice")

    def run(self, progress):
        """Merge until a stop condition; call ``progress(done, total)`` between batches."""
        cdef int64_t limit = PROGRESS_EVERY if progress is not None else INT64_MAX
        cdef int rc
        while True:
            with nogil:
                rc = run_merges(&self.t, limit)
            self._check(rc)
            if progress is not None:
                progress(self.t.n_created, self.t.n_target)
            if self.t.stop != RUNNING:
                break

    def stats(self):
        """Counters for benchmarks: nodes, merge sites applied, stale occurrences, live pairs."""
        return {"nodes": self.t.n_nodes, "sites": self.t.n_sites, "stale": self.t.n_stale,
                "sorted_lists": self.t.n_sorted, "reused_ids": self.t.n_reused,
                "live_pairs": self.t.pairs.live, "pair_slots": self.t.pairs.mask + 1,
                "heap_entries": self.t.heap.size, "pool_units": self.t.pool.used}

    def result(self):
        cdef list byte_of_id = self.byte_of_id
        cdef TokenStore* ts = &self.t.tokens
        cdef int64_t k
        cdef int32_t tok

        def external(int32_t token):
            return byte_of_id[token] if token < 256 else token

        merges = [(external(self.t.log_left[k]), external(self.t.log_right[k]))
                  for k in range(self.t.n_log)]
        new_ids = [external(self.t.log_new[k]) for k in range(self.t.n_log)]
        counts = [self.t.log_count[k] for k in range(self.t.n_log)]
        token_bytes = [bytes([b]) for b in range(256)]
        for tok in range(256, ts.n):
            token_bytes.append(PyBytes_FromStringAndSize(
                <const char*>(ts.data + ts.offset[tok]), ts.length[tok]))
        return MergeResult(merges, new_ids, counts, token_bytes, _STOP_NAMES[self.t.stop])


def train_merges(chunks, weights, n_new_tokens, *, min_frequency=0, tie_break="ids",
                 progress=None):
    """Learn BPE merges from unique chunks and their multiplicities.

    ``chunks``: distinct ``bytes`` (pre-tokenized pieces); ``weights``: their int64 counts (> 0).
    Merges stop once ``n_new_tokens`` new tokens exist, when the best count is below
    ``min_frequency`` (0 and 1 never stop), or when no pair is left. ``tie_break`` decides among
    equal counts: ``"ids"`` (smallest ``(left, right)``, as rustbpe) or ``"huggingface"`` (byte ids
    in HF ByteLevel order, as HF ``BpeTrainer``). ``progress(done, total)`` is called every
    ``PROGRESS_EVERY`` merges and at the end; ``done`` counts new tokens, ``total`` is
    ``n_new_tokens``.
    """
    return _train(chunks, weights, n_new_tokens, min_frequency, tie_break, progress, ()).result()


def _train_merges_seeded(chunks, weights, n_new_tokens, seed_tokens, *, min_frequency=0,
                         tie_break="ids", progress=None):
    """Test hook: like :func:`train_merges`, but ``seed_tokens`` exist before training.

    They take ids 256, 257, ... in order, and a merge that spells one of them reuses its id. This is
    the only way to reach the duplicate-bytes rule: with exact BPE two merges never spell the same
    bytes (see ``tests/test_trainer_core.py``, ``test_no_merge_ever_spells_an_existing_token``).
    Returns ``(MergeResult, stats dict)``.
    """
    trainer = _train(chunks, weights, n_new_tokens, min_frequency, tie_break, progress,
                     seed_tokens)
    return trainer.result(), trainer.stats()


def _train(chunks, weights, n_new_tokens, min_frequency, tie_break, progress, seed_tokens):
    if tie_break not in TIE_BREAKS:
        raise InvalidParameterError(
            f"tie_break must be one of {', '.join(repr(t) for t in TIE_BREAKS)}; got {tie_break!r}")
    n_new_tokens = _as_int(n_new_tokens, "n_new_tokens")
    min_frequency = _as_int(min_frequency, "min_frequency")
    seeds = list(seed_tokens)
    if not 0 <= n_new_tokens <= INT32_MAX - 256 - len(seeds):
        raise InvalidParameterError(f"n_new_tokens must be in [0, {INT32_MAX - 256 - len(seeds)}]; "
                                    f"got {n_new_tokens}")
    if not 0 <= min_frequency <= INT64_MAX:
        raise InvalidParameterError(f"min_frequency must be in [0, 2**63 - 1]; got {min_frequency}")
    if progress is not None and not callable(progress):
        raise InvalidParameterError("progress must be callable or None")
    if any(not isinstance(seed, bytes) or len(seed) < 2 for seed in seeds):
        raise InvalidParameterError("seed tokens must be bytes of length >= 2")
    chunk_list = list(chunks)
    weight_array = _as_weights(weights, len(chunk_list))
    byte_order = huggingface_byte_order() if tie_break == "huggingface" else list(range(256))
    trainer = _MergeTrainer()
    trainer.load(chunk_list, weight_array, byte_order, n_new_tokens, min_frequency, seeds)
    trainer.run(progress)
    return trainer
