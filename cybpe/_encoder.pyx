"""The rank encoder: byte-level BPE of one piece at a time, exact to tiktoken, with no trie.

A piece is encoded by (1) looking the whole piece up (when ``whole_piece_lookup``), (2) mapping a
single byte to its id, or (3) repeatedly merging the adjacent pair of parts with the lowest rank,
leftmost on ties, until no adjacent pair has a rank. Ranks come from an id-pair table: either every
split of every token (rank-only vocabularies, ``merges is None``) or an explicit merges list.
The pure-Python twin is :mod:`cybpe._reference_encoder`.

Merge paths, all giving the same ids (tests run each against the others and the reference):
linear rescan (short pieces), binary heap (medium), bucket queue by rank (long), and run-length
(one repeated byte, any length).
"""

# Performance notes
# -----------------
# Measured on the shared 2-core VM with cl100k, pre-split pieces of the eval corpora, CPU time,
# best of 7, A/B builds run interleaved (other jobs shared the machine: differences under ~10%
# are noise). "en/ru/ja/hi" = eval/docs/{en,ru,ja}.txt, eval/parallel-ntrex/hi.txt.
#
# * Whole-piece lookup is the hot path for English and code (90-93% of pieces are tokens). Its
#   cost is one cache miss into the token table, so a slot holds the token's first 8 bytes and
#   length: pieces of <= 8 bytes are compared in the slot, without touching offsets or the blob
#   (3 misses before). perf showed ~50% of the lookup loop's samples on that one load, so
#   encode_block hashes 16 pieces first and prefetches their slots, then probes: the misses
#   overlap (en 92 -> 96..122 MB/s, code 98 -> 106..130, ru/ja/hi +2..15%).
# * Pieces that need BPE repeat within a text (ru: 76% of such bytes, hi: 94%, en: 66%, ja:
#   15%), so encode_utf8 / encode_str_pieces memoise them in a per-call cache keyed by the
#   piece's bytes in the caller's input, valued by the ids' position in the output: ru 24 -> 60
#   MB/s, hi 60 -> 150, code 110 -> 155, en 110 -> 128, ja 18.5 -> 19.6. Per call, so threads
#   never share it.
# * Merge paths: tiktoken's linear rescan (O(n*m)) for pieces <= LINEAR_MAX_LEN bytes, a heap
#   with lazy deletion above. Sweeping the threshold over 1..128: CJK/ru pieces (mostly not
#   tokens, 10-100 bytes) are fastest with the heap from ~16 bytes (ja 19.4 at 128 -> 22.5 at
#   16..32), English from ~64; 32 is the compromise. Both paths keep small pieces' scratch on
#   the stack (no malloc per piece).
# * Heap entries are uint64 (rank << 32 | start): one compare orders by rank, then leftmost.
#   An entry is live iff cur_rank[start] still equals its rank, so popping validates with one
#   load and no hash lookup.
# * The first merge round reads a 256x256 byte-pair rank table (256 KB) instead of hashing n-1
#   pairs: ru +15%, ja +17%, en/code unchanged.
# * Pair slots are one packed uint64 (left, right, rank): half of a 16-byte slot's footprint
#   (cl100k 4 MB instead of 8). The remaining cost of BPE-heavy text is that table's cache
#   misses (~30% of merge samples in perf); speed did not move beyond noise either way.
# * Long pieces (>= BUCKET_MIN_LEN bytes) use a bucket queue by rank instead of the heap: perf
#   put ~80% of a 1 MB piece's time in sift_down. Buckets are chunk lists (14 starts per 64-byte
#   chunk: walking one start per node spent half the time on pointer chasing), a bitmap finds
#   the next non-empty rank (clearing and scanning 100k list heads cost ~70 us per piece and
#   put the crossover at ~12 KB), the parts' fields share one struct (one miss per part, not
#   four) and parts are prefetched 8 entries ahead. 1 MB of random letters: 227 -> 67 ms;
#   per byte 21 ns at 2 KB, 49 ns at 64 KB (the parts no longer fit the cache), against the
#   heap's 75 and 130. Crossover with the heap: 512-1024 bytes.
# * A piece of one repeated byte (runs of spaces, newlines, "=" or "a") takes the run-length
#   path, which works on (token, count) runs: a few dozen rounds instead of n merges. 1 MB
#   runs: 150-200 ms -> 1-3 ms.
# * The linear path's argmin is a plain min (vectorised by gcc) then a scan for its first
#   occurrence, which keeps "leftmost on ties" without a branchy compare-and-index loop.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.list cimport PyList_New
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

