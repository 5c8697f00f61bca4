"""Replaying a merge list on training chunks, cut at their seams (for resuming a trainer).

A seam of a byte string is a place between two bytes ``x`` and ``y`` such that no token holds
``x`` right before ``y``. No merge can make a token across a seam, so the merges apply to the
two sides independently: the ids of a chunk are the ids of its seam-free parts, one after the
other. :func:`encode_at_seams` cuts every chunk at its seams, encodes each distinct part once
with a rank encoder and copies the ids of the repeats. The result equals encoding each whole
chunk with that encoder (``tests/training/test_replay.py`` checks both on real and random text).

Design
------
SuperBPE's stage 2 (``train(..., superword_from=t)``) resumes from stage 1's merges on chunks
that run from one number to the next: long chunks, whose parts between seams are short words
that repeat. So each distinct part is encoded once, ``BATCH`` parts are hashed and their slots
prefetched at a time, and the chunk starts are written as the ids are. What is left is the BPE
of the distinct parts, the table's cache misses and the copies of repeated parts' ids. The
measurements against whole-chunk encoding: docs/history.md, "SuperBPE replay".

Thread safety: the functions hold no state; the encoder is only read.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp, memcpy

from cybpe._c.cpu cimport FIBONACCI, prefetch_read
from cybpe._c.types cimport IdBuffer, id_buffer_push, id_buffer_reserve
from cybpe.encode.encoder cimport RankEncoder, ids_array

import numpy as np

from cybpe.errors import InvalidParameterError


cdef enum:
    BATCH = 32          # parts hashed, and their slots prefetched, before any is looked up


cdef struct Part:
    uint64_t hash
    uint64_t head       # the first min(length, 8) bytes, zero-padded
    int64_t start       # the part's first byte in data
    int64_t first_id    # where its ids start in the output
    int32_t length      # 0: a free slot
    int32_t n_ids


cdef struct PartTable:
    Part* slots
    uint64_t mask
    int64_t used


cdef inline uint64_t head_of(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    cdef uint64_t w = 0
    memcpy(&w, s, n if n < 8 else 8)
    return w


cdef inline uint64_t hash_part(const uint8_t* s, Py_ssize_t n, uint64_t head) noexcept nogil:
    """A 64-bit hash of s[:n] (``head`` = head_of(s, n)): 8-byte words folded by multiplication,
    then MurmurHash3's final mix, so that the low bits that index the table depend on every byte."""
    cdef uint64_t h = (<uint64_t>n * FIBONACCI) ^ head
    cdef uint64_t w
    cdef Py_ssize_t i = 8
    h *= 0x9E3779B97F4A7C15ULL
    while i < n:
        w = 0
        memcpy(&w, s + i, n - i if n - i < 8 else 8)
        h = ((h ^ (h >> 29)) ^ w) * 0x9E3779B97F4A7C15ULL
        i += 8
    h ^= h >> 33
    h *= 0xFF51AFD7ED558CCDULL
    h ^= h >> 33
    h *= 0xC4CEB9FE1A85EC53ULL
    h ^= h >> 33
    return h


cdef int table_grow(PartTable* t) noexcept nogil:
    """Double the slots (from 4096) and reinsert. -1 when out of memory."""
    cdef uint64_t cap = (t.mask + 1) * 2 if t.slots != NULL else 4096
    cdef Part* fresh = <Part*>calloc(cap, sizeof(Part))
    cdef uint64_t i, j
    if fresh == NULL:
        return -1
    if t.slots != NULL:
        for i in range(t.mask + 1):
            if t.slots[i].length:
                j = t.slots[i].hash & (cap - 1)
                while fresh[j].length:
                    j = (j + 1) & (cap - 1)
                fresh[j] = t.slots[i]
        free(t.slots)
    t.slots = fresh
    t.mask = cap - 1
    return 0


cdef struct Batch:
    int64_t start[BATCH]
    int32_t length[BATCH]
    uint64_t head[BATCH]
    uint64_t hash[BATCH]
    int64_t chunk_done[BATCH]   # the chunk this part ends, or -1
    int count


cdef int flush(RankEncoder encoder, const uint8_t* data, Batch* batch, PartTable* table,
               IdBuffer* out, int64_t* id_starts) noexcept nogil:
    """Append the ids of the batch's parts; id_starts[c + 1] = out.size after chunk c. -1 when
    out of memory."""
    cdef int k
    cdef int64_t n, first
    cdef uint64_t i
    cdef Part* slot
    if 2 * (table.used + batch.count) > <int64_t>(table.mask + 1) and table_grow(table) != 0:
        return -1
    for k in range(batch.count):
        if batch.length[k] > 1:
            batch.head[k] = head_of(data + batch.start[k], batch.length[k])
            batch.hash[k] = hash_part(data + batch.start[k], batch.length[k], batch.head[k])
            prefetch_read(&table.slots[batch.hash[k] & table.mask])
    for k in range(batch.count):
        n = batch.length[k]
        if n == 1:   # a byte is its own id (the encoder's tokens start with the 256 bytes)
            if id_buffer_push(out, data[batch.start[k]]) != 0:
                return -1
        else:
            i = batch.hash[k] & table.mask
            while True:
                slot = &table.slots[i]
                if not slot.length:
                    break
                if (slot.hash == batch.hash[k] and slot.length == n and slot.head == batch.head[k]
                        and (n <= 8 or memcmp(data + slot.start, data + batch.start[k], n) == 0)):
                    break
                i = (i + 1) & table.mask
            if slot.length:
                if id_buffer_reserve(out, slot.n_ids) != 0:
                    return -1
                memcpy(out.data + out.size, out.data + slot.first_id, slot.n_ids * sizeof(uint32_t))
                out.size += slot.n_ids
            else:
                first = out.size
                if encoder.encode_bytes_into(data + batch.start[k], n, out) != 0:
                    return -1
                slot.hash = batch.hash[k]
                slot.head = batch.head[k]
                slot.start = batch.start[k]
                slot.first_id = first
                slot.length = <int32_t>n
                slot.n_ids = <int32_t>(out.size - first)
                table.used += 1
        if batch.chunk_done[k] >= 0:
            id_starts[batch.chunk_done[k] + 1] = out.size
    batch.count = 0
    return 0


