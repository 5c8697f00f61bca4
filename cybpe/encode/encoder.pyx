"""The rank encoder: byte-level BPE of one piece at a time, exact to tiktoken, with no trie.

A piece is encoded by (1) looking the whole piece up (when ``whole_piece_lookup``), (2) mapping a
single byte to its id, or (3) repeatedly merging the adjacent pair of parts with the lowest rank,
leftmost on ties, until no adjacent pair has a rank. Ranks come from an id-pair table: either every
split of every token (rank-only vocabularies, ``merges is None``) or an explicit merges list.
The pure-Python twin is :mod:`cybpe.reference.encoder`.

A piece that needs BPE and is not in the piece caches is first cut where no token of the
vocabulary can cover the place (cut_points.pxd); the parts are merged, and cached, on their own.

Merge paths, all giving the same ids (tests run each against the others and the reference):
linear rescan (short pieces), binary heap (medium), bucket queue by rank (long), and run-length
(one repeated byte, any length).
"""

# Performance notes (the measurements behind each point, and the attempts dropped:
# docs/history.md, "Rank encoder")
# -----------------
# * Whole-piece lookup is the hot path for English and code (most of their pieces are tokens)
#   and its cost is a cache miss into the token table. So a 32-byte slot holds the token's
#   first 16 bytes, its length and its blob offset (a piece of <= 16 bytes is compared in the
#   slot, a longer one reads the rest from the blob at once), and encode_block hashes
#   LOOKAHEAD pieces first and prefetches their slots, then probes: the misses overlap.
# * Pieces that need BPE repeat, within a text and across texts: each thread keeps the ids of
#   the last pieces that needed BPE in a 4 MiB 4-way set-associative table of its own
#   (thread_cache.pxd), tagged with the encoder's serial: a stream of documents stops
#   re-merging its common words (a piece the table misses costs a whole BPE, mostly pair-table
#   misses). A per-call memo in front of it cost more than it saved (docs/history.md,
#   "Per-call piece cache").
# * Compares of 9-32 bytes are same_bytes (inline word compares), not memcmp calls; a non-ASCII
#   str is read through the UTF-8 form CPython caches in it (fastpath.pyx); ids_to_list takes
#   shared ints uncounted and reads none (id_ints.pxd).
# * The merge paths have their own notes in merge_paths.pyx.
# * Pair slots are one packed uint64 (left, right, rank): half of a 16-byte slot's footprint.
#   The remaining cost of BPE-heavy text is that table's cache misses.
# * Building the tables of a rank-only vocabulary is mostly cache misses into the token table,
#   so collect_all_splits and the token inserts hash SPLIT_BATCH keys and prefetch their slots
#   before probing, and a list of exact bytes is read in place.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

from cybpe.encode.merge_paths cimport (
    PATH_AUTO, PATH_BUCKET, PATH_CHARS, PATH_HEAP, PATH_LINEAR, PATH_RUNS, merge_piece)
from cybpe.encode.char_merges cimport build_char_tables, free_char_tables
from cybpe.encode.cut_points cimport (
    CutMemo, build_cut_tables, cut_memo_start, free_cut_tables, is_cut_point, is_cut_point_memo)
from cybpe.encode.id_ints cimport ID_INT_STRIDE, id_int_base, id_int_take, id_ints_cover
from cybpe.encode.rank_tables cimport (
    EMPTY_PAIR_SLOT, MAX_IDS, RankTables, TokenSlot, pair_rank, pair_slot,
)
from cybpe.encode.thread_cache cimport (
    THREAD_CACHE_MAX_BYTES, THREAD_CACHE_MAX_IDS, THREAD_CACHE_MAX_SPELLED_BYTES, THREAD_CACHE_MAX_SPELLED_IDS,
    THREAD_CACHE_WAYS, ThreadCacheEntry, next_encoder_serial, thread_cache_entries, thread_cache_key_of,
    Front, FrontEntry, FRONT_BITS, FRONT_MAX_BYTES, FRONT_MAX_IDS, front_count, front_pays,
    thread_front,
    thread_front_set_generation,
    thread_cut_memo, CUT_MEMO_BITS, CUT_MEMO_GENERATIONS,
    thread_cache_mask, thread_cache_salt, thread_cache_tag, thread_cache_tags,
)
from cybpe._c.system cimport big_table_alloc, big_table_free
from cybpe._c.mem_pool cimport MemPool, mem_alloc, mem_calloc, mem_free_all
from cybpe._c.cpu cimport FIBONACCI, prefetch_read, prefetch_write
from cybpe._c.types cimport IdBuffer, grow_buffer, id_buffer_reserve, rank_t, token_t



cdef extern from "Python.h":
    # Raw forms (no reference counting by Cython): ids_list moves borrowed ints into a list.
    ctypedef struct PyObject
    void list_set_item "PyList_SET_ITEM"(object lst, Py_ssize_t i, PyObject* item)
    PyObject* new_int "PyLong_FromUnsignedLong"(unsigned long value) except NULL


import operator

import numpy as np

from cybpe.errors import EncodingError, FormatError, InvalidParameterError, InvalidTokenError, describe

cdef enum:
    LOOKAHEAD = 64            # pieces whose token-table slots are prefetched together (notes)
    CUT_BATCH = 32            # parts of a cut piece whose thread-cache sets are prefetched together
    CUT_MIN_LEN = 16           # pieces shorter than this are merged whole (cut_points.pxd)
    SPLIT_BATCH = 32          # splits whose token-table slots collect_all_splits prefetches together


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


