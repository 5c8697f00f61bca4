# C-level interface of the rank encoder, for other Cython modules (the compiled scanners).
#
#     from cybpe._encoder cimport RankEncoder
#     ...
#     with nogil:
#         if encoder.encode_pieces_into(text_ptr, ends_ptr, n_pieces, &ids) != 0:
#             ...  # out of memory: raise MemoryError once the GIL is back
#
# Prefer encode_pieces_into (all piece ends of a text at once) to one encode_bytes_into call per
# piece: it prefetches token-table slots 16 pieces ahead and memoises, for the length of the
# call, the pieces that needed BPE (1.2-2.5x faster on real text). Both give the same ids.
#
# Every field is written once in __cinit__ and only read afterwards, so any number of threads
# may encode through the same object at the same time with the GIL released.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cybpe._types cimport IdBuffer, rank_t, token_t


cdef struct TokenSlot:
    # One slot of the bytes -> id open-addressing table. A token of up to 8 bytes is compared
    # entirely in its slot (one cache miss per lookup); a longer one compares its first 8 bytes
    # here and the rest in the token blob.
    uint64_t head       # head_word() of the token's bytes
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
    # (left, right) -> rank (open addressing, Fibonacci hashing), and rank -> merged id.
    # A slot is one uint64: (left << id_bits | right) << rank_bits | rank; all ones when empty.
    uint64_t* pair_slots
    uint64_t pair_mask                 # number of slots - 1
    int pair_shift                     # 64 - log2(number of slots)
    int id_bits                        # bits of the largest ordinary id
    int rank_bits                      # bits of the number of ranks (so a rank is never all ones)
    token_t* rank_to_id
    Py_ssize_t n_ranks                 # ranks are 0 .. n_ranks-1
    # First-round shortcuts: the id of each byte, the rank of each byte pair (RANK_NONE if none).
    token_t byte_id[256]
    rank_t* byte_pair_rank             # 256 * 256 entries
    bint whole_piece_lookup            # emit a piece that is itself a token as one id


cdef class RankEncoder:
    cdef RankTables tables
    cdef readonly Py_ssize_t n_tokens         # ordinary ids are 0 .. n_tokens-1
    cdef readonly Py_ssize_t pair_table_size  # entries in the pair table
    cdef readonly bint whole_piece_lookup

    # Special tokens (decode only): sorted ids, their bytes in one blob.
    cdef Py_ssize_t n_special
    cdef int64_t* special_ids
    cdef int64_t* special_offsets
    cdef uint8_t* special_blob

    # Constructor arguments that the tables cannot give back (for pickling).
    cdef object _merges                      # None, or an int32 array of shape (n_merges, 2)
    cdef dict _special_tokens                # id -> bytes
    cdef tuple _id_objects                   # the ints 0 .. n_tokens-1, built by ids_list

    cdef int encode_bytes_into(self, const uint8_t* s, Py_ssize_t n, IdBuffer* out) noexcept nogil
        # Append the ids of the piece s[0:n] to out. Returns -1 when out of memory.
    cdef int encode_pieces_into(self, const uint8_t* data, const int64_t* ends,
                                Py_ssize_t n_pieces, IdBuffer* out) noexcept nogil
        # Append the ids of the pieces data[ends[i-1]:ends[i]] (the first piece starts at 0;
        # ends non-decreasing, not checked here) to out. data must stay unchanged during the
        # call. Returns -1 when out of memory.
