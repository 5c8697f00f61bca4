"""Compiled parity-aware merge loop: the semantics of ``cybpe.reference.parity`` (read its
docstring), driven by ``cybpe.training.parity.train_parity_merges``.

Data (structures and helpers from ``trainer.pxd``, shared with the single-language trainer):

* one ``Node`` per byte of every unique chunk (training and dev chunks of all languages, each
  chunk once), linked into the chunk's current token sequence;
* per chunk, its training weights and its dev weights as ``(language, weight)`` lists (CSR arrays)
  and its summed training weight;
* ``sites``: a pair table whose count is the pair's number of live occurrences (unweighted), with
  the occurrence lists (left-node ids) in the shared pool: which chunks a merge touches;
* per language, and one more for the summed counts of the hybrid variant: a pair table of
  training counts and a lazy max-heap over it;
* the dev lengths per language, updated as merge sites shrink dev chunks;
* a table of the pairs a rule (``max_token_length``, the veto) refused, asked once per pair.

A step: pick the language (the longest dev length, first in order on ties; with a window, those
over their share of the recent choices are asked last), take the best pair of its heap (or of
the summed heap during the first ``global_merges`` merges), and apply it to every chunk through
the pair's occurrence list, updating the site counts, every language's counts, the summed counts
while they are still needed, and the dev lengths.

Design (the measurements: docs/history.md, "Parity-aware loop")
---------------------------------------------------------------
* A pair's counts live in one sparse table per language rather than a dense ``n_lang`` vector per
  pair: a chunk is nearly always in one language's data only, so a site costs one lookup in the
  site table and one per language the chunk is in (plus the summed table during the hybrid
  phase), and memory stays proportional to the pairs each language really has.
* Count tables are grown one pair at a time (``pairs_reserve(t, 1)``) and only keys are kept
  across a step, never slot indices: reserving the worst case for every language at every step
  (as the single-language trainer does for its one table) would blow small languages' tables up
  to the size of the merge's site count. The site table holds the merging pair's slot pointer
  through the step, so it is reserved for the worst case first, as in the trainer.
* Lazy heaps: each live pair of a language has an entry >= its live count there; a pair whose
  count rose in a step is pushed once, at the end of the step, with its final count (stamped per
  step in the slot's ``rise_step``). The language loop is O(L) per step.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, INT32_MAX, INT64_MAX
from libc.stdlib cimport qsort
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from cybpe._c.cpu cimport prefetch_write
from cybpe._c.mem_pool cimport MemPool, mem_free
from cybpe._c.types cimport token_t, count_t, node_t
from cybpe.training.trainer cimport (
    EMPTY_KEY, ERR_NOMEM, ERR_INTERNAL, MAX_NODE_IDS, OCC_NONE,
    RUNNING, STOP_VOCAB, STOP_MIN_FREQUENCY, STOP_NO_PAIRS,
    Node, PairSlot, PairTable, OccPool, HeapEntry, Heap, TokenStore, MergeRun,
    pair_key, grow_array, compare_nodes,
    pairs_find, pairs_find_or_add, pairs_reserve, pairs_delete,
    pool_init, pool_block, occ_drop, occ_append,
    heap_push, heap_pop, heap_sift_down,
    tokens_concat, tokens_pair_too_long, tokens_as_list, ask_veto, stop_name,
)

from cybpe.errors import TrainingError


cdef enum:
    SITES = -1             # the table index of the site table in a Change
    PREFETCH_NODE = 16     # the merge loop pulls in the node this many sites ahead


cdef struct Change:        # a pair noted during a step: which table (SITES, a language, n_lang)
    int32_t table
    uint64_t key


cdef struct MergeLogEntry:  # one merge: internal ids, the language that chose it (-1: summed)
    int32_t left
    int32_t right
    int32_t merged
    int32_t lang
    count_t count


cdef struct Parity:
    MemPool* mem           # the owner's pool: every buffer below
    Node* nodes
    int64_t n_nodes
    int64_t* train_start   # chunk c's training weights: train_lang/weight[train_start[c]:train_start[c+1]]
    int32_t* train_lang
    count_t* train_weight
    int64_t* dev_start     # the same for its dev weights
    int32_t* dev_lang
    count_t* dev_weight
    count_t* total_weight  # chunk c's training weight summed over languages
    int32_t n_lang
    PairTable sites        # count: live occurrences of the pair (unweighted), with their list
    OccPool pool
    PairTable* counts      # n_lang + 1 tables: each language's training counts, then the sum
    Heap* heaps            # one lazy heap per table of ``counts``
    bint summed_live       # the summed table is still maintained (hybrid phase)
    PairTable refused      # pairs a rule refused (a set: the count is unused)
    count_t* dev_len
    int32_t* order         # scratch: the languages in the order a step asks them
    TokenStore tokens
    MergeLogEntry* log     # the merges made, in order
    int64_t n_log
    int64_t log_cap
    Change* risen          # counts that went up in the current step
    int64_t n_risen
    int64_t risen_cap
    Change* emptied        # counts that fell to 0 in the current step
    int64_t n_emptied
    int64_t emptied_cap
    int32_t step
    int32_t n_target
    int32_t n_created
    count_t min_frequency
    int64_t global_merges
    int stop
    int32_t max_token_length  # 0: no limit (HF's rule, as the trainer's pair_too_long)
    void* veto_owner       # the _ParityTrainer whose ``veto`` to ask, or NULL
    int32_t window         # 0: no window; else the number of recent choices remembered
    double alpha           # a language is over its share when count * n_lang > alpha * window
    int32_t* recent        # ring buffer of the last ``window`` languages chosen
    int64_t n_recent       # choices appended so far
    int32_t* recent_count  # per language: its choices inside the window
    bint budget_on         # the cost budget (cybpe.training.parity_budget): while the
    int32_t budget_lang    #   protected language's dev length exceeds budget_limit[step] (the
    count_t* budget_limit  #   last entry past the end), the merge comes from budget_table (the
    int64_t n_budget       #   summed counts, or the protected language's) instead of the
    int32_t budget_table   #   parity choice
    int64_t n_sites        # statistics: merge sites applied, stale occurrences skipped,
    int64_t n_stale        #   veto / length refusals
    int64_t n_refused


# ---------------------------------------------------------------------------------------------
# Count updates inside a step
# ---------------------------------------------------------------------------------------------

cdef inline int note(MemPool* mem, Change** list_, int64_t* n, int64_t* cap, int32_t table,
                     uint64_t key) noexcept nogil:
    if n[0] == cap[0] and grow_array(mem, <void**>list_, cap, n[0] + 1, sizeof(Change)) != 0:
        return ERR_NOMEM
    list_[0][n[0]].table = table
    list_[0][n[0]].key = key
    n[0] += 1
    return 0


cdef inline int sites_down(Parity* t, uint64_t key, const PairSlot* merging) noexcept nogil:
    cdef int64_t s = pairs_find(&t.sites, key)
    cdef PairSlot* slot
    if s < 0:
        return ERR_INTERNAL
    slot = &t.sites.slots[s]
    slot.count -= 1
    if slot.count == 0 and slot != merging:
        # no valid occurrence is left: drop the list now, the slot after the step
        occ_drop(&t.pool, slot)
        return note(t.mem, &t.emptied, &t.n_emptied, &t.emptied_cap, SITES, key)
    return 0


cdef inline int sites_up(Parity* t, uint64_t key, node_t left_node) noexcept nogil:
    # room was reserved for the worst case before the step: no slot moves
    cdef PairSlot* slot = &t.sites.slots[pairs_find_or_add(&t.sites, key)]
    slot.count += 1
    return occ_append(t.mem, &t.pool, slot, left_node)


cdef inline int count_down(Parity* t, int32_t table, uint64_t key, count_t w) noexcept nogil:
    cdef PairTable* pairs = &t.counts[table]
    cdef int64_t s = pairs_find(pairs, key)
    if s < 0:
        return ERR_INTERNAL
    pairs.slots[s].count -= w
    if pairs.slots[s].count == 0:
        return note(t.mem, &t.emptied, &t.n_emptied, &t.emptied_cap, table, key)
    return ERR_INTERNAL if pairs.slots[s].count < 0 else 0


cdef inline int count_up(Parity* t, int32_t table, uint64_t key, count_t w) noexcept nogil:
    cdef PairTable* pairs = &t.counts[table]
    cdef PairSlot* slot
    if pairs_reserve(t.mem, pairs, 1) != 0:
        return ERR_NOMEM
    slot = &pairs.slots[pairs_find_or_add(pairs, key)]
    slot.count += w
    if slot.rise_step != t.step:
        slot.rise_step = t.step
        return note(t.mem, &t.risen, &t.n_risen, &t.risen_cap, table, key)
    return 0


cdef inline int weights_down(Parity* t, int32_t chunk, uint64_t key, bint track) noexcept nogil:
    """Take one occurrence of ``key`` in ``chunk`` out of every language's counts (and the sum)."""
    cdef int64_t e
    for e in range(t.train_start[chunk], t.train_start[chunk + 1]):
        if count_down(t, t.train_lang[e], key, t.train_weight[e]) != 0:
            return ERR_INTERNAL
    if track and t.total_weight[chunk] > 0:
        return count_down(t, t.n_lang, key, t.total_weight[chunk])
    return 0


