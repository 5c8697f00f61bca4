# C-level interface of the rank encoder, for other Cython modules (the compiled scanners).
#
#     from cybpe.encode.encoder cimport RankEncoder
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
# may encode through the same object at the same time with the GIL released. The cross-call
# piece cache is per thread (cybpe/encode/thread_cache.pxd): 4 MiB for each thread that has
# encoded, freed when the thread ends; it never changes an id.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cybpe.encode.rank_tables cimport RankTables
from cybpe._c.types cimport IdBuffer, rank_t, token_t
from cybpe._c.mem_pool cimport MemPool


cdef class RankEncoder:
    cdef MemPool mem                         # every malloc'ed table (not the big tables, not the cut or character tables)
    cdef RankTables tables
    cdef readonly Py_ssize_t n_tokens         # ordinary ids are 0 .. n_tokens-1
    cdef readonly Py_ssize_t pair_table_size  # entries in the pair table
    cdef readonly bint whole_piece_lookup
    cdef uint64_t* cut_stash                  # inner_pairs while _set_cutting(False) holds it
    cdef uint64_t* char_stash                 # char_merges while _set_char_merges(False) holds it

    # Special tokens (decode only): sorted ids, their bytes in one blob.
    cdef Py_ssize_t n_special
    cdef int64_t* special_ids
    cdef int64_t* special_offsets
    cdef uint8_t* special_blob

    # Constructor arguments that the tables cannot give back (for pickling).
    cdef object _merges                      # None, or an int32 array of shape (n_merges, 2)
    cdef dict _special_tokens                # id -> bytes

    cdef list ids_to_list(self, const uint32_t* ids, Py_ssize_t n)
        # ids[0:n] as a Python list of ints (GIL held).
    cdef int encode_bytes_into(self, const uint8_t* s, Py_ssize_t n, IdBuffer* out) noexcept nogil
        # Append the ids of the piece s[0:n] to out. Returns -1 when out of memory.
    cdef int encode_pieces_into(self, const uint8_t* data, const int64_t* ends,
                                Py_ssize_t n_pieces, IdBuffer* out) noexcept nogil
        # Append the ids of the pieces data[ends[i-1]:ends[i]] (the first piece starts at 0;
        # ends non-decreasing, not checked here) to out. data must stay unchanged during the
        # call. Returns -1 when out of memory.


# The ids of an IdBuffer as a new uint32 numpy array (needs the GIL). The one copy from C ids
# to numpy, shared by this module and cybpe/encode/fastpath.pyx.
cdef object ids_array(IdBuffer* buf)
