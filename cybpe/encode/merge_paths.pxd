# The merge paths (see merge_paths.pyx), for the rank encoder.
from libc.stdint cimport uint8_t

from cybpe.encode.rank_tables cimport RankTables
from cybpe._c.types cimport IdBuffer

cdef enum:
    PATH_AUTO = 0             # pick by the piece: what encoding uses
    PATH_LINEAR = 1           # the others force one path, for the tests
    PATH_HEAP = 2
    PATH_BUCKET = 3
    PATH_RUNS = 4
    PATH_CHARS = 5            # may give up: merge_piece then returns 1

cdef int merge_piece(const RankTables* t, const uint8_t* s, Py_ssize_t n, IdBuffer* out,
                     int path) noexcept nogil
    # BPE of s[:n] (n >= 1), past the whole-piece lookup; out has room for n more ids.
    # Returns 0, or -1 when out of memory.
