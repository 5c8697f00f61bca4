"""BPE merge trainer core: unique chunks with multiplicities in, ordered merges out.

Semantics are those of ``cybpe.reference.trainer`` (read its docstring); the differential tests in
``tests/test_trainer_core.py`` hold the two together. Data structures: ``_trainer.pxd``.

Performance notes
-----------------
Measured on counts of the first 50 MB of ``mixed-train.txt.xz`` (517k unique chunks, 8.2M nodes),
vocab 32768: CPU time of the merge loop, best of 3, builds compared in alternation on this 2-core
VM (shared with other jobs, so figures move by +-5% between runs).

* Layout (notes A.3): one node per byte of every unique chunk of length >= 2, chunks one after
  another, so node ids grow left to right inside a chunk and chunk by chunk. Nodes are an array of
  16-byte structs ``{sym, prev, next, chunk}`` rather than four arrays: a merge site reads the
  neighbouring nodes p, i, j, k, which then share one or two cache lines.
* The loop is bound by cache misses on nodes (131 MB here) reached through occurrence lists. The
  loop prefetches the node 16 sites ahead and its chunk weight 8 sites ahead: 1.44 s -> 1.03 s.
  Prefetching the four pair slots as well (a 4-stage pipeline) gained nothing, so it is not done.
* Occurrence lists live in one arena of power-of-two blocks with per-class free lists
  (``OccPool``) and pair slots are 32 bytes, 64-byte aligned. With malloc'ed lists in 40-byte
  slots the loop took 1.11 s and malloc/free were 13% of the profile; after the change 0.93 s.
* Pair slots stay put inside a step: the table is grown for the worst case (2 new pairs per site)
  before the step and zero-count pairs are deleted after it. A pair whose count reaches 0 has no
  valid occurrence left, so its block is released at once (memory stays O(live occurrences)).
* Stale occurrences are validated on use, never removed eagerly: a node's (sym, next sym) pair
  never takes the same value twice, so a stale entry cannot come back to life (23% of the entries
  read are stale here).
* Lazy heap: every live pair has an entry >= its live count; a popped entry that disagrees with
  the live count is re-pushed with it. Pairs whose count rose in a step are pushed once, at the
  end of the step, with their final count (stamped per step, so each is pushed once).
* The duplicate-bytes rule (reuse the id of existing token bytes) needs one hash lookup per merge.
  Without seed tokens it never fires (see the test ``test_no_merge_ever_spells_an_existing_token``
  for the argument), and even with seeds every id is produced by one step only, so occurrence lists
  stay in node order; the unsorted flag and the sort before applying are a guard that the tests
  watch (``stats()["sorted_lists"] == 0``), not a path taken.
* Initial byte-pair statistics: a dense 256x256 counting sort, two linear passes, sorted lists.
* ``tie_break="huggingface"`` costs nothing in the loop: byte ids are renamed into HF order on
  input and back on output, so the heap always orders by the plain (left, right) pair.
* Transparent huge pages (madvise) were tried against the TLB misses, but this VM grants none, so
  there is no measurement and no code for them. The GIL is released for the loop and taken back
  only to call ``progress`` every ``PROGRESS_EVERY`` merges.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, INT32_MAX, INT64_MAX
from libc.stdlib cimport malloc, calloc, free, qsort
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize

from cybpe._c.types cimport token_t, count_t, node_t

import numpy as np

from cybpe.errors import InvalidParameterError, TrainingError

TIE_BREAKS = ("ids", "huggingface")
PROGRESS_EVERY = 256

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
    PREFETCH_NODE = 16     # the merge loop pulls in the node this many sites ahead
    PREFETCH_WEIGHT = 8    #   and that node's chunk weight this many sites ahead


cdef enum StopReason:
    RUNNING = 0
    STOP_VOCAB = 1
    STOP_MIN_FREQUENCY = 2
    STOP_NO_PAIRS = 3


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
# The merge loop
# ---------------------------------------------------------------------------------------------

cdef inline int count_down(Trainer* t, uint64_t key, count_t w,
                           const PairSlot* merging) noexcept nogil:
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
        if idx + PREFETCH_NODE < n_sites:
            prefetch(&nodes[occ[idx + PREFETCH_NODE]])
        if idx + PREFETCH_WEIGHT < n_sites:   # that node has arrived by now
            prefetch(&t.weight[nodes[occ[idx + PREFETCH_WEIGHT]].chunk])
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
    """Byte-pair counts and sorted occurrence lists (a dense 256x256 counting sort); the heap."""
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
    # The second pass writes through dense per-pair cursors (L2-resident), not through hash slots.
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
        if self.t.nodes != NULL:
            raise RuntimeError("a _MergeTrainer loads its chunks once")
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
