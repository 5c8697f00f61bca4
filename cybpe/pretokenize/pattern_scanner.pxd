# C-level API of the compiled-pattern matcher (see pattern_scanner.pyx).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cybpe.pretokenize.dfa_runner cimport DfaTables
from cybpe.pretokenize.scanner_api cimport BaseScanner


cdef struct Instruction:
    int32_t op, a, b, c, d      # see the opcodes in _pattern_compiler.py


cdef struct ClassItem:
    int32_t kind
    uint32_t low                # a range's first code point, or the property bits
    uint32_t high


cdef struct CharClass:
    uint64_t ascii[2]           # membership of code points 0..127, negation applied
    int32_t first_item
    int32_t n_items
    bint negated


cdef class PatternScanner(BaseScanner):
    cdef readonly str pattern
    cdef object _regex
    cdef Py_ssize_t n_code, n_classes
    cdef Instruction* code
    cdef CharClass* classes
    cdef ClassItem* items
    cdef readonly str backend   # "dfa" (dfa_runner.pxd) or "backtrack" (the program above)
    cdef DfaTables dfa          # pointers into _dfa_arrays when backend == "dfa"
    cdef object _dfa_arrays
    cdef bint use_dfa
    cdef Py_ssize_t n_dfa_states

    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil
        # BaseScanner.scan_all (scanner_api.pxd): the number of pieces, SCAN_GAVE_UP (-2) past
        # the step budget (split() then asks the regex module) or -3 when out of memory.
    cdef object _ends(self, const uint8_t* s, Py_ssize_t n)
