# C-level API of the built-in compiled pre-tokenizer scanners (see scanner.pyx).
#
# A Scanner is a BaseScanner (the public contract, scanner_api.pxd) whose scan_all walks UTF-8
# bytes (lone surrogates encoded as 3 bytes, "surrogatepass", are read as their code points)
# and returns piece ends; the pieces are exactly those of the regex pattern of the built-in
# pre-tokenizer with the same name. Other modules use it only through BaseScanner.scan_all.
#
# Thread-safety: a Scanner is immutable; scan_all may run in several threads at once.
from libc.stdint cimport int64_t, uint8_t

from cybpe.pretokenize.scanner_api cimport BaseScanner


cdef Py_ssize_t scan_next(int kind, const uint8_t* s, Py_ssize_t n, Py_ssize_t pos) noexcept nogil
    # Byte offset of the end of the piece that starts at byte `pos` (< n) of the UTF-8 text
    # s[0:n] for Scanner kind `kind` (Scanner.kind). `pos` must be 0 or an end this function
    # returned for the same text (the right-to-left digit grouping relies on it).


cdef class Scanner(BaseScanner):
    cdef readonly str name
    cdef readonly int kind

    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil
