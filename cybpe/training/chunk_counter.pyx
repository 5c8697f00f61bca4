# Compiled chunk counting for training: a C hash table of byte slices -> int64 counts, filled
# by running a compiled scanner over UTF-8 text with the GIL released.
#
# Layout (one ChunkTable):
#   arena    all distinct chunk bytes, back to back, in first-seen order
#   offsets  offsets[e] .. offsets[e + 1] is chunk e in the arena (size + 1 entries)
#   counts   counts[e]
#   slots    open addressing, linear probing, power-of-two size; a slot is
#            (32-bit hash tag << 32) | (entry + 1), 0 = empty
#
# Design (the measurements behind each point: docs/history.md, "Chunk counting")
# -----------------------------------------------------------------------------------------
# * A piece costs one scanner step, one hash of its bytes and (almost always) one probe: no
#   Python str and no Counter entry per piece.
# * Entries are not stored in the slots: a slot is 8 bytes holding the hash tag and the entry
#   number, so a probe compares tags without touching the arena, growing the table rewrites
#   only the slots (the tag is also the position), and the memory per distinct chunk is its
#   bytes + 16 (offset, count) + ~12 (slots at load <= 2/3), where a dict of bytes -> int costs ~150.
# * Lengths come from consecutive offsets, so no length field: chunks are appended in order.
# * Pieces come from the scanner's scan_all (BaseScanner, scanner_api.pxd: any compiled scanner,
#   third-party ones included, one vtable call per text) into an end buffer reused across the
#   texts of a batch; it costs an 8-byte end per piece. Scanning is about a third of the time;
#   hashing and probing are the rest.
# * The hash reads 8-byte words (two overlapping 4-byte loads for 4..7-byte tails) and mixes
#   them with a 64x64->128 multiply; its top 32 bits are the tag. Seeded per process, so the
#   table's probe lengths cannot be planned by whoever writes the text; no result depends on it
#   (entries stay in first-seen order, and sorted output sorts by bytes).
# * Sorting by bytes (for ChunkCounts.items) happens in C: an LSD radix sort of (8-byte
#   big-endian prefix, entry) pairs, then a merge sort inside runs of equal prefixes
#   (`python tests/training/test_chunk_counter.py 50` prints its time against list.sort).
# * A table read from a file or a pickle (read_arrays, _rebuild) is checked (offsets in order,
#   counts > 0, the total) but gets no hash index until a call needs one (_indexed: updates,
#   merges, lookups, equality, items, copy): building the index is most of a load, its first
#   probes stalling on cache and TLB misses, and training reads only the arrays (sorted_arrays,
#   which then refuses a repeated chunk from the sort). When the index is built, REINDEX_AHEAD
#   home slots are prefetched.
# * Texts shorter than RELEASE_GIL_BYTES are counted without releasing the GIL (releasing
#   has a fixed cost; threshold chosen, not tuned).
#
# Thread safety
# -------------
# Every method may be called from several threads. The table is guarded by one lock: a method
# that reads or writes the C arrays holds it (waiting for it with the GIL released, since the
# holder may need the GIL to finish). A writer (add_*, merge) first claims the `writing` flag
# (an atomic compare-and-swap, which needs no GIL): a second writer arriving while one is
# counting gets ConcurrentUseError instead of silently serializing; readers wait for the writer
# and see the table before or after the whole call, never a table being reallocated (reading
# while a writer grew the arrays was a use-after-free). `__len__`, `total` and `nbytes` read
# one integer each and take no lock. A thread that re-enters the counter it is holding (a
# callback) gets ConcurrentUseError rather than a deadlock. The lazy hash index of a loaded table
# is built under the table lock by whichever call needs it first, so racing readers agree.

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.pythread cimport (NOWAIT_LOCK, WAIT_LOCK, PyThread_acquire_lock,
                               PyThread_allocate_lock, PyThread_free_lock, PyThread_get_thread_ident,
                               PyThread_release_lock, PyThread_type_lock)
from cpython.unicode cimport PyUnicode_AsUTF8String, PyUnicode_DATA, PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t, INT64_MAX
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset
from cpython.buffer cimport PyBuffer_FillInfo

import numpy as np
import operator
import os
import sys

from cybpe._c.portable cimport atomic_cas_int, atomic_store_int, mul128   # (its C first: cybpe_mum and the prefetch below use it)
from cybpe._c.utf8_texts cimport Utf8Texts
from cybpe.pretokenize.scanner_api cimport BaseScanner, SCAN_GAVE_UP

from cybpe.pretokenize import scanner as _builtin  # the built-in scanners, by name or kind
from cybpe.errors import (ConcurrentUseError, FormatError, InvalidParameterError, ParameterTypeError,
                          TooLargeError, describe)


cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)


cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    static inline uint64_t cybpe_mum(uint64_t a, uint64_t b) {
        uint64_t hi, lo = cybpe_mul128(a, b, &hi);
        return lo ^ hi;
    }
    /* Hash of p[0:n]; only used inside one process (never stored). */
    static inline uint64_t cybpe_chunk_hash(const uint8_t* p, size_t n, uint64_t seed) {
        uint64_t h = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ULL);
        uint64_t w, v;
        uint32_t a, b;
        while (n > 8) {
            memcpy(&w, p, 8);
            h = cybpe_mum(w ^ 0xA0761D6478BD642FULL, h ^ 0xE7037ED1A0B428DBULL);
            p += 8; n -= 8;
        }
        if (n >= 4) {
            memcpy(&a, p, 4); memcpy(&b, p + n - 4, 4);
            w = ((uint64_t)a << 32) | b;
        } else if (n > 0) {
            w = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
        } else {
            w = 0;
        }
        v = cybpe_mum(w ^ 0x8EBC6AF09C88C6E3ULL, h ^ 0x589965CC75374CC3ULL);
        return cybpe_mum(v, 0x1D8E4E27C47D124FULL ^ h);
    }
    """
    uint64_t cybpe_chunk_hash(const uint8_t* p, size_t n, uint64_t seed) nogil


cdef extern from *:
    """
    #define cybpe_prefetch_write(p) CYBPE_PREFETCH((p), 1, 1)
    """
    void cybpe_prefetch_write(const void* p) nogil


# Error codes of the nogil functions (0 = success).
cdef enum:
    ERR_MEMORY = -1
    ERR_OVERFLOW = -2
    ERR_TOO_MANY = -3
    ERR_GAVE_UP = -4        # the scanner declined the text: split it with scanner.split()
    ERR_CORRUPT = -5
    ERR_DUPLICATE = -6

cdef Py_ssize_t RELEASE_GIL_BYTES = 1 << 14
cdef enum:
    REINDEX_AHEAD = 16      # table_reindex hashes this many entries ahead of the one it inserts
cdef uint64_t HASH_SEED = <uint64_t> int.from_bytes(os.urandom(8), "little")


cdef struct ChunkTable:
    uint8_t* arena
    int64_t arena_used
    int64_t arena_capacity
    int64_t* offsets        # size + 1 used
    int64_t* counts
    int64_t size            # distinct chunks
    int64_t capacity        # entries allocated in offsets (minus one) and counts
    uint64_t* slots
    uint64_t mask           # slot count - 1
    int64_t total           # sum of the counts (checked against overflow)


cdef int table_init(ChunkTable* t) noexcept nogil:
    memset(t, 0, sizeof(ChunkTable))
    t.slots = <uint64_t*> malloc(64 * sizeof(uint64_t))
    t.offsets = <int64_t*> malloc(sizeof(int64_t))
    if t.slots == NULL or t.offsets == NULL:
        return ERR_MEMORY
    memset(t.slots, 0, 64 * sizeof(uint64_t))
    t.mask = 63
    t.offsets[0] = 0
    return 0


cdef void table_free(ChunkTable* t) noexcept nogil:
    free(t.arena)
    free(t.offsets)
    free(t.counts)
    free(t.slots)
    memset(t, 0, sizeof(ChunkTable))


cdef int table_grow_slots(ChunkTable* t) noexcept nogil:
    """Double the slot array; every tag is also its home position, so entries are not read."""
    cdef uint64_t new_mask = t.mask * 2 + 1
    cdef uint64_t* fresh = <uint64_t*> malloc((new_mask + 1) * sizeof(uint64_t))
    cdef uint64_t i, j, slot
    if fresh == NULL:
        return ERR_MEMORY
    memset(fresh, 0, (new_mask + 1) * sizeof(uint64_t))
    for i in range(t.mask + 1):
        slot = t.slots[i]
        if slot:
            j = (slot >> 32) & new_mask
            while fresh[j]:
                j = (j + 1) & new_mask
            fresh[j] = slot
    free(t.slots)
    t.slots = fresh
    t.mask = new_mask
    return 0


cdef int table_append(ChunkTable* t, const uint8_t* p, int64_t n, int64_t count) noexcept nogil:
    """Append a new entry (bytes and count); the caller puts it in a slot."""
    cdef int64_t cap
    cdef uint8_t* arena
    cdef int64_t* offsets
    cdef int64_t* counts
    if t.size + 1 >= 0xFFFFFFFFU:
        return ERR_TOO_MANY
    if t.arena_used + n > t.arena_capacity:
        cap = t.arena_capacity * 2 if t.arena_capacity >= 4096 else 4096
        while cap < t.arena_used + n:
            cap *= 2
        arena = <uint8_t*> realloc(t.arena, cap)
        if arena == NULL:
            return ERR_MEMORY
        t.arena, t.arena_capacity = arena, cap
    if t.size == t.capacity:
        cap = t.capacity * 2 if t.capacity >= 256 else 256
        offsets = <int64_t*> realloc(t.offsets, (cap + 1) * sizeof(int64_t))
        if offsets == NULL:
            return ERR_MEMORY
        t.offsets = offsets
        counts = <int64_t*> realloc(t.counts, cap * sizeof(int64_t))
        if counts == NULL:
            return ERR_MEMORY
        t.counts, t.capacity = counts, cap
    if n:
        memcpy(t.arena + t.arena_used, p, n)
    t.arena_used += n
    t.counts[t.size] = count
    t.size += 1
    t.offsets[t.size] = t.arena_used
    return 0


cdef inline int table_add(ChunkTable* t, const uint8_t* p, int64_t n, int64_t count) noexcept nogil:
    """counts[p[0:n]] += count (count >= 0)."""
    cdef int64_t entry
    return table_add_entry(t, p, n, count, &entry)


cdef inline int table_add_entry(ChunkTable* t, const uint8_t* p, int64_t n, int64_t count,
                                int64_t* entry) noexcept nogil:
    """table_add that also says which entry holds the chunk: ``entry[0]`` is its index, or
    ``-1 - index`` when this call appended it."""
    cdef uint64_t tag = cybpe_chunk_hash(p, <size_t> n, HASH_SEED) >> 32
    cdef uint64_t i = tag & t.mask
    cdef uint64_t slot
    cdef int64_t e, start
    cdef int rc
    if count > INT64_MAX - t.total:
        return ERR_OVERFLOW
    while True:
        slot = t.slots[i]
        if slot == 0:
            break
        if (slot >> 32) == tag:
            e = <int64_t> (slot & 0xFFFFFFFFU) - 1
            start = t.offsets[e]
            if t.offsets[e + 1] - start == n and memcmp(t.arena + start, p, n) == 0:
                t.counts[e] += count  # cannot overflow: counts[e] <= total
                t.total += count
                entry[0] = e
                return 0
        i = (i + 1) & t.mask
    rc = table_append(t, p, n, count)
    if rc != 0:
        return rc
    entry[0] = -t.size  # -1 - (t.size - 1)
    t.slots[i] = (tag << 32) | <uint64_t> t.size
    t.total += count
    if <uint64_t> t.size * 3 > (t.mask + 1) * 2:
        return table_grow_slots(t)
    return 0


cdef int table_count_text(ChunkTable* t, BaseScanner scanner, const uint8_t* s, Py_ssize_t n,
                          int64_t** ends, Py_ssize_t* capacity) noexcept nogil:
    """Count every piece of the UTF-8 text s[0:n] (n >= 1) as `scanner` cuts it; the piece
    ends go through the caller's buffer *ends (freed by the caller)."""
    cdef Py_ssize_t n_pieces = scanner.scan_all(s, n, ends, capacity)
    if n_pieces == SCAN_GAVE_UP:
        return ERR_GAVE_UP
    if n_pieces < 0:
        return ERR_MEMORY
    return table_count_ends(t, s, ends[0], n_pieces)


cdef int table_count_ends(ChunkTable* t, const uint8_t* s, const int64_t* ends,
                          Py_ssize_t n_pieces) noexcept nogil:
    """Count the pieces s[ends[i-1]:ends[i]] (the first starts at 0)."""
    cdef Py_ssize_t i
    cdef int64_t start = 0
    cdef int rc
    for i in range(n_pieces):
        rc = table_add(t, s + start, ends[i] - start, 1)
        if rc != 0:
            return rc
        start = ends[i]
    return 0