cdef inline int weights_up(Parity* t, int32_t chunk, uint64_t key, bint track) noexcept nogil:
    cdef int64_t e
    for e in range(t.train_start[chunk], t.train_start[chunk + 1]):
        if count_up(t, t.train_lang[e], key, t.train_weight[e]) != 0:
            return ERR_NOMEM
    if track and t.total_weight[chunk] > 0:
        return count_up(t, t.n_lang, key, t.total_weight[chunk])
    return 0


cdef int apply_merge(Parity* t, uint64_t key, token_t merged_id, bint track) noexcept nogil:
    """Replace every occurrence of ``key`` by ``merged_id`` (left to right per chunk) and update
    the site counts, the counts of every language (and the sum when ``track``), the dev lengths."""
    cdef token_t a = <token_t>(key >> 32)
    cdef token_t b = <token_t><uint32_t>key
    cdef Node* nodes = t.nodes
    cdef int64_t s = pairs_find(&t.sites, key)
    cdef int64_t n_sites, idx, r, e
    cdef PairSlot* merging
    cdef PairTable* pairs
    cdef const node_t* occ
    cdef node_t i, j, p, k
    cdef int32_t chunk
    cdef int rc
    if s < 0:
        return ERR_INTERNAL
    n_sites = t.sites.slots[s].occ_len
    if pairs_reserve(t.mem, &t.sites, 2 * n_sites) != 0:
        return ERR_NOMEM
    merging = &t.sites.slots[pairs_find(&t.sites, key)]
    if merging.unsorted:
        qsort(pool_block(&t.pool, merging.occ_block), <size_t>n_sites, sizeof(node_t),
              compare_nodes)
        merging.unsorted = 0
    t.step += 1
    t.n_risen = 0
    t.n_emptied = 0
    for idx in range(n_sites):
        occ = pool_block(&t.pool, merging.occ_block)   # the pool may have moved (sites_up)
        if idx + PREFETCH_NODE < n_sites:
            prefetch_write(&nodes[occ[idx + PREFETCH_NODE]])
        i = occ[idx]
        if nodes[i].sym != a:
            t.n_stale += 1
            continue
        j = nodes[i].next
        if j < 0 or nodes[j].sym != b:
            t.n_stale += 1
            continue
        t.n_sites += 1
        chunk = nodes[i].chunk
        p = nodes[i].prev
        k = nodes[j].next
        merging.count -= 1
        if weights_down(t, chunk, key, track) != 0:
            return ERR_INTERNAL
        if p >= 0:
            if sites_down(t, pair_key(nodes[p].sym, a), merging) != 0:
                return ERR_INTERNAL
            if weights_down(t, chunk, pair_key(nodes[p].sym, a), track) != 0:
                return ERR_INTERNAL
        if k >= 0:
            if sites_down(t, pair_key(b, nodes[k].sym), merging) != 0:
                return ERR_INTERNAL
            if weights_down(t, chunk, pair_key(b, nodes[k].sym), track) != 0:
                return ERR_INTERNAL
        for e in range(t.dev_start[chunk], t.dev_start[chunk + 1]):
            t.dev_len[t.dev_lang[e]] -= t.dev_weight[e]
        nodes[i].sym = merged_id
        nodes[i].next = k
        nodes[j].sym = -1
        if k >= 0:
            nodes[k].prev = i
        if p >= 0:
            if sites_up(t, pair_key(nodes[p].sym, merged_id), p) != 0:
                return ERR_NOMEM
            if weights_up(t, chunk, pair_key(nodes[p].sym, merged_id), track) != 0:
                return ERR_NOMEM
        if k >= 0:
            if sites_up(t, pair_key(merged_id, nodes[k].sym), i) != 0:
                return ERR_NOMEM
            if weights_up(t, chunk, pair_key(merged_id, nodes[k].sym), track) != 0:
                return ERR_NOMEM
    if merging.count != 0:
        return ERR_INTERNAL
    occ_drop(&t.pool, merging)
    for r in range(t.n_risen):
        pairs = &t.counts[t.risen[r].table]
        s = pairs_find(pairs, t.risen[r].key)
        if s >= 0 and pairs.slots[s].count > 0:
            rc = heap_push(t.mem, &t.heaps[t.risen[r].table], pairs.slots[s].count, t.risen[r].key)
            if rc != 0:
                return rc
    # deletions move slots, so they come last (the merged pair is among the emptied counts)
    pairs_delete(&t.sites, key)
    for r in range(t.n_emptied):
        pairs = &t.sites if t.emptied[r].table == SITES else &t.counts[t.emptied[r].table]
        s = pairs_find(pairs, t.emptied[r].key)
        if s >= 0 and pairs.slots[s].count == 0:
            pairs_delete(pairs, t.emptied[r].key)
    return 0