from cybpe._types cimport IdBuffer, id_buffer_reserve, rank_t, token_t

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define CYBPE_PREFETCH(address) __builtin_prefetch(address)
    #else
    #define CYBPE_PREFETCH(address) ((void)(address))
    #endif
    """
    void CYBPE_PREFETCH(const void* address) noexcept nogil


cdef extern from "Python.h":
    # Raw forms (no reference counting by Cython): ids_list moves borrowed ints into a list.
    ctypedef struct PyObject
    PyObject* tuple_item "PyTuple_GET_ITEM"(object tup, Py_ssize_t i)
    void list_set_item "PyList_SET_ITEM"(object lst, Py_ssize_t i, PyObject* item)
    void incref "Py_INCREF"(PyObject* item)
    PyObject* new_int "PyLong_FromUnsignedLong"(unsigned long value) except NULL
    int __builtin_ctzll(unsigned long long x) noexcept nogil


import operator

import numpy as np

from .errors import EncodingError, FormatError, InvalidParameterError, InvalidTokenError

cdef enum:
    RANK_NONE = 0x7FFFFFFF    # "this pair has no rank"; larger than every real rank
    LINEAR_MAX_LEN = 32       # pieces up to this length use the linear path, longer the heap
    LINEAR_STACK = 128        # parts the linear path keeps on the stack
    HEAP_STACK = 256          # pieces up to this length keep the heap path's arrays on the stack
    LOOKAHEAD = 16            # pieces whose token-table slots are prefetched together
    CACHE_MIN_PIECES = 64     # calls with fewer pieces get no per-call piece cache
    CACHE_MAX_SLOTS = 1 << 15 # 1 MB of cache entries at most
    BUCKET_MIN_LEN = 1024     # pieces from this length use the bucket queue, not the heap
    RUNS_MAX = 64             # runs the run-length path keeps before it gives up
    RUNS_MAX_ROUNDS = 4096    # merge rounds the run-length path does before it gives up
    GAVE_UP = 1               # a merge path's "use another path" (nothing was written)
    PATH_AUTO = 0
    PATH_LINEAR = 1
    PATH_HEAP = 2
    PATH_BUCKET = 3
    PATH_RUNS = 4


cdef uint64_t EMPTY_PAIR_SLOT = 0xFFFFFFFFFFFFFFFFULL
cdef uint64_t FIBONACCI = 0x9E3779B97F4A7C15ULL
cdef Py_ssize_t MAX_IDS = 0x7FFFFFFE      # ids, ranks and heap positions are int32


cdef struct PairEntry:  # a pair found while building the table
    uint64_t key        # pair_key(left, right)
    rank_t rank


# ---------------------------------------------------------------- hashing

cdef inline uint64_t load64(const uint8_t* p) noexcept nogil:
    cdef uint64_t w
    memcpy(&w, p, 8)
    return w


cdef inline uint64_t load32(const uint8_t* p) noexcept nogil:
    cdef uint32_t w
    memcpy(&w, p, 4)
    return w


cdef inline uint64_t head_word(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """A word holding s[:min(n, 8)] (n >= 1), never reading past s[n-1]. For n <= 8 equal
    (word, n) means equal bytes: 4..8 bytes are two overlapping 4-byte reads, 1..3 bytes are
    s[0], s[n//2], s[n-1]."""
    if n >= 8:
        return load64(s)
    if n >= 4:
        return load32(s) | (load32(s + n - 4) << 32)
    return (<uint64_t>s[0]) | ((<uint64_t>s[n >> 1]) << 8) | ((<uint64_t>s[n - 1]) << 16)


cdef inline uint64_t hash_bytes(const uint8_t* s, Py_ssize_t n, uint64_t head) noexcept nogil:
    """Hash of n >= 1 bytes whose head_word is head: words folded by multiply-rotate, then a
    splitmix64 finaliser."""
    cdef uint64_t h = (head ^ (<uint64_t>n * FIBONACCI)) * 0x517CC1B727220A95ULL
    if n > 8:
        s += 8
        n -= 8
        while n > 8:
            h = (((h << 5) | (h >> 59)) ^ load64(s)) * 0x517CC1B727220A95ULL
            s += 8
            n -= 8
        h = (((h << 5) | (h >> 59)) ^ head_word(s, n)) * 0x517CC1B727220A95ULL
    h ^= h >> 30
    h *= 0xBF58476D1CE4E5B9ULL
    h ^= h >> 27
    h *= 0x94D049BB133111EBULL
    h ^= h >> 31
    return h


cdef inline uint64_t pair_key(token_t left, token_t right) noexcept nogil:
    return ((<uint64_t><uint32_t>left) << 32) | (<uint64_t><uint32_t>right)


# ---------------------------------------------------------------- table lookups (hot)

cdef inline token_t probe_token(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                                uint64_t head, uint64_t i) noexcept nogil:
    """Id of the token s[:n] (1 <= n <= max_token_len) from its head_word and first slot."""
    cdef const TokenSlot* slot
    while True:
        slot = &t.token_slots[i]
        if slot.token < 0:
            return -1
        if slot.head == head and slot.length == n:
            if n <= 8 or memcmp(t.token_blob + t.token_offsets[slot.token] + 8, s + 8,
                                n - 8) == 0:
                return slot.token
        i = (i + 1) & t.token_mask


cdef inline token_t lookup_token(const RankTables* t, const uint8_t* s,
                                 Py_ssize_t n) noexcept nogil:
    """Id of the token whose bytes are s[:n], or -1."""
    if n <= 0 or n > t.max_token_len:
        return -1
    cdef uint64_t head = head_word(s, n)
    return probe_token(t, s, n, head, hash_bytes(s, n, head) & t.token_mask)


cdef inline uint64_t packed_pair(const RankTables* t, token_t left, token_t right) noexcept nogil:
    """The key part of a pair slot: (left << id_bits | right) << rank_bits."""
    return (((<uint64_t>left) << t.id_bits) | <uint64_t>right) << t.rank_bits


cdef inline rank_t pair_rank(const RankTables* t, token_t left, token_t right) noexcept nogil:
    """Rank of merging the adjacent parts (left, right), or RANK_NONE."""
    cdef uint64_t key = packed_pair(t, left, right)
    cdef uint64_t rank_mask = ((<uint64_t>1) << t.rank_bits) - 1
    cdef uint64_t i = (key * FIBONACCI) >> t.pair_shift
    cdef uint64_t slot
    while True:
        slot = t.pair_slots[i]
        if slot == EMPTY_PAIR_SLOT:
            return RANK_NONE
        if (slot & ~rank_mask) == key:
            return <rank_t>(slot & rank_mask)
        i = (i + 1) & t.pair_mask


# ---------------------------------------------------------------- the two merge paths

cdef int merge_linear(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                      IdBuffer* out) noexcept nogil:
    """BPE of n >= 2 bytes, rescanning the ranks of all adjacent pairs each round (tiktoken's
    short-piece algorithm). ranks[i] is the rank of (part i, part i+1). out has room for n ids."""
    cdef token_t stack_tokens[LINEAR_STACK]
    cdef rank_t stack_ranks[LINEAR_STACK]
    cdef token_t* tokens = stack_tokens
    cdef rank_t* ranks = stack_ranks
    cdef Py_ssize_t m = n, i
    cdef rank_t best
    if n > LINEAR_STACK:
        tokens = <token_t*>malloc(n * sizeof(token_t))
        ranks = <rank_t*>malloc(n * sizeof(rank_t))
        if tokens == NULL or ranks == NULL:
            free(tokens)
            free(ranks)
            return -1
    for i in range(n - 1):
        tokens[i] = t.byte_id[s[i]]
        ranks[i] = t.byte_pair_rank[((<Py_ssize_t>s[i]) << 8) | s[i + 1]]
    tokens[n - 1] = t.byte_id[s[n - 1]]
    ranks[n - 1] = RANK_NONE
    while m > 1:
        best = RANK_NONE
        for i in range(m - 1):  # a plain min: the compiler vectorises it
            best = ranks[i] if ranks[i] < best else best
        if best == RANK_NONE:
            break
        i = 0
        while ranks[i] != best:  # the leftmost of the lowest
            i += 1
        tokens[i] = t.rank_to_id[best]
        memmove(tokens + i + 1, tokens + i + 2, (m - i - 2) * sizeof(token_t))
        memmove(ranks + i + 1, ranks + i + 2, (m - i - 2) * sizeof(rank_t))
        m -= 1
        ranks[i] = pair_rank(t, tokens[i], tokens[i + 1]) if i + 1 < m else RANK_NONE
        if i > 0:
            ranks[i - 1] = pair_rank(t, tokens[i - 1], tokens[i])
    memcpy(out.data + out.size, tokens, m * sizeof(token_t))
    out.size += m
    if tokens != stack_tokens:
        free(tokens)
        free(ranks)
    return 0


cdef inline void sift_down(uint64_t* heap, Py_ssize_t size, Py_ssize_t i) noexcept nogil:
    cdef uint64_t item = heap[i]
    cdef Py_ssize_t child
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= item:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = item


cdef inline void heap_push(uint64_t* heap, Py_ssize_t* size, uint64_t item) noexcept nogil:
    cdef Py_ssize_t i = size[0], parent
    size[0] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= item:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


cdef int merge_heap(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                    IdBuffer* out) noexcept nogil:
    """BPE of n >= 2 bytes in O(n log n). A part is named by its start byte; a min-heap holds
    keys (rank << 32 | start), so popping gives the lowest rank, leftmost first. An entry is live
    iff cur_rank[start] still equals its rank (lazy deletion). out has room for n ids."""
    if n > MAX_IDS:
        return -1
    cdef int32_t stack_block[4 * HEAP_STACK]
    cdef uint64_t stack_heap[2 * HEAP_STACK]
    cdef int32_t* block = stack_block
    cdef uint64_t* heap = stack_heap
    if n > HEAP_STACK:
        block = <int32_t*>malloc(4 * n * sizeof(int32_t))
        heap = <uint64_t*>malloc(2 * n * sizeof(uint64_t))  # <= n-1 initial + 1 per merge
        if block == NULL or heap == NULL:
            free(block)
            free(heap)
            return -1
    cdef token_t* tokens = block
    cdef int32_t* nxt = block + n
    cdef int32_t* prv = block + 2 * n
    cdef rank_t* cur_rank = block + 3 * n
    cdef Py_ssize_t size = 0, i
    cdef int32_t start, right, after, before
    cdef rank_t rank, r
    cdef uint64_t item
    cdef uint32_t* dst
    for i in range(n):
        tokens[i] = t.byte_id[s[i]]
        nxt[i] = <int32_t>(i + 1)
        prv[i] = <int32_t>(i - 1)
    for i in range(n - 1):
        r = t.byte_pair_rank[((<Py_ssize_t>s[i]) << 8) | s[i + 1]]
        cur_rank[i] = r
        if r != RANK_NONE:
            heap[size] = ((<uint64_t>r) << 32) | <uint64_t>i
            size += 1
    cur_rank[n - 1] = RANK_NONE
    i = size // 2 - 1
    while i >= 0:  # heapify
        sift_down(heap, size, i)
        i -= 1
    while size > 0:
        item = heap[0]
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            sift_down(heap, size, 0)
        rank = <rank_t>(item >> 32)
        start = <int32_t>(item & 0xFFFFFFFFULL)
        if cur_rank[start] != rank:
            continue  # stale: the part at start changed (or died) since the push
        right = nxt[start]
        after = nxt[right]
        tokens[start] = t.rank_to_id[rank]
        cur_rank[right] = RANK_NONE  # right is gone
        nxt[start] = after
        if after < n:
            prv[after] = start
            r = pair_rank(t, tokens[start], tokens[after])
            cur_rank[start] = r
            if r != RANK_NONE:
                heap_push(heap, &size, ((<uint64_t>r) << 32) | <uint64_t>start)
        else:
            cur_rank[start] = RANK_NONE
        if start > 0:
            before = prv[start]
            r = pair_rank(t, tokens[before], tokens[start])
            cur_rank[before] = r
            if r != RANK_NONE:
                heap_push(heap, &size, ((<uint64_t>r) << 32) | <uint64_t>before)
    dst = out.data + out.size
    i = 0
    while i < n:
        dst[0] = <uint32_t>tokens[i]
        dst += 1
        i = nxt[i]
    out.size = dst - out.data
    if block != stack_block:
        free(block)
        free(heap)
    return 0


cdef enum:
    PREFETCH_AHEAD = 8        # bucket entries whose parts are prefetched ahead of use
    CHUNK_STARTS = 14         # part starts per bucket chunk (with its count and link: 64 bytes)


cdef struct BucketChunk:
    int32_t starts[CHUNK_STARTS]
    int32_t count
    int32_t next            # the previous (older) chunk of the same rank, -1 at the end


cdef struct BucketQueue:
    # One linked list of chunks per rank, newest first. Walking a list is a chain of dependent
    # loads, so a chunk holds 14 starts in one cache line: one miss per 14 entries, not per one.
    int32_t* head           # head[rank]: the newest chunk of that rank, valid iff rank's bit is set
    uint64_t* nonempty      # a bit per rank: set iff that rank's list is not empty
    BucketChunk* chunks
    int32_t free_list       # chunks drained and reusable, chained through next
    Py_ssize_t used         # chunks handed out so far (the rest of the pool is untouched)
    Py_ssize_t capacity


cdef inline int bucket_push(BucketQueue* q, rank_t rank, int32_t start) noexcept nogil:
    cdef int32_t k = q.head[rank]  # garbage unless rank's bit is set, then replaced below
    cdef BucketChunk* grown
    if not (q.nonempty[rank >> 6] >> (rank & 63)) & 1:
        q.nonempty[rank >> 6] |= (<uint64_t>1) << (rank & 63)
        k = q.head[rank] = -1
    if k < 0 or q.chunks[k].count == CHUNK_STARTS:
        k = q.free_list
        if k >= 0:
            q.free_list = q.chunks[k].next
        else:
            if q.used == q.capacity:
                if q.capacity > MAX_IDS // 2:
                    return -1
                grown = <BucketChunk*>realloc(q.chunks, 2 * q.capacity * sizeof(BucketChunk))
                if grown == NULL:
                    return -1
                q.chunks = grown
                q.capacity *= 2
            k = <int32_t>q.used
            q.used += 1
        q.chunks[k].count = 0
        q.chunks[k].next = q.head[rank]
        q.head[rank] = k
    q.chunks[k].starts[q.chunks[k].count] = start
    q.chunks[k].count += 1
    return 0


cdef int compare_int32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef struct Part:
    # A part of a long piece, named by its start byte. The fields an update touches share a
    # cache line: a long piece's arrays do not fit the cache, and merges jump around in them.
    token_t token
    int32_t next            # the next part's start (n past the end)
    int32_t prev            # the previous part's start (-1 before the first)
    rank_t rank             # rank of (this part, next part), RANK_NONE if none or dead


cdef int drain_buckets(const RankTables* t, const uint8_t* s, Py_ssize_t n, Part* parts,
                       BucketQueue* q, int32_t** work_ptr, Py_ssize_t* work_capacity) noexcept nogil:
    """merge_bucket's loop over allocated memory: 0, -1 (out of memory) or GAVE_UP."""
    cdef int32_t* work = work_ptr[0]
    cdef int32_t* grown
    cdef Py_ssize_t m, j, i, c, step, repushed = 0
    cdef rank_t current = RANK_NONE, lowest, r
    cdef int32_t start, right, after, before, k, first, last
    cdef Part* part
    cdef Py_ssize_t n_words = (t.n_ranks + 63) >> 6, w
    cdef uint64_t bits
    memset(q.nonempty, 0, n_words * sizeof(uint64_t))
    for i in range(n):
        parts[i].token = t.byte_id[s[i]]
        parts[i].next = <int32_t>(i + 1)
        parts[i].prev = <int32_t>(i - 1)
    for i in range(n - 1):
        r = t.byte_pair_rank[((<Py_ssize_t>s[i]) << 8) | s[i + 1]]
        parts[i].rank = r
        if r != RANK_NONE:
            if bucket_push(q, r, <int32_t>i) != 0:
                return -1
            if r < current:
                current = r
    parts[n - 1].rank = RANK_NONE
    while True:
        # The lowest non-empty rank from current on: a word of the bitmap at a time.
        w = current >> 6
        if w >= n_words:
            return 0
        bits = q.nonempty[w] & ((~(<uint64_t>0)) << (current & 63))
        while bits == 0:
            w += 1
            if w == n_words:
                return 0
            bits = q.nonempty[w]
        current = <rank_t>((w << 6) + __builtin_ctzll(bits))
        q.nonempty[w] &= ~((<uint64_t>1) << (current & 63))
        # Detach the bucket into work, newest first, and give its chunks back to the pool.
        m = 0
        first = q.head[current]
        k = first
        while k >= 0:
            c = q.chunks[k].count
            if m + c > work_capacity[0]:
                grown = <int32_t*>realloc(work, 2 * (m + c) * sizeof(int32_t))
                if grown == NULL:
                    return -1
                work = work_ptr[0] = grown
                work_capacity[0] = 2 * (m + c)
            for j in range(c):
                work[m + j] = q.chunks[k].starts[c - 1 - j]
            m += c
            last = k
            k = q.chunks[k].next
        q.chunks[last].next = q.free_list
        q.free_list = first
        # Pushes mostly come in increasing start order, so newest first is mostly decreasing:
        # walk it backwards when it is, sort it otherwise.
        j = 1
        while j < m and work[j] <= work[j - 1]:
            j += 1
        if j < m:
            qsort(work, <size_t>m, sizeof(int32_t), compare_int32)
            j, step = 0, 1
        else:
            j, step = m - 1, -1
        lowest = current
        for i in range(m):
            start = work[j]
            if i + PREFETCH_AHEAD < m:  # the parts a few entries on: their loads overlap
                CYBPE_PREFETCH(&parts[work[j + PREFETCH_AHEAD * step]])
            j += step
            part = &parts[start]
            if part.rank != current:
                continue  # stale: the part at start changed (or died) since the push
            right = part.next
            after = parts[right].next
            part.token = t.rank_to_id[current]
            parts[right].rank = RANK_NONE  # right is gone
            part.next = after
            if after < n:
                parts[after].prev = start
                r = pair_rank(t, part.token, parts[after].token)
                part.rank = r
                if r != RANK_NONE:
                    if bucket_push(q, r, start) != 0:
                        return -1
                    lowest = r if r < lowest else lowest
            else:
                part.rank = RANK_NONE
            if start > 0:
                before = part.prev
                r = pair_rank(t, parts[before].token, part.token)
                parts[before].rank = r
                if r != RANK_NONE:
                    if bucket_push(q, r, before) != 0:
                        return -1
                    lowest = r if r < lowest else lowest
            if lowest < current:  # a lower rank appeared: it goes first, the rest waits
                repushed += m - 1 - i
                if repushed > n:
                    return GAVE_UP
                for i in range(i + 1, m):
                    if bucket_push(q, current, work[j]) != 0:
                        return -1
                    j += step
                current = lowest
                break


cdef int merge_bucket(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                      IdBuffer* out) noexcept nogil:
    """BPE of n >= 2 bytes with a bucket queue by rank: the same merges in the same order as
    merge_heap, without its O(log n) sift per entry. Bucket r holds the starts of parts whose
    pair with the next part had rank r when pushed (lazy deletion, as in merge_heap). Buckets
    are drained lowest rank first, each in increasing start order (leftmost on ties). Draining
    rank r never pushes rank r (a pair with r's bytes cannot contain r's token), and a push of
    a lower rank pauses the bucket: its rest goes back and the lower rank is drained first.
    Returns GAVE_UP (nothing written) when pauses re-push more than n entries (a vocabulary
    whose ranks often fall as parts grow); -1 when out of memory."""
    if n > MAX_IDS // 4:
        return GAVE_UP
    cdef BucketQueue q
    cdef Py_ssize_t work_capacity = 1024, i
    cdef Part* parts = <Part*>malloc(n * sizeof(Part))
    cdef int32_t* work = <int32_t*>malloc(work_capacity * sizeof(int32_t))
    cdef uint32_t* dst
    cdef int rc = -1
    q.head = <int32_t*>malloc(t.n_ranks * sizeof(int32_t))  # not cleared: see nonempty
    q.nonempty = <uint64_t*>malloc(((t.n_ranks + 63) >> 6) * sizeof(uint64_t))
    q.capacity = n // 4 + 64  # grows when needed
    q.chunks = <BucketChunk*>malloc(q.capacity * sizeof(BucketChunk))
    q.used = 0
    q.free_list = -1
    if (parts != NULL and work != NULL and q.head != NULL and q.nonempty != NULL
            and q.chunks != NULL):
        rc = drain_buckets(t, s, n, parts, &q, &work, &work_capacity)
    if rc == 0:
        dst = out.data + out.size
        i = 0
        while i < n:
            dst[0] = <uint32_t>parts[i].token
            dst += 1
            i = parts[i].next
        out.size = dst - out.data
    free(parts)
    free(work)
    free(q.head)
    free(q.nonempty)
    free(q.chunks)
    return rc


cdef int merge_runs(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                    IdBuffer* out) noexcept nogil:
    """BPE of n >= 2 equal bytes on the run-length form of its parts: (token, count) runs.
    Each round finds the lowest-ranked adjacent pair, leftmost first, inside a run (a token
    next to itself) or across two runs. Across runs it merges that one pair. Inside a run of
    m it merges all m // 2 pairs left to right at once, which is what one-at-a-time BPE does
    as long as every pair those merges create in between ranks after them; otherwise it merges
    only the first pair. Returns GAVE_UP (nothing written) past RUNS_MAX runs or
    RUNS_MAX_ROUNDS rounds, which a vocabulary of ordinary tokens never reaches."""
    cdef token_t tok[RUNS_MAX + 4]
    cdef Py_ssize_t cnt[RUNS_MAX + 4]
    cdef token_t new_tok[RUNS_MAX + 4]
    cdef Py_ssize_t new_cnt[RUNS_MAX + 4]
    cdef Py_ssize_t k = 1, i, best_i, rounds, m, j, c
    cdef rank_t best, r
    cdef token_t merged, x
    cdef bint inside, whole
    cdef uint32_t* dst
    tok[0] = t.byte_id[s[0]]
    cnt[0] = n
    for rounds in range(RUNS_MAX_ROUNDS):
        best = RANK_NONE
        best_i = -1
        inside = False
        for i in range(k):
            if cnt[i] >= 2:
                r = pair_rank(t, tok[i], tok[i])
                if r < best:
                    best, best_i, inside = r, i, True
            if i + 1 < k:
                r = pair_rank(t, tok[i], tok[i + 1])
                if r < best:
                    best, best_i, inside = r, i, False
        if best == RANK_NONE:
            dst = out.data + out.size
            for i in range(k):
                for c in range(cnt[i]):
                    dst[0] = <uint32_t>tok[i]
                    dst += 1
            out.size = dst - out.data
            return 0
        merged = t.rank_to_id[best]
        # The runs after this round, first unmerged and uncoalesced, in new_tok/new_cnt.
        j = 0
        for i in range(best_i):
            new_tok[j], new_cnt[j] = tok[i], cnt[i]
            j += 1
        x = tok[best_i]
        m = cnt[best_i]
        if inside:
            whole = ((m < 3 or pair_rank(t, merged, x) > best)
                     and (m < 4 or pair_rank(t, merged, merged) > best)
                     and (m < 3 or best_i == 0 or pair_rank(t, tok[best_i - 1], merged) > best))
            if whole:
                new_tok[j], new_cnt[j] = merged, m // 2
                new_tok[j + 1], new_cnt[j + 1] = x, m % 2
            else:
                new_tok[j], new_cnt[j] = merged, 1
                new_tok[j + 1], new_cnt[j + 1] = x, m - 2
            j += 2
        else:
            new_tok[j], new_cnt[j] = x, m - 1
            new_tok[j + 1], new_cnt[j + 1] = merged, 1
            new_tok[j + 2], new_cnt[j + 2] = tok[best_i + 1], cnt[best_i + 1] - 1
            j += 3
            best_i += 1
        for i in range(best_i + 1, k):
            if j >= RUNS_MAX + 3:
                return GAVE_UP
            new_tok[j], new_cnt[j] = tok[i], cnt[i]
            j += 1
        k = 0  # drop empty runs, join equal neighbours
        for i in range(j):
            if new_cnt[i] == 0:
                continue
            if k > 0 and tok[k - 1] == new_tok[i]:
                cnt[k - 1] += new_cnt[i]
            else:
                if k == RUNS_MAX:
                    return GAVE_UP
                tok[k], cnt[k] = new_tok[i], new_cnt[i]
                k += 1
    return GAVE_UP


cdef inline int merge_piece(const RankTables* t, const uint8_t* s, Py_ssize_t n, IdBuffer* out,
                            int path) noexcept nogil:
    """BPE of s[:n] (n >= 1), past the whole-piece lookup. out has room for n ids."""
    if n == 1:
        out.data[out.size] = <uint32_t>t.byte_id[s[0]]
        out.size += 1
        return 0
    cdef int rc
    if path == PATH_LINEAR or (path == PATH_AUTO and n <= LINEAR_MAX_LEN):
        return merge_linear(t, s, n, out)
    if (path == PATH_RUNS or path == PATH_AUTO) and s[0] == s[n - 1] \
            and memcmp(s, s + 1, n - 1) == 0:
        rc = merge_runs(t, s, n, out)
        if rc != GAVE_UP:
            return rc
    if path == PATH_BUCKET or (path == PATH_AUTO and n >= BUCKET_MIN_LEN):
        rc = merge_bucket(t, s, n, out)
        if rc != GAVE_UP:
            return rc
    return merge_heap(t, s, n, out)


cdef int encode_piece(const RankTables* t, const uint8_t* s, Py_ssize_t n, IdBuffer* out,
                      int path) noexcept nogil:
    """Append the ids of s[:n] to out. -1 when out of memory."""
    cdef token_t found
    if n <= 0:
        return 0
    if id_buffer_reserve(out, n) != 0:
        return -1
    if t.whole_piece_lookup:
        found = lookup_token(t, s, n)
        if found >= 0:
            out.data[out.size] = <uint32_t>found
            out.size += 1
            return 0
    return merge_piece(t, s, n, out, path)


cdef struct CacheEntry:
    const uint8_t* key      # the piece's bytes, inside the caller's input (alive for the call)
    uint64_t hash
    int64_t first_id        # where the piece's ids start in the output buffer
    int32_t length
    int32_t n_ids


cdef struct PieceCache:
    # Per-call memo of pieces that needed BPE: a repeated word is merged once per call.
    CacheEntry* entries     # allocated on first use; NULL when unused or disabled
    uint64_t mask
    Py_ssize_t used
    Py_ssize_t capacity     # slots (a power of two); 0 disables the cache


cdef inline void cache_init(PieceCache* cache, Py_ssize_t n_pieces) noexcept nogil:
    cache.entries = NULL
    cache.used = 0
    cache.capacity = 0
    if n_pieces >= CACHE_MIN_PIECES:
        cache.capacity = 256
        while cache.capacity < n_pieces // 2 and cache.capacity < CACHE_MAX_SLOTS:
            cache.capacity *= 2
        cache.mask = <uint64_t>(cache.capacity - 1)


cdef inline CacheEntry* cache_entry(PieceCache* cache, const uint8_t* s, Py_ssize_t n,
                                    uint64_t h) noexcept nogil:
    """The entry holding s[:n], or the empty entry where it would go; NULL without a cache."""
    if cache == NULL or cache.capacity == 0:
        return NULL
    if cache.entries == NULL:
        cache.entries = <CacheEntry*>calloc(cache.capacity, sizeof(CacheEntry))
        if cache.entries == NULL:
            cache.capacity = 0  # no memory for a cache: carry on without one
            return NULL
    cdef uint64_t i = h & cache.mask
    cdef CacheEntry* entry
    while True:
        entry = &cache.entries[i]
        if entry.key == NULL or (entry.hash == h and entry.length == n
                                 and memcmp(entry.key, s, n) == 0):
            return entry
        i = (i + 1) & cache.mask


cdef int encode_block(const RankTables* t, const uint8_t** starts, const Py_ssize_t* lengths,
                      Py_ssize_t count, IdBuffer* out, PieceCache* cache) noexcept nogil:
    """Append the ids of count <= LOOKAHEAD pieces. All whole-piece lookups are hashed and their
    slots prefetched first, so that their cache misses overlap; pieces that need BPE go through
    the per-call cache (may be NULL). -1 when out of memory."""
    cdef uint64_t heads[LOOKAHEAD]
    cdef uint64_t hashes[LOOKAHEAD]
    cdef Py_ssize_t k, n, total = 0
    cdef int64_t before
    cdef token_t found
    cdef bint lookup = t.whole_piece_lookup
    cdef const uint8_t* s
    cdef CacheEntry* entry
    for k in range(count):
        n = lengths[k]
        total += n
        if lookup and 0 < n <= t.max_token_len:
            heads[k] = head_word(starts[k], n)
            hashes[k] = hash_bytes(starts[k], n, heads[k])
            CYBPE_PREFETCH(&t.token_slots[hashes[k] & t.token_mask])
    if id_buffer_reserve(out, total) != 0:
        return -1
    for k in range(count):
        n = lengths[k]
        s = starts[k]
        if n <= 0:
            continue
        if lookup and n <= t.max_token_len:
            found = probe_token(t, s, n, heads[k], hashes[k] & t.token_mask)
            if found >= 0:
                out.data[out.size] = <uint32_t>found
                out.size += 1
                continue
        elif n >= 2:
            hashes[k] = hash_bytes(s, n, head_word(s, n))
        entry = cache_entry(cache, s, n, hashes[k]) if 2 <= n <= MAX_IDS else NULL
        if entry != NULL and entry.key != NULL:
            memcpy(out.data + out.size, out.data + entry.first_id, entry.n_ids * sizeof(uint32_t))
            out.size += entry.n_ids
            continue
        before = out.size
        if merge_piece(t, s, n, out, PATH_AUTO) != 0:
            return -1
        if entry != NULL and 2 * cache.used < cache.capacity:
            entry.key = s
            entry.hash = hashes[k]
            entry.length = <int32_t>n
            entry.first_id = before
            entry.n_ids = <int32_t>(out.size - before)
            cache.used += 1
    return 0


cdef inline Py_ssize_t find_special(const int64_t* special_ids, Py_ssize_t n_special,
                                    int64_t token_id) noexcept nogil:
    """Index of token_id in the sorted special_ids, or -1."""
    cdef Py_ssize_t lo = 0, hi = n_special, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if special_ids[mid] < token_id:
            lo = mid + 1
        else:
            hi = mid
    if lo < n_special and special_ids[lo] == token_id:
        return lo
    return -1


# ---------------------------------------------------------------- building the tables
# (module-level functions, so nothing can rebuild the tables of a live, possibly shared, encoder)

cdef Py_ssize_t table_bits(Py_ssize_t n_entries) noexcept nogil:
    """log2 of a power-of-two slot count holding n_entries at load factor <= 1/2."""
    cdef Py_ssize_t bits = 4
    while (<Py_ssize_t>1 << bits) < 2 * n_entries:
        bits += 1
    return bits


cdef token_t insert_token(RankTables* t, token_t token) noexcept nogil:
    """Insert ordinary id ``token``. Returns -1, or the id that already has the same bytes."""
    cdef const uint8_t* s = t.token_blob + t.token_offsets[token]
    cdef Py_ssize_t n = t.token_offsets[token + 1] - t.token_offsets[token]
    cdef token_t other = lookup_token(t, s, n)
    if other >= 0:
        return other
    cdef uint64_t head = head_word(s, n)
    cdef uint64_t i = hash_bytes(s, n, head) & t.token_mask
    while t.token_slots[i].token >= 0:
        i = (i + 1) & t.token_mask
    t.token_slots[i].head = head
    t.token_slots[i].length = <int32_t>n
    t.token_slots[i].token = token
    return -1


cdef bint insert_pair(RankTables* t, uint64_t key, rank_t rank) noexcept nogil:
    """Insert pair_key -> rank unless the pair is present (the first, lowest rank wins).
    True if new."""
    cdef uint64_t slot = packed_pair(t, <token_t>(key >> 32), <token_t>(key & 0xFFFFFFFFULL))
    cdef uint64_t rank_mask = ((<uint64_t>1) << t.rank_bits) - 1
    cdef uint64_t i = (slot * FIBONACCI) >> t.pair_shift
    while True:
        if t.pair_slots[i] == EMPTY_PAIR_SLOT:
            t.pair_slots[i] = slot | <uint64_t>rank
            return True
        if (t.pair_slots[i] & ~rank_mask) == slot:
            return False
        i = (i + 1) & t.pair_mask


cdef int push_pair(PairEntry** buf, Py_ssize_t* size, Py_ssize_t* cap, uint64_t key,
                   rank_t rank) noexcept nogil:
    """Append (key, rank) to a growable array. -1 when out of memory."""
    cdef PairEntry* grown
    if size[0] == cap[0]:
        cap[0] = cap[0] * 2 if cap[0] else 1024
        grown = <PairEntry*>realloc(buf[0], cap[0] * sizeof(PairEntry))
        if grown == NULL:
            return -1
        buf[0] = grown
    buf[0][size[0]].key = key
    buf[0][size[0]].rank = rank
    size[0] += 1
    return 0


cdef int collect_all_splits(const RankTables* t, PairEntry** out,
                            Py_ssize_t* out_size) noexcept nogil:
    """Every (id(T[:k]), id(T[k:])) -> id(T) where both halves are tokens. -1 when out of memory."""
    cdef Py_ssize_t cap = 0, token, k, length
    cdef const uint8_t* s
    cdef token_t left, right
    for token in range(t.n_tokens):
        s = t.token_blob + t.token_offsets[token]
        length = t.token_offsets[token + 1] - t.token_offsets[token]
        for k in range(1, length):
            left = lookup_token(t, s, k)
            if left < 0:
                continue
            right = lookup_token(t, s + k, length - k)
            if right < 0:
                continue
            if push_pair(out, out_size, &cap, pair_key(left, right), <rank_t>token) != 0:
                return -1
    return 0


cdef Py_ssize_t collect_merges(RankTables* t, const int32_t* merges, Py_ssize_t n_merges,
                               PairEntry* out) noexcept nogil:
    """Merge k = (a, b) -> (rank k, id(a+b)), filling t.rank_to_id. Returns -1, -2 when out of
    memory, or the index of the first merge whose bytes are not a token."""
    cdef uint8_t* joined = <uint8_t*>malloc(2 * t.max_token_len)
    cdef Py_ssize_t k, la, lb
    cdef token_t a, b, merged
    if joined == NULL:
        return -2
    for k in range(n_merges):
        a = merges[2 * k]
        b = merges[2 * k + 1]
        la = t.token_offsets[a + 1] - t.token_offsets[a]
        lb = t.token_offsets[b + 1] - t.token_offsets[b]
        memcpy(joined, t.token_blob + t.token_offsets[a], la)
        memcpy(joined + la, t.token_blob + t.token_offsets[b], lb)
        merged = lookup_token(t, joined, la + lb)
        if merged < 0:
            free(joined)
            return k
        t.rank_to_id[k] = merged
        out[k].key = pair_key(a, b)
        out[k].rank = <rank_t>k
    free(joined)
    return -1


cdef int build_tokens(RankEncoder encoder, tokens) except -1:
    cdef RankTables* t = &encoder.tables
    if not isinstance(tokens, (list, tuple)):
        tokens = list(tokens)
    cdef Py_ssize_t n = len(tokens), i, total = 0, length
    cdef bytes token
    if n > MAX_IDS:
        raise FormatError(f"{n} tokens is more than the {MAX_IDS} ids an int32 can hold")
    encoder.n_tokens = t.n_tokens = n
    t.token_offsets = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    if t.token_offsets == NULL:
        raise MemoryError()
    as_bytes = []
    for i in range(n):
        item = tokens[i]
        if type(item) is not bytes:
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise FormatError(f"token id {i} is {type(item).__name__}, not bytes")
            item = bytes(item)
        token = <bytes>item
        length = PyBytes_GET_SIZE(token)
        if length == 0:
            raise FormatError(f"token id {i} is empty")
        t.token_offsets[i] = total
        total += length
        if length > t.max_token_len:
            t.max_token_len = length
        as_bytes.append(token)
    t.token_offsets[n] = total
    t.token_blob = <uint8_t*>malloc(total if total > 0 else 1)
    if t.token_blob == NULL:
        raise MemoryError()
    for i in range(n):
        token = <bytes>as_bytes[i]
        memcpy(t.token_blob + t.token_offsets[i], PyBytes_AS_STRING(token),
               t.token_offsets[i + 1] - t.token_offsets[i])

    cdef Py_ssize_t slots = <Py_ssize_t>1 << table_bits(n)
    t.token_mask = <uint64_t>(slots - 1)
    t.token_slots = <TokenSlot*>malloc(slots * sizeof(TokenSlot))
    if t.token_slots == NULL:
        raise MemoryError()
    memset(t.token_slots, 0xFF, slots * sizeof(TokenSlot))  # token -1: empty
    cdef token_t k, same = -1
    with nogil:
        for k in range(<token_t>n):
            same = insert_token(t, k)
            if same >= 0:
                break
    if same >= 0:
        raise FormatError(f"token ids {same} and {k} have the same bytes {as_bytes[k]!r}")
    return 0


cdef int bit_length(uint64_t value) noexcept nogil:
    cdef int bits = 0
    while value:
        bits += 1
        value >>= 1
    return bits


cdef int alloc_pair_table(RankTables* t, Py_ssize_t n_entries, Py_ssize_t n_ranks) except -1:
    t.id_bits = max(1, bit_length(<uint64_t>(t.n_tokens - 1)))
    t.rank_bits = bit_length(<uint64_t>n_ranks)  # rank n_ranks (all ones at most) never occurs
    t.n_ranks = n_ranks
    if 2 * t.id_bits + t.rank_bits > 64:
        raise FormatError(f"{t.n_tokens} tokens and {n_ranks} ranks do not fit a 64-bit pair "
                          f"slot (2 * {t.id_bits} + {t.rank_bits} bits > 64)")
    cdef Py_ssize_t bits = table_bits(n_entries)
    t.pair_shift = <int>(64 - bits)
    t.pair_mask = (<uint64_t>1 << bits) - 1
    t.pair_slots = <uint64_t*>malloc((<Py_ssize_t>1 << bits) * sizeof(uint64_t))
    if t.pair_slots == NULL:
        raise MemoryError()
    memset(t.pair_slots, 0xFF, (<Py_ssize_t>1 << bits) * sizeof(uint64_t))  # EMPTY_PAIR_SLOT
    return 0


cdef int build_all_splits(RankEncoder encoder) except -1:
    cdef RankTables* t = &encoder.tables
    cdef PairEntry* found = NULL
    cdef Py_ssize_t n_found = 0, i
    cdef int rc
    with nogil:
        rc = collect_all_splits(t, &found, &n_found)
    try:
        if rc != 0:
            raise MemoryError()
        alloc_pair_table(t, n_found, t.n_tokens)
        with nogil:
            for i in range(n_found):  # split pairs are unique: A+B fixes the token
                insert_pair(t, found[i].key, found[i].rank)
    finally:
        free(found)
    encoder.pair_table_size = n_found
    t.rank_to_id = <token_t*>malloc((t.n_tokens + 1) * sizeof(token_t))
    if t.rank_to_id == NULL:
        raise MemoryError()
    for i in range(t.n_tokens):
        t.rank_to_id[i] = <token_t>i  # rank-only vocabularies: the rank is the id
    return 0


cdef object check_merges(RankEncoder encoder, merges):
    """merges as a C-contiguous int32 array of shape (n, 2); FormatError naming a bad merge."""
    if not isinstance(merges, np.ndarray):
        return _merge_list_to_array(encoder, merges)
    if merges.size and merges.dtype.kind not in "iu":
        raise FormatError(f"merges must be integer (left id, right id) pairs, got {merges.dtype}")
    pairs = merges.astype(np.int64).reshape(-1, 2) if merges.size == 0 else merges
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise FormatError(f"merges must be (left id, right id) pairs, got shape {pairs.shape}")
    if pairs.shape[0] > MAX_IDS:
        raise FormatError(f"{pairs.shape[0]} merges is more than an int32 rank can number")
    bad = np.flatnonzero(((pairs < 0) | (pairs >= encoder.n_tokens)).any(axis=1))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"merge {k} ({pairs[k, 0]}, {pairs[k, 1]}) names an id outside "
                          f"0..{encoder.n_tokens - 1}")
    return np.ascontiguousarray(pairs, dtype=np.int32)