cdef int table_merge(ChunkTable* t, const ChunkTable* other) noexcept nogil:
    """Add every count of ``other`` to ``t`` (indexed). ``other`` may be a loaded table without
    an index: then a chunk it holds twice is ERR_DUPLICATE (``t`` may be partly updated), found
    by marking each of ``t``'s entries the first time one of ``other``'s chunks lands on it.

    Why the marks: giving ``other`` a hash index first, only to find duplicates, costs an insert
    per chunk into a slot array far larger than the caches (cybpe.dask's last addition would
    index both received tables); the marks cost one bit per entry of the sum, read where the
    merge is already looking."""
    cdef int64_t e, start, entry, old_size = t.size, old_total = t.total
    cdef int rc = 0
    cdef uint64_t* seen = NULL
    if other.slots == NULL:
        seen = <uint64_t*> calloc(<size_t> ((t.size + other.size) // 64 + 1), sizeof(uint64_t))
        if seen == NULL:
            return ERR_MEMORY
    for e in range(other.size):
        start = other.offsets[e]
        rc = table_add_entry(t, other.arena + start, other.offsets[e + 1] - start, other.counts[e],
                             &entry)
        if rc != 0 or seen == NULL:
            if rc != 0:
                break
            continue
        if entry < 0:
            entry = -1 - entry
        elif seen[entry >> 6] & (1ULL << (entry & 63)):
            rc = ERR_DUPLICATE
            break
        seen[entry >> 6] |= 1ULL << (entry & 63)
    free(seen)
    if rc != 0:  # leave t as it was: a failed addition adds nothing
        table_unmerge(t, other, e + 1 if rc == ERR_DUPLICATE else e, old_size, old_total)
    return rc


cdef void table_unmerge(ChunkTable* t, const ChunkTable* other, int64_t n_added, int64_t old_size,
                        int64_t old_total) noexcept nogil:
    """Undo table_merge's first ``n_added`` additions of ``other``'s chunks to ``t``, which held
    ``old_size`` entries summing to ``old_total`` before (the error path only: it re-finds each
    chunk, then rebuilds the index without the appended entries)."""
    cdef int64_t k, start, entry
    for k in range(n_added):
        start = other.offsets[k]
        entry = -1
        if (table_add_entry(t, other.arena + start, other.offsets[k + 1] - start, 0, &entry) == 0
                and 0 <= entry < old_size):
            t.counts[entry] -= other.counts[k]
    t.size = old_size
    t.arena_used = t.offsets[old_size]
    t.total = old_total
    if table_index(t) != 0:  # no memory for a new index: lookups rebuild it (ChunkCounter._indexed)
        table_drop_index(t)


cdef int table_check(ChunkTable* t) noexcept nogil:
    """Check the arrays a file or a pickle filled (offsets that run 0..arena_used in order,
    counts > 0, a total within 64 bits) and set the total; sequential reads only."""
    cdef int64_t e, total = 0
    t.total = 0
    if t.offsets[0] != 0 or t.offsets[t.size] != t.arena_used:
        return ERR_CORRUPT
    for e in range(t.size):
        if t.offsets[e + 1] < t.offsets[e] or t.counts[e] <= 0:
            return ERR_CORRUPT
        if t.counts[e] > INT64_MAX - total:
            return ERR_OVERFLOW
        total += t.counts[e]
    t.total = total
    return 0


cdef int table_reindex(ChunkTable* t) noexcept nogil:
    """table_check, then table_index."""
    cdef int rc = table_check(t)
    return rc if rc != 0 else table_index(t)


cdef int table_index(ChunkTable* t) noexcept nogil:
    """(Re)build the slots of entries 0..size-1 (checked arrays); ERR_DUPLICATE when a chunk
    appears twice. Until this runs on a loaded table, t.slots is NULL (see ChunkCounter._indexed).

    The slot array is far larger than the caches (10 M chunks: 128 MB), so an insert's first
    probe is a cache and TLB miss; the loop hashes REINDEX_AHEAD entries ahead of the one it
    places and prefetches their home slots, so the misses overlap instead of queueing."""
    cdef uint64_t n_slots = 64, tag, i, slot
    cdef uint64_t ahead_tags[REINDEX_AHEAD]
    cdef int64_t e, g, start, n, f
    while n_slots * 2 < <uint64_t> t.size * 3 + 2:
        n_slots *= 2
    free(t.slots)
    t.slots = <uint64_t*> calloc(n_slots, sizeof(uint64_t))
    t.mask = n_slots - 1
    if t.slots == NULL:
        t.mask = 0
        return ERR_MEMORY
    for g in range(t.size + REINDEX_AHEAD):
        e = g - REINDEX_AHEAD  # place entry e (hashed REINDEX_AHEAD steps ago), then fetch g
        if e >= 0:
            tag = ahead_tags[e % REINDEX_AHEAD]
            start = t.offsets[e]
            n = t.offsets[e + 1] - start
            i = tag & t.mask
            while True:
                slot = t.slots[i]
                if slot == 0:
                    break
                if (slot >> 32) == tag:
                    f = <int64_t> (slot & 0xFFFFFFFFU) - 1
                    if (t.offsets[f + 1] - t.offsets[f] == n
                            and memcmp(t.arena + t.offsets[f], t.arena + start, n) == 0):
                        table_drop_index(t)  # never leave a half-built index behind
                        return ERR_DUPLICATE
                i = (i + 1) & t.mask
            t.slots[i] = (tag << 32) | <uint64_t> (e + 1)
        if g < t.size:  # hash entry g and start fetching its home slot
            start = t.offsets[g]
            tag = cybpe_chunk_hash(t.arena + start, <size_t> (t.offsets[g + 1] - start), HASH_SEED) >> 32
            ahead_tags[g % REINDEX_AHEAD] = tag
            cybpe_prefetch_write(t.slots + (tag & t.mask))
    return 0


cdef void table_drop_index(ChunkTable* t) noexcept nogil:
    """Free the slots: the table is then unindexed (t.slots NULL) until table_index runs."""
    free(t.slots)
    t.slots = NULL
    t.mask = 0


cdef int table_reserve(ChunkTable* t, int64_t n, int64_t arena_bytes) noexcept nogil:
    """Make an empty table room for exactly n entries and arena_bytes bytes (then fill them)."""
    cdef uint8_t* arena = <uint8_t*> malloc(arena_bytes if arena_bytes > 0 else 1)
    cdef int64_t* offsets = <int64_t*> malloc((n + 1) * sizeof(int64_t))
    cdef int64_t* counts = <int64_t*> malloc((n if n > 0 else 1) * sizeof(int64_t))
    if arena == NULL or offsets == NULL or counts == NULL:
        free(arena); free(offsets); free(counts)
        return ERR_MEMORY
    free(t.arena); free(t.offsets); free(t.counts)
    t.arena, t.offsets, t.counts = arena, offsets, counts
    t.arena_capacity = t.arena_used = arena_bytes
    t.capacity = t.size = n
    t.offsets[0] = 0
    return 0


cdef inline int64_t saturating_add(int64_t a, int64_t b) noexcept nogil:
    return INT64_MAX if b > INT64_MAX - a else a + b


cdef int table_prune(ChunkTable* t, int64_t min_count, int64_t* removed) noexcept nogil:
    """Drop the entries counted fewer than min_count times, keeping the others in order, and
    give the memory back. removed[0] += entries dropped, removed[1] += their counts,
    removed[2] += their pair positions (count times length minus one, per entry)."""
    cdef int64_t e, start, n, c, kept = 0, used = 0
    cdef uint8_t* arena
    cdef int64_t* offsets
    cdef int64_t* counts
    for e in range(t.size):
        start = t.offsets[e]
        n = t.offsets[e + 1] - start
        c = t.counts[e]
        if c < min_count:
            removed[0] += 1
            removed[1] = saturating_add(removed[1], c)
            if n > 1:
                removed[2] = saturating_add(removed[2], c * (n - 1) if c <= INT64_MAX // (n - 1) else INT64_MAX)
            continue
        if used != start:
            memmove(t.arena + used, t.arena + start, n)
        t.offsets[kept] = used  # kept <= e: offsets[e + 1] is still unread-over
        t.counts[kept] = c
        used += n
        kept += 1
    t.offsets[kept] = used
    t.size = kept
    t.arena_used = used
    # Shrink the arrays (glibc returns large blocks to the system on shrink).
    arena = <uint8_t*> realloc(t.arena, used if used > 4096 else 4096)
    if arena != NULL:
        t.arena, t.arena_capacity = arena, (used if used > 4096 else 4096)
    offsets = <int64_t*> realloc(t.offsets, ((kept if kept > 256 else 256) + 1) * sizeof(int64_t))
    if offsets != NULL:
        t.offsets = offsets
    counts = <int64_t*> realloc(t.counts, (kept if kept > 256 else 256) * sizeof(int64_t))
    if counts != NULL:
        t.counts = counts
    # A failed shrink leaves the old, larger array: both still hold at least `kept` entries.
    t.capacity = (kept if kept > 256 else 256) if (offsets != NULL and counts != NULL) else kept
    return table_reindex(t)


# -- sorting by bytes -------------------------------------------------------------------------

cdef struct SortKey:
    uint64_t prefix     # the first 8 bytes, big-endian, zero-padded
    int64_t entry


cdef inline int key_cmp(const ChunkTable* t, const SortKey* a, const SortKey* b) noexcept nogil:
    cdef int64_t la, lb, m
    cdef int c
    if a.prefix != b.prefix:
        return -1 if a.prefix < b.prefix else 1
    la = t.offsets[a.entry + 1] - t.offsets[a.entry]
    lb = t.offsets[b.entry + 1] - t.offsets[b.entry]
    m = la if la < lb else lb
    if m > 8:
        c = memcmp(t.arena + t.offsets[a.entry] + 8, t.arena + t.offsets[b.entry] + 8, m - 8)
        if c != 0:
            return c
    return -1 if la < lb else (1 if la > lb else 0)


cdef void merge_sort(const ChunkTable* t, SortKey* a, SortKey* b, int64_t n) noexcept nogil:
    """Sort a[0:n] by key_cmp (b is scratch space of n keys). Bottom-up and stable."""
    cdef SortKey* src = a
    cdef SortKey* dst = b
    cdef SortKey* tmp
    cdef int64_t width = 1, lo, mid, hi, i, j, out
    while width < n:
        lo = 0
        while lo < n:
            mid = lo + width if lo + width < n else n
            hi = lo + 2 * width if lo + 2 * width < n else n
            i, j, out = lo, mid, lo
            while i < mid and j < hi:
                if key_cmp(t, &src[j], &src[i]) < 0:
                    dst[out] = src[j]; j += 1
                else:
                    dst[out] = src[i]; i += 1
                out += 1
            while i < mid:
                dst[out] = src[i]; i += 1; out += 1
            while j < hi:
                dst[out] = src[j]; j += 1; out += 1
            lo = hi
        tmp = src; src = dst; dst = tmp
        width *= 2
    if src != a:
        memcpy(a, src, n * sizeof(SortKey))


cdef int64_t* table_sorted_entries(const ChunkTable* t) noexcept nogil:
    """Entry numbers in bytes order (malloc'ed; NULL when out of memory).

    LSD radix sort on the 8-byte prefixes, then a merge sort inside each run of equal prefixes.
    """
    cdef int64_t n = t.size
    cdef SortKey* a = <SortKey*> malloc((n + 1) * sizeof(SortKey))
    cdef SortKey* b = <SortKey*> malloc((n + 1) * sizeof(SortKey))
    cdef SortKey* tmp
    cdef int64_t* order = <int64_t*> malloc((n + 1) * sizeof(int64_t))
    cdef int64_t position[256]
    cdef int64_t e, k, start, length, i, j, total, c
    cdef int shift
    cdef bint single_bucket
    cdef uint64_t prefix
    if a == NULL or b == NULL or order == NULL:
        free(a); free(b); free(order)
        return NULL
    for e in range(n):
        start = t.offsets[e]
        length = t.offsets[e + 1] - start
        prefix = 0
        for k in range(8):
            prefix <<= 8
            if k < length:
                prefix |= t.arena[start + k]
        a[e].prefix = prefix
        a[e].entry = e
    for shift in range(0, 64, 8):
        memset(position, 0, sizeof(position))
        for i in range(n):
            position[(a[i].prefix >> shift) & 255] += 1
        single_bucket = False
        for k in range(256):
            if position[k] == n:
                single_bucket = True
        if single_bucket:
            continue  # this byte is the same everywhere
        total = 0
        for k in range(256):
            c = position[k]
            position[k] = total
            total += c
        for i in range(n):
            k = (a[i].prefix >> shift) & 255
            b[position[k]] = a[i]
            position[k] += 1
        tmp = a; a = b; b = tmp
    i = 0
    while i < n:
        j = i + 1
        while j < n and a[j].prefix == a[i].prefix:
            j += 1
        if j - i > 1:
            merge_sort(t, a + i, b + i, j - i)
        i = j
    for e in range(n):
        order[e] = a[e].entry
    free(a)
    free(b)
    return order


cdef bint sorted_has_duplicate(const ChunkTable* t, const int64_t* order) noexcept nogil:
    """Whether two neighbours of the bytes-sorted entry list ``order`` hold the same chunk."""
    cdef int64_t k, a, b, n
    for k in range(1, t.size):
        a, b = order[k - 1], order[k]
        n = t.offsets[a + 1] - t.offsets[a]
        if n == t.offsets[b + 1] - t.offsets[b] and memcmp(t.arena + t.offsets[a], t.arena + t.offsets[b], n) == 0:
            return True
    return False


# -- Python API -------------------------------------------------------------------------------

cdef BaseScanner scanner_of(object kind):
    """The compiled scanner `kind` names: a BaseScanner itself, a built-in scanner name or kind
    number, or None."""
    if kind is None or isinstance(kind, BaseScanner):
        return kind
    names = _builtin.SCANNER_NAMES
    if isinstance(kind, str):
        if kind not in names:
            raise InvalidParameterError(f"no compiled scanner named {kind!r}; available: {', '.join(names)}")
        return _builtin.Scanner(kind)
    if isinstance(kind, int) and 0 <= kind < len(names):
        return _builtin.Scanner(names[kind])
    raise InvalidParameterError(f"not a scanner: {kind!r}")


cdef raise_for(int rc):
    if rc == ERR_MEMORY:
        raise MemoryError("ChunkCounter: out of memory")
    if rc == ERR_OVERFLOW:
        raise TooLargeError("ChunkCounter: the total count does not fit in 64 bits")
    if rc == ERR_TOO_MANY:
        raise TooLargeError("ChunkCounter: more than 2**32 - 2 distinct chunks")
    if rc == ERR_CORRUPT:
        raise FormatError("corrupt ChunkCounter arrays (offsets out of order or a count <= 0)")
    if rc == ERR_DUPLICATE:
        raise FormatError("corrupt ChunkCounter arrays (a chunk appears twice)")


@cython.final
cdef class _Block:
    """A buffer over memory owned by a ChunkCounter, alive only inside one ChunkCounter call
    (the counter is marked busy meanwhile, so the memory cannot move)."""
    cdef object owner
    cdef char* data
    cdef Py_ssize_t size
    cdef bint writable

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, self.data, self.size, not self.writable, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


cdef memoryview block(object owner, void* data, Py_ssize_t size, bint writable):
    cdef _Block b = _Block.__new__(_Block)
    b.owner, b.data, b.size, b.writable = owner, <char*> data, size, writable
    return memoryview(b)


cdef bytes chunk_key(object chunk):
    """The stored bytes of a chunk given as str (UTF-8, read from the code points) or bytes."""
    if isinstance(chunk, str):
        try:
            return PyUnicode_AsUTF8String(chunk)
        except UnicodeEncodeError:
            raise InvalidParameterError(
                f"chunk {describe(chunk)} has a lone surrogate and is not UTF-8 text") from None
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return bytes(chunk)
    raise ParameterTypeError(f"a chunk must be str or bytes, not {type(chunk).__name__}")


cdef int64_t count_value(object count, object chunk) except? -1:
    """A count as int64: an integer (not bool) in 0..2**63-1."""
    if isinstance(count, bool) or not hasattr(type(count), "__index__"):
        raise ParameterTypeError(
            f"the count of chunk {describe(chunk)} must be an integer, not {type(count).__name__}")
    value = operator.index(count)
    if value < 0:
        raise InvalidParameterError(f"the count of chunk {describe(chunk)} must be >= 0, not {value}")
    if value > INT64_MAX:
        raise TooLargeError(f"the count of chunk {describe(chunk)} must be at most 2**63-1, not {value}")
    return value


@cython.final
cdef class ChunkCounter:
    """Distinct chunks (bytes) -> int64 counts, filled by a compiled scanner.

    ``ChunkCounter("cl100k")`` (or any compiled scanner: ``ChunkCounter(scanner)``) counts the pieces of texts given to :meth:`add_text` /
    :meth:`add_utf8`; ``ChunkCounter()`` (no scanner) only stores counts added with
    :meth:`add_counts` / :meth:`merge`. Entries stay in first-seen order.

    Thread safety: every method may be called from several threads (see the module notes):
    readers wait for a writer to finish; a second concurrent writer gets
    :class:`~cybpe.errors.ConcurrentUseError`. A counter read from a file or a pickle builds its
    hash index on the first call that needs it, under the same lock.
    """
    cdef ChunkTable table
    cdef readonly BaseScanner scanner
    cdef int writing                 # 1: a writer has claimed the counter (atomic_cas_int)
    cdef PyThread_type_lock lock     # guards the table's arrays
    cdef unsigned long owner         # thread holding `lock` (0: none)

    def __cinit__(self, kind=None):
        self.scanner = scanner_of(kind)
        self.lock = PyThread_allocate_lock()
        if self.lock == NULL or table_init(&self.table) != 0:
            table_free(&self.table)
            raise MemoryError("ChunkCounter: out of memory")

    def __dealloc__(self):
        table_free(&self.table)
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    # -- locking ---------------------------------------------------------------------------
    cdef int _acquire(self) except -1:
        """Hold the table lock (waiting with the GIL released)."""
        cdef unsigned long me = PyThread_get_thread_ident()
        if self.owner == me:
            raise ConcurrentUseError("ChunkCounter used again from inside one of its own calls")
        if not PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self.lock, WAIT_LOCK)
        self.owner = me
        return 0

    cdef void _release(self) noexcept:
        self.owner = 0
        PyThread_release_lock(self.lock)

    cdef int _claim(self) except -1:
        """Claim the writer flag (ConcurrentUseError when another call is writing)."""
        if not atomic_cas_int(&self.writing, 0, 1):
            raise ConcurrentUseError(
                "this chunk counter is being filled by another thread; count in separate "
                "ChunkCounts (empty_like()) and add them up")
        return 0

    cdef int _begin_write(self) except -1:
        self._claim()
        try:
            self._acquire()
        except BaseException:
            atomic_store_int(&self.writing, 0)
            raise
        return 0

    cdef void _end_write(self) noexcept:
        self._release()
        atomic_store_int(&self.writing, 0)

    cdef int _indexed(self) except -1:
        """Build the hash index of a table read from a file or a pickle, which arrives without
        one (the caller holds the lock). Only lookups and updates need it: training reads the
        arrays (sorted_arrays), so a loaded table it trains from is never indexed."""
        cdef int rc
        if self.table.slots != NULL:
            return 0
        with nogil:
            rc = table_index(&self.table)
        raise_for(rc)
        return 0

    @property
    def kind(self) -> int:
        """The built-in scanner's kind number (Scanner.kind); -1 without a scanner or for any
        other compiled scanner."""
        return self.scanner.kind if isinstance(self.scanner, _builtin.Scanner) else -1

    cdef BaseScanner _scanner_for(self, object kind):
        cdef BaseScanner scanner = self.scanner if kind is None else scanner_of(kind)
        if scanner is None:
            raise InvalidParameterError("this ChunkCounter has no scanner; pass one (kind=...) to count text")
        return scanner

    cdef int _add_split(self, BaseScanner scanner, str text) except? -9:
        """Count the pieces of ``scanner.split(text)`` (after the scanner gave up on it)."""
        cdef bytes piece
        cdef int rc
        for text_piece in scanner.split(text):
            piece = PyUnicode_AsUTF8String(text_piece)
            rc = table_add(&self.table, <const uint8_t*> PyBytes_AS_STRING(piece),
                           PyBytes_GET_SIZE(piece), 1)
            if rc != 0:
                return rc
        return 0

    # -- filling -----------------------------------------------------------------------------
    cdef _count(self, const uint8_t* s, Py_ssize_t n, object kind, object text):
        cdef int rc
        cdef BaseScanner scanner = self._scanner_for(kind)
        cdef int64_t* ends = NULL
        cdef Py_ssize_t capacity = 0
        self._begin_write()
        try:
            self._indexed()
            if n >= RELEASE_GIL_BYTES:
                with nogil:
                    rc = table_count_text(&self.table, scanner, s, n, &ends, &capacity)
            else:
                rc = table_count_text(&self.table, scanner, s, n, &ends, &capacity)
            if rc == ERR_GAVE_UP:
                if text is None:
                    text = (<const char*> s)[:n].decode("utf-8", "surrogatepass")
                rc = self._add_split(scanner, text)
        finally:
            self._end_write()
            free(ends)
        raise_for(rc)

    def add_text(self, str text not None, kind=None) -> None:
        """Count the pieces of ``text`` (UnicodeEncodeError on lone surrogates, before counting).

        ``kind`` (a scanner name, kind number or compiled scanner) overrides the counter's own.
        The text's own code points are read (a ``str`` subclass's ``encode`` is never called).
        """
        cdef bytes encoded
        if PyUnicode_IS_COMPACT_ASCII(text):  # its data is its UTF-8
            self._count(<const uint8_t*> PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), kind, text)
        else:
            encoded = PyUnicode_AsUTF8String(text)
            self._count(<const uint8_t*> PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded), kind, text)

    def add_texts(self, list texts not None, kind=None) -> None:
        """Count every text of a list in one GIL-free pass (pieces never cross texts).

        All texts are encoded first, so a lone surrogate raises UnicodeEncodeError before
        anything is counted. Per-text calls hold the GIL for short texts (documents of a few KB);
        one pass over the whole batch lets threads count batches side by side. A text the
        scanner gives up on (SCAN_GAVE_UP) is cut by its ``split`` afterwards, with the GIL."""
        cdef Py_ssize_t j, capacity = 0
        cdef int rc = 0
        cdef BaseScanner scanner = self._scanner_for(kind)
        if not texts:
            return
        cdef Utf8Texts batch = Utf8Texts(texts)
        cdef char* gave_up = <char*> calloc(batch.count + 1, 1)
        cdef int64_t* ends = NULL
        try:
            if gave_up == NULL:
                raise MemoryError("ChunkCounter: out of memory")
            self._begin_write()
            try:
                self._indexed()
                with nogil:
                    for j in range(batch.count):
                        if batch.lengths[j] == 0:
                            continue
                        rc = table_count_text(&self.table, scanner, batch.starts[j],
                                              batch.lengths[j], &ends, &capacity)
                        if rc == ERR_GAVE_UP:
                            gave_up[j] = 1
                            rc = 0
                        elif rc != 0:
                            break
                for j in range(batch.count):
                    if gave_up[j] and rc == 0:
                        rc = self._add_split(scanner, texts[j])
            finally:
                self._end_write()
            raise_for(rc)
        finally:
            free(gave_up)
            free(ends)

    def add_texts_matched(self, list texts not None, BaseScanner matcher not None) -> None:
        """add_texts with pieces cut by ``matcher`` (kept for callers of the compiled-pattern
        path; ``add_texts(texts, matcher)`` is the same)."""
        self.add_texts(texts, matcher)

    def add_utf8(self, data, kind=None) -> None:
        """Count the pieces of UTF-8 ``data`` (bytes-like; invalid bytes never fault)."""
        cdef const uint8_t[::1] buf
        try:
            buf = data
        except (TypeError, ValueError, BufferError) as exc:
            raise ParameterTypeError(
                f"add_utf8() takes a contiguous bytes-like object, not {type(data).__name__}"
            ) from None
        if buf.shape[0]:
            self._count(&buf[0], buf.shape[0], kind, None)

    def add_text_sliced(self, str text not None, kind, Py_ssize_t slice_pieces, after_slice):
        """Count the pieces of ``text`` as :meth:`add_text` does, ``slice_pieces`` at a time,
        calling ``after_slice()`` between slices with the counter free (it may prune it).

        The pieces of the whole text are found first, so they are exactly ``add_text``'s; an
        ASCII text is read in place (no UTF-8 copy), leaving 8 bytes per piece for their ends.
        A memory cap checked in ``after_slice`` then bounds the table inside one long text."""
        cdef BaseScanner scanner = self._scanner_for(kind)
        cdef const uint8_t* s
        cdef Py_ssize_t n, count, lo = 0, hi, capacity = 0, i
        cdef int64_t* ends = NULL
        cdef int64_t start
        cdef int rc = 0
        cdef bytes encoded = None
        if slice_pieces < 1:
            raise InvalidParameterError("slice_pieces must be >= 1")
        if PyUnicode_IS_COMPACT_ASCII(text):  # its data is its UTF-8
            s, n = <const uint8_t*> PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)
        else:
            encoded = PyUnicode_AsUTF8String(text)  # strict: nothing is counted on a surrogate
            s, n = <const uint8_t*> PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded)
        if n == 0:
            return
        with nogil:
            count = scanner.scan_all(s, n, &ends, &capacity)
        try:
            if count == SCAN_GAVE_UP:
                self.add_text(text, kind)  # cut by scanner.split, in one go
                after_slice()
                return
            if count < 0:
                raise MemoryError("ChunkCounter: out of memory for the piece ends")
            while lo < count:
                hi = min(lo + slice_pieces, count)
                self._begin_write()
                try:
                    self._indexed()
                    with nogil:
                        start = ends[lo - 1] if lo > 0 else 0
                        for i in range(lo, hi):
                            rc = table_add(&self.table, s + start, ends[i] - start, 1)
                            if rc != 0:
                                break
                            start = ends[i]
                finally:
                    self._end_write()
                raise_for(rc)
                after_slice()
                lo = hi
        finally:
            free(ends)

    def add_counts(self, counts) -> None:
        """Add ``{chunk: count}`` or ``(chunk, count)`` pairs: a chunk is bytes, or str (stored
        as UTF-8); a count is an integer >= 0. Everything is checked before anything is added
        (:class:`~cybpe.errors.InvalidParameterError` otherwise, counts unchanged)."""
        cdef list keys = [], values = []
        cdef bytes key
        cdef int64_t n
        cdef int rc = 0
        cdef Py_ssize_t j
        if isinstance(counts, (str, bytes, bytearray)):
            raise ParameterTypeError(
                f"add_counts() takes a mapping or (chunk, count) pairs, not {type(counts).__name__}")
        try:
            pairs = counts.items() if hasattr(counts, "items") else counts
            for pair in pairs:
                chunk, count = pair
                n = count_value(count, chunk)
                if n:
                    keys.append(chunk_key(chunk))
                    values.append(n)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, InvalidParameterError):
                raise
            raise ParameterTypeError(
                f"add_counts() takes a mapping or (chunk, count) pairs: {exc}") from None
        self._begin_write()
        try:
            self._indexed()
            for j in range(len(keys)):
                key = keys[j]
                n = values[j]
                rc = table_add(&self.table, <const uint8_t*> PyBytes_AS_STRING(key),
                               PyBytes_GET_SIZE(key), n)
                if rc != 0:
                    break
        finally:
            self._end_write()
        raise_for(rc)

    def merge(self, ChunkCounter other not None) -> None:
        """Add every count of ``other`` to this counter (``other`` is unchanged)."""
        cdef int rc
        if other is self:
            other = other.copy()
        self._claim()
        try:
            # Both locks, in address order, so that a.merge(b) and b.merge(a) cannot deadlock.
            if <size_t> <void*> self < <size_t> <void*> other:
                self._acquire()
                try:
                    other._acquire()
                except BaseException:
                    self._release()
                    raise
            else:
                other._acquire()
                try:
                    self._acquire()
                except BaseException:
                    other._release()
                    raise
            try:
                self._indexed()  # other may stay unindexed: table_merge refuses its duplicates
                with nogil:
                    rc = table_merge(&self.table, &other.table)
            finally:
                other._release()
                self._release()
        finally:
            atomic_store_int(&self.writing, 0)
        raise_for(rc)

    # -- reading -----------------------------------------------------------------------------
    def copy(self) -> ChunkCounter:
        cdef ChunkCounter new = ChunkCounter(self.scanner)
        cdef int rc
        self._acquire()
        try:
            # a duplicate in a loaded table is refused (by table_merge), never summed into one
            rc = table_merge(&new.table, &self.table)
        finally:
            self._release()
        raise_for(rc)
        return new

    def __len__(self) -> int:
        return self.table.size

    @property
    def total(self) -> int:
        """The sum of all counts."""
        return self.table.total

    @property
    def nbytes(self) -> int:
        """Bytes of memory the table holds (arena, offsets, counts, slots)."""
        return (self.table.arena_capacity + (2 * self.table.capacity + 1) * 8
                + ((self.table.mask + 1) * 8 if self.table.slots != NULL else 0))

    @property
    def growth_bytes(self) -> int:
        """Bytes the table's next growth can add for a moment: the doubled slot array is filled
        beside the old one (the arrays grow by realloc, which moves large blocks' pages)."""
        return 2 * (self.table.mask + 1) * 8 if self.table.slots != NULL else 0

    cdef bytes _chunk(self, int64_t e):
        cdef int64_t start = self.table.offsets[e]
        return PyBytes_FromStringAndSize(<char*> self.table.arena + start, self.table.offsets[e + 1] - start)

    def items(self, bint sort=False) -> list:
        """``[(chunk bytes, count)]`` in first-seen order, or sorted by bytes when ``sort``."""
        cdef int64_t k, e
        cdef int64_t* order = NULL
        cdef list out = []
        self._acquire()
        try:
            self._indexed()  # refuses a loaded table holding a chunk twice
            if not sort:
                for e in range(self.table.size):
                    out.append((self._chunk(e), self.table.counts[e]))
                return out
            with nogil:
                order = table_sorted_entries(&self.table)
            if order == NULL:
                raise MemoryError("ChunkCounter: out of memory")
            for k in range(self.table.size):
                e = order[k]
                out.append((self._chunk(e), self.table.counts[e]))
        finally:
            free(order)
            self._release()
        return out

    def sorted_arrays(self):
        """``(chunks, counts)`` sorted by chunk bytes: a list of bytes and an int64 array.

        What training needs, without a Python tuple per chunk (50 MB of text: 0.47 s of
        items() + zip(*) down to the list of bytes alone)."""
        cdef int64_t k, e
        cdef int64_t* order = NULL
        cdef list chunks = []
        cdef int64_t[::1] view
        cdef bint duplicate
        self._acquire()
        try:
            counts = np.empty(self.table.size, dtype=np.int64)
            view = counts
            with nogil:
                order = table_sorted_entries(&self.table)
                duplicate = (order != NULL and self.table.slots == NULL
                             and sorted_has_duplicate(&self.table, order))
            if order == NULL and self.table.size:
                raise MemoryError("ChunkCounter: out of memory")
            if duplicate:  # an unindexed (loaded) table was never checked for repeats
                raise_for(ERR_DUPLICATE)
            for k in range(self.table.size):
                e = order[k]
                chunks.append(self._chunk(e))
                view[k] = self.table.counts[e]
        finally:
            free(order)
            self._release()
        return chunks, counts

    cdef int64_t _get(self, bytes key) noexcept:
        """The count of ``key``, or -1 (the caller holds the lock)."""
        cdef const uint8_t* p = <const uint8_t*> PyBytes_AS_STRING(key)
        cdef int64_t n = PyBytes_GET_SIZE(key)
        cdef uint64_t tag = cybpe_chunk_hash(p, <size_t> n, HASH_SEED) >> 32
        cdef uint64_t i = tag & self.table.mask
        cdef uint64_t slot
        cdef int64_t e, start
        while True:
            slot = self.table.slots[i]
            if slot == 0:
                return -1
            if (slot >> 32) == tag:
                e = <int64_t> (slot & 0xFFFFFFFFU) - 1
                start = self.table.offsets[e]
                if self.table.offsets[e + 1] - start == n and memcmp(self.table.arena + start, p, n) == 0:
                    return self.table.counts[e]
            i = (i + 1) & self.table.mask

    def get(self, chunk, default=0):
        """The count of ``chunk`` (bytes, or str as UTF-8), or ``default``."""
        cdef bytes key = chunk_key(chunk)
        cdef int64_t found
        self._acquire()
        try:
            self._indexed()
            found = self._get(key)
        finally:
            self._release()
        return default if found < 0 else found

    def __eq__(self, other):
        """Same chunks with the same counts (order and scanner kind do not matter)."""
        cdef ChunkCounter o
        cdef ChunkCounter first, second
        cdef int64_t e
        if not isinstance(other, ChunkCounter):
            return NotImplemented
        o = <ChunkCounter> other
        if o is self:
            return True
        first, second = (self, o) if <size_t> <void*> self < <size_t> <void*> o else (o, self)
        first._acquire()
        try:
            second._acquire()
            try:
                if o.table.size != self.table.size or o.table.total != self.table.total:
                    return False
                self._indexed()  # (a duplicate in either is refused, not compared)
                o._indexed()
                for e in range(self.table.size):
                    if o._get(self._chunk(e)) != self.table.counts[e]:
                        return False
                return True
            finally:
                second._release()
        finally:
            first._release()

    def prune(self, int64_t min_count) -> tuple:
        """Drop every chunk counted fewer than ``min_count`` times (the others keep their order
        and counts) and give the memory back; returns ``(chunks dropped, occurrences dropped,
        pair positions dropped)``: the last is the sum over the dropped chunks of count times
        (bytes - 1), the most any byte pair's count can have lost."""
        cdef int64_t removed[3]
        cdef int rc
        removed[0] = 0
        removed[1] = 0
        removed[2] = 0
        self._begin_write()
        try:
            with nogil:
                rc = table_prune(&self.table, min_count, removed)
        finally:
            self._end_write()
        raise_for(rc)
        return removed[0], removed[1], removed[2]

    def kth_largest_count(self, int64_t k) -> int:
        """The k-th largest count (1-based; 0 when the table has fewer than k entries).

        Why a histogram: the memory cap asks this at every prune, and a copy of the counts with
        a numpy partition would take 16 bytes per entry on top of a table at its cap. Counts
        below 65,536 go to a 512 KiB histogram; only when the k-th is at least that are the
        larger counts copied and partitioned."""
        cdef int64_t hist_size = 65536, e, c, seen = 0, big = 0
        cdef int64_t* hist
        if k < 1:
            raise InvalidParameterError(f"k must be >= 1, not {k}")
        self._acquire()
        try:
            if k > self.table.size:
                return 0
            hist = <int64_t*> calloc(hist_size, sizeof(int64_t))
            if hist == NULL:
                raise MemoryError()
            try:
                with nogil:
                    for e in range(self.table.size):
                        c = self.table.counts[e]
                        if c < hist_size:
                            hist[c] += 1
                        else:
                            big += 1
                if big < k:
                    seen = big
                    c = hist_size - 1
                    while c > 0:
                        seen += hist[c]
                        if seen >= k:
                            return c
                        c -= 1
                    return 0
            finally:
                free(hist)
            large = np.empty(big, dtype=np.int64)
            j = 0
            for e in range(self.table.size):
                if self.table.counts[e] >= hist_size:
                    large[j] = self.table.counts[e]
                    j += 1
            return int(np.partition(large, big - k)[big - k])
        finally:
            self._release()

    def count_array(self):
        """The counts in entry order, as a new int64 numpy array."""
        cdef int64_t[::1] view
        self._acquire()
        try:
            out = np.empty(self.table.size, dtype=np.int64)
            view = out
            if self.table.size:
                memcpy(&view[0], self.table.counts, self.table.size * sizeof(int64_t))
        finally:
            self._release()
        return out

    @property
    def arena_bytes(self) -> int:
        """Bytes of all distinct chunks together."""
        return self.table.arena_used

    def write_arrays(self, write) -> None:
        """Call ``write(buffer)`` three times, with the offsets (int64, ``len + 1`` of them),
        the counts (int64) and the chunk bytes, in native byte order, without copying them.
        The buffers are valid only during the call; the counter cannot change meanwhile."""
        cdef int64_t n
        self._begin_write()  # no writer may move the arrays while write() reads them
        try:
            n = self.table.size
            write(block(self, self.table.offsets, (n + 1) * 8, False))
            write(block(self, self.table.counts, n * 8, False))
            write(block(self, self.table.arena, self.table.arena_used, False))
        finally:
            self._end_write()

    def with_arrays(self, fn):
        """``fn(arena, offsets, counts)`` with read-only views of the table's own arrays
        (uint8 chunk bytes; int64 offsets, ``len + 1`` of them; int64 counts), without copying
        them, and its result. The views are valid only during the call; the counter cannot
        change meanwhile (a writer gets ConcurrentUseError). FormatError if a table read from
        a file or pickle holds a chunk twice."""
        cdef int64_t n
        cdef int rc = 0
        self._begin_write()  # no writer may move the arrays while fn reads them
        try:
            if self.table.slots == NULL:
                # a loaded table was never checked for repeats: index it once and drop the
                # index again (training needs none; 10 M chunks: 128 MB, freed before fn runs)
                with nogil:
                    rc = table_index(&self.table)
                    table_drop_index(&self.table)
                raise_for(rc)
            n = self.table.size
            return fn(block(self, self.table.arena, self.table.arena_used, False),
                      block(self, self.table.offsets, (n + 1) * 8, False).cast("q"),
                      block(self, self.table.counts, n * 8, False).cast("q"))
        finally:
            self._end_write()

    def __reduce_ex__(self, protocol):
        """Pickles as three flat arrays (a snapshot); with protocol 5 they are out-of-band
        PickleBuffers, which Dask and multiprocessing send as frames without another copy."""
        cdef int64_t n
        self._acquire()
        try:
            n = self.table.size
            arena = PyBytes_FromStringAndSize(<char*> self.table.arena, self.table.arena_used)
            offsets = PyBytes_FromStringAndSize(<char*> self.table.offsets, (n + 1) * 8)
            counts = PyBytes_FromStringAndSize(<char*> self.table.counts, n * 8)
        finally:
            self._release()
        if protocol >= 5:
            import pickle
            arena, offsets, counts = pickle.PickleBuffer(arena), pickle.PickleBuffer(offsets), pickle.PickleBuffer(counts)
        return (_rebuild, (self.scanner, arena, offsets, counts, sys.byteorder))

    def __reduce__(self):
        return self.__reduce_ex__(4)