cdef inline bint same_bytes(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """a[:n] == b[:n], reading neither past n-1: 8-byte words (the last one overlapping) up to
    32 bytes, memcmp beyond. Inline: most compares here are of 9-32 bytes, where the call to
    memcmp cost more than the compare (3.8% of an English encode in perf)."""
    cdef Py_ssize_t i = 0
    if n < 8:
        return n <= 0 or head_word(a, n) == head_word(b, n)
    if n > 32:
        return memcmp(a, b, n) == 0
    while i + 8 < n:
        if load64(a + i) != load64(b + i):
            return False
        i += 8
    return load64(a + n - 8) == load64(b + n - 8)


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

cdef inline uint64_t tail_word(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """A TokenSlot's tail for bytes s[:n]: the head_word of s[8:min(n, 16)], 0 for n <= 8."""
    return head_word(s + 8, n - 8) if n > 8 else 0


cdef inline bint slot_holds(const RankTables* t, const TokenSlot* slot, const uint8_t* s,
                            Py_ssize_t n, uint64_t head) noexcept nogil:
    """The filled slot's token is exactly s[:n] (head = head_word(s, n)): its first 16 bytes
    are compared in the slot, the rest in the blob."""
    return slot.head == head and slot.length == n and (
        n <= 8 or slot.tail == tail_word(s, n) and (
            n <= 16 or same_bytes(t.token_blob + slot.offset + 16, s + 16, n - 16)))


cdef inline token_t probe_token(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                                uint64_t head, uint64_t i) noexcept nogil:
    """Id of the token s[:n] (1 <= n <= max_token_len) from its head_word and first slot."""
    cdef const TokenSlot* slot
    while True:
        slot = &t.token_slots[i]
        if slot.token < 0:
            return -1
        if slot_holds(t, slot, s, n, head):
            return slot.token
        i = (i + 1) & t.token_mask


cdef inline token_t lookup_token(const RankTables* t, const uint8_t* s,
                                 Py_ssize_t n) noexcept nogil:
    """Id of the token whose bytes are s[:n], or -1."""
    if n <= 0 or n > t.max_token_len:
        return -1
    cdef uint64_t head = head_word(s, n)
    return probe_token(t, s, n, head, hash_bytes(s, n, head) & t.token_mask)


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


cdef inline bint spells(const RankTables* t, const uint32_t* ids, int n_ids, const uint8_t* s,
                        Py_ssize_t n) noexcept nogil:
    """The tokens of ids[0:n_ids] (ordinary ids), end to end, are exactly s[:n]."""
    cdef Py_ssize_t length, done = 0
    cdef int64_t offset
    cdef int i
    for i in range(n_ids):
        offset = t.token_offsets[ids[i]]
        length = t.token_offsets[ids[i] + 1] - offset
        if length > n - done or not same_bytes(t.token_blob + offset, s + done, length):
            return False
        done += length
    return done == n


cdef inline ThreadCacheEntry* thread_cache_find(const RankTables* t, ThreadCacheEntry* ways,
                                                const uint32_t* tags, const uint8_t* s,
                                                Py_ssize_t n, uint64_t h) noexcept nogil:
    """The entry of this encoder holding exactly s[:n] among one set's ways (tags: their tags,
    newest first), or NULL. The filled tags are a prefix of the set's: the first empty one ends
    the search."""
    cdef uint32_t tag = thread_cache_tag(h, t.cache_salt)
    cdef ThreadCacheEntry* e
    cdef int w
    for w in range(THREAD_CACHE_WAYS):
        if tags[w] == 0:
            return NULL
        if (tags[w] & ~(<uint32_t>3)) != tag:
            continue
        e = &ways[tags[w] & 3]
        if e.owner == t.cache_owner and e.length == n and e.hash == <uint32_t>h:
            if e.spelled:
                if spells(t, e.ids, e.n_ids, s, n):
                    return e
            elif same_bytes(thread_cache_key_of(e), s, n):
                return e
    return NULL


cdef inline uint32_t thread_cache_victim(const uint32_t* tags) noexcept nogil:
    """The way a new entry of the set with these tags takes: the next unused one (entries fill
    in order: way k is the k-th), else the oldest's."""
    cdef uint32_t way = 0
    while way < THREAD_CACHE_WAYS and tags[way] != 0:
        way += 1
    return way if way < THREAD_CACHE_WAYS else tags[THREAD_CACHE_WAYS - 1] & 3


cdef inline void thread_cache_put(const RankTables* t, ThreadCacheEntry* ways, uint32_t* tags,
                                  const uint8_t* s, Py_ssize_t n, uint64_t h, const uint32_t* ids,
                                  Py_ssize_t n_ids) noexcept nogil:
    """Keep s[:n] -> ids[0:n_ids] as the set's newest entry, written over its oldest (or its
    next unused one): keyed when it fits, else spelled; a piece of more ids or bytes than
    either holds is not kept."""
    cdef bint keyed = n <= THREAD_CACHE_MAX_BYTES and n_ids <= THREAD_CACHE_MAX_IDS
    cdef uint32_t way
    if not keyed and (n_ids > THREAD_CACHE_MAX_SPELLED_IDS or n > THREAD_CACHE_MAX_SPELLED_BYTES):
        return
    way = thread_cache_victim(tags)
    memmove(tags + 1, tags, (THREAD_CACHE_WAYS - 1) * sizeof(uint32_t))
    tags[0] = thread_cache_tag(h, t.cache_salt) | way
    cdef ThreadCacheEntry* e = &ways[way]
    e.owner = t.cache_owner
    e.hash = <uint32_t>h
    e.length = <uint16_t>n
    e.n_ids = <uint8_t>n_ids
    e.spelled = not keyed
    memcpy(e.ids, ids, n_ids * sizeof(uint32_t))
    if keyed:
        memcpy(thread_cache_key_of(e), s, n)


cdef inline void thread_cache_prefetch(ThreadCacheEntry* shared, uint64_t h) noexcept nogil:
    """Start loading the tags of the set of a piece of hash h."""
    prefetch_read(&thread_cache_tags(shared)[(h & thread_cache_mask()) * THREAD_CACHE_WAYS])


cdef int encode_uncut(const RankTables* t, const uint8_t* s, Py_ssize_t n, uint64_t h,
                      IdBuffer* out, ThreadCacheEntry* shared, CutMemo* cuts) noexcept nogil:
    """Append the ids of s[:n] (n >= 2, not a token or past the whole-piece lookup; h its
    hash_bytes): from this thread's cross-call cache (shared, may be NULL), else by BPE, cut at
    its cut points first unless cuts is NULL (the call's memo of cut-point tests); the result
    goes into the cache. out has room for n + THREAD_CACHE_MAX_SPELLED_IDS more ids (a hit is
    copied whole). -1 when out of memory."""
    cdef ThreadCacheEntry* slot = NULL
    cdef uint32_t* slot_tags = NULL
    cdef uint64_t first
    cdef ThreadCacheEntry* hit
    cdef int64_t before
    cdef int rc
    if shared != NULL and n <= THREAD_CACHE_MAX_SPELLED_BYTES:
        first = (h & thread_cache_mask()) * THREAD_CACHE_WAYS
        slot = &shared[first]
        slot_tags = &thread_cache_tags(shared)[first]
        hit = thread_cache_find(t, slot, slot_tags, s, n, h)
        if hit != NULL:  # a fixed-size copy (three moves, not a copy loop) of up to 12 ids
            memcpy(out.data + out.size, hit.ids, THREAD_CACHE_MAX_SPELLED_IDS * sizeof(uint32_t))
            out.size += hit.n_ids
            return 0
        # The entry the result will take (thread_cache_put's choice), fetched for writing
        # while the piece is merged: its line arrives before the write instead of after.
        prefetch_write(&slot[thread_cache_victim(slot_tags)])
    before = out.size
    if cuts != NULL and n >= CUT_MIN_LEN and t.inner_pairs != NULL:
        rc = encode_cut(t, s, n, out, shared, cuts)
    else:
        rc = merge_piece(t, s, n, out, PATH_AUTO)
    if rc != 0:
        return -1
    if slot != NULL:
        thread_cache_put(t, slot, slot_tags, s, n, h, out.data + before, out.size - before)
    return 0


cdef int encode_cut(const RankTables* t, const uint8_t* s, Py_ssize_t n, IdBuffer* out,
                    ThreadCacheEntry* shared, CutMemo* cuts) noexcept nogil:
    """BPE of s[:n] as the BPE of the parts between its cut points (cut_points.pxd), each
    through the piece caches. Only places next to a non-ASCII character are tried: in ASCII
    runs tokens cover nearly every place, and a long ASCII piece pays nothing. Parts go in
    batches whose thread-cache sets are prefetched first, so that their misses overlap (as
    encode_block does for token slots). -1 when out of memory."""
    cdef Py_ssize_t bounds[CUT_BATCH + 1]
    cdef uint64_t hashes[CUT_BATCH]
    cdef Py_ssize_t p = 1, m = 0, k, size
    bounds[0] = 0
    while True:
        while p < n and not is_cut_point_memo(t, s, n, p, cuts):
            p += 1
        if p == n and m == 0 and bounds[0] == 0:
            return merge_piece(t, s, n, out, PATH_AUTO)  # no cut point
        m += 1
        bounds[m] = p
        if m == CUT_BATCH or p == n:
            for k in range(m):
                size = bounds[k + 1] - bounds[k]
                if size >= 2:
                    hashes[k] = hash_bytes(s + bounds[k], size, head_word(s + bounds[k], size))
                    if shared != NULL:
                        thread_cache_prefetch(shared, hashes[k])
            for k in range(m):
                size = bounds[k + 1] - bounds[k]
                if size == 1:
                    out.data[out.size] = <uint32_t>t.byte_id[s[bounds[k]]]
                    out.size += 1
                elif encode_uncut(t, s + bounds[k], size, hashes[k], out, shared, NULL) != 0:
                    return -1
            if p == n:
                return 0
            bounds[0] = p
            m = 0
        p += 1


cdef inline Py_ssize_t lane_sum(uint64_t lanes) noexcept nogil:
    """The sum of the eight byte lanes of a word, each at most 128: pairs of lanes first (as
    16-bit lanes, so the total, up to 1,024, cannot overflow one)."""
    lanes = (lanes & 0x00FF00FF00FF00FFULL) + ((lanes >> 8) & 0x00FF00FF00FF00FFULL)
    return <Py_ssize_t>((lanes * 0x0001000100010001ULL) >> 48)


cdef inline Py_ssize_t high_bytes(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """How many bytes of s[:n] are >= 0x80: one counter per byte lane of a word, added up
    every 128 words (before a lane can pass 128) and at the end."""
    cdef uint64_t lanes = 0
    cdef Py_ssize_t i = 0, total = 0, words = 0
    while i + 8 <= n:
        lanes += (load64(s + i) >> 7) & 0x0101010101010101ULL
        i += 8
        words += 1
        if words == 128:
            total += lane_sum(lanes)
            lanes = 0
            words = 0
    total += lane_sum(lanes)
    while i < n:
        total += s[i] >> 7
        i += 1
    return total


cdef inline FrontEntry* front_slot(const Front* front, uint64_t h) noexcept nogil:
    """The front-table entry of a piece of hash h (high bits: the token table and the set
    index take the low ones)."""
    return &front.entries[h >> (64 - FRONT_BITS)]


cdef inline bint front_holds(const Front* front, const FrontEntry* e, const uint8_t* s,
                             Py_ssize_t n, uint64_t head) noexcept nogil:
    """The entry holds the ids of exactly s[:n] (2 <= n <= FRONT_MAX_BYTES, head its
    head_word) for this encoder: equal generation, length, head_word and tail_word, which for
    at most 16 bytes means equal bytes."""
    return (e.generation == front.generation and e.head == head and e.length == n
            and e.tail == tail_word(s, n))


cdef inline void front_put(const Front* front, FrontEntry* e, uint64_t head, const uint8_t* s,
                           Py_ssize_t n, const uint32_t* ids, Py_ssize_t n_ids) noexcept nogil:
    """Keep s[:n] (2 <= n <= FRONT_MAX_BYTES, head its head_word) -> ids in its front entry,
    over whatever was there, when the ids fit."""
    if n_ids > FRONT_MAX_IDS:
        return
    e.head = head
    e.tail = tail_word(s, n)
    e.generation = front.generation
    e.length = <uint16_t>n
    e.n_ids = <uint8_t>n_ids
    memcpy(e.ids, ids, n_ids * sizeof(uint32_t))


cdef inline int encode_pieces_block(const RankTables* t, const uint8_t** starts,
                                    const Py_ssize_t* lengths, Py_ssize_t count, IdBuffer* out,
                                    ThreadCacheEntry* shared, const Front* front, CutMemo* cuts,
                                    bint with_front) noexcept nogil:
    """Append the ids of count <= LOOKAHEAD pieces, in three passes so that cache misses
    overlap: hash every piece and prefetch its token-table slot (and, with_front, the front
    entry of a piece of 2..16 bytes with a non-ASCII byte); check the front entries and probe
    the slots (the whole-piece lookup), and prefetch the thread-cache set of each piece found in
    neither (and, without with_front, the front entry of such a piece of 2..16 bytes, when
    front is not NULL); then append, in order, each piece's ids: its front entry's, its token,
    or what encode_uncut gives (the thread cache, then BPE, cut where it can be). with_front is
    a constant at both callers (encode_block, encode_block_front), so each is compiled without
    the other's tests. Either way an entry holds what this encoder gives for its bytes as a
    whole piece; without with_front only pieces the token table does not answer read or write
    one. -1 when out of memory."""
    cdef uint64_t heads[LOOKAHEAD]
    cdef uint64_t hashes[LOOKAHEAD]
    cdef token_t found[LOOKAHEAD]
    cdef FrontEntry* fronts[LOOKAHEAD]
    cdef Py_ssize_t k, n, total = 0
    cdef int64_t before
    cdef bint lookup = t.whole_piece_lookup
    cdef const uint8_t* s
    cdef FrontEntry* e = NULL
    cdef uint32_t tokens = 0, others = 0
    for k in range(count):
        n = lengths[k]
        total += n
        if with_front:
            fronts[k] = NULL
            if n <= 0 or (n == 1 and not lookup):
                continue
            heads[k] = head_word(starts[k], n)
            hashes[k] = hash_bytes(starts[k], n, heads[k])
            if 2 <= n <= FRONT_MAX_BYTES and (heads[k] | tail_word(starts[k], n)) & 0x8080808080808080ULL:
                fronts[k] = front_slot(front, hashes[k])
                prefetch_read(fronts[k])
            if lookup and n <= t.max_token_len:
                prefetch_read(&t.token_slots[hashes[k] & t.token_mask])
        elif lookup and 0 < n <= t.max_token_len:
            heads[k] = head_word(starts[k], n)
            hashes[k] = hash_bytes(starts[k], n, heads[k])
            prefetch_read(&t.token_slots[hashes[k] & t.token_mask])
    if id_buffer_reserve(out, total + THREAD_CACHE_MAX_SPELLED_IDS) != 0:  # the fixed-size copies
        return -1
    for k in range(count):
        n = lengths[k]
        found[k] = -1
        if not with_front:
            fronts[k] = NULL
        if n <= 0:
            continue
        if with_front:
            e = fronts[k]
            if e != NULL and front_holds(front, e, starts[k], n, heads[k]):
                found[k] = -2
                continue
        if lookup and n <= t.max_token_len:
            found[k] = probe_token(t, starts[k], n, heads[k], hashes[k] & t.token_mask)
            if found[k] >= 0:
                continue
        elif n >= 2 and not with_front:  # (with_front hashed every piece in the first pass)
            heads[k] = head_word(starts[k], n)
            hashes[k] = hash_bytes(starts[k], n, heads[k])
        if n >= 2 and shared != NULL:
            thread_cache_prefetch(shared, hashes[k])
        # A short piece that is no token: its front entry, one line found from its hash, can
        # answer it where the thread cache needs two dependent ones (tags, then entry).
        if not with_front and front != NULL and 2 <= n <= FRONT_MAX_BYTES:
            fronts[k] = front_slot(front, hashes[k])
            prefetch_read(fronts[k])
    for k in range(count):
        n = lengths[k]
        if n <= 0:
            continue
        s = starts[k]
        e = fronts[k]
        if found[k] >= 0:
            out.data[out.size] = <uint32_t>found[k]
            out.size += 1
            if with_front and e != NULL:
                front_put(front, e, heads[k], s, n, out.data + out.size - 1, 1)
                tokens += 1
            continue
        # The front entry: with_front, of a piece whose entry held in the second pass; without,
        # of a short piece that is no token. Checked (again) here: a piece before this one in
        # the block may have taken the entry since.
        if (e != NULL and (found[k] == -2 or not with_front)
                and front_holds(front, e, s, n, heads[k])):
            memcpy(out.data + out.size, e.ids, FRONT_MAX_IDS * sizeof(uint32_t))  # fixed size
            out.size += e.n_ids
            if with_front:
                if e.n_ids == 1:
                    tokens += 1
                else:
                    others += 1
            continue
        if n == 1:
            if merge_piece(t, s, n, out, PATH_AUTO) != 0:
                return -1
            continue
        before = out.size
        if encode_uncut(t, s, n, hashes[k], out, shared, cuts) != 0:
            return -1
        if e != NULL:
            front_put(front, e, heads[k], s, n, out.data + before, out.size - before)
            if with_front:
                if out.size - before == 1:
                    tokens += 1
                else:
                    others += 1
    if with_front:
        front_count(front, tokens, others)
    return 0


cdef int encode_block(const RankTables* t, const uint8_t** starts, const Py_ssize_t* lengths,
                      Py_ssize_t count, IdBuffer* out, ThreadCacheEntry* shared,
                      const Front* front, CutMemo* cuts) noexcept nogil:
    """encode_pieces_block with the token table first, for a block mostly of ASCII bytes or
    one whose short pieces are mostly tokens: only a piece of 2..FRONT_MAX_BYTES bytes that is
    no token looks in the front table (front, which may be NULL), where what it finds is
    kept."""
    return encode_pieces_block(t, starts, lengths, count, out, shared, front, cuts, False)


cdef int encode_block_front(const RankTables* t, const uint8_t** starts,
                            const Py_ssize_t* lengths, Py_ssize_t count, IdBuffer* out,
                            ThreadCacheEntry* shared, const Front* front,
                            CutMemo* cuts) noexcept nogil:
    """encode_pieces_block with the front table, for a block mostly of non-ASCII bytes: a short
    piece with a non-ASCII byte looks in this thread's front table first (few such pieces are
    tokens there, and one entry answers for it), and what it finds is kept in its entry."""
    return encode_pieces_block(t, starts, lengths, count, out, shared, front, cuts, True)


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

cdef int every_token_is_its_own_bpe(const RankTables* t) noexcept nogil:
    """1 when BPE (without the whole-piece lookup) turns the bytes of every ordinary token
    into that one token, else 0; -1 when out of memory."""
    cdef IdBuffer buf
    cdef Py_ssize_t token, n
    cdef int found = 1
    buf.data = NULL
    buf.size = buf.capacity = 0
    for token in range(t.n_tokens):
        n = t.token_offsets[token + 1] - t.token_offsets[token]
        if n < 2:
            continue  # one byte: always its byte's token
        buf.size = 0
        if id_buffer_reserve(&buf, n) != 0 or \
                merge_piece(t, t.token_blob + t.token_offsets[token], n, &buf, PATH_AUTO) != 0:
            found = -1
            break
        if buf.size != 1 or buf.data[0] != <uint32_t>token:
            found = 0
            break
    free(buf.data)
    return found


cdef Py_ssize_t table_bits(Py_ssize_t n_entries) noexcept nogil:
    """log2 of a power-of-two slot count holding n_entries at load factor <= 1/2."""
    cdef Py_ssize_t bits = 4
    while (<Py_ssize_t>1 << bits) < 2 * n_entries:
        bits += 1
    return bits


cdef token_t insert_token(RankTables* t, token_t token, uint64_t head,
                          uint64_t i) noexcept nogil:
    """Insert ordinary id ``token`` (head_word of its bytes ``head``, first slot ``i``).
    Returns -1, or the id that already has the same bytes."""
    cdef const uint8_t* s = t.token_blob + t.token_offsets[token]
    cdef Py_ssize_t n = t.token_offsets[token + 1] - t.token_offsets[token]
    cdef TokenSlot* slot
    while True:
        slot = &t.token_slots[i]
        if slot.token < 0:
            slot.head = head
            slot.tail = tail_word(s, n)
            slot.offset = t.token_offsets[token]
            slot.length = <int32_t>n
            slot.token = token
            return -1
        if slot_holds(t, slot, s, n, head):
            return slot.token
        i = (i + 1) & t.token_mask


cdef token_t insert_all_tokens(RankTables* t) noexcept nogil:
    """Insert ids 0 .. n_tokens-1, SPLIT_BATCH at a time (hashed and their slots prefetched
    first). Returns -1, or the first id whose bytes an earlier id already has."""
    cdef uint64_t heads[SPLIT_BATCH]
    cdef uint64_t slots[SPLIT_BATCH]
    cdef Py_ssize_t first = 0, m, count, n
    cdef const uint8_t* s
    while first < t.n_tokens:
        count = min(<Py_ssize_t>SPLIT_BATCH, t.n_tokens - first)
        for m in range(count):
            s = t.token_blob + t.token_offsets[first + m]
            n = t.token_offsets[first + m + 1] - t.token_offsets[first + m]
            heads[m] = head_word(s, n)
            slots[m] = hash_bytes(s, n, heads[m]) & t.token_mask
            prefetch_read(&t.token_slots[slots[m]])
        for m in range(count):
            if insert_token(t, <token_t>(first + m), heads[m], slots[m]) >= 0:
                return <token_t>(first + m)
        first += count
    return -1


cdef bint insert_pair(RankTables* t, uint64_t key, rank_t rank) noexcept nogil:
    """Insert pair_key -> rank into its row unless the pair is there (the first, lowest rank
    wins). True if new. The row has room (build_pair_rows sizes it)."""
    cdef token_t left = <token_t>(key >> 32)
    cdef uint32_t right = <uint32_t>(key & 0xFFFFFFFFULL)
    cdef uint32_t start = t.pair_rows[left]
    cdef uint64_t* slot = pair_slot(t, start, t.pair_rows[left + 1] - start, <token_t>right)
    if slot[0] != EMPTY_PAIR_SLOT:
        return False
    slot[0] = ((<uint64_t>right) << 32) | <uint32_t>rank
    return True


cdef int push_pair(PairEntry** buf, Py_ssize_t* size, Py_ssize_t* cap, uint64_t key,
                   rank_t rank) noexcept nogil:
    """Append (key, rank) to a growable array. -1 when out of memory."""
    if size[0] == cap[0] and grow_buffer(<void**>buf, cap, size[0] + 1, sizeof(PairEntry), 1024) != 0:
        return -1
    buf[0][size[0]].key = key
    buf[0][size[0]].rank = rank
    size[0] += 1
    return 0


cdef int collect_all_splits(const RankTables* t, PairEntry** out,
                            Py_ssize_t* out_size) noexcept nogil:
    """Every (id(T[:k]), id(T[k:])) -> id(T) where both halves are tokens, in the order of T,
    then k. -1 when out of memory.

    The splits are taken SPLIT_BATCH at a time (across token boundaries): both halves of each
    are hashed and their token-table slots prefetched first, then probed, so that the cache
    misses of the batch overlap (the performance notes at the top of this file)."""
    cdef Py_ssize_t cap = 0, token = 0, k = 1, m, count, length = 0
    cdef const uint8_t* s = NULL
    cdef const uint8_t* starts[SPLIT_BATCH]
    cdef Py_ssize_t cuts[SPLIT_BATCH]
    cdef Py_ssize_t lengths[SPLIT_BATCH]
    cdef token_t whole[SPLIT_BATCH]
    cdef uint64_t left_head[SPLIT_BATCH]
    cdef uint64_t left_hash[SPLIT_BATCH]
    cdef uint64_t right_head[SPLIT_BATCH]
    cdef uint64_t right_hash[SPLIT_BATCH]
    cdef token_t left, right
    # A split is looked up only when some token has each half's length: hashing both halves of
    # every split of an n-byte token costs n^2, and a vocabulary with one long token (a crafted
    # 1 MB line) would take minutes to load; with the lengths checked first it has no split to
    # hash, and loading stays linear in the bytes for any vocabulary whose lengths are few.
    cdef uint8_t* has_length = <uint8_t*>calloc(t.max_token_len + 1, 1)
    if has_length == NULL:
        return -1
    for token in range(t.n_tokens):
        has_length[t.token_offsets[token + 1] - t.token_offsets[token]] = 1
    token = 0
    if t.n_tokens > 0:
        s = t.token_blob + t.token_offsets[0]
        length = t.token_offsets[1] - t.token_offsets[0]
    while token < t.n_tokens:
        count = 0
        while count < SPLIT_BATCH and token < t.n_tokens:
            if k >= length:
                token += 1
                k = 1
                if token < t.n_tokens:
                    s = t.token_blob + t.token_offsets[token]
                    length = t.token_offsets[token + 1] - t.token_offsets[token]
                continue
            if not (has_length[k] and has_length[length - k]):
                k += 1
                continue
            starts[count] = s
            cuts[count] = k
            lengths[count] = length
            whole[count] = <token_t>token
            left_head[count] = head_word(s, k)
            left_hash[count] = hash_bytes(s, k, left_head[count]) & t.token_mask
            prefetch_read(&t.token_slots[left_hash[count]])
            right_head[count] = head_word(s + k, length - k)
            right_hash[count] = hash_bytes(s + k, length - k, right_head[count]) & t.token_mask
            prefetch_read(&t.token_slots[right_hash[count]])
            count += 1
            k += 1
        for m in range(count):
            left = probe_token(t, starts[m], cuts[m], left_head[m], left_hash[m])
            if left < 0:
                continue
            right = probe_token(t, starts[m] + cuts[m], lengths[m] - cuts[m], right_head[m],
                                right_hash[m])
            if right < 0:
                continue
            if push_pair(out, out_size, &cap, pair_key(left, right), <rank_t>whole[m]) != 0:
                free(has_length)
                return -1
    free(has_length)
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
    if type(tokens) is not list:
        tokens = list(tokens)
    cdef list as_bytes = <list>tokens
    cdef Py_ssize_t n = PyList_GET_SIZE(as_bytes), i = 0, total = 0, length
    cdef object item
    if n > MAX_IDS:
        raise FormatError(f"{n} tokens is more than the {MAX_IDS} ids an int32 can hold")
    for i in range(n):  # a list of exact bytes (every loader's) is used as it is
        if type(<object>PyList_GET_ITEM(as_bytes, i)) is not bytes:
            as_bytes = list(as_bytes)
            break
    for i in range(i, n):
        item = <object>PyList_GET_ITEM(as_bytes, i)
        if type(item) is not bytes:
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise FormatError(f"token id {i} is {type(item).__name__}, not bytes")
            as_bytes[i] = bytes(item)
    encoder.n_tokens = t.n_tokens = n
    t.token_offsets = <int64_t*>mem_alloc(&encoder.mem, n + 1, sizeof(int64_t))
    if t.token_offsets == NULL:
        raise MemoryError()
    for i in range(n):
        length = PyBytes_GET_SIZE(<object>PyList_GET_ITEM(as_bytes, i))
        if length == 0:
            raise FormatError(f"token id {i} is empty")
        t.token_offsets[i] = total
        total += length
        if length > t.max_token_len:
            t.max_token_len = length
    t.token_offsets[n] = total
    t.token_blob = <uint8_t*>mem_alloc(&encoder.mem, total if total > 0 else 1, 1)
    if t.token_blob == NULL:
        raise MemoryError()
    for i in range(n):
        memcpy(t.token_blob + t.token_offsets[i], PyBytes_AS_STRING(<object>PyList_GET_ITEM(as_bytes, i)),
               t.token_offsets[i + 1] - t.token_offsets[i])

    cdef Py_ssize_t slots = <Py_ssize_t>1 << table_bits(n)
    t.token_mask = <uint64_t>(slots - 1)
    t.token_slots = <TokenSlot*>big_table_alloc(slots * sizeof(TokenSlot), True)  # slots never cross a line
    if t.token_slots == NULL:
        raise MemoryError()
    memset(t.token_slots, 0xFF, slots * sizeof(TokenSlot))  # token -1: empty
    cdef token_t k
    with nogil:
        k = insert_all_tokens(t)
    if k >= 0:
        same = lookup_token(t, t.token_blob + t.token_offsets[k], t.token_offsets[k + 1] - t.token_offsets[k])
        raise FormatError(f"token ids {same} and {k} have the same bytes {as_bytes[k]!r}")
    return 0


cdef Py_ssize_t build_pair_rows(RankEncoder encoder, PairEntry* found,
                                Py_ssize_t n_found, Py_ssize_t n_ranks) except -1:
    """The pair rows (rank_tables.pxd) of found[0:n_found], the first of a repeated pair
    winning: each left token's row holds its pairs at most 2/3 full. Returns how many distinct
    pairs went in. (found is not const: gcc warns that a const pointer to malloc'd memory,
    filled by a callee it cannot see into, may be read uninitialized.)"""
    cdef RankTables* t = &encoder.tables
    cdef Py_ssize_t k, n_unique = 0
    cdef token_t left
    cdef uint64_t total = 0, count
    t.n_ranks = n_ranks
    t.pair_rows = <uint32_t*>mem_calloc(&encoder.mem, t.n_tokens + 1, sizeof(uint32_t))
    if t.pair_rows == NULL:
        raise MemoryError()
    with nogil:
        for k in range(n_found):  # first the count of each row, in the next token's place
            t.pair_rows[(found[k].key >> 32) + 1] += 1
        for left in range(t.n_tokens):  # then each row's start
            count = t.pair_rows[left + 1]
            t.pair_rows[left] = <uint32_t>total
            total += (count + (count >> 1) + 1) if count else 0
            if total > 0xFFFFFFFFULL:
                break
    if total > 0xFFFFFFFFULL:
        raise FormatError(f"{n_found} pairs are more than a pair table of 2^32 slots holds")
    t.pair_rows[t.n_tokens] = <uint32_t>total
    t.pair_slot_count = <Py_ssize_t>total if total else 1  # (an allocation is never empty)
    t.pair_slots = <uint64_t*>big_table_alloc(t.pair_slot_count * sizeof(uint64_t), True)
    if t.pair_slots == NULL:
        raise MemoryError()
    memset(t.pair_slots, 0xFF, t.pair_slot_count * sizeof(uint64_t))  # EMPTY_PAIR_SLOT
    with nogil:
        for k in range(n_found):
            n_unique += insert_pair(t, found[k].key, found[k].rank)
    return n_unique


cdef int build_all_splits(RankEncoder encoder) except -1:
    cdef RankTables* t = &encoder.tables
    cdef PairEntry* found = NULL
    cdef Py_ssize_t n_found = 0
    cdef int rc
    with nogil:
        rc = collect_all_splits(t, &found, &n_found)
    try:
        if rc != 0:
            raise MemoryError()
        build_pair_rows(encoder, found, n_found, t.n_tokens)  # split pairs are unique: A+B fixes the token
    finally:
        free(found)
    encoder.pair_table_size = n_found
    t.ids_follow_ranks = True  # rank-only vocabularies: the rank is the id (no rank_to_id table)
    t.rank_id_offset = 0
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


cdef bint ids_follow_ranks(const token_t* rank_to_id, Py_ssize_t n) noexcept nogil:
    """Whether rank_to_id[r] - r is the same for every r < n (n >= 1)."""
    cdef Py_ssize_t r
    for r in range(1, n):
        if rank_to_id[r] - r != rank_to_id[0]:
            return False
    return True


cdef int build_from_merges(RankEncoder encoder, merges) except -1:
    cdef RankTables* t = &encoder.tables
    cdef const int32_t[:, ::1] pairs = merges
    cdef Py_ssize_t n_merges = pairs.shape[0], k, bad, n_unique = 0
    cdef PairEntry* found = <PairEntry*>malloc((n_merges + 1) * sizeof(PairEntry))
    t.rank_to_id = <token_t*>mem_alloc(&encoder.mem, n_merges + 1, sizeof(token_t))
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
        n_unique = build_pair_rows(encoder, found, n_merges, n_merges)
    finally:
        free(found)
    encoder.pair_table_size = n_unique
    t.ids_follow_ranks = n_merges == 0 or ids_follow_ranks(t.rank_to_id, n_merges)
    t.rank_id_offset = t.rank_to_id[0] if n_merges else 0
    return 0


cdef int build_byte_tables(RankTables* t, MemPool* mem) except -1:
    cdef uint8_t byte
    cdef int b, c
    for b in range(256):
        byte = <uint8_t>b
        t.byte_id[b] = lookup_token(t, &byte, 1)
        if t.byte_id[b] < 0:
            raise FormatError(f"byte {b} (0x{b:02x}) is not a token: every single byte "
                              f"must be a token")
    t.byte_pair_rank = <rank_t*>mem_alloc(mem, 256 * 256, sizeof(rank_t))
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
    encoder.special_ids = <int64_t*>mem_alloc(&encoder.mem, n + 1, sizeof(int64_t))
    encoder.special_offsets = <int64_t*>mem_alloc(&encoder.mem, n + 1, sizeof(int64_t))
    encoder.special_blob = <uint8_t*>mem_alloc(&encoder.mem, sum(len(v) for v in specials.values()) + 1, 1)
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
    * ``lookup_when_exact``: without ``whole_piece_lookup``, turn it on when it changes no
      result, i.e. when BPE turns every token's bytes into that token (checked here, by BPE of
      every token: ~55 ms for Qwen3's 151,643). A token then found whole skips the piece caches
      and BPE; most pieces of most text are tokens.
    * ``special_tokens``: id -> bytes, used by :meth:`decode_bytes` and :meth:`token_bytes`.
    """

    def __cinit__(self, tokens, merges=None, *, bint whole_piece_lookup=True,
                  special_tokens=None, bint lookup_when_exact=False):
        self.whole_piece_lookup = self.tables.whole_piece_lookup = whole_piece_lookup
        self.tables.cache_owner = next_encoder_serial()
        self.tables.cache_salt = thread_cache_salt(self.tables.cache_owner)
        build_tokens(self, tokens)
        if merges is None:
            self._merges = None
            build_all_splits(self)
        else:
            self._merges = check_merges(self, merges)
            build_from_merges(self, self._merges)
        build_byte_tables(&self.tables, &self.mem)
        if build_cut_tables(&self.tables) != 0 or build_char_tables(&self.tables) != 0:
            raise MemoryError()
        build_specials(self, {} if special_tokens is None else special_tokens)
        cdef int exact
        if lookup_when_exact and not whole_piece_lookup and merges is not None:
            with nogil:
                exact = every_token_is_its_own_bpe(&self.tables)
            if exact < 0:
                raise MemoryError()
            if exact:
                self.whole_piece_lookup = self.tables.whole_piece_lookup = True
        # The shared id ints, and this thread's piece cache (4 MiB cleared), are made now, not
        # by the first encode: a user's first call after loading then costs what the next ones
        # do (o200k's 200k ints take a few ms).
        id_ints_cover(self.n_tokens)
        thread_cache_entries()

    def __dealloc__(self):
        mem_free_all(&self.mem)  # the token bytes and offsets, rank_to_id, byte pairs, specials
        if self.tables.token_slots != NULL:
            big_table_free(self.tables.token_slots, (self.tables.token_mask + 1) * sizeof(TokenSlot), True)
        if self.tables.pair_slots != NULL:
            big_table_free(self.tables.pair_slots, self.tables.pair_slot_count * sizeof(uint64_t), True)
        if self.cut_stash != NULL:
            self.tables.inner_pairs = self.cut_stash
        free_cut_tables(&self.tables)
        if self.char_stash != NULL:
            self.tables.char_merges = self.char_stash
        free_char_tables(&self.tables)

    # ------------------------------------------------------------ C API (see encoder.pxd)

    cdef int encode_bytes_into(self, const uint8_t* s, Py_ssize_t n, IdBuffer* out) noexcept nogil:
        return encode_piece(&self.tables, s, n, out, PATH_AUTO)

    cdef int encode_pieces_into(self, const uint8_t* data, const int64_t* ends,
                                Py_ssize_t n_pieces, IdBuffer* out) noexcept nogil:
        cdef const uint8_t* starts[LOOKAHEAD]
        cdef Py_ssize_t lengths[LOOKAHEAD]
        cdef int64_t start = 0
        cdef Py_ssize_t i = 0, k, count, size
        cdef int rc = 0
        cdef ThreadCacheEntry* shared = thread_cache_entries()
        cdef Front front = thread_front(shared, self.tables.cache_owner)
        cdef const Front* ascii_front = &front if front.entries != NULL else NULL
        cdef CutMemo cuts
        if front.entries != NULL:
            cut_memo_start(&cuts, thread_cut_memo(shared), CUT_MEMO_BITS,
                           front.generation & CUT_MEMO_GENERATIONS)
        else:
            cut_memo_start(&cuts, NULL, 0, 0)
        while i < n_pieces and rc == 0:
            count = min(<Py_ssize_t>LOOKAHEAD, n_pieces - i)
            for k in range(count):
                starts[k] = data + start
                lengths[k] = ends[i + k] - start
                start = ends[i + k]
            # A block mostly of non-ASCII bytes goes through the front table; text mostly of
            # ASCII (English, code, the Latin alphabets) straight to the token table, where its
            # short pieces mostly are (docs/history.md, "Front table").
            size = start - (starts[0] - data)
            if (front.entries != NULL and 2 * high_bytes(starts[0], size) > size
                    and front_pays(&front)):
                rc = encode_block_front(&self.tables, starts, lengths, count, out, shared, &front,
                                        &cuts)
            else:
                rc = encode_block(&self.tables, starts, lengths, count, out, shared, ascii_front,
                                  &cuts)
            i += count
        return rc

    # ------------------------------------------------------------ Python API

    def all_splits(self):
        """Every ``(id(T[:k]), id(T[k:]))`` where both halves are tokens, as an int64 array of
        shape (n, 2), ordered by the id of ``T``, then by the pair: the merge list
        :func:`cybpe.formats.merges.all_splits_merges` builds in Python, from the C tables
        (Llama 3's 280,147 pairs in about 0.05 s instead of 1.7 s)."""
        cdef PairEntry* found = NULL
        cdef Py_ssize_t n_found = 0, i
        cdef int rc
        cdef int64_t[:, ::1] view
        with nogil:
            rc = collect_all_splits(&self.tables, &found, &n_found)
        try:
            if rc != 0:
                raise MemoryError()
            triples = np.empty((n_found, 3), dtype=np.int64)
            view = triples
            for i in range(n_found):
                view[i, 0] = found[i].rank   # the id of T (collect_all_splits stores it as the rank)
                view[i, 1] = <int64_t>(found[i].key >> 32)
                view[i, 2] = <int64_t>(found[i].key & 0xFFFFFFFF)
        finally:
            free(found)
        order = np.lexsort((triples[:, 2], triples[:, 1], triples[:, 0]))
        return np.ascontiguousarray(triples[order, 1:])

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
            raise InvalidTokenError(f"token id {describe(token_id)} is not an integer") from None
        if 0 <= i < self.n_tokens:
            return PyBytes_FromStringAndSize(
                <char*>self.tables.token_blob + self.tables.token_offsets[i],
                self.tables.token_offsets[i + 1] - self.tables.token_offsets[i])
        special = self._special_tokens.get(i)
        if special is None:
            raise InvalidTokenError(f"token id {i} is not in the vocabulary")
        return special

    cdef list ids_to_list(self, const uint32_t* ids, Py_ssize_t n):
        """ids[0:n] as a list of ints, from one shared int object per ordinary id.

        ``ndarray.tolist()`` makes a new int per element: 28% of a list-returning encode of
        English, with the GIL held, which also capped two threads at ~1.6x one. Taking a
        shared int uncounted reads nothing but the id: the ints sit at a fixed stride and never
        die (id_ints.pxd; the measurement: docs/history.md, "Shared id ints").
        """
        cdef Py_ssize_t i
        cdef Py_ssize_t covered = id_ints_cover(self.n_tokens)
        cdef char* base = id_int_base()
        cdef uint32_t value
        cdef PyObject* item
        result = PyList_New(n)
        for i in range(n):
            value = ids[i]
            if value < covered:
                item = <PyObject*>(base + <Py_ssize_t>value * ID_INT_STRIDE)
                id_int_take(item)
            else:  # a special token's id (or a build without shared ints: id_ints.pxd)
                item = new_int(value)
            list_set_item(result, i, item)
        return result

    def ids_list(self, const uint32_t[::1] ids):
        """The ids of a uint32 array as a list of ints (see ids_to_list)."""
        if ids.shape[0] == 0:
            return []
        return self.ids_to_list(&ids[0], ids.shape[0])

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

    def _merge_pieces(self, data, ends, int path=PATH_AUTO, Py_ssize_t repeat=1):
        """BPE every piece data[ends[k-1]:ends[k]] (bytes; ends ascending) repeat times with the
        given merge path and no piece cache or cutting, returning how many ids the last round
        gave: the merge paths' own cost, for benchmarks (bench/test_bench_merge_paths.py)."""
        cdef bytes b = _as_bytes(data)
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(b)
        cdef int64_t[::1] e = np.ascontiguousarray(ends, dtype=np.int64)
        cdef Py_ssize_t k, r, start, total = 0
        cdef IdBuffer buf
        cdef int rc = 0
        if not PATH_AUTO <= path <= PATH_RUNS:  # (PATH_CHARS can give up: see _merge_chars)
            raise ValueError(f"no merge path {path} here")
        if e.shape[0] and (e[e.shape[0] - 1] > PyBytes_GET_SIZE(b) or e[0] < 0):
            raise ValueError("ends must lie within data")
        for k in range(1, e.shape[0]):
            if e[k] < e[k - 1]:
                raise ValueError("ends must be ascending")
        buf.data = NULL
        buf.size = buf.capacity = 0
        try:
            with nogil:
                for r in range(repeat):
                    buf.size = 0
                    start = 0
                    for k in range(e.shape[0]):
                        if e[k] > start:
                            if id_buffer_reserve(&buf, e[k] - start) != 0:
                                rc = -1
                                break
                            rc = merge_piece(&self.tables, s + start, e[k] - start, &buf, path)
                            if rc != 0:
                                break
                        start = e[k]
                    if rc != 0:
                        break
                total = buf.size
            if rc != 0:
                raise MemoryError()
            return total
        finally:
            free(buf.data)

    def _set_cutting(self, bint enabled):
        """Turn cutting pieces at their cut points (cut_points.pxd) off, or back on, so that
        tests and benchmarks can compare whole texts both ways. Not safe while another thread
        encodes with this encoder."""
        if enabled and self.cut_stash != NULL:
            self.tables.inner_pairs = self.cut_stash
            self.cut_stash = NULL
        elif not enabled and self.tables.inner_pairs != NULL:
            self.cut_stash = self.tables.inner_pairs
            self.tables.inner_pairs = NULL

    def _set_char_merges(self, bint enabled):
        """Turn the character path (char_merges.pxd) off, or back on, so that tests and
        benchmarks can compare whole texts both ways. Not safe while another thread encodes
        with this encoder."""
        if enabled and self.char_stash != NULL:
            self.tables.char_merges = self.char_stash
            self.char_stash = NULL
        elif not enabled and self.tables.char_merges != NULL:
            self.char_stash = self.tables.char_merges
            self.tables.char_merges = NULL

    @property
    def char_merges(self):
        """Whether CJK, kana and Hangul (three-byte characters from U+3000) are merged a
        character at a time (char_merges.pxd)."""
        return self.tables.char_merges != NULL

    def _merge_chars(self, piece):
        """BPE of a piece (bytes; no whole-piece lookup) by the character path, or None where
        that path does not take it (char_merges.pxd)."""
        cdef bytes b = _as_bytes(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(b), i
        cdef IdBuffer buf
        cdef int rc
        if n == 0:
            return None
        buf.data = NULL
        buf.size = buf.capacity = 0
        try:
            if id_buffer_reserve(&buf, n) != 0:
                raise MemoryError()
            rc = merge_piece(&self.tables, <const uint8_t*>PyBytes_AS_STRING(b), n, &buf, PATH_CHARS)
            if rc < 0:
                raise MemoryError()
            return None if rc != 0 else [buf.data[i] for i in range(buf.size)]
        finally:
            free(buf.data)

    def _cut_points(self, piece):
        """The places encode_cut would cut this piece (bytes) at (cut_points.is_cut_point).
        Empty when cutting is off or the piece is shorter than CUT_MIN_LEN."""
        cdef bytes b = _as_bytes(piece)
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(b)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(b), p
        found = []
        if self.tables.inner_pairs == NULL or n < CUT_MIN_LEN:
            return found
        for p in range(1, n):
            if is_cut_point(&self.tables, s, n, p):
                found.append(p)
        return found

    @property
    def cuts(self):
        """Whether long pieces are cut at their cut points before BPE."""
        return self.tables.inner_pairs != NULL

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
        cdef ThreadCacheEntry* shared = thread_cache_entries()
        cdef CutMemo cuts
        cut_memo_start(&cuts, NULL, 0, 0)
        try:
            for i in range(n_pieces):
                piece = (<list>pieces)[i]
                if not isinstance(piece, str):
                    raise EncodingError(f"piece {i} is {type(piece).__name__}, not str")
                # The list keeps the str (and its cached UTF-8) alive; we hold the GIL.
                starts[k] = <const uint8_t*>PyUnicode_AsUTF8AndSize(piece, &lengths[k])
                k += 1
                if k == LOOKAHEAD or i == n_pieces - 1:
                    if encode_block(&self.tables, starts, lengths, k, &buf, shared, NULL,
                                    &cuts) != 0:
                        raise MemoryError()
                    k = 0
            return ids_array(&buf)
        except UnicodeEncodeError as exc:
            raise EncodingError(f"piece {i} cannot be encoded as UTF-8: {exc}") from exc
        finally:
            free(buf.data)

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
            return ids_array(&buf)
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


def _piece_hash(piece):
    """The 64-bit hash the token table and the piece caches give these bytes (for tests that
    need two pieces sharing a cache slot)."""
    cdef bytes b = _as_bytes(piece)
    cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(b)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
    return hash_bytes(s, n, head_word(s, n))


def _thread_cache_layout():
    """(set mask, ways, keyed bytes, keyed ids, spelled ids, spelled bytes) of the per-thread
    piece cache (thread_cache.pxd): a piece's set is ``_piece_hash(piece) & mask``; a piece of
    at most ``keyed bytes`` bytes that BPE turns into at most ``keyed ids`` ids is kept with its
    bytes, any other piece of at most ``spelled ids`` ids and ``spelled bytes`` bytes without
    them (for tests that crowd one set)."""
    return (thread_cache_mask(), THREAD_CACHE_WAYS, THREAD_CACHE_MAX_BYTES, THREAD_CACHE_MAX_IDS,
            THREAD_CACHE_MAX_SPELLED_IDS, THREAD_CACHE_MAX_SPELLED_BYTES)


def _thread_cache_set_tags(piece):
    """The four tags (newest first, 0 where empty) of the calling thread's cache set that
    ``piece`` falls in (for the test that two encoders' entries for one piece carry other tags)."""
    cdef ThreadCacheEntry* entries = thread_cache_entries()
    cdef uint64_t first
    if entries == NULL:
        raise MemoryError()
    first = (<uint64_t>_piece_hash(piece) & thread_cache_mask()) * THREAD_CACHE_WAYS
    return [thread_cache_tags(entries)[first + w] for w in range(THREAD_CACHE_WAYS)]


def _high_bytes(data):
    """How many bytes of ``data`` are >= 0x80, as the encoder counts them to choose a block's
    path (for its test)."""
    cdef bytes b = _as_bytes(data)
    return high_bytes(<const uint8_t*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


def _front_layout():
    """(bits, most bytes, most ids) of the per-thread front table (thread_cache.pxd): a piece's
    entry is ``_piece_hash(piece) >> (64 - bits)`` (for tests that make pieces share one)."""
    return FRONT_BITS, FRONT_MAX_BYTES, FRONT_MAX_IDS


def _set_front_generation(generation):
    """Set the calling thread's front-table generation (for the test of its wrap-around)."""
    thread_front_set_generation(thread_cache_entries(), <uint32_t>generation)


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


cdef object ids_array(IdBuffer* buf):
    """The ids in ``buf`` as a new uint32 numpy array (the GIL held; buf unchanged)."""
    result = np.empty(buf.size, dtype=np.uint32)
    cdef uint32_t[::1] view = result
    if buf.size:
        memcpy(&view[0], buf.data, buf.size * sizeof(uint32_t))
    return result
