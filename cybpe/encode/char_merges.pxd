# Merging a piece with three-byte characters (CJK, kana, Hangul) one character at a time.
#
# Why it is exact. Call a token "whole" if its bytes are well-formed UTF-8 forms end to end,
# and "mixed" if it holds a character boundary (a byte that is no continuation byte, after its
# first) but is not whole. UTF-8 synchronises itself: a whole token occurs in a piece only from
# a form's first byte to a form's last. Take a three-byte character Z of a piece such that no
# mixed token occurs across either of its boundaries (the test below) and no continuation
# byte follows it. A merge across one of its boundaries makes a token across it, hence a whole
# one, and both its halves are whole too (a half that ended or began inside a character would
# cross a boundary without being whole), so the half on Z's side holds all of Z. So the only
# merges that touch Z's bytes are, first, Z's own (which see nothing but Z's three bytes: they
# are the BPE of Z alone, known in advance) and then merges of whole tokens. Z alone ends as
# one token after two merges, or as two or three ids that never merge with anything. Of Z's
# two merges only the later in time can be followed by a merge with a neighbour, and BPE takes
# it exactly when the larger of the two ranks is the lowest rank left (if the second rank is
# the lower, it comes right after the first). So Z is one part that "waits" for that rank; the
# merge loop takes the lowest of the waits and of the ranks of adjacent pairs of tokens
# (leftmost on ties; a wait and a pair never share a rank, as their merges make different
# tokens). Every other byte of the piece is a part of its own, as in the byte-level paths.
#
# The test is conservative: every boundary inside a mixed token sets a bit for the two bytes
# around it (when the token ends right after the boundary) or for the three bytes s[p-1], s[p],
# s[p+1] (hashed) otherwise. A mixed token occurring across boundary p shows one of these
# there; a bit set by chance only makes a character a part of three bytes.
#
# Usage (header-only; encoder.pyx builds the tables, merge_paths.pyx merges with them):
#
#     from cybpe.encode.char_merges cimport build_char_tables, free_char_tables, char_entry, mixed_place
#     if build_char_tables(&tables) != 0: ...     # MemoryError; NULL tables: no such path
#     e = char_entry(&tables, s)                  # s[0:3] a three-byte form, is_form_lead(s[0])
#     if not char_entry_split(e): token, wait = char_entry_token(e), char_entry_wait(e)
#     else: ids char_entry_id(e, 0..2), the third CHAR_NO_ID when there are two
#     if mixed_place(&tables, s, n, p): ...       # 0 < p < n; False is certain
#     free_char_tables(&tables)
#
# Thread safety: the tables are written once by build_char_tables (before any encode) and only
# read afterwards; every function here is safe from any thread without the GIL.

from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc

from cybpe.encode.rank_tables cimport RANK_NONE, RankTables, merged_id, pair_rank
from cybpe._c.cpu cimport FIBONACCI
from cybpe._c.utf8 cimport is_cont
from cybpe._c.types cimport rank_t, token_t

cdef enum:
    MIXED_PLACE_BITS = 1 << 17   # 2^16 two-byte windows, then 2^16 hashed three-byte ones
    CHAR_ID_BITS = 21            # an id of a character of several ids, in an entry
    CHAR_NO_ID = (1 << 21) - 1   # "no third id"; vocabularies this large get no tables
    FIRST_FORM = 0x3000          # the forms of U+3000-U+FFFF (CJK, kana, Hangul) have entries
    FORMS = 0x10000 - 0x3000


cdef inline bint is_form_lead(uint8_t b) noexcept nogil:
    """b leads a three-byte form that has an entry (U+3000-U+FFFF: 0xE3-0xEF)."""
    return 0xE3 <= b <= 0xEF


cdef inline uint32_t char_index(const uint8_t* c) noexcept nogil:
    """The entry of the three-byte form c[0:3] (lead 0xE3-0xEF, two continuation bytes)."""
    return (((<uint32_t>c[0] & 15) << 12) | ((<uint32_t>c[1] & 63) << 6) | (c[2] & 63)) - FIRST_FORM


cdef inline uint64_t char_entry(const RankTables* t, const uint8_t* c) noexcept nogil:
    return t.char_merges[char_index(c)]


cdef inline bint char_entry_split(uint64_t e) noexcept nogil:
    """The character's BPE is two or three ids (bit 63); else one token (low 32 bits) that it
    becomes at its wait rank (bits 32-62)."""
    return e >> 63


cdef inline token_t char_entry_token(uint64_t e) noexcept nogil:
    return <token_t><uint32_t>e


cdef inline rank_t char_entry_wait(uint64_t e) noexcept nogil:
    return <rank_t>(e >> 32)


cdef inline uint32_t char_entry_id(uint64_t e, int k) noexcept nogil:
    """Id k (0-2) of a split entry; CHAR_NO_ID for a third id of a character of two."""
    return <uint32_t>(e >> (k * CHAR_ID_BITS)) & CHAR_NO_ID


cdef inline bint place_bit(const uint64_t* bits, uint64_t i) noexcept nogil:
    return (bits[i >> 6] >> (i & 63)) & 1


cdef inline uint64_t three_byte_window(uint64_t packed) noexcept nogil:
    return 65536 + ((packed * FIBONACCI) >> 48)