cdef void swap_int64(int64_t* a, int64_t n) noexcept nogil:
    cdef int64_t i
    cdef uint64_t v
    for i in range(n):
        v = <uint64_t> a[i]
        v = ((v & 0x00000000FFFFFFFFULL) << 32) | ((v >> 32) & 0x00000000FFFFFFFFULL)
        v = ((v & 0x0000FFFF0000FFFFULL) << 16) | ((v >> 16) & 0x0000FFFF0000FFFFULL)
        v = ((v & 0x00FF00FF00FF00FFULL) << 8) | ((v >> 8) & 0x00FF00FF00FF00FFULL)
        a[i] = <int64_t> v


def read_arrays(int64_t n, int64_t arena_bytes, readinto, bint swap=False) -> ChunkCounter:
    """A counter of ``n`` chunks whose arrays ``readinto(buffer)`` fills, in the order
    :meth:`ChunkCounter.write_arrays` writes them (``swap``: they are in the other byte order).
    Every buffer must be filled completely; the result is checked like :func:`_rebuild`."""
    cdef ChunkCounter new = ChunkCounter(None)
    cdef int rc
    if n < 0 or arena_bytes < 0:
        raise ValueError("corrupt ChunkCounter arrays (negative sizes)")
    raise_for(table_reserve(&new.table, n, arena_bytes))
    new._begin_write()
    try:
        readinto(block(new, new.table.offsets, (n + 1) * 8, True))
        readinto(block(new, new.table.counts, n * 8, True))
        readinto(block(new, new.table.arena, arena_bytes, True))
        with nogil:
            if swap:
                swap_int64(new.table.offsets, n + 1)
                swap_int64(new.table.counts, n)
            rc = table_check(&new.table)
            table_drop_index(&new.table)  # built on first need (ChunkCounter._indexed)
    finally:
        new._end_write()
    raise_for(rc)
    return new


