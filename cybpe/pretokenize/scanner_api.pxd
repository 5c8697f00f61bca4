# The public C contract of a compiled pre-tokenizer scanner (implemented in scanner_api.pyx).
#
# Every compiled splitter in cybpe -- the hand-written built-in scanners (scanner.pyx), the
# compiled-pattern matcher (pattern_scanner.pyx) and any third-party Cython extension --
# subclasses BaseScanner and overrides its one C method, scan_all. Counting (ChunkCounter),
# training, encode and batch encode call that method through the class's vtable, with the GIL
# released, so a third-party scanner runs at the same speed as a built-in one: one indirect call
# per text, nothing per piece.
#
# Usage (a third-party extension; tests/compiled_plugin_example/ is a complete package):
#
#     from libc.stdint cimport int64_t, uint8_t
#     from cybpe.pretokenize.scanner_api cimport BaseScanner, push_end, reserve_ends, SCAN_NO_MEMORY
#
#     cdef class SpaceScanner(BaseScanner):
#         cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
#                                  Py_ssize_t* capacity) noexcept nogil:
#             cdef Py_ssize_t pos = 0, count = 0
#             while pos < n:
#                 pos += 1
#                 while pos < n and (s[pos] == 32) == (s[pos - 1] == 32):
#                     pos += 1
#                 if push_end(ends, capacity, &count, pos):
#                     return SCAN_NO_MEMORY
#             return count
#
# and register an instance from the plugin's hook: register("spaces", r" +|[^ ]+",
# scanner=SpaceScanner()).
#
# The contract of scan_all(self, s, n, ends, capacity)
# ----------------------------------------------------
# What the scanner may assume:
# * s[0:n] is the text as UTF-8 with n >= 1. It is NOT guaranteed valid: encode passes text
#   whose lone surrogates became U+FFFD, but split_utf8 / ChunkCounter.add_utf8 pass the
#   caller's bytes as they are, and a text encoded with "surrogatepass" holds 3-byte
#   surrogates. A scanner must never read outside s[0:n] and must give every byte to some
#   piece (cybpe._c.utf8 has a decoder that treats a bad byte as one character).
# * *ends is NULL with *capacity 0, or a buffer of *capacity int64 entries from malloc/realloc
#   left by an earlier call (callers reuse it across texts). Write from index 0; grow only with
#   realloc (reserve_ends / push_end below do it); never free it: the caller owns it and frees
#   it with free() in every case, including errors.
# What it must return:
# * The number of pieces k >= 0, with (*ends)[0:k] the piece END byte offsets, strictly
#   increasing, the last one == n. The pieces must be exactly those of the pre-tokenizer's regex
#   pattern (its `regex.finditer` spans, after `refine`): the contract test suite checks it.
# * SCAN_NO_MEMORY (-1) when an allocation fails. Callers raise MemoryError.
# * SCAN_GAVE_UP (-2) when the scanner declines this text (for instance a step budget ran out).
#   Callers then split the text with the GIL held through the scanner's Python method
#   split(text), which comes from split_spans: a scanner that may give up overrides
#   split_spans (BaseScanner's raises cybpe.errors.PluginError). Any other negative value is read
#   as SCAN_NO_MEMORY.
# Errors are reported only through these return values: the method is `noexcept nogil`, so it
# cannot raise, must not touch Python objects and must not take the GIL.
#
# Thread-safety: scan_all is called from several threads at once on the same scanner object
# (encode_batch, threaded counting). It must not modify `self` or any global state; keep any
# scratch memory in local variables (malloc'ed and freed within the call). Scanners are shared by
# every Tokenizer and ChunkCounter that uses the pre-tokenizer, so they are immutable after
# construction. To be used by worker processes a scanner must pickle (define __reduce__).
from libc.stdint cimport int64_t, uint8_t
from cybpe._c.types cimport grow_buffer

cdef enum:
    SCAN_NO_MEMORY = -1     # an allocation failed
    SCAN_GAVE_UP = -2       # the scanner declines this text; split it with split() instead


cdef class BaseScanner:
    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil
        # See the contract above. BaseScanner's own returns SCAN_GAVE_UP for every text.


cdef inline int reserve_ends(int64_t** ends, Py_ssize_t* capacity, Py_ssize_t want) noexcept nogil:
    """Make *ends hold at least `want` entries (doubling, from 256). 0, or -1 when out of memory
    (the buffer is then unchanged and still owned by the caller)."""
    return grow_buffer(<void**>ends, capacity, want, sizeof(int64_t), 256)


cdef inline bint push_end(int64_t** ends, Py_ssize_t* capacity, Py_ssize_t* count,
                          Py_ssize_t end) noexcept nogil:
    """Append one piece end at (*ends)[*count]; True when out of memory."""
    if count[0] == capacity[0] and reserve_ends(ends, capacity, count[0] + 1) != 0:
        return True
    ends[0][count[0]] = end
    count[0] += 1
    return False
