"""BPE merge trainer core: unique chunks with multiplicities in, ordered merges out.

Semantics are those of ``cybpe.reference.trainer`` (read its docstring); the differential tests in
``tests/training/test_trainer_core.py`` hold the two together. Data structures: ``trainer.pxd``.

Design (the measurements behind each point, and the attempts dropped: docs/history.md, "Merge
trainer")
------------------------------------------------------------------------------------------------
* Layout: one node per byte of every unique chunk of length >= 2, chunks one after another, so
  node ids grow left to right inside a chunk and chunk by chunk. Byte nodes are 8-byte structs
  ``{sym, chunk}`` without links: a token of n bytes starting at node i covers nodes i to
  i + n - 1 (the others hold -1), so the next token starts at i + length(sym) and the previous
  one is found by walking left over -1 nodes. Half the memory of the linked 16-byte ``Node`` of
  ``trainer.pxd``, and denser nodes make the loop faster.
* The loop is bound by cache misses on nodes reached through occurrence lists, so it prefetches
  the node ``PREFETCH_NODE`` sites ahead and its chunk weight ``PREFETCH_WEIGHT`` sites ahead.
* Occurrence lists live in one arena of power-of-two blocks with per-class free lists
  (``OccPool``; no malloc/free per list), and pair slots are 32 bytes, 64-byte aligned.
* Pair slots stay put inside a step: the table is grown for the worst case before the step and
  zero-count pairs are deleted after it. A pair whose count reaches 0 has no valid occurrence
  left, so its block is released at once (memory stays O(live occurrences)).
* Stale occurrences are validated on use, never removed eagerly: a node's (sym, next sym) pair
  never takes the same value twice, so a stale entry cannot come back to life.
* Lazy heap: every live pair has an entry >= its live count; a popped entry that disagrees with
  the live count is re-pushed with it. Pairs whose count rose in a step are pushed once, at the
  end of the step, with their final count (stamped per step).
* The duplicate-bytes rule (reuse the id of existing token bytes) needs one hash lookup per merge.
  Without seed tokens it never fires (see the test ``test_no_merge_ever_spells_an_existing_token``
  for the argument), and even with seeds every id is produced by one step only, so occurrence lists
  stay in node order; the unsorted flag and the sort before applying are a guard that the tests
  watch (``stats()["sorted_lists"] == 0``), not a path taken.
* Initial byte-pair statistics: a dense 256x256 counting sort, two linear passes, sorted lists.
* ``tie_break="huggingface"`` costs nothing in the loop: byte ids are renamed into HF order on
  input and back on output, so the heap always orders by the plain (left, right) pair.
* The pair table is sized from the distinct pairs: the worst case of a step is 2 new pairs per
  token id (every new pair holds the merged id next to one of ``tokens.n`` ids), not 2 per site,
  and ``risen`` / ``emptied`` grow on demand.
* Flat input: ``train_merges_arrays`` reads a ChunkCounter's arena, offsets and counts in place
  (no ``bytes`` object per chunk). Chunk order changes no merge (counts are sums, ties go by pair
  ids, and merges apply left to right inside each chunk). ``train_merges_from`` (what
  ``train()`` uses) copies the weights while it holds the counts and merges after letting them
  go, so other threads can read or update the counts during a long training.
* Pool pages: a released occurrence block of 64 KiB or more gives its pages (all but the first,
  which holds the free-list link) back to the OS (``drop_pages``, cybpe/_c/system.pxd: whole
  pages of the OS's size; nothing on Windows): growing lists and merged pairs release blocks all
  the time, and without this they stay resident.
* Loading token sequences (``load_tokens``: resuming with ``replay="encode"``, as SuperBPE's stage
  2 does) counts the initial pairs by grouping the pair sites by their left token (a stable
  counting sort, so occurrence lists stay in node order), each site carrying its node, right
  token and chunk, then tallying each group's right tokens in dense per-token arrays: one
  pair-table insert per distinct pair and a table sized once.
* The GIL is released for the loop and taken back only to call ``progress`` every
  ``PROGRESS_EVERY`` merges.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, INT32_MAX, INT64_MAX
from libc.stdlib cimport qsort
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from cybpe._c.cpu cimport prefetch_write
from cybpe._c.mem_pool cimport (MemPool, mem_alloc, mem_calloc, mem_free, mem_free_all,
                                mem_grow, mem_init, mem_realloc)
from cybpe._c.types cimport token_t, count_t, node_t

import numpy as np

from cybpe.errors import InvalidParameterError, TrainingError
from cybpe.tie_breaks import TIE_BREAKS  # the one list (also the reference's and train()'s)

PROGRESS_EVERY = 256



cdef enum:
    PREFETCH_NODE = 16     # the merge loop pulls in the node this many sites ahead
    PREFETCH_WEIGHT = 8    #   and that node's chunk weight this many sites ahead


cdef struct ByteNode:   # 8 bytes (module docstring: "Layout")
    token_t sym        # the token starting at this byte; -1 inside a token (merged into the left)
    int32_t chunk      # the chunk's index into ``weight``


cdef struct Trainer:
    MemPool* mem       # the owner's pool: every buffer below except a borrowed ``weight``
    ByteNode* nodes    # one per byte of every chunk of >= 2 bytes, chunks one after another
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
    int64_t n_excluded # pairs refused by a merge rule when they topped the heap
    int32_t max_token_length  # 0: no limit (else HF's rule, see pair_too_long)
    void* veto_owner   # the _MergeTrainer whose ``veto`` to ask, or NULL
    int32_t* forced_left   # merges applied first, in order, whatever their counts (resume)
    int32_t* forced_right
    int64_t n_forced


# ---------------------------------------------------------------------------------------------
# Walking a chunk's tokens: a token of n bytes starting at node i covers nodes i .. i + n - 1
# ---------------------------------------------------------------------------------------------

cdef inline node_t token_after(const Trainer* t, node_t i) noexcept nogil:
    """The first node of the token after the live token at ``i`` in its chunk, or -1."""
    cdef int64_t j = <int64_t>i + t.tokens.length[t.nodes[i].sym]
    if j >= t.n_nodes or t.nodes[j].chunk != t.nodes[i].chunk:
        return -1
    return <node_t>j


cdef inline node_t token_before(const ByteNode* nodes, node_t i) noexcept nogil:
    """The first node of the token before the live token at ``i`` in its chunk, or -1. A chunk's
    first byte always starts a token, so the walk left over merged bytes stays in the chunk."""
    if i == 0 or nodes[i - 1].chunk != nodes[i].chunk:
        return -1
    i -= 1
    while nodes[i].sym < 0:
        i -= 1
    return i


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
        if t.n_emptied == t.emptied_cap and grow_array(t.mem, <void**>&t.emptied, &t.emptied_cap,
                                                       t.n_emptied + 1, sizeof(uint64_t)) != 0:
            return ERR_NOMEM
        t.emptied[t.n_emptied] = key
        t.n_emptied += 1
    return 0


cdef inline int count_up(Trainer* t, uint64_t key, count_t w, node_t left_node) noexcept nogil:
    cdef int64_t s = pairs_find_or_add(&t.pairs, key)
    cdef PairSlot* slot = &t.pairs.slots[s]
    slot.count += w
    if slot.rise_step != t.step:
        slot.rise_step = t.step
        if t.n_risen == t.risen_cap and grow_array(t.mem, <void**>&t.risen, &t.risen_cap,
                                                   t.n_risen + 1, sizeof(int64_t)) != 0:
            return ERR_NOMEM
        t.risen[t.n_risen] = s
        t.n_risen += 1
    return occ_append(t.mem, &t.pool, slot, left_node)


cdef int apply_merge(Trainer* t, uint64_t key, token_t merged_id) noexcept nogil:
    """Replace every occurrence of the pair ``key`` by ``merged_id``, left to right per chunk."""
    cdef token_t a = <token_t>(key >> 32)
    cdef token_t b = <token_t><uint32_t>key
    cdef ByteNode* nodes = t.nodes
    cdef int64_t s = pairs_find(&t.pairs, key)
    cdef int64_t n_sites, idx, r
    cdef int64_t len_a = t.tokens.length[a], len_b = t.tokens.length[b], n_nodes = t.n_nodes
    cdef int32_t chunk
    cdef PairSlot* merging
    cdef const node_t* occ
    cdef node_t i, j, p, k
    cdef count_t w
    cdef int rc
    if s < 0:
        return ERR_INTERNAL
    n_sites = t.pairs.slots[s].occ_len
    # Room for the worst case, so that no slot moves while the loop holds pointers and indices.
    # Every pair the step adds holds merged_id, (x, merged_id) or (merged_id, y) with x and y
    # among the tokens.n ids: at most 2 * tokens.n new pairs, whatever n_sites (performance
    # notes: "Pair table sized from the distinct pairs"). ``risen`` and ``emptied`` grow on demand.
    if pairs_reserve(t.mem, &t.pairs, min(2 * n_sites, 2 * <int64_t>t.tokens.n)) != 0:
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
            prefetch_write(&nodes[occ[idx + PREFETCH_NODE]])
        if idx + PREFETCH_WEIGHT < n_sites:   # that node has arrived by now
            prefetch_write(&t.weight[nodes[occ[idx + PREFETCH_WEIGHT]].chunk])
        i = occ[idx]
        if nodes[i].sym != a:
            t.n_stale += 1
            continue
        j = <node_t>(i + len_a)
        chunk = nodes[i].chunk
        if j >= n_nodes or nodes[j].chunk != chunk or nodes[j].sym != b:
            t.n_stale += 1
            continue
        t.n_sites += 1
        w = t.weight[chunk]
        p = token_before(nodes, i)
        k = <node_t>(j + len_b)
        if k >= n_nodes or nodes[k].chunk != chunk:
            k = -1
        merging.count -= w
        if p >= 0:
            rc = count_down(t, pair_key(nodes[p].sym, a), w, merging)
            if rc != 0:
                return rc
        if k >= 0:
            rc = count_down(t, pair_key(b, nodes[k].sym), w, merging)
            if rc != 0:
                return rc
        nodes[i].sym = merged_id
        nodes[j].sym = -1
        if p >= 0 and count_up(t, pair_key(nodes[p].sym, merged_id), w, p) != 0:
            return ERR_NOMEM
        if k >= 0 and count_up(t, pair_key(merged_id, nodes[k].sym), w, i) != 0:
            return ERR_NOMEM
    if merging.count != 0:
        return ERR_INTERNAL
    occ_drop(&t.pool, merging)
    for r in range(t.n_risen):
        if t.pairs.slots[t.risen[r]].count > 0:
            rc = heap_push(t.mem, &t.heap, t.pairs.slots[t.risen[r]].count, t.pairs.slots[t.risen[r]].key)
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
        if grow_array(t.mem, <void**>&t.log_left, &cap, t.n_log + 1, sizeof(int32_t)) != 0:
            return ERR_NOMEM
        cap = t.log_cap
        if grow_array(t.mem, <void**>&t.log_right, &cap, t.n_log + 1, sizeof(int32_t)) != 0:
            return ERR_NOMEM
        cap = t.log_cap
        if grow_array(t.mem, <void**>&t.log_new, &cap, t.n_log + 1, sizeof(int32_t)) != 0:
            return ERR_NOMEM
        cap = t.log_cap
        if grow_array(t.mem, <void**>&t.log_count, &cap, t.n_log + 1, sizeof(count_t)) != 0:
            return ERR_NOMEM
        t.log_cap = cap
    t.log_left[t.n_log] = left
    t.log_right[t.n_log] = right
    t.log_new[t.n_log] = merged_id
    t.log_count[t.n_log] = count
    t.n_log += 1
    return 0


cdef inline bint pair_too_long(const Trainer* t, token_t left, token_t right) noexcept nogil:
    return tokens_pair_too_long(&t.tokens, left, right, t.max_token_length)


cdef int refused(Trainer* t, PairSlot* slot) noexcept nogil:
    """1 if a merge rule excludes the pair (remembered in the slot), 0 if not, < 0 = error.

    The rules depend on the two tokens' bytes only, so excluding a pair when it reaches the top of
    the heap equals never counting it: its count decides nothing else (other pairs' counts
    follow from the merges made, and an excluded pair is never made)."""
    cdef token_t left = <token_t>(slot.key >> 32)
    cdef token_t right = <token_t><uint32_t>slot.key
    cdef int verdict = 0
    if slot.excluded:
        return 1
    if t.max_token_length > 0 and pair_too_long(t, left, right):
        verdict = 1
    elif t.veto_owner != NULL:
        verdict = ask_veto(t.veto_owner, &t.tokens, left, right)
        if verdict < 0:
            return verdict
    if verdict:
        slot.excluded = 1
        t.n_excluded += 1
    return verdict


cdef int merge_best(Trainer* t) noexcept nogil:
    """Pop the best live pair and merge it. 0 = done or stopped (``t.stop`` set), < 0 = error."""
    cdef HeapEntry top
    cdef int64_t s
    cdef count_t live
    cdef token_t left, right, merged_id
    cdef bint is_new = False
    cdef bint has_rules = t.max_token_length > 0 or t.veto_owner != NULL
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
            if not has_rules:
                break
            rc = refused(t, &t.pairs.slots[s])
            if rc < 0:
                return rc
            if rc == 0:
                break
            continue   # dropped from the heap; a later rise pushes it again, and it is refused
        if live > 0 and heap_push(t.mem, &t.heap, live, top.key) != 0:
            return ERR_NOMEM
    if top.count < t.min_frequency:
        t.stop = STOP_MIN_FREQUENCY
        return 0
    left = <token_t>(top.key >> 32)
    right = <token_t><uint32_t>top.key
    merged_id = tokens_concat(t.mem, &t.tokens, left, right, &is_new)
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


cdef int apply_forced(Trainer* t) noexcept nogil:
    """Apply the forced merges in order, each at its live count (0 when the pair is absent).

    Each spells an existing token (checked on the Python side), so no id is created. The heap's
    invariant holds through them: apply_merge pushes every pair it raises, as for a chosen merge."""
    cdef int64_t k, s
    cdef token_t merged_id
    cdef uint64_t key
    cdef count_t live
    cdef bint is_new = False
    cdef int rc
    for k in range(t.n_forced):
        key = pair_key(t.forced_left[k], t.forced_right[k])
        merged_id = tokens_concat(t.mem, &t.tokens, t.forced_left[k], t.forced_right[k], &is_new)
        if merged_id < 0:
            return ERR_NOMEM
        if is_new:
            return ERR_INTERNAL
        s = pairs_find(&t.pairs, key)
        live = t.pairs.slots[s].count if s >= 0 else 0
        rc = log_merge(t, t.forced_left[k], t.forced_right[k], merged_id, live)
        if rc != 0:
            return rc
        if s >= 0:
            rc = apply_merge(t, key, merged_id)
            if rc != 0:
                return rc
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
    cdef count_t* pair_count = <count_t*>mem_calloc(t.mem, 65536, sizeof(count_t))
    cdef int64_t* pair_n = <int64_t*>mem_calloc(t.mem, 65536, sizeof(int64_t))
    cdef int64_t* pair_start = <int64_t*>mem_alloc(t.mem, 65536, sizeof(int64_t))
    cdef int rc = ERR_NOMEM
    if pair_count != NULL and pair_n != NULL and pair_start != NULL:
        rc = fill_initial_pairs(t, pair_count, pair_n, pair_start)
    mem_free(t.mem, pair_count)
    mem_free(t.mem, pair_n)
    mem_free(t.mem, pair_start)
    return rc


cdef int fill_initial_pairs(Trainer* t, count_t* pair_count, int64_t* pair_n,
                            int64_t* pair_start) noexcept nogil:
    # The second pass writes through dense per-pair cursors (L2-resident), not through hash slots.
    cdef ByteNode* nodes = t.nodes
    cdef int64_t i, n_distinct = 0, block
    cdef int pid
    cdef PairSlot* slot
    for i in range(t.n_nodes - 1):   # every node is one byte here
        if nodes[i + 1].chunk == nodes[i].chunk:
            pid = nodes[i].sym * 256 + nodes[i + 1].sym
            pair_count[pid] += t.weight[nodes[i].chunk]
            pair_n[pid] += 1
    for pid in range(65536):
        n_distinct += pair_n[pid] > 0
    if pairs_reserve(t.mem, &t.pairs, n_distinct) != 0:
        return ERR_NOMEM
    if grow_array(t.mem, <void**>&t.heap.data, &t.heap.cap, n_distinct + 1, sizeof(HeapEntry)) != 0:
        return ERR_NOMEM
    for pid in range(65536):
        if pair_n[pid] == 0:
            continue
        slot = &t.pairs.slots[pairs_find_or_add(&t.pairs, pair_key(pid >> 8, pid & 255))]
        block = pool_alloc(t.mem, &t.pool, occ_class_for(pair_n[pid]))
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
    for i in range(t.n_nodes - 1):
        if nodes[i + 1].chunk == nodes[i].chunk:
            pid = nodes[i].sym * 256 + nodes[i + 1].sym
            t.pool.base[pair_start[pid]] = <node_t>i
            pair_start[pid] += 1
    for i in range(t.heap.size // 2 - 1, -1, -1):
        heap_sift_down(&t.heap, i)
    return 0


cdef int count_initial_token_pairs(Trainer* t) noexcept nogil:
    """Pair counts and sorted occurrence lists when the nodes hold any token ids (resuming from
    segmented chunks); the heap (module docstring: "Loading token sequences")."""
    cdef int64_t n_tok = t.tokens.n
    cdef int64_t* group = <int64_t*>mem_calloc(t.mem, n_tok + 1, sizeof(int64_t))
    cdef int64_t* cursor = <int64_t*>mem_alloc(t.mem, n_tok, sizeof(int64_t))
    cdef int64_t* tally_n = <int64_t*>mem_calloc(t.mem, n_tok, sizeof(int64_t))
    cdef count_t* tally_count = <count_t*>mem_calloc(t.mem, n_tok, sizeof(count_t))
    cdef int32_t* touched = <int32_t*>mem_alloc(t.mem, n_tok, sizeof(int32_t))
    cdef int32_t* sites = NULL
    cdef int rc = ERR_NOMEM
    if group != NULL and cursor != NULL and tally_n != NULL and tally_count != NULL and touched != NULL:
        rc = group_token_sites(t, group, cursor, &sites)
        if rc == 0 and group[n_tok] > 0:
            rc = fill_token_pairs(t, group, cursor, tally_n, tally_count, touched, sites)
    mem_free(t.mem, group)   # scratch: back before the merges (the pool would keep it till the end)
    mem_free(t.mem, cursor)
    mem_free(t.mem, tally_n)
    mem_free(t.mem, tally_count)
    mem_free(t.mem, touched)
    mem_free(t.mem, sites)
    return rc


cdef int group_token_sites(Trainer* t, int64_t* group, int64_t* cursor,
                           int32_t** sites) noexcept nogil:
    """Every pair site (a live node and the token after it in its chunk), grouped by the left
    token with a stable counting sort: site ``k`` of ``group[a]:group[a + 1]`` (in node order)
    is ``sites[3k:3k + 3]`` = (node, right token, chunk)."""
    cdef ByteNode* nodes = t.nodes
    cdef const int32_t* length = t.tokens.length
    cdef int64_t n_tok = t.tokens.n, i, j, a, k, total = 0
    cdef token_t sym
    for i in range(t.n_nodes):
        sym = nodes[i].sym
        if sym >= 0:
            j = i + length[sym]
            if j < t.n_nodes and nodes[j].chunk == nodes[i].chunk:
                group[sym + 1] += 1
    for a in range(n_tok):
        group[a + 1] += group[a]
        cursor[a] = group[a]
    total = group[n_tok]
    sites[0] = <int32_t*>mem_alloc(t.mem, total, 3 * sizeof(int32_t))
    if sites[0] == NULL:
        return ERR_NOMEM
    for i in range(t.n_nodes):
        sym = nodes[i].sym
        if sym >= 0:
            j = i + length[sym]
            if j < t.n_nodes and nodes[j].chunk == nodes[i].chunk:
                k = 3 * cursor[sym]
                sites[0][k] = <int32_t>i
                sites[0][k + 1] = nodes[j].sym
                sites[0][k + 2] = nodes[i].chunk
                cursor[sym] += 1
    return 0


cdef inline int64_t tally_right_tokens(const int32_t* sites, int64_t start, int64_t stop,
                                       const count_t* weight, int64_t* tally_n,
                                       count_t* tally_count, int32_t* touched) noexcept nogil:
    """Tally the right tokens of the sites ``start:stop`` (grouped by left token): occurrences in
    ``tally_n`` and, when ``weight`` is given, the chunks' weights in ``tally_count``; each right
    token seen for the first time is listed in ``touched``. Returns how many were listed; the
    caller zeroes the tallies of the listed tokens."""
    cdef int64_t k, n_touched = 0
    cdef int32_t b
    for k in range(start, stop):
        b = sites[3 * k + 1]
        if tally_n[b] == 0:
            touched[n_touched] = b
            n_touched += 1
        tally_n[b] += 1
        if weight != NULL:
            tally_count[b] += weight[sites[3 * k + 2]]
    return n_touched


cdef int fill_token_pairs(Trainer* t, const int64_t* group, int64_t* cursor, int64_t* tally_n,
                          count_t* tally_count, int32_t* touched, const int32_t* sites) noexcept nogil:
    """The pair slots, occurrence lists and heap from the grouped sites: per left token, its
    right tokens are tallied in dense arrays (``tally_*``, all zero on entry and on return)."""
    cdef int64_t n_tok = t.tokens.n, a, k, m, n_touched, n_distinct = 0, block
    cdef int32_t b
    cdef int cls
    cdef PairSlot* slot
    for a in range(n_tok):           # the distinct pairs, to size the table and heap once
        n_touched = tally_right_tokens(sites, group[a], group[a + 1], NULL, tally_n, NULL, touched)
        for m in range(n_touched):
            tally_n[touched[m]] = 0
        n_distinct += n_touched
    if pairs_reserve(t.mem, &t.pairs, n_distinct) != 0:
        return ERR_NOMEM
    if grow_array(t.mem, <void**>&t.heap.data, &t.heap.cap, n_distinct + 1, sizeof(HeapEntry)) != 0:
        return ERR_NOMEM
    for a in range(n_tok):
        n_touched = tally_right_tokens(sites, group[a], group[a + 1], t.weight, tally_n,
                                       tally_count, touched)
        for m in range(n_touched):   # the slots are cache misses: ask for them all first
            prefetch_write(&t.pairs.slots[home_slot(&t.pairs, pair_key(<token_t>a, touched[m]))])
        for m in range(n_touched):
            b = touched[m]
            slot = &t.pairs.slots[pairs_find_or_add(&t.pairs, pair_key(<token_t>a, b))]
            cls = occ_class_for(tally_n[b])
            block = pool_alloc(t.mem, &t.pool, cls)
            if block < 0:
                return ERR_NOMEM
            slot.occ_block = <uint32_t>block
            slot.occ_class = <uint8_t>cls
            slot.occ_len = <int32_t>tally_n[b]
            slot.count = tally_count[b]
            cursor[b] = block * OCC_UNIT   # the pool does not move until the next group
            t.heap.data[t.heap.size].count = slot.count
            t.heap.data[t.heap.size].key = slot.key
            t.heap.size += 1
        for k in range(group[a], group[a + 1]):
            b = sites[3 * k + 1]
            t.pool.base[cursor[b]] = sites[3 * k]
            cursor[b] += 1
        for m in range(n_touched):
            tally_n[touched[m]] = 0
            tally_count[touched[m]] = 0
    for k in range(t.heap.size // 2 - 1, -1, -1):
        heap_sift_down(&t.heap, k)
    return 0


cdef void fill_chunk_nodes(ByteNode* nodes, const uint8_t* text, int64_t n,
                           int32_t chunk, const int32_t* id_of_byte) noexcept nogil:
    """One node per byte of a chunk of ``n`` >= 2 bytes."""
    cdef int64_t m
    for m in range(n):
        nodes[m].sym = id_of_byte[text[m]]
        nodes[m].chunk = chunk


# ---------------------------------------------------------------------------------------------
# Python side
# ---------------------------------------------------------------------------------------------

# Nodes are int32 with -1 as "none"; keep one spare value.
MAX_NODES = MAX_NODE_IDS


cdef int64_t _checked_sizes(int64_t total, int64_t windows, int64_t weight,
                            int64_t n) except? -1:
    """``windows`` plus a chunk of ``n`` >= 2 bytes counted ``weight`` times (its pair windows),
    after checking that ``total`` bytes fit the node ids and that pair counts fit int64."""
    if total > MAX_NODES:
        raise TrainingError(
            f"the unique chunks hold more than {MAX_NODES} bytes in total, the most one "
            f"training run can index (int32 node ids); train on a sample or on fewer, "
            f"more frequent chunks")
    if weight > (INT64_MAX - windows) // (n - 1):
        raise TrainingError("pair counts would overflow int64; use smaller weights")
    return windows + weight * (n - 1)


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


cdef class MergeRun:
    """The owner of one merge run's memory and of what its Python side shares (see trainer.pxd):
    the base of the compiled merge loops' classes, never used alone."""

    def __dealloc__(self):
        mem_free_all(&self.mem)

    cdef void* alloc(self, Py_ssize_t n, size_t item, bint zeroed=False) except NULL:
        """``n`` items (at least one) from the run's pool, zeroed if asked; MemoryError if none."""
        cdef void* p = mem_calloc(&self.mem, n, item) if zeroed else mem_alloc(&self.mem, n, item)
        if p == NULL:
            raise MemoryError(f"out of memory while {self.doing}")
        return p

    cdef check(self, int rc):
        """Raise what an error code of the nogil loop means (nothing for 0)."""
        if rc == ERR_CALLBACK:
            error, self.veto_error = self.veto_error, None
            raise error
        if rc == ERR_NOMEM:
            raise MemoryError(f"out of memory while {self.doing}")
        if rc != 0:
            raise RuntimeError(f"cybpe, {self.doing}: internal invariant broken "
                               f"(please report this bug)")

    cdef set_byte_order(self, list byte_order, int32_t* id_of_byte):
        """Internal id ``r`` is the byte ``byte_order[r]`` (a permutation of 0..255);
        ``id_of_byte`` (unless NULL) gets the inverse."""
        cdef int r
        if len(byte_order) != 256 or sorted(byte_order) != list(range(256)):
            raise ValueError("byte_order must be a permutation of 0..255")
        self.byte_of_id = byte_order
        if id_of_byte != NULL:
            for r in range(256):
                id_of_byte[<int>byte_order[r]] = r

    cdef init_tokens(self, TokenStore* ts, list seed_tokens):
        """The 256 byte tokens in the byte order, then the seed tokens (ids 256, 257, ...)."""
        cdef uint8_t byte_of_id[256]
        cdef int r
        cdef bint is_new = False
        cdef bytes seed
        for r in range(256):
            byte_of_id[r] = <uint8_t>(<int>self.byte_of_id[r])
        self.check(tokens_init(&self.mem, ts, byte_of_id))
        for seed in seed_tokens:
            if tokens_add(&self.mem, ts, <const uint8_t*>PyBytes_AS_STRING(seed), len(seed),
                          &is_new) < 0:
                self.check(ERR_NOMEM)
            if not is_new:
                raise InvalidParameterError(f"seed token {seed!r} is listed twice")

    cdef void* set_veto(self, veto):
        """Keep ``veto``; the loop's ``veto_owner`` (NULL: no veto to ask)."""
        self.veto = veto
        return <void*>self if veto is not None else NULL

    cdef object external(self, int32_t token):
        """The id a result reports for internal id ``token`` (bytes in their own order)."""
        return self.byte_of_id[token] if token < 256 else token