# ---------------------------------------------------------------------------------------------
# Choosing the merge
# ---------------------------------------------------------------------------------------------

cdef int rules_refuse(Parity* t, uint64_t key) noexcept nogil:
    """1 if a rule refuses the pair (remembered for every language), 0 if not, < 0 = error."""
    cdef token_t left = <token_t>(key >> 32)
    cdef token_t right = <token_t><uint32_t>key
    cdef int verdict = 0
    if t.max_token_length > 0 and tokens_pair_too_long(&t.tokens, left, right, t.max_token_length):
        verdict = 1
    elif t.veto_owner != NULL:
        verdict = ask_veto(t.veto_owner, &t.tokens, left, right)
        if verdict < 0:
            return verdict
    if verdict:
        if pairs_reserve(t.mem, &t.refused, 1) != 0:
            return ERR_NOMEM
        pairs_find_or_add(&t.refused, key)
        t.n_refused += 1
    return verdict


cdef int best_pair(Parity* t, int32_t table, uint64_t* key, count_t* count) noexcept nogil:
    """The best allowed live pair of ``table`` (lazy: stale entries are dropped or re-pushed, the
    winner stays on top). 1 when found, 0 when the table has none, < 0 = error."""
    cdef Heap* heap = &t.heaps[table]
    cdef PairTable* pairs = &t.counts[table]
    cdef bint has_rules = t.max_token_length > 0 or t.veto_owner != NULL
    cdef HeapEntry top
    cdef int64_t s
    cdef count_t live
    cdef int rc
    while heap.size > 0:
        top = heap.data[0]
        s = pairs_find(pairs, top.key)
        live = pairs.slots[s].count if s >= 0 else 0
        if live <= 0:
            heap_pop(heap)
            continue
        if has_rules and t.refused.slots != NULL and pairs_find(&t.refused, top.key) >= 0:
            heap_pop(heap)
            continue
        if live != top.count:
            heap_pop(heap)
            rc = heap_push(t.mem, heap, live, top.key)
            if rc != 0:
                return rc
            continue
        if has_rules:
            rc = rules_refuse(t, top.key)
            if rc < 0:
                return rc
            if rc:
                heap_pop(heap)
                continue
        key[0] = top.key
        count[0] = live
        return 1
    return 0


cdef inline bint over_share(const Parity* t, int32_t lang) noexcept nogil:
    return t.window > 0 and <double>(<int64_t>t.recent_count[lang] * t.n_lang) > t.alpha * t.window


cdef inline bint asked_before(const Parity* t, int32_t x, int32_t y) noexcept nogil:
    """Whether language ``x`` is asked before ``y``: within its window share first, then the
    longer dev length, then the earlier language."""
    cdef bint over_x = over_share(t, x)
    cdef bint over_y = over_share(t, y)
    if over_x != over_y:
        return over_y
    if t.dev_len[x] != t.dev_len[y]:
        return t.dev_len[x] > t.dev_len[y]
    return x < y


cdef inline bint over_budget(const Parity* t) noexcept nogil:
    if not t.budget_on:
        return False
    return t.dev_len[t.budget_lang] > t.budget_limit[t.n_log if t.n_log < t.n_budget else t.n_budget - 1]


cdef int choose(Parity* t, uint64_t* key, count_t* count, int32_t* lang, bint* budgeted) noexcept nogil:
    """The next merge: 1 when found (``lang`` -1 for a summed-count merge), 0 when no language has
    an allowed pair, < 0 = error. ``budgeted``: the cost budget chose it (not the parity rule)."""
    cdef int32_t n, m, x
    cdef int rc
    budgeted[0] = False
    if t.n_log < t.global_merges:
        lang[0] = -1
        return best_pair(t, t.n_lang, key, count)
    if over_budget(t):
        budgeted[0] = True
        lang[0] = -1 if t.budget_table == t.n_lang else t.budget_table
        return best_pair(t, t.budget_table, key, count)
    for n in range(t.n_lang):   # insertion sort: L is small and the order changes little
        x = n
        m = n
        while m > 0 and asked_before(t, x, t.order[m - 1]):
            t.order[m] = t.order[m - 1]
            m -= 1
        t.order[m] = x
    for n in range(t.n_lang):
        rc = best_pair(t, t.order[n], key, count)
        if rc != 0:
            lang[0] = t.order[n]
            return rc
    return 0


