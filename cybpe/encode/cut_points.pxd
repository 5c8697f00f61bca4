# Cut points: places inside a piece that no token covers, where BPE can be split exactly.
#
# Every part BPE makes is a token, so a merge across byte position p of a piece (between bytes
# p-1 and p) makes a token that covers both bytes. If no token occurs in the piece across p, BPE
# never merges there, and the two sides merge independently: BPE(s) = BPE(s[:p]) + BPE(s[p:]).
# In CJK text a long letter run is one piece, but most places between two of its characters
# are such cut points (cl100k, Japanese: 78%, Chinese: 52%), and the short parts between them
# repeat far more than the run does, so they hit the piece caches.
#
# The test is conservative: it may call a cut point covered, never the other way round. A token
# T covering p with k of its bytes before p shows there as the window of min(k, 2) bytes before
# p and min(len(T) - k, 2) bytes from p; the tables hold every such window of every token (the
# bitmap is hashed, so a window no token has may still look present: a missed cut, not a wrong
# one), and a byte pair that occurs inside no token at all rules out every window at once.
#
# Usage (header-only; encoder.pyx builds the tables and calls the test):
#
#     from cybpe.encode.cut_points cimport build_cut_tables, free_cut_tables, is_cut_point
#     if build_cut_tables(&tables) != 0: ...        # MemoryError; NULL tables disable cutting
#     if is_cut_point(&tables, s, n, p): ...         # 1 <= p < n: s[:p] and s[p:] merge apart
#     cdef CutMemo memo                              # per call, on the stack
#     cut_memo_start(&memo, NULL, 0, 0)              # or over a thread's slots (thread_cache.pxd)
#     if is_cut_point_memo(&tables, s, n, p, &memo): ...   # the same answer, remembered
#     free_cut_tables(&tables)
#
# Thread safety: the tables are written once by build_cut_tables (before any encode) and only
# read afterwards; covered() is a pure function of them, safe from any thread without the GIL.
# A CutMemo belongs to one call of one thread, and its slots to that thread.

from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from cybpe.encode.rank_tables cimport RankTables
from cybpe._c.cpu cimport FIBONACCI


cdef inline uint64_t window_bit(const RankTables* t, int before, int after, uint32_t packed) noexcept nogil:
    """Bit index of a window: `before` (1-2) bytes before the cut and `after` (1-2) from it,
    packed big-endian into the low 32 bits."""
    cdef uint64_t key = ((<uint64_t>((before - 1) * 2 + (after - 1) + 1)) << 32) | packed
    return (key * FIBONACCI) >> t.straddle_shift


cdef inline bint bit_set(const uint64_t* bits, uint64_t i) noexcept nogil:
    return (bits[i >> 6] >> (i & 63)) & 1