cdef inline bint mixed_place(const RankTables* t, const uint8_t* s, Py_ssize_t n,
                             Py_ssize_t p) noexcept nogil:
    """Whether a mixed token may occur across the character boundary p of s[:n] (0 < p < n).
    False is certain."""
    cdef uint32_t two = ((<uint32_t>s[p - 1]) << 8) | s[p]
    return place_bit(t.mixed_places, two) or (
        p + 1 < n and place_bit(t.mixed_places, three_byte_window(((<uint64_t>two) << 8) | s[p + 1])))


cdef inline bint is_mixed(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """s[:n] holds a character boundary (a byte that is no continuation byte, after the first)
    but is not well-formed forms end to end. One pass: `owed` counts the continuation bytes the
    current form still needs."""
    cdef Py_ssize_t j
    cdef int owed = 0
    cdef bint whole = True, crosses = False
    cdef uint8_t b
    for j in range(n):
        b = s[j]
        if is_cont(b):
            whole = whole and owed > 0
            owed -= 1
        else:
            whole = whole and owed <= 0 and b < 0xF8
            crosses = crosses or j > 0
            owed = 0 if b < 0x80 else 1 if b < 0xE0 else 2 if b < 0xF0 else 3
    return crosses and not (whole and owed == 0)


cdef inline uint64_t split_entry(token_t a, token_t b, token_t c) noexcept nogil:
    """The entry of a character whose BPE is a, b (and c, or -1 for none)."""
    cdef uint64_t third = CHAR_NO_ID if c < 0 else <uint64_t>c
    return ((<uint64_t>1) << 63) | (third << (2 * CHAR_ID_BITS)) \
        | ((<uint64_t>b) << CHAR_ID_BITS) | <uint64_t>a


cdef inline uint64_t three_byte_bpe(const RankTables* t, uint32_t v) noexcept nogil:
    """The entry of form v: the BPE of its three bytes alone (as merge_linear would do it)."""
    cdef uint8_t b0 = 0xE0 | (v >> 12), b1 = 0x80 | ((v >> 6) & 63), b2 = 0x80 | (v & 63)
    cdef rank_t r01 = t.byte_pair_rank[((<uint32_t>b0) << 8) | b1]
    cdef rank_t r12 = t.byte_pair_rank[((<uint32_t>b1) << 8) | b2]
    cdef rank_t second
    cdef token_t merged
    if r01 == RANK_NONE and r12 == RANK_NONE:
        return split_entry(t.byte_id[b0], t.byte_id[b1], t.byte_id[b2])
    if r01 <= r12:  # leftmost of equal ranks
        merged = merged_id(t, r01)
        second = pair_rank(t, merged, t.byte_id[b2])
        if second == RANK_NONE:
            return split_entry(merged, t.byte_id[b2], -1)
        return ((<uint64_t>(second if second > r01 else r01)) << 32) | <uint32_t>merged_id(t, second)
    merged = merged_id(t, r12)
    second = pair_rank(t, t.byte_id[b0], merged)
    if second == RANK_NONE:
        return split_entry(t.byte_id[b0], merged, -1)
    return ((<uint64_t>(second if second > r12 else r12)) << 32) | <uint32_t>merged_id(t, second)


cdef inline int build_char_tables(RankTables* t) noexcept nogil:
    """Fill char_merges (the own BPE of every form from U+3000) and mixed_places (build_byte_tables
    first). 0, or -1 when out of memory (the tables stay NULL: no such path); a vocabulary of
    CHAR_NO_ID ids or more gets none."""
    cdef Py_ssize_t token, length, j
    cdef const uint8_t* s
    cdef uint64_t bit
    cdef uint8_t high
    cdef uint32_t v
    if t.n_tokens >= CHAR_NO_ID:
        return 0
    t.mixed_places = <uint64_t*>calloc(MIXED_PLACE_BITS // 64, sizeof(uint64_t))
    t.char_merges = <uint64_t*>malloc(FORMS * sizeof(uint64_t))
    if t.mixed_places == NULL or t.char_merges == NULL:
        free_char_tables(t)
        return -1
    for token in range(t.n_tokens):
        s = t.token_blob + t.token_offsets[token]
        length = t.token_offsets[token + 1] - t.token_offsets[token]
        high = 0
        for j in range(length):  # (no branch: vectorised)
            high |= s[j]
        if high < 0x80 or not is_mixed(s, length):
            continue  # ASCII is whole
        for j in range(1, length):
            if is_cont(s[j]):
                continue
            if j + 1 == length:
                bit = ((<uint32_t>s[j - 1]) << 8) | s[j]
            else:
                bit = three_byte_window(((<uint64_t>s[j - 1]) << 16) | ((<uint64_t>s[j]) << 8) | s[j + 1])
            t.mixed_places[bit >> 6] |= (<uint64_t>1) << (bit & 63)
    for v in range(FORMS):
        t.char_merges[v] = three_byte_bpe(t, v + FIRST_FORM)
    return 0


cdef inline void free_char_tables(RankTables* t) noexcept nogil:
    free(t.char_merges)
    free(t.mixed_places)
    t.char_merges = NULL
    t.mixed_places = NULL