cdef void remember_choice(Parity* t, int32_t lang) noexcept nogil:
    cdef int64_t slot
    if t.window == 0 or lang < 0:
        return
    slot = t.n_recent % t.window
    if t.n_recent >= t.window:
        t.recent_count[t.recent[slot]] -= 1
    t.recent[slot] = lang
    t.recent_count[lang] += 1
    t.n_recent += 1


cdef int log_merge(Parity* t, token_t left, token_t right, token_t merged_id, int32_t lang,
                   count_t count) noexcept nogil:
    cdef MergeLogEntry* entry
    if t.n_log == t.log_cap and grow_array(t.mem, <void**>&t.log, &t.log_cap, t.n_log + 1,
                                           sizeof(MergeLogEntry)) != 0:
        return ERR_NOMEM
    entry = &t.log[t.n_log]
    entry.left = left
    entry.right = right
    entry.merged = merged_id
    entry.lang = lang
    entry.count = count
    t.n_log += 1
    return 0


cdef void drop_summed(Parity* t) noexcept nogil:
    """The hybrid phase is over: the summed counts are no longer needed."""
    mem_free(t.mem, t.counts[t.n_lang].slots_raw)
    t.counts[t.n_lang].slots_raw = NULL
    t.counts[t.n_lang].slots = NULL
    t.counts[t.n_lang].live = 0
    mem_free(t.mem, t.heaps[t.n_lang].data)
    t.heaps[t.n_lang].data = NULL
    t.heaps[t.n_lang].size = 0
    t.heaps[t.n_lang].cap = 0
    t.summed_live = False