cdef class _MergeTrainer(MergeRun):
    """One training run: its buffers come from the MergeRun's pool (freed with it, also after
    errors)."""

    cdef Trainer t
    cdef public list forced_counts  # reported for the forced merges instead of the live counts
    cdef object weight_owner  # the caller's weights when ``t.weight`` points into them (not freed)

    def __cinit__(self):
        self.t.mem = &self.mem
        self.doing = "training BPE merges"

    def load(self, list chunks, const int64_t[::1] weights, list byte_order,
             Py_ssize_t n_target, count_t min_frequency, list seed_tokens,
             int32_t max_token_length=0, veto=None, list forced_merges=None):
        """Copy the chunks into nodes, count the byte pairs and fill the heap.

        ``forced_merges``: ``(left, right)`` pairs of internal ids, applied first by ``run``."""
        cdef int32_t id_of_byte[256]
        cdef int64_t total = 0, windows = 0, base = 0, m, n
        cdef int64_t ci = 0
        cdef Py_ssize_t idx
        cdef object chunk
        if self.t.nodes != NULL:
            raise RuntimeError("a _MergeTrainer loads its chunks once")
        self.set_byte_order(byte_order, id_of_byte)
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
            windows = _checked_sizes(total, windows, weights[idx], n)
        self._allocate(total, ci)
        ci = 0
        for idx in range(len(chunks)):
            chunk = chunks[idx]
            n = PyBytes_GET_SIZE(chunk)
            if n < 2:
                continue
            self.t.weight[ci] = weights[idx]
            fill_chunk_nodes(self.t.nodes + base, <const uint8_t*>PyBytes_AS_STRING(chunk), n,
                             <int32_t>ci, id_of_byte)
            base += n
            ci += 1
        self._finish_load(seed_tokens, max_token_length, veto, forced_merges or [], n_target,
                          min_frequency)

    def load_arrays(self, const uint8_t[::1] arena, const int64_t[::1] offsets,
                    const int64_t[::1] weights, list byte_order, Py_ssize_t n_target,
                    count_t min_frequency, int32_t max_token_length=0, veto=None,
                    bint borrow_weights=False):
        """``load`` from flat arrays: chunk ``c`` is ``arena[offsets[c]:offsets[c + 1]]``,
        counted ``weights[c]`` (> 0) times. With ``borrow_weights`` the trainer reads ``weights``
        in place (no copy; they must stay unchanged while it lives); the arena and offsets are
        only read here."""
        cdef int32_t id_of_byte[256]
        cdef Py_ssize_t n_chunks = weights.shape[0], c
        cdef int64_t total = 0, windows = 0, base = 0, ci = 0, n
        cdef bint borrow = borrow_weights and 0 < n_chunks <= INT32_MAX  # chunk ids index them
        if self.t.nodes != NULL:
            raise RuntimeError("a _MergeTrainer loads its chunks once")
        if (offsets.shape[0] != n_chunks + 1 or offsets[0] != 0
                or offsets[n_chunks] > arena.shape[0]):
            raise InvalidParameterError(
                "offsets must hold one more entry than weights, from 0 to at most len(arena)")
        self.set_byte_order(byte_order, id_of_byte)
        for c in range(n_chunks):
            n = offsets[c + 1] - offsets[c]
            if n < 0:
                raise InvalidParameterError("offsets must not decrease")
            if weights[c] <= 0:
                raise InvalidParameterError("every weight must be > 0")
            if n < 2:
                continue
            total += n
            ci += 1
            windows = _checked_sizes(total, windows, weights[c], n)
        if borrow:
            self.weight_owner = weights
            self.t.weight = <count_t*>&weights[0]
        self._allocate(total, ci, not borrow)
        ci = 0
        with nogil:
            for c in range(n_chunks):
                n = offsets[c + 1] - offsets[c]
                if n < 2:
                    continue
                if not borrow:
                    self.t.weight[ci] = weights[c]
                fill_chunk_nodes(self.t.nodes + base, &arena[offsets[c]], n,
                                 <int32_t>(c if borrow else ci), id_of_byte)
                base += n
                ci += 1
        self._finish_load([], max_token_length, veto, [], n_target, min_frequency)

    cdef _allocate(self, int64_t n_nodes, int64_t n_chunks, bint own_weight=True):
        self.t.n_nodes = n_nodes
        self.t.nodes = <ByteNode*>self.alloc(n_nodes, sizeof(ByteNode))
        if own_weight:
            self.t.weight = <count_t*>self.alloc(n_chunks, sizeof(count_t))

    cdef _finish_load(self, list seed_tokens, int32_t max_token_length, veto,
                      list forced_merges, Py_ssize_t n_target, count_t min_frequency):
        """After the nodes: tokens, rules, forced merges, then the byte-pair counts and heap."""
        cdef int rc
        self.init_tokens(&self.t.tokens, seed_tokens)
        self.t.max_token_length = max_token_length
        self.t.veto_owner = self.set_veto(veto)
        self._init_forced(forced_merges)
        pool_init(&self.t.pool)
        self.t.n_target = <int32_t>n_target
        self.t.min_frequency = min_frequency
        with nogil:
            rc = count_initial_pairs(&self.t)
        self.check(rc)

    def load_tokens(self, const int32_t[::1] ids, const int64_t[::1] starts,
                    const int64_t[::1] weights, list byte_order, Py_ssize_t n_target,
                    count_t min_frequency, list seed_tokens, int32_t max_token_length, veto,
                    list forced_merges, list forced_counts):
        """Load chunks already segmented into internal token ids: chunk ``c`` is
        ``ids[starts[c]:starts[c + 1]]``. The forced merges, already applied, are only logged
        (with ``forced_counts``)."""
        cdef Py_ssize_t n_chunks = starts.shape[0] - 1, c, ci = 0, k
        cdef int64_t m, base = 0, n, total = 0, size
        cdef int64_t n_ids = ids.shape[0]
        cdef bint is_new = False
        cdef int rc
        cdef int32_t merged, tok
        cdef const int32_t* length
        if self.t.nodes != NULL:
            raise RuntimeError("a _MergeTrainer loads its chunks once")
        if n_chunks < 0 or starts[0] != 0 or starts[n_chunks] != n_ids:
            raise InvalidParameterError("starts must run from 0 to len(ids)")
        self.set_byte_order(byte_order, NULL)
        self.init_tokens(&self.t.tokens, seed_tokens)   # the tokens' lengths lay out the nodes
        length = self.t.tokens.length
        for c in range(n_chunks):
            if starts[c + 1] - starts[c] < 2:
                continue
            ci += 1
            for m in range(starts[c], starts[c + 1]):
                if not 0 <= ids[m] < self.t.tokens.n:
                    raise InvalidParameterError(f"token id {ids[m]} is not a byte or seed token")
                total += length[ids[m]]
        if total > MAX_NODES:
            raise TrainingError(f"the segmented chunks hold more than {MAX_NODES} bytes")
        self._allocate(total, ci)
        ci = 0
        for c in range(n_chunks):
            if starts[c + 1] - starts[c] < 2:
                continue
            self.t.weight[ci] = weights[c]
            for m in range(starts[c], starts[c + 1]):
                tok = ids[m]
                self.t.nodes[base].sym = tok
                self.t.nodes[base].chunk = <int32_t>ci
                for size in range(1, length[tok]):
                    self.t.nodes[base + size].sym = -1
                    self.t.nodes[base + size].chunk = <int32_t>ci
                base += length[tok]
            ci += 1
        self.t.max_token_length = max_token_length
        self.t.veto_owner = self.set_veto(veto)
        self._init_forced([])
        for k in range(len(forced_merges)):
            left, right = forced_merges[k]
            merged = tokens_concat(&self.mem, &self.t.tokens, left, right, &is_new)
            if merged < 0 or is_new:
                self.check(ERR_NOMEM if merged < 0 else ERR_INTERNAL)
            self.check(log_merge(&self.t, left, right, merged, forced_counts[k]))
            self.t.n_reused += 1
        pool_init(&self.t.pool)
        self.t.n_target = <int32_t>n_target
        self.t.min_frequency = min_frequency
        with nogil:
            rc = count_initial_token_pairs(&self.t)
        self.check(rc)

    cdef _init_forced(self, list forced_merges):
        cdef Py_ssize_t n = len(forced_merges), k
        self.t.forced_left = <int32_t*>self.alloc(n, sizeof(int32_t))
        self.t.forced_right = <int32_t*>self.alloc(n, sizeof(int32_t))
        for k in range(n):
            self.t.forced_left[k], self.t.forced_right[k] = forced_merges[k]
        self.t.n_forced = n

    def run(self, progress):
        """Apply the forced merges, then merge until a stop condition; call
        ``progress(done, total)`` between batches."""
        cdef int64_t limit = PROGRESS_EVERY if progress is not None else INT64_MAX
        cdef int rc
        with nogil:
            rc = apply_forced(&self.t)
        self.check(rc)
        while True:
            with nogil:
                rc = run_merges(&self.t, limit)
            self.check(rc)
            if progress is not None:
                progress(self.t.n_created, self.t.n_target)
            if self.t.stop != RUNNING:
                break

    def stats(self):
        """Counters for benchmarks: nodes, merge sites applied, stale occurrences, live pairs."""
        return {"nodes": self.t.n_nodes, "sites": self.t.n_sites, "stale": self.t.n_stale,
                "sorted_lists": self.t.n_sorted, "reused_ids": self.t.n_reused,
                "excluded_pairs": self.t.n_excluded,
                "live_pairs": self.t.pairs.live, "pair_slots": self.t.pairs.mask + 1,
                "heap_entries": self.t.heap.size, "pool_units": self.t.pool.used,
                "mem_blocks": self.mem.blocks}

    def result(self):
        cdef int64_t k
        merges = [(self.external(self.t.log_left[k]), self.external(self.t.log_right[k]))
                  for k in range(self.t.n_log)]
        new_ids = [self.external(self.t.log_new[k]) for k in range(self.t.n_log)]
        counts = [self.t.log_count[k] for k in range(self.t.n_log)]
        if self.forced_counts is not None:
            counts[:len(self.forced_counts)] = self.forced_counts
        return MergeResult(merges, new_ids, counts, tokens_as_list(&self.t.tokens),
                           stop_name(self.t.stop))