def _rebuild(scanner, arena, offsets, counts, byteorder) -> ChunkCounter:
    """Inverse of ChunkCounter.__reduce_ex__ (checks the arrays before trusting them; corrupt
    state is a :class:`~cybpe.errors.FormatError`)."""
    try:
        return _rebuild_checked(scanner, arena, offsets, counts, byteorder)
    except (TypeError, ValueError, OverflowError, BufferError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"corrupt ChunkCounter state ({exc})") from None


cdef ChunkCounter _rebuild_checked(scanner, arena, offsets, counts, str byteorder):
    cdef const uint8_t[::1] a = arena
    cdef const uint8_t[::1] o = offsets
    cdef const uint8_t[::1] c = counts
    cdef ChunkCounter new = ChunkCounter(None)
    cdef int64_t n = c.shape[0] // 8
    cdef int rc
    cdef bint swap = byteorder != sys.byteorder
    if byteorder not in ("little", "big"):
        raise FormatError(f"corrupt ChunkCounter state (byte order {byteorder!r})")
    if c.shape[0] % 8 or o.shape[0] != (n + 1) * 8:
        raise ValueError("corrupt ChunkCounter state")
    raise_for(table_reserve(&new.table, n, a.shape[0]))
    if a.shape[0]:
        memcpy(new.table.arena, &a[0], a.shape[0])
    memcpy(new.table.offsets, &o[0], o.shape[0])
    if n:
        memcpy(new.table.counts, &c[0], c.shape[0])
    with nogil:
        if swap:
            swap_int64(new.table.offsets, n + 1)
            swap_int64(new.table.counts, n)
        rc = table_check(&new.table)
        table_drop_index(&new.table)  # built on first need (ChunkCounter._indexed)
    raise_for(rc)
    try:  # a scanner, or (older pickles) a built-in kind number; -1 = none
        new.scanner = scanner_of(None if scanner == -1 else scanner)
    except ValueError:
        new.scanner = None
    return new
