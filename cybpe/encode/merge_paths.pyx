"""The merge paths of the rank encoder: BPE of one piece past the whole-piece lookup.

Five paths give the same ids (the tests run each against the others and the pure-Python
reference): tiktoken's linear rescan for short pieces, a binary heap with lazy deletion for
medium ones, a bucket queue by rank for long ones, a run-length path for a piece of one
repeated byte, and a path for pieces with CJK, kana or Hangul that takes each such character
as one part (char_merges.pxd). ``merge_piece`` picks one (or is told which, for the tests).
"""

# Performance notes (the measurements: docs/history.md, "Merge paths")
# -----------------
# * Merge paths: tiktoken's linear rescan (O(n*m)) for pieces <= LINEAR_MAX_LEN bytes, a heap
#   with lazy deletion above: CJK/ru pieces (mostly not tokens) are fastest with the heap from
#   shorter lengths than English, and 32 is the compromise. Both paths keep small pieces'
#   scratch on the stack (no malloc per piece).
# * Heap entries are uint64 (rank << 32 | start): one compare orders by rank, then leftmost.
#   An entry is live iff cur_rank[start] still equals its rank, so popping validates with one
#   load and no hash lookup.
# * The first merge round reads a 256x256 byte-pair rank table (256 KB) instead of hashing n-1
#   pairs (faster on ru and ja, the same on en/code).
# * Long pieces (>= BUCKET_MIN_LEN bytes) use a bucket queue by rank instead of the heap, whose
#   sift_down dominated them. Buckets are chunk lists (14 starts per 64-byte chunk, not one
#   start per node: less pointer chasing), a bitmap finds the next non-empty rank (no clearing
#   and scanning of the list heads per piece), the parts' fields share one struct (one miss
#   per part, not four) and parts are prefetched 8 entries ahead.
# * A piece of one repeated byte (runs of spaces, newlines, "=" or "a") takes the run-length
#   path, which works on (token, count) runs: a few dozen rounds instead of n merges.
# * The linear path finds the lowest rank and its place in one scalar pass (branch-free: cmov),
#   and shifts the parts after a merge with fixed-size copies the compiler inlines (the stack
#   arrays have room past the last part), not two memmove calls: with a piece's few pairs, a
#   vectorised min plus a scan for its first occurrence and the calls cost more than the work.
# * A piece of at most 96 bytes with CJK, kana or Hangul (a three-byte character from U+3000)
#   first tries the character path: a third as many parts, and no pair lookups inside
#   characters. Cold passes, Llama 3 ja +8%, o200k zh-Hant +9%. Abugidas (U+0800-U+2FFF) stay
#   bytes: their marks often merge with a neighbour before the characters are done, where the
#   path is slower (o200k Tamil -10-25%). Its first round's pair lookups are not prefetched:
#   that cost 3-5% on the parts bench.

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

from cybpe.encode.char_merges cimport (
    CHAR_NO_ID, char_entry, char_entry_id, char_entry_split, char_entry_token, char_entry_wait,
    is_form_lead, mixed_place)
from cybpe.encode.rank_tables cimport MAX_IDS, RANK_NONE, RankTables, merged_id, pair_rank, pair_ranks_two
from cybpe._c.cpu cimport lowest_bit, prefetch_read
from cybpe._c.types cimport IdBuffer, rank_t, token_t


cdef enum:
    LINEAR_MAX_LEN = 32       # pieces up to this length use the linear path, longer the heap
    LINEAR_STACK = 128        # parts the linear path keeps on the stack
    SHORT_LEN = 16            # pieces up to this length move 16 parts a merge, longer ones 32
    HEAP_STACK = 256          # pieces up to this length keep the heap path's arrays on the stack
    BUCKET_MIN_LEN = 1024     # pieces from this length use the bucket queue, not the heap
    RUNS_MAX = 64             # runs the run-length path keeps before it gives up
    RUNS_MAX_ROUNDS = 4096    # merge rounds the run-length path does before it gives up
    GAVE_UP = 1               # a merge path's "use another path" (nothing was written)
    CHARS_MAX = 32            # most parts the character path takes (its loop scans them all)