def train_merges(chunks, weights, n_new_tokens, *, min_frequency=0, tie_break="ids",
                 progress=None, max_token_length=None, veto=None, seed_tokens=(),
                 forced_merges=(), forced_counts=None, replay="encode"):
    """Learn BPE merges from unique chunks and their multiplicities.

    ``chunks``: distinct ``bytes`` (pre-tokenized pieces); ``weights``: their int64 counts (> 0).
    Merges stop once ``n_new_tokens`` new tokens exist, when the best count is below
    ``min_frequency`` (0 and 1 never stop), or when no pair is left. ``tie_break`` decides among
    equal counts: ``"ids"`` (smallest ``(left, right)``, as rustbpe) or ``"huggingface"`` (byte ids
    in HF ByteLevel order, as HF ``BpeTrainer``). ``progress(done, total)`` is called every
    ``PROGRESS_EVERY`` merges and at the end; ``done`` counts new tokens, ``total`` is
    ``n_new_tokens``.

    Rules (both only remove candidate pairs; the next best pair is taken instead):

    * ``max_token_length`` (HF ``BpeTrainer`` semantics, in bytes): a pair is merged only if its
      two tokens hold fewer than ``max_token_length`` bytes together; pairs of two single bytes
      are always allowed. So the longest token has ``max(2, max_token_length - 1)`` bytes.
    * ``veto(left_bytes, right_bytes)``: a true result refuses the merge. It must depend on its
      arguments only; it is asked once per pair when the pair first tops the heap (with the GIL).

    Resuming: ``seed_tokens`` (distinct ``bytes`` of length >= 2) exist before training with ids
    256, 257, ...; a merge that spells one of them reuses its id. ``forced_merges`` (pairs of ids
    among the bytes and seeds, each spelling a token) are applied first, in order, whatever their
    counts, and open the merge list; their ``counts`` entries are ``forced_counts`` (zeros by
    default: the counts they had where they were learned, not recounted here).

    ``replay="encode"`` (default) segments each chunk with the forced merges through the rank
    encoder (merge-list order, which equals applying them one by one to every chunk) and loads the
    token sequences; ``"merges"`` applies them one by one in the trainer. Same result; the first
    is several times faster on long chunks (SuperBPE's stage 2), where the trainer's occurrence
    walks miss the cache on every node.
    """
    return _train(chunks, weights, n_new_tokens, min_frequency, tie_break, progress, seed_tokens,
                  max_token_length, veto, forced_merges, forced_counts, replay).result()


