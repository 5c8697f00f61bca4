# The deterministic-automaton runner of the pattern matcher (tables from dfa_compiler.py).
#
# Usage (pattern_scanner.pyx owns the tables and fills a DfaTables with pointers into them):
#     from cybpe.pretokenize.dfa_runner cimport DfaTables, dfa_scan_pieces
#     count = dfa_scan_pieces(&tables, s, n, &ends, &capacity, budget)
#
# Thread safety: the tables are read-only once built; any number of threads may run
# dfa_scan_pieces on the same DfaTables at once (each with its own ends buffer).
#
# Performance notes (split of 2 MB English with cl100k, min of 5, the hand-written scanner timed
# in the same script; the machine is shared, so compare within a line):
# * a plain walk, one table lookup per character and a new walk from each match's end:
#   12.9 ms (hand-written 6.2 ms); perf put the time on the lookup's load-to-use latency and
#   on the mispredicted branch at each piece's end.
# * row offsets premultiplied into the table and end of text as the row's last entry: 10.8 ms
#   (hand-written 6.4 ms).
# * self-loop maps (a state's 128-bit map of the ASCII bytes it stays on, run through without
#   the table): 9.0 ms (4.7 ms).
# * restart moves (a move that would die just after a match ends goes on as the start
#   state's move on the same character, so a run of pieces is one walk): 6.8 ms (4.4 ms).
# * letter loops 8 bytes at a time (a state that stays on every ASCII letter, or on every
#   lowercase one, skips them with the hand-written scanners' SWAR test before the bitmap
#   loop; perf had the bitmap loop's bit test and its exit branch as the hottest lines):
#   8.0 -> 6.2 ms (hand-written 4.6-4.8 ms); 3 MB of code stays at 11.7 ms (9.0 ms), its
#   pieces being short.
# * each move carries how the state it enters runs (none, bitmap, letters 8 at a time, exactly
#   the letters: no bitmap after them), so a move into a state without a run set reads nothing
#   more, and ASCII classes are bytes (a 128-byte table): perf had 20% of the walk on the load
#   of the run fields from the new row, 12% on the bitmap's bit test. Paired processes against
#   the previous build (4 x 10 rounds of splitting the bench documents, min): English 5.31 ->
#   4.71 ms (0.89x), code 9.52 -> 8.48 ms (0.89x). Words of random lengths (" the", " house",
#   ...) went from 19.7 to 8.2 ns a piece, equal words 8.7 -> 6.3 ns: the bitmap loop's exit
#   after a word mispredicted.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from cybpe._c.ascii_letters cimport cybpe_ascii_letters8
from cybpe._c.utf8 cimport INVALID_CP, decode_cp
from cybpe.pretokenize.scanner_api cimport push_end


cdef extern from "unicode_tables.h" nogil:
    uint32_t cybpe_cp_class(uint32_t cp)


cdef enum:
    # A move (an entry of DfaTables.trans), bit by bit:
    DFA_MATCH = 1         # a match ends before this character
    DFA_RESTART = 2       # the match ends before this character (the state would die) and the
                          # next match starts with it: the move is the start state's on it
    DFA_RUN = 12          # 2 bits, how the state moved to runs through its run set (the ASCII
    DFA_RUN_BITMAP = 4    # bytes on which it stays itself, same match bit, no restart): by
    DFA_RUN_LETTERS = 8   # its bitmap; 8 letters at a time first (the set holds [A-Za-z]);
    DFA_RUN_LOWER = 12    # 8 lowercase letters at a time first (the set holds [a-z])
    DFA_RUN_EXACT = 16    # the run set is exactly those letters: no bitmap after them
    DFA_RUN_MATCH = 32    # the state stays itself on its run set with DFA_MATCH
    DFA_ROW_SHIFT = 6     # the rest: the row offset of the state moved to


cdef struct DfaTables:
    # trans: one row of `width` int32 moves per state, the state's row offset premultiplied:
    # * entries c < n_classes: the move on a character of class c;
    # * entry n_classes: bit 0 says a match ends at the end of the text;
    # * entries n_classes + 1 .. + 4: the state's run set, a 128-bit map of ASCII bytes.
    # Row 0 is the dead state; the start state's row is at offset `width`.
    const int32_t* trans
    int32_t width
    const uint8_t* ascii_class  # 128 entries
    const int32_t* props_class  # 256 entries, by cybpe_cp_class(cp) & 0xFF
    const uint32_t* exc_cp      # sorted non-ASCII code points with a class of their own
    const int32_t* exc_class
    Py_ssize_t n_exc
    int32_t n_classes
    int32_t nl_class            # "\n"'s class when the pattern has "$", else -1
    int32_t final_nl_class      # the class of a "\n" that ends the text (with "$")


cdef enum:
    DFA_NO_MATCH = -1
    DFA_OVER_BUDGET = -2
    DFA_NO_MEMORY = -3