cdef inline void drop_part(int32_t* a, Py_ssize_t i, Py_ssize_t parts,
                           int32_t* buf) noexcept nogil:
    """a[i + 1 : i + 1 + parts] = a[i + 2 : i + 2 + parts], through buf (of parts entries).
    parts is a constant at every call, so gcc inlines both copies as vector moves."""
    memcpy(buf, a + i + 2, parts * sizeof(int32_t))
    memcpy(a + i + 1, buf, parts * sizeof(int32_t))


cdef inline uint64_t rank_key(const rank_t* ranks, Py_ssize_t j) noexcept nogil:
    return ((<uint64_t><uint32_t>ranks[j]) << 32) | <uint64_t>j


cdef inline rank_t lowest_rank(const rank_t* ranks, Py_ssize_t m, Py_ssize_t* at) noexcept nogil:
    """The lowest of the ranks of m >= 2 parts' pairs (ranks[0:m-1]), its place in at[0]: one
    pass over keys rank << 32 | place, whose least is the leftmost of the lowest ranks. The
    selects compile to conditional moves (a compare that branches mispredicts about ln(m) times
    a scan, where a lower rank turns up at a place no predictor knows), in two chains that run
    side by side (one chain's latency made short pieces slower than the branches)."""
    cdef uint64_t even = rank_key(ranks, 0), odd = <uint64_t>-1, key
    cdef Py_ssize_t j = 1
    while j + 1 < m - 1:
        key = rank_key(ranks, j)
        odd = key if key < odd else odd
        key = rank_key(ranks, j + 1)
        even = key if key < even else even
        j += 2
    if j < m - 1:
        key = rank_key(ranks, j)
        odd = key if key < odd else odd
    even = odd if odd < even else even
    at[0] = <Py_ssize_t><uint32_t>even
    return <rank_t>(even >> 32)


cdef inline void rank_neighbours(const RankTables* t, const token_t* tokens, rank_t* ranks,
                                 Py_ssize_t k, bint left, bint right) noexcept nogil:
    """After part k has changed: ranks[k] (its pair with part k+1) looked up where right allows
    it, else RANK_NONE, and for k > 0 ranks[k-1] (with part k-1) likewise by left. When both are
    looked up, their first slots load together (pair_ranks_two: the two misses overlap)."""
    if left and right:
        pair_ranks_two(t, tokens[k], tokens[k + 1], tokens[k - 1], tokens[k], &ranks[k], &ranks[k - 1])
        return
    ranks[k] = pair_rank(t, tokens[k], tokens[k + 1]) if right else RANK_NONE
    if k > 0:
        ranks[k - 1] = pair_rank(t, tokens[k - 1], tokens[k]) if left else RANK_NONE


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
    cdef int32_t move_buf[LINEAR_MAX_LEN]
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
        best = lowest_rank(ranks, m, &i)
        if best == RANK_NONE:
            break
        tokens[i] = merged_id(t, best)
        # Fixed-size copies through a buffer (the stack arrays have room past m): a few
        # inlined vector moves, where two calls to memmove a merge cost more than the move.
        if n <= SHORT_LEN:
            drop_part(tokens, i, SHORT_LEN, move_buf)
            drop_part(ranks, i, SHORT_LEN, move_buf)
        elif n <= LINEAR_MAX_LEN:
            drop_part(tokens, i, LINEAR_MAX_LEN, move_buf)
            drop_part(ranks, i, LINEAR_MAX_LEN, move_buf)
        else:
            memmove(tokens + i + 1, tokens + i + 2, (m - i - 2) * sizeof(token_t))
            memmove(ranks + i + 1, ranks + i + 2, (m - i - 2) * sizeof(rank_t))
        m -= 1
        rank_neighbours(t, tokens, ranks, i, i > 0, i + 1 < m)
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
        tokens[start] = merged_id(t, rank)
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
        current = <rank_t>((w << 6) + lowest_bit(bits))
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
                prefetch_read(&parts[work[j + PREFETCH_AHEAD * step]])
            j += step
            part = &parts[start]
            if part.rank != current:
                continue  # stale: the part at start changed (or died) since the push
            right = part.next
            after = parts[right].next
            part.token = merged_id(t, current)
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
        merged = merged_id(t, best)
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