def _train_merges_seeded(chunks, weights, n_new_tokens, seed_tokens, *, min_frequency=0,
                         tie_break="ids", progress=None, max_token_length=None, veto=None,
                         forced_merges=(), forced_counts=None, replay="encode"):
    """Test hook: :func:`train_merges` with ``seed_tokens``, returning ``(MergeResult, stats)``.

    Without seeds (or forced merges) the duplicate-bytes rule is never reached: with exact BPE two
    merges never spell the same bytes (see ``tests/training/test_trainer_core.py``,
    ``test_no_merge_ever_spells_an_existing_token``).
    """
    trainer = _train(chunks, weights, n_new_tokens, min_frequency, tie_break, progress,
                     seed_tokens, max_token_length, veto, forced_merges, forced_counts, replay)
    return trainer.result(), trainer.stats()


def check_rules(max_token_length, veto):
    """Validate the merge rules; ``max_token_length`` as an int (0: no limit)."""
    if veto is not None and not callable(veto):
        raise InvalidParameterError("veto must be callable or None")
    if max_token_length is None:
        return 0
    max_token_length = _as_int(max_token_length, "max_token_length")
    if not 1 <= max_token_length <= INT32_MAX:
        raise InvalidParameterError(
            f"max_token_length must be None or in [1, {INT32_MAX}]; got {max_token_length}")
    return max_token_length