cdef object _merge_list_to_array(RankEncoder encoder, merges):
    """A sequence of (left, right) pairs as an int32 array, in one pass (numpy's conversion of
    a 280k-tuple list costs ~70 ms; this loop ~10)."""
    if not isinstance(merges, (list, tuple)):
        merges = list(merges)
    cdef Py_ssize_t n = len(merges), k = 0
    if n > MAX_IDS:
        raise FormatError(f"{n} merges is more than an int32 rank can number")
    pairs = np.empty((n, 2), dtype=np.int32)
    cdef int32_t[:, ::1] view = pairs
    cdef long long left, right
    try:
        for k in range(n):
            left_id, right_id = merges[k]
            # operator.index refuses floats, which a C conversion would truncate
            left = left_id if type(left_id) is int else operator.index(left_id)
            right = right_id if type(right_id) is int else operator.index(right_id)
            if not (0 <= left < encoder.n_tokens and 0 <= right < encoder.n_tokens):
                raise FormatError(f"merge {k} ({left}, {right}) names an id outside "
                                  f"0..{encoder.n_tokens - 1}")
            view[k, 0] = <int32_t>left
            view[k, 1] = <int32_t>right
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"merge {k} {merges[k]!r} is not a (left id, right id) integer pair "
                          f"({exc})") from None
    return pairs