cdef inline void merge_parts(const RankTables* t, token_t* tokens, rank_t* ranks, rank_t* waits,
                             Py_ssize_t* m, rank_t limit) noexcept nogil:
    """BPE of parts, merge_linear's loop, for as long as the lowest pair rank is below limit
    (ranks[k]: the rank of parts k and k+1, RANK_NONE after the last and beside a part that is
    no token: negative, or waiting). waits, when not NULL, moves with the parts. The arrays
    have room for fixed-size moves of CHARS_MAX entries past the last part."""
    cdef Py_ssize_t k, n = m[0]
    cdef rank_t best
    cdef int32_t move_buf[CHARS_MAX]
    while n > 1:
        best = lowest_rank(ranks, n, &k)
        if best >= limit:
            break
        tokens[k] = merged_id(t, best)
        drop_part(tokens, k, CHARS_MAX, move_buf)
        drop_part(ranks, k, CHARS_MAX, move_buf)
        if waits != NULL:
            drop_part(waits, k, CHARS_MAX, move_buf)
        n -= 1
        ranks[n - 1] = RANK_NONE
        rank_neighbours(t, tokens, ranks, k,
                        k > 0 and tokens[k - 1] >= 0 and (waits == NULL or waits[k - 1] == RANK_NONE),
                        k + 1 < n and tokens[k + 1] >= 0 and (waits == NULL or waits[k + 1] == RANK_NONE))
    m[0] = n


cdef void merge_waiting_parts(const RankTables* t, token_t* tokens, rank_t* ranks, rank_t* waits,
                              Py_ssize_t* m) noexcept nogil:
    """BPE of parts some of which wait (waits[k] < RANK_NONE) for a rank to become their token
    (tokens[k]; negative: a part that never merges; ranks as for merge_parts, RANK_NONE beside
    a waiting part), in the order BPE takes merges and waits: the merges below the lowest wait,
    then that part becomes its token (the leftmost of equal waits first), and so on."""
    cdef Py_ssize_t k, n = m[0]
    cdef rank_t wait
    while True:
        wait = RANK_NONE
        for k in range(n):
            if waits[k] < wait:
                wait = waits[k]
        merge_parts(t, tokens, ranks, waits, &n, wait)
        if wait == RANK_NONE:
            break
        k = 0
        while waits[k] != wait:  # where that part is now
            k += 1
        waits[k] = RANK_NONE
        # (the ranks beside a waiting part are RANK_NONE: a pair not looked up stays so)
        rank_neighbours(t, tokens, ranks, k,
                        k > 0 and tokens[k - 1] >= 0 and waits[k - 1] == RANK_NONE,
                        k + 1 < n and tokens[k + 1] >= 0 and waits[k + 1] == RANK_NONE)
    m[0] = n