cdef inline int add_part(RankEncoder encoder, const uint8_t* data, Batch* batch,
                         PartTable* table, IdBuffer* out, int64_t* id_starts, int64_t start,
                         int64_t n, int64_t chunk_done) noexcept nogil:
    batch.start[batch.count] = start
    batch.length[batch.count] = <int32_t>n
    batch.chunk_done[batch.count] = chunk_done
    batch.count += 1
    if batch.count == BATCH:
        return flush(encoder, data, batch, table, out, id_starts)
    return 0


def encode_at_seams(RankEncoder encoder, data, ends, joined):
    """``(ids, starts)``: the uint32 ids of the chunks ``data[ends[i - 1]:ends[i]]`` (``ends[-1]
    == len(data)``, no chunk empty), each encoded by ``encoder`` part by part between its seams,
    and the int64 ``starts`` (one more than chunks): chunk ``c``'s ids are
    ``ids[starts[c]:starts[c + 1]]``.

    ``joined``: 65536 uint8, non-zero at ``x << 8 | y`` when some token holds the byte ``x``
    right before ``y`` (:func:`joined_pairs`); every other place is a seam. The encoder's ids
    0..255 must be the single bytes. The ids equal ``encoder.encode_utf8(data, ends)`` when
    ``joined`` covers every token of the encoder (see the module docstring)."""
    cdef const uint8_t[::1] text = data
    cdef const int64_t[::1] cuts = np.ascontiguousarray(ends, dtype=np.int64)
    cdef const uint8_t[::1] pairs = np.ascontiguousarray(joined, dtype=np.uint8)
    cdef Py_ssize_t n = text.shape[0], n_chunks = cuts.shape[0], c
    cdef int64_t previous = 0, p, part_start, end, part_count = 0
    cdef const uint8_t* s
    cdef const uint8_t* seam
    cdef IdBuffer out
    cdef PartTable table
    cdef Batch batch
    cdef int rc = 0
    if pairs.shape[0] != 65536:
        raise InvalidParameterError("joined must hold 65536 entries")
    for c in range(n_chunks):
        if cuts[c] <= previous or cuts[c] > n:
            raise InvalidParameterError("ends must be increasing offsets into data")
        previous = cuts[c]
    if previous != n:
        raise InvalidParameterError(f"ends must finish at len(data) = {n}")
    starts = np.zeros(n_chunks + 1, dtype=np.int64)
    if n == 0:
        return np.empty(0, dtype=np.uint32), starts
    if encoder.n_tokens < 256 or any(encoder.token_bytes(b) != bytes([b]) for b in (0, 1, 128, 255)):
        raise InvalidParameterError("the encoder's ids 0..255 must be the single bytes")
    cdef int64_t[::1] id_starts = starts
    out.data = NULL
    out.size = out.capacity = 0
    table.slots = NULL
    table.mask = 0
    table.used = 0
    batch.count = 0
    s = &text[0]
    seam = &pairs[0]
    try:
        with nogil:
            rc = id_buffer_reserve(&out, n // 4 + 16)
            previous = 0
            for c in range(n_chunks):
                end = cuts[c]
                part_start = previous
                p = previous + 1
                while rc == 0 and p < end:
                    if seam[(<uint32_t>s[p - 1] << 8) | s[p]] == 0:
                        rc = add_part(encoder, s, &batch, &table, &out, &id_starts[0], part_start,
                                      p - part_start, -1)
                        part_start = p
                    p += 1
                if rc == 0:
                    rc = add_part(encoder, s, &batch, &table, &out, &id_starts[0], part_start,
                                  end - part_start, c)
                if rc != 0:
                    break
                previous = end
            if rc == 0:
                rc = flush(encoder, s, &batch, &table, &out, &id_starts[0])
        if rc != 0:
            raise MemoryError("out of memory while replaying merges")
        return ids_array(&out), starts
    finally:
        free(out.data)
        free(table.slots)


def joined_pairs(tokens):
    """uint8 array of 65536: 1 at ``x << 8 | y`` when some token of ``tokens`` (bytes) holds the
    byte ``x`` right before the byte ``y``, else 0."""
    joined = np.zeros(65536, dtype=np.uint8)
    long_tokens = [t for t in tokens if len(t) >= 2]
    if long_tokens:
        blob = np.frombuffer(b"".join(long_tokens), dtype=np.uint8).astype(np.int64)
        pairs = (blob[:-1] << 8) | blob[1:]
        inside = np.ones(len(pairs), dtype=bool)
        inside[np.cumsum([len(t) for t in long_tokens])[:-1] - 1] = False  # across two tokens
        joined[pairs[inside]] = 1
    return joined