cdef int build_from_merges(RankEncoder encoder, merges) except -1:
    cdef RankTables* t = &encoder.tables
    cdef const int32_t[:, ::1] pairs = merges
    cdef Py_ssize_t n_merges = pairs.shape[0], k, bad, n_unique = 0
    cdef PairEntry* found = <PairEntry*>malloc((n_merges + 1) * sizeof(PairEntry))
    t.rank_to_id = <token_t*>malloc((n_merges + 1) * sizeof(token_t))
    if found == NULL or t.rank_to_id == NULL:
        free(found)
        raise MemoryError()
    try:
        with nogil:
            bad = collect_merges(t, &pairs[0, 0] if n_merges else NULL, n_merges, found)
        if bad == -2:
            raise MemoryError()
        if bad >= 0:
            a, b = pairs[bad, 0], pairs[bad, 1]
            raise FormatError(f"merge {bad} ({a}, {b}): {encoder.token_bytes(a)!r} + "
                              f"{encoder.token_bytes(b)!r} is not a token")
        alloc_pair_table(t, n_merges, n_merges)
        with nogil:
            for k in range(n_merges):
                n_unique += insert_pair(t, found[k].key, found[k].rank)
    finally:
        free(found)
    encoder.pair_table_size = n_unique
    return 0


cdef int build_byte_tables(RankTables* t) except -1:
    cdef uint8_t byte
    cdef int b, c
    for b in range(256):
        byte = <uint8_t>b
        t.byte_id[b] = lookup_token(t, &byte, 1)
        if t.byte_id[b] < 0:
            raise FormatError(f"byte {b} (0x{b:02x}) is not a token: every single byte "
                              f"must be a token")
    t.byte_pair_rank = <rank_t*>malloc(256 * 256 * sizeof(rank_t))
    if t.byte_pair_rank == NULL:
        raise MemoryError()
    for b in range(256):
        for c in range(256):
            t.byte_pair_rank[(b << 8) | c] = pair_rank(t, t.byte_id[b], t.byte_id[c])
    return 0


