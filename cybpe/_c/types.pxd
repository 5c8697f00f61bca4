# Shared C types of the cybpe core. Every compiled module cimports its typedefs from here.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport realloc

ctypedef int32_t token_t      # a token id (ordinary or special); -1 means "none"
ctypedef int32_t rank_t       # a merge rank; lower merges first
ctypedef int64_t count_t      # a corpus count; always 64-bit (peers use i32 and overflow)
ctypedef int32_t node_t       # an index into the trainer's flat node arrays; -1 means "none"


cdef struct IdBuffer:
    # A growable array of token ids written by nogil encode loops.
    uint32_t* data      # owned by whoever created the buffer; free() it
    Py_ssize_t size     # ids written
    Py_ssize_t capacity # ids allocated


cdef inline int id_buffer_reserve(IdBuffer* buf, Py_ssize_t extra) noexcept nogil:
    """Make room for ``extra`` more ids. Returns -1 when out of memory (the buffer is unchanged)."""
    cdef Py_ssize_t want = buf.size + extra
    cdef Py_ssize_t cap = buf.capacity
    cdef uint32_t* grown
    if want <= cap:
        return 0
    if cap < 64:
        cap = 64
    while cap < want:
        cap = cap * 2
    grown = <uint32_t*> realloc(buf.data, cap * sizeof(uint32_t))
    if grown == NULL:
        return -1
    buf.data = grown
    buf.capacity = cap
    return 0


cdef inline int id_buffer_push(IdBuffer* buf, uint32_t value) noexcept nogil:
    """Append one id. Returns -1 when out of memory."""
    if buf.size == buf.capacity and id_buffer_reserve(buf, 1) != 0:
        return -1
    buf.data[buf.size] = value
    buf.size += 1
    return 0