cdef int run_parity(Parity* t) noexcept nogil:
    """Merge until a stop condition (``t.stop``); < 0 = error."""
    cdef uint64_t key
    cdef count_t count
    cdef int32_t lang
    cdef token_t merged_id
    cdef bint is_new = False
    cdef bint track
    cdef bint budgeted = False
    cdef int rc
    while True:
        if t.n_created >= t.n_target:
            t.stop = STOP_VOCAB
            return 0
        rc = choose(t, &key, &count, &lang, &budgeted)
        if rc < 0:
            return rc
        if rc == 0:
            t.stop = STOP_NO_PAIRS
            return 0
        if count < t.min_frequency:
            t.stop = STOP_MIN_FREQUENCY
            return 0
        if not budgeted:
            remember_choice(t, lang)
        merged_id = tokens_concat(t.mem, &t.tokens, <token_t>(key >> 32), <token_t><uint32_t>key, &is_new)
        if merged_id < 0:
            return ERR_NOMEM
        rc = log_merge(t, <token_t>(key >> 32), <token_t><uint32_t>key, merged_id, lang, count)
        if rc != 0:
            return rc
        # the next merge may use the summed counts too: in the hybrid phase, or under a budget
        # whose fallback is the summed counts
        track = t.n_log < t.global_merges or (t.budget_on and t.budget_table == t.n_lang)
        rc = apply_merge(t, key, merged_id, track)
        if rc != 0:
            return rc
        if t.summed_live and not track:
            drop_summed(t)
        if is_new:
            t.n_created += 1


cdef int count_initial_pairs(Parity* t) noexcept nogil:
    """Site counts with their (sorted) occurrence lists, every table's counts, the heaps."""
    cdef Node* nodes = t.nodes
    cdef int64_t i, e, s
    cdef int32_t chunk, table
    cdef uint64_t key
    cdef PairSlot* slot
    cdef PairTable* pairs
    cdef Heap* heap
    cdef int rc
    for i in range(t.n_nodes):
        if nodes[i].next < 0:
            continue
        key = pair_key(nodes[i].sym, nodes[nodes[i].next].sym)
        if pairs_reserve(t.mem, &t.sites, 1) != 0:
            return ERR_NOMEM
        slot = &t.sites.slots[pairs_find_or_add(&t.sites, key)]
        slot.count += 1
        if occ_append(t.mem, &t.pool, slot, <node_t>i) != 0:
            return ERR_NOMEM
        chunk = nodes[i].chunk
        for e in range(t.train_start[chunk], t.train_start[chunk + 1]):
            pairs = &t.counts[t.train_lang[e]]
            if pairs_reserve(t.mem, pairs, 1) != 0:
                return ERR_NOMEM
            pairs.slots[pairs_find_or_add(pairs, key)].count += t.train_weight[e]
        if t.summed_live and t.total_weight[chunk] > 0:
            pairs = &t.counts[t.n_lang]
            if pairs_reserve(t.mem, pairs, 1) != 0:
                return ERR_NOMEM
            pairs.slots[pairs_find_or_add(pairs, key)].count += t.total_weight[chunk]
    for table in range(t.n_lang + 1):
        pairs = &t.counts[table]
        heap = &t.heaps[table]
        if pairs.slots == NULL:
            continue
        if grow_array(t.mem, <void**>&heap.data, &heap.cap, pairs.live + 1, sizeof(HeapEntry)) != 0:
            return ERR_NOMEM
        for s in range(<int64_t>(pairs.mask + 1)):
            if pairs.slots[s].key != EMPTY_KEY:
                heap.data[heap.size].count = pairs.slots[s].count
                heap.data[heap.size].key = pairs.slots[s].key
                heap.size += 1
        for i in range(heap.size // 2 - 1, -1, -1):
            heap_sift_down(heap, i)
    return 0


# ---------------------------------------------------------------------------------------------
# Python side
# ---------------------------------------------------------------------------------------------

MAX_NODES = MAX_NODE_IDS   # node ids are int32 with -1 as "none"


cdef check_csr(const int64_t[::1] start, const int32_t[::1] langs, const int64_t[::1] weights,
               Py_ssize_t n_chunks, int32_t n_lang):
    """Refuse weight lists that do not fit the chunks (the loop trusts them)."""
    cdef Py_ssize_t c, e
    if (start.shape[0] != n_chunks + 1 or start[0] != 0 or start[n_chunks] != langs.shape[0]
            or weights.shape[0] != langs.shape[0]):
        raise ValueError("_ParityTrainer.load: the weight lists do not match the chunks")
    for c in range(n_chunks):
        if start[c] > start[c + 1]:
            raise ValueError("_ParityTrainer.load: chunk starts must not decrease")
    for e in range(langs.shape[0]):
        if not 0 <= langs[e] < n_lang or weights[e] <= 0:
            raise ValueError("_ParityTrainer.load: bad language index or weight")


cdef class _ParityTrainer(MergeRun):
    """One parity training run: its buffers come from the MergeRun's pool (freed with it, also
    after errors). One run per instance; not for sharing between threads
    (``train_parity_merges`` makes one per call)."""

    cdef Parity t

    def __cinit__(self):
        self.t.mem = &self.mem
        self.doing = "training parity-aware merges"

    def load(self, list chunks, const int64_t[::1] train_start, const int32_t[::1] train_lang,
             const int64_t[::1] train_weight, const int64_t[::1] dev_start,
             const int32_t[::1] dev_lang, const int64_t[::1] dev_weight, list dev_lengths,
             list byte_order, int32_t n_target, count_t min_frequency, int64_t global_merges,
             int32_t max_token_length, veto, int32_t window, double alpha):
        """Copy the unique chunks (``bytes`` of length >= 2) into nodes with their per-language
        weights (CSR: chunk ``c``'s entries are ``[start[c], start[c + 1])``), count the pairs."""
        cdef Py_ssize_t n_chunks = len(chunks), c
        cdef int32_t n_lang = len(dev_lengths), l
        cdef int32_t id_of_byte[256]
        cdef int64_t total = 0, base = 0, m, n, e
        cdef const uint8_t* text
        cdef Node* node
        cdef int rc
        if self.t.nodes != NULL:
            raise RuntimeError("a _ParityTrainer loads its chunks once")
        check_csr(train_start, train_lang, train_weight, n_chunks, n_lang)
        check_csr(dev_start, dev_lang, dev_weight, n_chunks, n_lang)
        if self.t.budget_on:
            if self.t.budget_lang >= n_lang:
                raise ValueError("_ParityTrainer.load: the budget's language is not among the languages")
            if self.t.budget_table < 0:
                self.t.budget_table = n_lang
        for c in range(n_chunks):
            if PyBytes_GET_SIZE(chunks[c]) < 2:
                raise ValueError("_ParityTrainer.load: chunks must be bytes of length >= 2")
        self.set_byte_order(byte_order, id_of_byte)
        for c in range(n_chunks):
            total += PyBytes_GET_SIZE(chunks[c])
        if total > MAX_NODES:
            raise TrainingError(
                f"the unique chunks hold more than {MAX_NODES} bytes in total, the most one "
                f"training run can index (int32 node ids); train on a sample")
        self.t.n_lang = n_lang
        self.t.n_nodes = total
        self.t.nodes = <Node*>self.alloc(total, sizeof(Node))
        self.t.train_start = <int64_t*>self.alloc(n_chunks + 1, sizeof(int64_t))
        self.t.dev_start = <int64_t*>self.alloc(n_chunks + 1, sizeof(int64_t))
        self.t.train_lang = <int32_t*>self.alloc(train_lang.shape[0], sizeof(int32_t))
        self.t.train_weight = <count_t*>self.alloc(train_weight.shape[0], sizeof(count_t))
        self.t.dev_lang = <int32_t*>self.alloc(dev_lang.shape[0], sizeof(int32_t))
        self.t.dev_weight = <count_t*>self.alloc(dev_weight.shape[0], sizeof(count_t))
        self.t.total_weight = <count_t*>self.alloc(n_chunks, sizeof(count_t))
        self.t.counts = <PairTable*>self.alloc(n_lang + 1, sizeof(PairTable), True)
        self.t.heaps = <Heap*>self.alloc(n_lang + 1, sizeof(Heap), True)
        self.t.dev_len = <count_t*>self.alloc(n_lang, sizeof(count_t))
        self.t.order = <int32_t*>self.alloc(n_lang, sizeof(int32_t))
        self.t.recent = <int32_t*>self.alloc(window, sizeof(int32_t))
        self.t.recent_count = <int32_t*>self.alloc(n_lang, sizeof(int32_t), True)
        for c in range(n_chunks + 1):
            self.t.train_start[c] = train_start[c]
            self.t.dev_start[c] = dev_start[c]
        for e in range(train_lang.shape[0]):
            self.t.train_lang[e] = train_lang[e]
            self.t.train_weight[e] = train_weight[e]
        for e in range(dev_lang.shape[0]):
            self.t.dev_lang[e] = dev_lang[e]
            self.t.dev_weight[e] = dev_weight[e]
        for c in range(n_chunks):
            self.t.total_weight[c] = 0
            for e in range(train_start[c], train_start[c + 1]):
                self.t.total_weight[c] += train_weight[e]
            chunk = chunks[c]
            n = PyBytes_GET_SIZE(chunk)
            text = <const uint8_t*>PyBytes_AS_STRING(chunk)
            for m in range(n):
                node = &self.t.nodes[base + m]
                node.sym = id_of_byte[text[m]]
                node.prev = <node_t>(base + m - 1) if m > 0 else -1
                node.next = <node_t>(base + m + 1) if m + 1 < n else -1
                node.chunk = <int32_t>c
            base += n
        for l in range(n_lang):
            self.t.dev_len[l] = dev_lengths[l]
            self.t.order[l] = l
        self.init_tokens(&self.t.tokens, [])
        pool_init(&self.t.pool)
        self.t.n_target = n_target
        self.t.min_frequency = min_frequency
        self.t.global_merges = global_merges
        self.t.summed_live = global_merges > 0 or (self.t.budget_on and self.t.budget_table == n_lang)
        self.t.max_token_length = max_token_length
        self.t.veto_owner = self.set_veto(veto)
        self.t.window = window
        self.t.alpha = alpha
        with nogil:
            rc = count_initial_pairs(&self.t)
        self.check(rc)

    def set_budget(self, int32_t lang, const int64_t[::1] limits, bint summed):
        """Before ``load``: the cost budget. While language ``lang``'s dev length is above
        ``limits[k]`` after ``k`` merges (the last limit for every later ``k``), the merge is the
        best pair of the summed counts (``summed``) or of ``lang``'s own counts."""
        cdef Py_ssize_t k
        if self.t.nodes != NULL:
            raise RuntimeError("set_budget comes before load")
        if lang < 0 or limits.shape[0] < 1:
            raise ValueError("_ParityTrainer.set_budget: bad language or limits")
        mem_free(&self.mem, self.t.budget_limit)
        self.t.budget_limit = <count_t*>self.alloc(limits.shape[0], sizeof(count_t))
        for k in range(limits.shape[0]):
            self.t.budget_limit[k] = limits[k]
        self.t.n_budget = limits.shape[0]
        self.t.budget_lang = lang
        self.t.budget_table = -1 if summed else lang   # -1: the summed table, set by load
        self.t.budget_on = True

    def run(self):
        """Merge until a stop condition, without the GIL (taken back only to ask the veto)."""
        cdef int rc
        with nogil:
            rc = run_parity(&self.t)
        self.check(rc)

    def stats(self):
        """Counters for tests and benchmarks."""
        return {"nodes": self.t.n_nodes, "sites": self.t.n_sites, "stale": self.t.n_stale,
                "refused_pairs": self.t.n_refused, "live_pairs": self.t.sites.live,
                "mem_blocks": self.mem.blocks}

    def result(self):
        """``(merges, new_ids, counts, token_bytes, chosen, dev_lengths, stop_reason)`` with
        external ids (bytes 0..255, then the new tokens)."""
        cdef int64_t k
        merges = [(self.external(self.t.log[k].left), self.external(self.t.log[k].right))
                  for k in range(self.t.n_log)]
        new_ids = [self.external(self.t.log[k].merged) for k in range(self.t.n_log)]
        counts = [self.t.log[k].count for k in range(self.t.n_log)]
        chosen = [self.t.log[k].lang for k in range(self.t.n_log)]
        dev_lengths = [self.t.dev_len[k] for k in range(self.t.n_lang)]
        return (merges, new_ids, counts, tokens_as_list(&self.t.tokens), chosen, dev_lengths,
                stop_name(self.t.stop))


#: The public name the Python driver (``cybpe.training.parity``) builds the loop by.
ParityTrainer = _ParityTrainer