def check_forced(forced_merges, seeds):
    """The forced merges as a list of id pairs, each spelling a byte or seed token."""
    tokens = [bytes([b]) for b in range(256)] + list(seeds)
    known = set(tokens)
    pairs = []
    for k, merge in enumerate(forced_merges):
        try:
            left, right = (_as_int(x, "a forced merge id") for x in merge)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"forced merge {k} must be a (left, right) pair of ids; got {merge!r}") from None
        if not (0 <= left < len(tokens) and 0 <= right < len(tokens)):
            raise InvalidParameterError(f"forced merge {k} ({left}, {right}) names an unknown id")
        if tokens[left] + tokens[right] not in known:
            raise InvalidParameterError(
                f"forced merge {k} ({left}, {right}) spells {tokens[left] + tokens[right]!r}, "
                f"which is not a seed token")
        pairs.append((left, right))
    return pairs


def _built_in_order(forced, seeds):
    """Whether every forced merge joins bytes or tokens made by earlier forced merges. Only then
    does the merge-list encoder (lowest rank first) equal applying the merges one by one: a merge
    whose part appears later would otherwise fire after its rank."""
    tokens = [bytes([b]) for b in range(256)] + list(seeds)
    ids = {t: i for i, t in enumerate(tokens)}
    made = set(range(256))
    for left, right in forced:
        if left not in made or right not in made:
            return False
        made.add(ids[tokens[left] + tokens[right]])
    return True