cdef int build_specials(RankEncoder encoder, special_tokens) except -1:
    specials = {}
    for raw_id, raw_bytes in dict(special_tokens).items():
        try:
            token_id = operator.index(raw_id)
        except TypeError:
            raise FormatError(f"special token id {raw_id!r} is not an integer") from None
        if token_id < encoder.n_tokens:
            raise FormatError(f"special token id {token_id} collides with an ordinary id "
                              f"(ordinary ids are 0..{encoder.n_tokens - 1})")
        if not isinstance(raw_bytes, (bytes, bytearray, memoryview)) or len(raw_bytes) == 0:
            raise FormatError(f"special token id {token_id}: {raw_bytes!r} is not "
                              f"non-empty bytes")
        specials[token_id] = bytes(raw_bytes)
    encoder._special_tokens = specials
    cdef Py_ssize_t n = len(specials), i, total = 0
    encoder.n_special = n
    encoder.special_ids = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    encoder.special_offsets = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    encoder.special_blob = <uint8_t*>malloc(sum(len(v) for v in specials.values()) + 1)
    if (encoder.special_ids == NULL or encoder.special_offsets == NULL
            or encoder.special_blob == NULL):
        raise MemoryError()
    cdef bytes value
    for i, token_id in enumerate(sorted(specials)):
        value = specials[token_id]
        encoder.special_ids[i] = token_id
        encoder.special_offsets[i] = total
        memcpy(encoder.special_blob + total, PyBytes_AS_STRING(value), len(value))
        total += len(value)
    encoder.special_offsets[n] = total
    return 0


