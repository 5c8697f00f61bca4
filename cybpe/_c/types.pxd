# Shared C types of the cybpe core. Every compiled module cimports its typedefs from here.
#
# Thread safety: types and inline functions only; an IdBuffer belongs to one thread at a time
# (the nogil loops that fill one never share it).
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


cdef inline Py_ssize_t grown_capacity(Py_ssize_t cap, Py_ssize_t want, size_t item,
                                      Py_ssize_t minimum) noexcept nogil:
    """The capacity a buffer of ``cap`` items grows to so that it holds ``want`` (> cap) items
    of ``item`` bytes: doubling from ``minimum`` (amortised O(1) appends). -1 when the size would
    overflow. The one growth rule of every buffer in the compiled modules (grow_buffer below,
    mem_grow in cybpe/_c/mem_pool.pxd)."""
    if cap < minimum:
        cap = minimum
    while cap < want:
        if cap > (<Py_ssize_t>0x7FFFFFFFFFFFFFFF) // 2:
            return -1
        cap = cap * 2
    if <size_t>cap > (<size_t>-1) // item:
        return -1
    return cap


cdef inline int grow_buffer(void** data, Py_ssize_t* capacity, Py_ssize_t want, size_t item,
                            Py_ssize_t minimum) noexcept nogil:
    """Make the malloc'ed ``*data`` hold at least ``want`` items of ``item`` bytes, doubling
    from ``minimum`` (grown_capacity). 0, or -1 when out of memory or the size would overflow;
    on -1 the buffer and ``*capacity`` are unchanged and still the caller's.

    For buffers a function frees itself (ids, piece ends); a buffer of a MemPool grows with
    mem_grow. Usage: ``if grow_buffer(<void**>&buf, &cap, n + 1, sizeof(T), 64): fail``."""
    cdef Py_ssize_t cap
    cdef void* grown
    if want <= capacity[0]:
        return 0
    cap = grown_capacity(capacity[0], want, item, minimum)
    if cap < 0:
        return -1
    grown = realloc(data[0], <size_t>cap * item)
    if grown == NULL:
        return -1
    data[0] = grown
    capacity[0] = cap
    return 0


cdef inline int id_buffer_reserve(IdBuffer* buf, Py_ssize_t extra) noexcept nogil:
    """Make room for ``extra`` more ids. Returns -1 when out of memory (the buffer is unchanged)."""
    return grow_buffer(<void**>&buf.data, &buf.capacity, buf.size + extra, sizeof(uint32_t), 64)


cdef inline int id_buffer_push(IdBuffer* buf, uint32_t value) noexcept nogil:
    """Append one id. Returns -1 when out of memory."""
    if buf.size == buf.capacity and id_buffer_reserve(buf, 1) != 0:
        return -1
    buf.data[buf.size] = value
    buf.size += 1
    return 0