def _segment(chunk_list, weight_array, seeds, forced, byte_order):
    """The chunks of >= 2 bytes encoded with the forced merges: (internal ids, starts, weights).

    Each chunk is encoded part by part between its seams (places between two bytes that no token
    holds side by side, where no merge can reach across), each distinct part once: the same ids
    as encoding whole chunks, several times faster on long ones (see cybpe/training/replay.pyx).
    """
    from cybpe.encode.encoder import RankEncoder
    from cybpe.training.replay import encode_at_seams, joined_pairs

    keep = [i for i, chunk in enumerate(chunk_list) if len(chunk) >= 2]
    tokens = [bytes([b]) for b in range(256)] + seeds
    encoder = RankEncoder(tokens, forced, whole_piece_lookup=False)
    ends = np.cumsum(np.array([len(chunk_list[i]) for i in keep], dtype=np.int64))
    ids, starts = encode_at_seams(encoder, b"".join([chunk_list[i] for i in keep]), ends,
                                  joined_pairs(seeds))
    ids = ids.view(np.int32)  # ids < 2**31
    if list(byte_order) != list(range(256)):
        internal = np.arange(len(tokens), dtype=np.int32)
        internal[np.array(byte_order, dtype=np.int64)] = np.arange(256, dtype=np.int32)
        ids = internal[ids]
    return (np.ascontiguousarray(ids, dtype=np.int32), starts,
            np.ascontiguousarray(weight_array[np.array(keep, dtype=np.int64)], dtype=np.int64))