# ---------------------------------------------------------------- the encoder

cdef class RankEncoder:
    """Byte-level BPE over an id-pair rank table; see the module docstring.

    ``RankEncoder(tokens, merges=None, *, whole_piece_lookup=True, special_tokens={})``

    * ``tokens[i]``: the bytes of ordinary id ``i`` (a bijection; every single byte is a token).
    * ``merges``: ``None`` for rank-only vocabularies (the rank of a token is its id and every
      split of every token is a merge), else ``(left id, right id)`` pairs, rank = position.
    * ``whole_piece_lookup``: a piece that is itself a token becomes that one id.
    * ``special_tokens``: id -> bytes, used by :meth:`decode_bytes` and :meth:`token_bytes`.
    """

    def __cinit__(self, tokens, merges=None, *, bint whole_piece_lookup=True,
                  special_tokens=None):
        self.whole_piece_lookup = self.tables.whole_piece_lookup = whole_piece_lookup
        build_tokens(self, tokens)
        if merges is None:
            self._merges = None
            build_all_splits(self)
        else:
            self._merges = check_merges(self, merges)
            build_from_merges(self, self._merges)
        build_byte_tables(&self.tables)
        build_specials(self, {} if special_tokens is None else special_tokens)

    def __dealloc__(self):
        free(self.tables.token_blob)
        free(self.tables.token_offsets)
        free(self.tables.token_slots)
        free(self.tables.pair_slots)
        free(self.tables.rank_to_id)
        free(self.tables.byte_pair_rank)
        free(self.special_ids)
        free(self.special_offsets)
        free(self.special_blob)

    # ------------------------------------------------------------ C API (see _encoder.pxd)

    cdef int encode_bytes_into(self, const uint8_t* s, Py_ssize_t n, IdBuffer* out) noexcept nogil:
        return encode_piece(&self.tables, s, n, out, PATH_AUTO)

    cdef int encode_pieces_into(self, const uint8_t* data, const int64_t* ends,
                                Py_ssize_t n_pieces, IdBuffer* out) noexcept nogil:
        cdef const uint8_t* starts[LOOKAHEAD]
        cdef Py_ssize_t lengths[LOOKAHEAD]
        cdef int64_t start = 0
        cdef Py_ssize_t i = 0, k, count
        cdef PieceCache cache
        cdef int rc = 0
        cache_init(&cache, n_pieces)
        while i < n_pieces and rc == 0:
            count = min(<Py_ssize_t>LOOKAHEAD, n_pieces - i)
            for k in range(count):
                starts[k] = data + start
                lengths[k] = ends[i + k] - start
                start = ends[i + k]
            rc = encode_block(&self.tables, starts, lengths, count, out, &cache)
            i += count
        free(cache.entries)
        return rc

    # ------------------------------------------------------------ Python API

    def token_id(self, token):
        """The ordinary id of these bytes, or -1."""
        cdef bytes b = _as_bytes(token)
        return lookup_token(&self.tables, <const uint8_t*>PyBytes_AS_STRING(b),
                            PyBytes_GET_SIZE(b))

    def token_bytes(self, token_id):
        """The bytes of an ordinary or special id; InvalidTokenError otherwise."""
        try:
            i = operator.index(token_id)
        except TypeError:
            raise InvalidTokenError(f"token id {token_id!r} is not an integer") from None
        if 0 <= i < self.n_tokens:
            return PyBytes_FromStringAndSize(
                <char*>self.tables.token_blob + self.tables.token_offsets[i],
                self.tables.token_offsets[i + 1] - self.tables.token_offsets[i])
        special = self._special_tokens.get(i)
        if special is None:
            raise InvalidTokenError(f"token id {i} is not in the vocabulary")
        return special

    def ids_list(self, const uint32_t[::1] ids):
        """The ids of a uint32 array as a list of ints, from one shared int object per id.

        ``ndarray.tolist()`` makes a new int per element: 28% of a list-returning encode of
        English, with the GIL held, which also capped two threads at ~1.6x one.
        """
        cdef tuple objects = self._id_objects
        cdef Py_ssize_t n = ids.shape[0], i
        cdef uint32_t value
        cdef PyObject* item
        if objects is None:
            objects = self._id_objects = tuple(range(self.n_tokens))
        result = PyList_New(n)
        for i in range(n):
            value = ids[i]
            if value < <uint32_t>self.n_tokens:
                item = tuple_item(objects, value)
                incref(item)
            else:  # a special token's id
                item = new_int(value)
            list_set_item(result, i, item)
        return result

    def encode_piece(self, piece):
        """The ids of one piece (bytes)."""
        return _encode_one(self, piece, PATH_AUTO)

    def _encode_piece_linear(self, piece):
        """encode_piece, forcing the short-piece (linear scan) path."""
        return _encode_one(self, piece, PATH_LINEAR)

    def _encode_piece_heap(self, piece):
        """encode_piece, forcing the long-piece (heap) path."""
        return _encode_one(self, piece, PATH_HEAP)

    def _encode_piece_bucket(self, piece):
        """encode_piece, forcing the bucket-queue path (the heap if it gives up)."""
        return _encode_one(self, piece, PATH_BUCKET)

    def _encode_piece_runs(self, piece):
        """encode_piece, forcing the run-length path where the piece is one repeated byte (the
        heap otherwise, or if it gives up)."""
        return _encode_one(self, piece, PATH_RUNS)

    def encode_str_pieces(self, pieces):
        """uint32 ids of every piece (str, encoded as UTF-8), in order."""
        if type(pieces) is not list:
            pieces = list(pieces)
        cdef IdBuffer buf
        buf.data = NULL
        buf.size = buf.capacity = 0
        cdef const uint8_t* starts[LOOKAHEAD]
        cdef Py_ssize_t lengths[LOOKAHEAD]
        cdef Py_ssize_t n_pieces = len(<list>pieces), i = 0, k = 0
        cdef PieceCache cache
        cache_init(&cache, n_pieces)
        try:
            for i in range(n_pieces):
                piece = (<list>pieces)[i]
                if not isinstance(piece, str):
                    raise EncodingError(f"piece {i} is {type(piece).__name__}, not str")
                # The list keeps the str (and its cached UTF-8) alive; we hold the GIL.
                starts[k] = <const uint8_t*>PyUnicode_AsUTF8AndSize(piece, &lengths[k])
                k += 1
                if k == LOOKAHEAD or i == n_pieces - 1:
                    if encode_block(&self.tables, starts, lengths, k, &buf, &cache) != 0:
                        raise MemoryError()
                    k = 0
            return _ids_to_array(&buf)
        except UnicodeEncodeError as exc:
            raise EncodingError(f"piece {i} cannot be encoded as UTF-8: {exc}") from exc
        finally:
            free(buf.data)
            free(cache.entries)

    def encode_utf8(self, data, ends):
        """uint32 ids of the pieces data[ends[i-1]:ends[i]] (ends[-1] == len(data)).

        The GIL is released while encoding."""
        cdef const uint8_t[::1] text = data
        ends_array = np.asarray(ends)
        if ends_array.size and ends_array.dtype.kind not in "iu":
            raise InvalidParameterError(f"ends must be integers, got dtype {ends_array.dtype}")
        cdef const int64_t[::1] cuts = np.ascontiguousarray(ends_array.reshape(-1),
                                                            dtype=np.int64)
        cdef Py_ssize_t n_pieces = cuts.shape[0], length = text.shape[0], i, bad = -1
        cdef int64_t previous = 0
        for i in range(n_pieces):
            if cuts[i] < previous or cuts[i] > length:
                bad = i
                break
            previous = cuts[i]
        if bad >= 0:
            raise InvalidParameterError(
                f"ends[{bad}] = {cuts[bad]} is not within {previous}..{length}: ends must be "
                f"non-decreasing offsets into data")
        if previous != length:
            raise InvalidParameterError(
                f"ends must finish at len(data) = {length}, got {previous}")
        if n_pieces == 0:
            return np.empty(0, dtype=np.uint32)
        cdef IdBuffer buf
        buf.data = NULL
        buf.size = buf.capacity = 0
        cdef int rc = 0
        try:
            with nogil:
                rc = self.encode_pieces_into(&text[0] if length else NULL, &cuts[0], n_pieces,
                                             &buf)
            if rc != 0:
                raise MemoryError()
            return _ids_to_array(&buf)
        finally:
            free(buf.data)

    def decode_bytes(self, ids):
        """The bytes of a sequence of ids (ordinary or special)."""
        values = np.asarray(ids)
        if values.ndim != 1:
            raise InvalidParameterError(f"ids must be a flat sequence, got shape {values.shape}")
        if values.size == 0:
            return b""
        if values.dtype.kind not in "iu":
            for position, value in enumerate(values.tolist()):
                if (isinstance(value, bool) or not isinstance(value, int)
                        or not (0 <= value < self.n_tokens or value in self._special_tokens)):
                    raise InvalidTokenError(
                        f"token id {value!r} (at position {position}) is not in the vocabulary")
            values = values.astype(np.int64)
        cdef const int64_t[::1] view = np.ascontiguousarray(values, dtype=np.int64)
        cdef const int64_t* offsets = self.tables.token_offsets
        cdef Py_ssize_t n = view.shape[0], i, bad = -1, total = 0, found
        cdef int64_t t
        with nogil:
            for i in range(n):
                t = view[i]
                if 0 <= t < self.n_tokens:
                    total += offsets[t + 1] - offsets[t]
                else:
                    found = find_special(self.special_ids, self.n_special, t)
                    if found < 0:
                        bad = i
                        break
                    total += self.special_offsets[found + 1] - self.special_offsets[found]
        if bad >= 0:
            raise InvalidTokenError(
                f"token id {values[bad]} (at position {bad}) is not in the vocabulary")
        result = PyBytes_FromStringAndSize(NULL, total)
        cdef uint8_t* dst = <uint8_t*>PyBytes_AS_STRING(result)
        cdef int64_t start, size
        with nogil:
            for i in range(n):
                t = view[i]
                if 0 <= t < self.n_tokens:
                    start = offsets[t]
                    size = offsets[t + 1] - start
                    memcpy(dst, self.tables.token_blob + start, size)
                else:
                    found = find_special(self.special_ids, self.n_special, t)
                    start = self.special_offsets[found]
                    size = self.special_offsets[found + 1] - start
                    memcpy(dst, self.special_blob + start, size)
                dst += size
        return result

    def _tokens(self):
        """The ordinary token bytes, as a list (ids in order)."""
        cdef Py_ssize_t i
        cdef const int64_t* offsets = self.tables.token_offsets
        return [PyBytes_FromStringAndSize(<char*>self.tables.token_blob + offsets[i],
                                          offsets[i + 1] - offsets[i])
                for i in range(self.n_tokens)]

    def __reduce__(self):
        return (_rebuild_rank_encoder,
                (self._tokens(), self._merges, self.whole_piece_lookup,
                 dict(self._special_tokens)))

    def __repr__(self):
        kind = "all-splits" if self._merges is None else f"{len(self._merges)} merges"
        return (f"RankEncoder(n_tokens={self.n_tokens}, pairs={self.pair_table_size} ({kind}), "
                f"special={self.n_special}, whole_piece_lookup={bool(self.whole_piece_lookup)})")


