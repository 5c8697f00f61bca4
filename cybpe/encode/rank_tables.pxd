# The rank encoder's read-only tables and the pair lookup every merge path uses. Shared by
# encoder.pyx (which builds the tables) and merge_paths.pyx (which merges with them).

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cybpe._c.types cimport rank_t, token_t

cdef extern from *:
    """
    #define CYBPE_EMPTY_PAIR_SLOT 0xFFFFFFFFFFFFFFFFULL
    #define CYBPE_PAIR_ROW_HASH 0x9E3779B1u
    """
    const uint64_t EMPTY_PAIR_SLOT "CYBPE_EMPTY_PAIR_SLOT"  # a pair slot with nothing in it
    const uint32_t PAIR_ROW_HASH "CYBPE_PAIR_ROW_HASH"     # 2^32 / golden ratio

cdef enum:
    RANK_NONE = 0x7FFFFFFF    # "this pair has no rank"; larger than every real rank
    MAX_IDS = 0x7FFFFFFE      # ids, ranks and part positions are int32


cdef struct TokenSlot:
    # One 32-byte slot of the bytes -> id open-addressing table (the table starts on a 64-byte
    # boundary, so a slot never crosses a cache line). A token of up to 16 bytes is compared
    # entirely in its slot (one cache miss per lookup); a longer one compares its first 16
    # bytes here and the rest in the token blob, found through ``offset`` (one more miss).
    uint64_t head       # head_word() of the token's bytes
    uint64_t tail       # head_word() of its bytes from the 9th on (tokens over 8 bytes); else 0
    int64_t offset      # token_offsets[token]
    int32_t length      # the token's length in bytes
    token_t token       # -1 when the slot is empty


cdef struct RankTables:
    # Everything an encode reads. Filled once by RankEncoder.__cinit__, read-only afterwards.
    # Ordinary token bytes: token t is token_blob[token_offsets[t] : token_offsets[t+1]].
    uint8_t* token_blob
    int64_t* token_offsets
    Py_ssize_t n_tokens
    Py_ssize_t max_token_len
    # bytes -> ordinary id (open addressing, linear probing).
    TokenSlot* token_slots
    uint64_t token_mask                # number of slots - 1
    # (left, right) -> rank: one row per left token, rows laid end to end in pair_slots in
    # token order (row `left` is pair_slots[pair_rows[left] : pair_rows[left + 1]], empty for a
    # token that is never the left of a pair). A row is an open-addressing table of its pairs
    # (linear probing that wraps within the row, at most 2/3 full); a slot is one uint64,
    # right << 32 | rank, all ones when empty. Rows keep each left token's pairs together, so
    # the pairs of the common tokens, which most lookups ask for, share a few hot cache lines
    # (one table hashed over both ids put every pair on a line of its own).
    uint32_t* pair_rows                # n_tokens + 1 row starts
    uint64_t* pair_slots
    Py_ssize_t pair_slot_count         # slots allocated: pair_rows[n_tokens], or 1 when that is 0
    # rank -> the id of the token its merge makes (NULL for an all-splits vocabulary), read by
    # merged_id only when ids do not follow ranks. ids_follow_ranks: every merge of rank r makes
    # token r + rank_id_offset, as in all-splits vocabularies (offset 0) and in HF merge lists
    # whose k-th merge makes token 256 + k (GPT-2, Qwen3 and GPT-4o files; not Llama 3's).
    token_t* rank_to_id
    bint ids_follow_ranks
    token_t rank_id_offset
    Py_ssize_t n_ranks                 # ranks are 0 .. n_ranks-1
    # First-round shortcuts: the id of each byte, the rank of each byte pair (RANK_NONE if none).
    token_t byte_id[256]
    rank_t* byte_pair_rank             # 256 * 256 entries
    bint whole_piece_lookup            # emit a piece that is itself a token as one id
    # Where a piece may be cut before BPE (cut_points.pxd): a bit per byte pair that occurs
    # inside some token, and a hashed bitmap of the byte windows around every such place.
    uint64_t* inner_pairs              # 65536 bits; NULL when the encoder does not cut
    uint64_t* straddle_bits
    int straddle_shift                 # 64 - log2(bits in straddle_bits)
    # CJK, kana and Hangul merged a character at a time (char_merges.pxd): the own BPE of each
    # three-byte form from U+3000, and a bitmap of the places tokens of part-characters may cover.
    uint64_t* char_merges              # FORMS entries; NULL: no such path
    uint64_t* mixed_places             # MIXED_PLACE_BITS bits
    uint64_t cache_owner               # this encoder's serial in the thread caches (thread_cache.pxd)
    uint32_t cache_salt                # thread_cache_salt(cache_owner), mixed into its tags