def _checked_run(n_new_tokens, min_frequency, tie_break, progress, Py_ssize_t n_seeds):
    """``n_new_tokens`` and ``min_frequency`` as ints, after checking every run parameter."""
    if tie_break not in TIE_BREAKS:
        raise InvalidParameterError(
            f"tie_break must be one of {', '.join(repr(t) for t in TIE_BREAKS)}; got {tie_break!r}")
    n_new_tokens = _as_int(n_new_tokens, "n_new_tokens")
    min_frequency = _as_int(min_frequency, "min_frequency")
    if not 0 <= n_new_tokens <= INT32_MAX - 256 - n_seeds:
        raise InvalidParameterError(f"n_new_tokens must be in [0, {INT32_MAX - 256 - n_seeds}]; "
                                    f"got {n_new_tokens}")
    if not 0 <= min_frequency <= INT64_MAX:
        raise InvalidParameterError(f"min_frequency must be in [0, 2**63 - 1]; got {min_frequency}")
    if progress is not None and not callable(progress):
        raise InvalidParameterError("progress must be callable or None")
    return n_new_tokens, min_frequency


def train_merges_arrays(arena, offsets, weights, n_new_tokens, *, min_frequency=0,
                        tie_break="ids", progress=None, max_token_length=None, veto=None):
    """:func:`train_merges` from flat arrays, as a :class:`ChunkCounter` holds them: chunk ``c``
    is ``arena[offsets[c]:offsets[c + 1]]`` (uint8 bytes; int64 offsets, one more than chunks,
    from 0) with the int64 count ``weights[c]`` (> 0). The same merges as ``train_merges`` on
    those chunks in any order, without a ``bytes`` object per chunk (module docstring: "Flat
    input"). No seed tokens or forced merges here."""
    return _train_arrays(lambda load: load(arena, offsets, weights), True, n_new_tokens,
                         min_frequency, tie_break, progress, max_token_length, veto)