def _rebuild_rank_encoder(tokens, merges, whole_piece_lookup, special_tokens):
    """Unpickling helper: the constructor with keyword arguments."""
    return RankEncoder(tokens, merges, whole_piece_lookup=whole_piece_lookup,
                       special_tokens=special_tokens)


cdef bytes _as_bytes(piece):
    if type(piece) is bytes:
        return <bytes>piece
    if isinstance(piece, (bytes, bytearray, memoryview)):
        return bytes(piece)
    raise TypeError(f"expected bytes, got {type(piece).__name__}")


cdef list _encode_one(RankEncoder encoder, piece, int path):
    cdef bytes b = _as_bytes(piece)
    cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(b)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b), i
    cdef IdBuffer buf
    cdef int rc
    buf.data = NULL
    buf.size = buf.capacity = 0
    try:
        if n > 4096:  # long pieces: let other threads run meanwhile
            with nogil:
                rc = encode_piece(&encoder.tables, s, n, &buf, path)
        else:
            rc = encode_piece(&encoder.tables, s, n, &buf, path)
        if rc != 0:
            raise MemoryError()
        return [buf.data[i] for i in range(buf.size)]
    finally:
        free(buf.data)


cdef object _ids_to_array(IdBuffer* buf):
    result = np.empty(buf.size, dtype=np.uint32)
    cdef uint32_t[::1] view = result
    if buf.size:
        memcpy(&view[0], buf.data, buf.size * sizeof(uint32_t))
    return result