cdef inline bint covered(const RankTables* t, const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """Whether some token may occur in s[:n] across position p (1 <= p < n, and s[p - 1] or
    s[p] is not ASCII: the tables leave out places between two ASCII bytes). False is certain."""
    cdef uint32_t pair = ((<uint32_t>s[p - 1]) << 8) | s[p]
    if not bit_set(t.inner_pairs, pair):
        return False
    if bit_set(t.straddle_bits, window_bit(t, 1, 1, pair)):
        return True
    if p + 2 <= n and bit_set(t.straddle_bits, window_bit(t, 1, 2, (pair << 8) | s[p + 1])):
        return True
    if p >= 2:
        if bit_set(t.straddle_bits, window_bit(t, 2, 1, ((<uint32_t>s[p - 2]) << 16) | pair)):
            return True
        if p + 2 <= n and bit_set(t.straddle_bits, window_bit(
                t, 2, 2, ((<uint32_t>s[p - 2]) << 24) | (pair << 8) | s[p + 1])):
            return True
    return False


cdef inline bint is_cut_point(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                              Py_ssize_t p) noexcept nogil:
    """Where the encoder cuts s[:n] (1 <= p < n): p starts a non-ASCII character, or an ASCII
    byte right after a non-ASCII one, and no token may occur across it. Places between two
    ASCII bytes are never tried: tokens cover nearly all of them, and the tables leave them out."""
    cdef uint8_t here = s[p]
    return (here >= 0xC0 or (here < 0x80 and s[p - 1] >= 0x80)) and not covered(t, s, n, p)


cdef enum:
    CUT_MEMO_CALL_BITS = 11   # a call's own memo, without a thread memo: 2,048 slots (16 KiB)


cdef struct CutMemo:
    # covered() of the places tested, by the four bytes around the place, which are all it reads
    # (s[p-2], s[p-1], s[p], s[p+1]). CJK text tests the same character pairs over and over, and
    # each test is up to four hashed bitmap reads (mostly cache misses); a slot is one read of a
    # table that stays in L1 or L2. Direct-mapped; a slot is (bytes << 32) | stamp | covered,
    # 0 when empty. The slots are the thread's (thread_cache.pxd, 2^14 of them, kept across
    # calls for one encoder: documents of a language share most of their places), or else
    # ``own``, per call on the caller's stack, cleared on first use.
    uint64_t* slots
    uint64_t stamp            # bits 2-31 of every slot this call writes: (generation << 2) | 2
    int shift                 # 64 - log2(slots)
    bint ready                # slots can be read (own is cleared on first use)
    uint64_t own[1 << CUT_MEMO_CALL_BITS]


cdef inline void cut_memo_start(CutMemo* memo, uint64_t* thread_slots, int bits,
                                uint32_t generation) noexcept nogil:
    """Ready memo for a call: over thread_slots (2^bits slots, valid for this 30-bit
    generation of the calling encoder), or, when thread_slots is NULL, over its own."""
    if thread_slots != NULL:
        memo.slots = thread_slots
        memo.stamp = ((<uint64_t>generation) << 2) | 2
        memo.shift = 64 - bits
        memo.ready = True
    else:
        memo.slots = memo.own
        memo.stamp = 2
        memo.shift = 64 - CUT_MEMO_CALL_BITS
        memo.ready = False


cdef inline bint is_cut_point_memo(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                                   Py_ssize_t p, CutMemo* memo) noexcept nogil:
    """is_cut_point, answered from ``memo`` when it has the place's four bytes (and kept there
    when not); places within two bytes of an end are tested directly."""
    cdef uint8_t here = s[p]
    if not (here >= 0xC0 or (here < 0x80 and s[p - 1] >= 0x80)):
        return False
    if memo == NULL or p < 2 or p + 2 > n:
        return not covered(t, s, n, p)
    if not memo.ready:
        memset(memo.own, 0, sizeof(memo.own))
        memo.ready = True
    cdef uint64_t key = ((<uint64_t>s[p - 2]) << 24) | ((<uint64_t>s[p - 1]) << 16) \
        | ((<uint64_t>here) << 8) | s[p + 1]
    cdef uint64_t* slot = &memo.slots[(key * FIBONACCI) >> memo.shift]
    cdef uint64_t tag = (key << 32) | memo.stamp
    if (slot[0] & ~(<uint64_t>1)) == tag:
        return not (slot[0] & 1)
    cdef bint found = covered(t, s, n, p)
    slot[0] = tag | found
    return not found


cdef inline int build_cut_tables(RankTables* t) noexcept nogil:
    """Fill inner_pairs and straddle_bits from every place inside an ordinary token next to a
    non-ASCII byte (16 bits per such place, at least 2^16). 0, or -1 when out of memory (the
    tables stay NULL: no cutting)."""
    cdef Py_ssize_t windows = 0, token, k, length
    cdef int bits = 16, before, after, i
    cdef uint32_t packed
    cdef const uint8_t* s
    for token in range(t.n_tokens):
        s = t.token_blob + t.token_offsets[token]
        length = t.token_offsets[token + 1] - t.token_offsets[token]
        for k in range(1, length):
            windows += s[k - 1] >= 0x80 or s[k] >= 0x80
    while bits < 30 and (<Py_ssize_t>1 << bits) < 16 * windows:
        bits += 1
    t.inner_pairs = <uint64_t*>calloc(65536 // 64, sizeof(uint64_t))
    t.straddle_bits = <uint64_t*>calloc((<Py_ssize_t>1 << bits) // 64, sizeof(uint64_t))
    if t.inner_pairs == NULL or t.straddle_bits == NULL:
        free_cut_tables(t)
        return -1
    t.straddle_shift = 64 - bits
    cdef uint64_t b
    for token in range(t.n_tokens):
        s = t.token_blob + t.token_offsets[token]
        length = t.token_offsets[token + 1] - t.token_offsets[token]
        for k in range(1, length):
            if s[k - 1] < 0x80 and s[k] < 0x80:
                continue  # never asked: cuts are tried only next to a non-ASCII byte
            packed = ((<uint32_t>s[k - 1]) << 8) | s[k]
            t.inner_pairs[packed >> 6] |= (<uint64_t>1) << (packed & 63)
            before = 2 if k >= 2 else 1
            after = 2 if length - k >= 2 else 1
            packed = 0
            for i in range(k - before, k + after):
                packed = (packed << 8) | s[i]
            b = window_bit(t, before, after, packed)
            t.straddle_bits[b >> 6] |= (<uint64_t>1) << (b & 63)
    return 0


cdef inline void free_cut_tables(RankTables* t) noexcept nogil:
    free(t.inner_pairs)
    free(t.straddle_bits)
    t.inner_pairs = NULL
    t.straddle_bits = NULL