def train_merges_from(with_arrays, n_new_tokens, *, min_frequency=0, tie_break="ids",
                      progress=None, max_token_length=None, veto=None):
    """:func:`train_merges_arrays` on the arrays ``with_arrays(fn)`` lends to ``fn(arena,
    offsets, weights)`` (as :meth:`ChunkCounts.with_arrays` does): the trainer copies what it
    needs during that call (one node per byte, the weights) and merges after it, so the lender
    is not held (other threads may read or update it meanwhile)."""
    return _train_arrays(with_arrays, False, n_new_tokens, min_frequency, tie_break, progress,
                         max_token_length, veto)


def _train_arrays(with_arrays, bint borrow, n_new_tokens, min_frequency, tie_break, progress,
                  max_token_length, veto):
    n_new_tokens, min_frequency = _checked_run(n_new_tokens, min_frequency, tie_break, progress, 0)
    limit = check_rules(max_token_length, veto)
    byte_order = huggingface_byte_order() if tie_break == "huggingface" else list(range(256))
    trainer = _MergeTrainer()
    with_arrays(lambda arena, offsets, weights: trainer.load_arrays(
        arena, offsets, weights, byte_order, n_new_tokens, min_frequency, limit, veto, borrow))
    trainer.run(progress)
    return trainer.result()


def _train(chunks, weights, n_new_tokens, min_frequency, tie_break, progress, seed_tokens,
           max_token_length=None, veto=None, forced_merges=(), forced_counts=None,
           replay="encode"):
    seeds = list(seed_tokens)
    n_new_tokens, min_frequency = _checked_run(n_new_tokens, min_frequency, tie_break, progress,
                                               len(seeds))
    if any(not isinstance(seed, bytes) or len(seed) < 2 for seed in seeds):
        raise InvalidParameterError("seed tokens must be bytes of length >= 2")
    limit = check_rules(max_token_length, veto)
    external_forced = check_forced(forced_merges, seeds)
    counts = [0] * len(external_forced) if forced_counts is None else \
        [_as_int(c, "a forced count") for c in forced_counts]
    if len(counts) != len(external_forced):
        raise InvalidParameterError("forced_counts must have one entry per forced merge")
    if replay not in ("encode", "merges"):
        raise InvalidParameterError(f"replay must be 'encode' or 'merges'; got {replay!r}")
    chunk_list = list(chunks)
    weight_array = _as_weights(weights, len(chunk_list))
    byte_order = huggingface_byte_order() if tie_break == "huggingface" else list(range(256))
    internal = {byte: r for r, byte in enumerate(byte_order)}
    forced = [(internal.get(left, left) if left < 256 else left,
               internal.get(right, right) if right < 256 else right)
              for left, right in external_forced]
    trainer = _MergeTrainer()
    if forced and replay == "encode" and _built_in_order(external_forced, seeds):
        for idx, chunk in enumerate(chunk_list):
            if not isinstance(chunk, bytes):
                raise InvalidParameterError(
                    f"chunks must be bytes; chunk {idx} is {type(chunk).__name__}")
        ids, starts, kept_weights = _segment(chunk_list, weight_array, seeds, external_forced,
                                             byte_order)
        trainer.load_tokens(ids, starts, kept_weights, byte_order, n_new_tokens, min_frequency,
                            seeds, limit, veto, forced, counts)
    else:
        trainer.load(chunk_list, weight_array, byte_order, n_new_tokens, min_frequency, seeds,
                     limit, veto, forced)
        trainer.forced_counts = counts
    trainer.run(progress)
    return trainer


def _exercise_mem_pool(list sizes):
    """Test hook for cybpe/_c/mem_pool.pxd (the trainers' memory owner): allocate a block of
    each size in ``sizes`` (bytes, filled with a pattern), grow each to twice its size with
    mem_grow, free the middle one, then ask for impossible sizes. Returns what was observed:
    ``blocks`` after each stage, whether every pattern survived the moves, whether calloc
    zeroes, and whether the failures left the pool and the blocks as they were."""
    cdef MemPool pool
    cdef Py_ssize_t n = len(sizes), k, m, size
    cdef uint8_t** block
    cdef Py_ssize_t* cap
    cdef bint kept = True, zeroed = True, failed_cleanly
    cdef uint8_t* z
    mem_init(&pool)
    block = <uint8_t**>mem_alloc(&pool, n, sizeof(uint8_t*))
    cap = <Py_ssize_t*>mem_alloc(&pool, n, sizeof(Py_ssize_t))
    if block == NULL or cap == NULL:
        mem_free_all(&pool)
        raise MemoryError()
    try:
        for k in range(n):
            size = sizes[k]
            block[k] = <uint8_t*>mem_alloc(&pool, size, 1)
            cap[k] = size
            if block[k] == NULL:
                raise MemoryError()
            for m in range(size):
                block[k][m] = <uint8_t>(k * 31 + m)
        after_alloc = pool.blocks
        for k in range(n):
            if mem_grow(&pool, <void**>&block[k], &cap[k], 2 * cap[k], 1, 1) != 0:
                raise MemoryError()
            for m in range(sizes[k]):
                kept = kept and block[k][m] == <uint8_t>(k * 31 + m)
        after_grow = pool.blocks
        mem_free(&pool, block[n // 2])
        after_free = pool.blocks
        z = <uint8_t*>mem_calloc(&pool, 4096, 1)
        if z == NULL:
            raise MemoryError()
        for m in range(4096):
            zeroed = zeroed and z[m] == 0
        before = pool.blocks
        failed_cleanly = (mem_alloc(&pool, <Py_ssize_t>1 << 62, 8) == NULL   # size overflows
                          and mem_alloc(&pool, <Py_ssize_t>1 << 60, 1) == NULL  # malloc refuses
                          and mem_calloc(&pool, <Py_ssize_t>1 << 60, 1) == NULL
                          and mem_realloc(&pool, block[0], <Py_ssize_t>1 << 62, 8) == NULL
                          and mem_realloc(&pool, block[0], <Py_ssize_t>1 << 60, 1) == NULL
                          and mem_grow(&pool, <void**>&block[0], &cap[0], <Py_ssize_t>1 << 61,
                                       8, 1) == -1
                          and pool.blocks == before and cap[0] == 2 * sizes[0])
        for m in range(sizes[0]):
            failed_cleanly = failed_cleanly and block[0][m] == <uint8_t>(m)
        return {"after_alloc": after_alloc, "after_grow": after_grow, "after_free": after_free,
                "kept": kept, "zeroed": zeroed, "failed_cleanly": failed_cleanly}
    finally:
        mem_free_all(&pool)
        assert pool.blocks == 0