cdef inline token_t merged_id(const RankTables* t, rank_t rank) noexcept nogil:
    """The id of the token a merge of this rank makes (no table read when ids follow ranks: one
    less dependent load per merge)."""
    return <token_t>rank + t.rank_id_offset if t.ids_follow_ranks else t.rank_to_id[rank]


cdef inline uint32_t pair_row_index(token_t right, uint32_t row_size) noexcept nogil:
    """Where a row of row_size > 0 slots starts looking for its pair with `right`: the high bits
    of a multiplicative hash, scaled to the row (no power-of-two sizes)."""
    return <uint32_t>((<uint64_t>(<uint32_t>right * PAIR_ROW_HASH) * row_size) >> 32)


cdef inline uint64_t* pair_slot(const RankTables* t, uint32_t start, uint32_t size,
                                token_t right) noexcept nogil:
    """The slot of row pair_slots[start : start + size] (size > 0) that holds the pair with
    `right`, or else the empty slot where it goes: the one probing rule of lookups and inserts."""
    cdef uint32_t i = pair_row_index(right, size)
    cdef uint64_t* slot
    while True:
        slot = &t.pair_slots[start + i]
        if <uint32_t>(slot[0] >> 32) == <uint32_t>right or slot[0] == EMPTY_PAIR_SLOT:
            return slot
        i += 1
        if i == size:
            i = 0


cdef inline rank_t pair_rank(const RankTables* t, token_t left, token_t right) noexcept nogil:
    """Rank of merging the adjacent parts (left, right), or RANK_NONE."""
    cdef uint32_t start = t.pair_rows[left]
    cdef uint32_t size = t.pair_rows[left + 1] - start
    cdef uint64_t slot
    if size == 0:
        return RANK_NONE
    slot = pair_slot(t, start, size, right)[0]
    return RANK_NONE if slot == EMPTY_PAIR_SLOT else <rank_t>(<uint32_t>slot)


cdef inline void pair_ranks_two(const RankTables* t, token_t left1, token_t right1, token_t left2,
                                token_t right2, rank_t* rank1, rank_t* rank2) noexcept nogil:
    """pair_rank of two pairs at once (a merge's new right and left neighbours): both rows'
    first slots are found and loaded before either probe, so that their cache misses overlap
    (one after the other, the second waited for the first)."""
    cdef uint32_t start1 = t.pair_rows[left1], start2 = t.pair_rows[left2]
    cdef uint32_t size1 = t.pair_rows[left1 + 1] - start1, size2 = t.pair_rows[left2 + 1] - start2
    cdef uint64_t first1 = EMPTY_PAIR_SLOT, first2 = EMPTY_PAIR_SLOT
    if size1:
        first1 = t.pair_slots[start1 + pair_row_index(right1, size1)]
    if size2:
        first2 = t.pair_slots[start2 + pair_row_index(right2, size2)]
    rank1[0] = rank_from_first_slot(t, first1, left1, right1)
    rank2[0] = rank_from_first_slot(t, first2, left2, right2)


cdef inline rank_t rank_from_first_slot(const RankTables* t, uint64_t first, token_t left,
                                        token_t right) noexcept nogil:
    """pair_rank(left, right) given the pair's first slot in its row (EMPTY_PAIR_SLOT for an
    empty row): the probe goes on past that slot only when it holds another pair."""
    if first == EMPTY_PAIR_SLOT:
        return RANK_NONE
    if <uint32_t>(first >> 32) == <uint32_t>right:
        return <rank_t>(<uint32_t>first)
    return pair_rank(t, left, right)