cdef inline int32_t dfa_class_of_non_ascii(const DfaTables* t, const uint8_t* s, Py_ssize_t n,
                                           Py_ssize_t p, Py_ssize_t* q) noexcept nogil:
    """The class of the character at p (s[p] >= 0x80); *q = where the next starts."""
    cdef uint32_t cp = decode_cp(s, n, p, q)
    cdef Py_ssize_t lo, hi, mid
    if cp == INVALID_CP:
        return t.props_class[0]  # no class bit, as class_has_slow treats it
    if t.n_exc and t.exc_cp[0] <= cp <= t.exc_cp[t.n_exc - 1]:
        lo = 0
        hi = t.n_exc
        while lo < hi:
            mid = (lo + hi) >> 1
            if t.exc_cp[mid] < cp:
                lo = mid + 1
            else:
                hi = mid
        if lo < t.n_exc and t.exc_cp[lo] == cp:
            return t.exc_class[lo]
    return t.props_class[cybpe_cp_class(cp) & 0xFF]


cdef inline bint push_match(int64_t** ends, Py_ssize_t* capacity, Py_ssize_t* count,
                            Py_ssize_t* gap, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    """A match s[start:end]: first the piece of unmatched text before it (when *gap >= 0, it
    began there), then the match. True when out of memory. Both matchers' scans use it."""
    if gap[0] >= 0:
        if push_end(ends, capacity, count, start):
            return True
        gap[0] = -1
    return push_end(ends, capacity, count, end)


cdef inline Py_ssize_t dfa_scan_pieces(const DfaTables* t, const uint8_t* s, Py_ssize_t n,
                                       int64_t** ends, Py_ssize_t* capacity,
                                       Py_ssize_t budget) noexcept nogil:
    """Piece ends of s[0:n] (the backtracking scan_pieces' contract: the leftmost-first match
    from each position; unmatched text between matches is a piece of its own): their number,
    DFA_OVER_BUDGET once more than `budget` bytes were read (a pattern that rescans, like
    ``\\s*y|.`` on spaces), or DFA_NO_MEMORY."""
    cdef const int32_t* trans = t.trans
    cdef const uint32_t* run_map
    cdef const uint8_t* ascii_class = t.ascii_class
    cdef int32_t width = t.width, eot_at = t.n_classes
    cdef int32_t row, move, run
    cdef bint final_nl = t.nl_class >= 0 and n > 0 and s[n - 1] == 0x0A
    cdef Py_ssize_t pos = 0, count = 0, gap = -1, steps = 0, last, p, q, run_start
    cdef uint8_t b
    cdef unsigned k
    while pos < n:
        # One walk from pos: the match there, and through restart moves the ones after it.
        row = width
        last = DFA_NO_MATCH
        p = pos
        while True:
            if p == n:
                if trans[row + eot_at] & 1:
                    last = n
                break
            b = s[p]
            if b < 0x80:
                q = p + 1
                move = trans[row + ascii_class[b]]
                if q == n and final_nl:
                    move = trans[row + t.final_nl_class]
            else:
                move = trans[row + dfa_class_of_non_ascii(t, s, n, p, &q)]
            if move & DFA_RESTART:  # the match from pos ends at p; the next starts with this
                if push_match(ends, capacity, &count, &gap, pos, p):
                    return DFA_NO_MEMORY
                steps += p - pos
                pos = p
                last = DFA_NO_MATCH
            elif move & DFA_MATCH:
                last = p
            row = move >> DFA_ROW_SHIFT
            if row == 0:
                break
            p = q
            run = move & DFA_RUN
            if run == 0:
                continue
            # The bytes on which this state stays itself: run through them, no table walk.
            run_start = p
            if run != DFA_RUN_BITMAP:  # letters 8 at a time; the bitmap takes the rest
                while p + 8 <= n:
                    k = cybpe_ascii_letters8(s + p, run == DFA_RUN_LOWER)
                    p += k
                    if k < 8:
                        break
                else:
                    move &= ~DFA_RUN_EXACT  # near the end: the bitmap loop takes the rest
            if not move & DFA_RUN_EXACT:
                run_map = <const uint32_t*>&trans[row + eot_at + 1]
                while p < n:
                    b = s[p]
                    if b >= 0x80 or not ((run_map[b >> 5] >> (b & 31)) & 1):
                        break
                    p += 1
            if p > run_start and move & DFA_RUN_MATCH:
                last = p - 1
        steps += p - pos + 1
        if steps > budget:
            return DFA_OVER_BUDGET
        if last > pos:
            if push_match(ends, capacity, &count, &gap, pos, last):
                return DFA_NO_MEMORY
            pos = last
        else:  # no match starts here: this character joins the unmatched text
            if gap < 0:
                gap = pos
            if s[pos] < 0x80:
                pos += 1
            else:
                dfa_class_of_non_ascii(t, s, n, pos, &q)
                pos = q
    if gap >= 0 and push_end(ends, capacity, &count, n):
        return DFA_NO_MEMORY
    return count