cdef int merge_chars(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                     IdBuffer* out) noexcept nogil:
    """BPE of s[:n] with its three-byte characters as parts of their own (char_merges.pxd: why
    it is exact): a well-formed three-byte form followed by no continuation byte, across neither
    of whose boundaries a mixed token may occur, is one part; every other byte is a part. GAVE_UP,
    with nothing written, when no character is such a part or there would be more than
    CHARS_MAX parts. out has room for n ids.

    A character part waits for a rank before it is its token. Where every pair of parts has a
    higher rank than the highest wait, the waits all pass before the first merge between parts,
    and the parts merge as tokens from the start (merge_parts); else merge_waiting_parts
    follows the waits too. A character of several ids is a part that never merges (its token
    is -1 - the character's offset)."""
    cdef token_t tokens[2 * CHARS_MAX + 2]  # room for merge_parts' fixed-size moves
    cdef rank_t waits[2 * CHARS_MAX + 2]
    cdef rank_t ranks[2 * CHARS_MAX + 2]
    cdef Py_ssize_t starts[CHARS_MAX + 1]   # a byte part's offset; -1 for a character
    cdef Py_ssize_t m = 0, i = 0, k, chars = 0, checked = -1
    cdef bint checked_mixed = False
    cdef rank_t highest_wait = -1, lowest_pair = RANK_NONE
    cdef uint64_t e
    cdef uint32_t* dst
    if t.char_merges == NULL or n > 3 * CHARS_MAX:
        return GAVE_UP
    while i < n:
        if m == CHARS_MAX:
            return GAVE_UP
        waits[m] = RANK_NONE
        if (is_form_lead(s[i]) and i + 3 <= n and (s[i + 1] & 0xC0) == 0x80
                and (s[i + 2] & 0xC0) == 0x80 and (i + 3 == n or (s[i + 3] & 0xC0) != 0x80)
                and (i == 0 or not (checked_mixed if checked == i else mixed_place(t, s, n, i)))):
            checked = i + 3  # the right boundary, which the next character asks about again
            checked_mixed = i + 3 < n and mixed_place(t, s, n, i + 3)
            if not checked_mixed:
                starts[m] = -1
                e = char_entry(t, s + i)
                if char_entry_split(e):
                    tokens[m] = -1 - <token_t>i
                else:
                    tokens[m] = char_entry_token(e)
                    waits[m] = char_entry_wait(e)
                    if waits[m] > highest_wait:
                        highest_wait = waits[m]
                chars += 1
                i += 3
                m += 1
                continue
        tokens[m] = t.byte_id[s[i]]
        starts[m] = i
        i += 1
        m += 1
    if chars == 0:
        return GAVE_UP
    # Two bytes' pair is read from the byte-pair table, as merge_linear's first round does.
    for k in range(m - 1):
        if starts[k] >= 0 and starts[k + 1] >= 0:
            ranks[k] = t.byte_pair_rank[((<Py_ssize_t>s[starts[k]]) << 8) | s[starts[k + 1]]]
        else:
            ranks[k] = pair_rank(t, tokens[k], tokens[k + 1]) \
                if tokens[k] >= 0 and tokens[k + 1] >= 0 else RANK_NONE
        if ranks[k] < lowest_pair:
            lowest_pair = ranks[k]
    ranks[m - 1] = RANK_NONE
    if lowest_pair > highest_wait:
        merge_parts(t, tokens, ranks, NULL, &m, RANK_NONE)
    else:
        # The waits below every pair's rank still pass before the first merge: only the others
        # are followed, and the pairs beside them wait too.
        for k in range(m):
            if waits[k] < lowest_pair:
                waits[k] = RANK_NONE
            elif waits[k] != RANK_NONE:
                ranks[k] = RANK_NONE
                if k > 0:
                    ranks[k - 1] = RANK_NONE
        merge_waiting_parts(t, tokens, ranks, waits, &m)
    dst = out.data + out.size
    for k in range(m):
        if tokens[k] >= 0:
            dst[0] = <uint32_t>tokens[k]
            dst += 1
            continue
        e = char_entry(t, s + (-1 - tokens[k]))
        for i in range(3):
            if char_entry_id(e, i) != CHAR_NO_ID:
                dst[0] = char_entry_id(e, i)
                dst += 1
    out.size = dst - out.data
    return 0


cdef int merge_piece(const RankTables* t, const uint8_t* s, Py_ssize_t n, IdBuffer* out,
                     int path) noexcept nogil:
    """BPE of s[:n] (n >= 1), past the whole-piece lookup. out has room for n ids. PATH_CHARS
    may return GAVE_UP (the piece is not one the character path takes)."""
    if path == PATH_CHARS:
        return merge_chars(t, s, n, out)
    if n == 1:
        out.data[out.size] = <uint32_t>t.byte_id[s[0]]
        out.size += 1
        return 0
    cdef int rc
    if path == PATH_AUTO and (is_form_lead(s[0]) or is_form_lead(s[1])) \
            and t.char_merges != NULL:
        rc = merge_chars(t, s, n, out)
        if rc != GAVE_UP:
            return rc
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
