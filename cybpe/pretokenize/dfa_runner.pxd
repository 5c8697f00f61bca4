# The deterministic-automaton runner of the pattern matcher (tables from dfa_compiler.py).
#
# Usage (pattern_scanner.pyx owns the tables and fills a DfaTables with pointers into them):
#     from cybpe.pretokenize.dfa_runner cimport DfaTables, dfa_scan_pieces
#     count = dfa_scan_pieces(&tables, s, n, &ends, &capacity, budget)
#
# Thread safety: the tables are read-only once built; any number of threads may run
# dfa_scan_pieces on the same DfaTables at once (each with its own ends buffer; the second
# lane's buffer is allocated and freed inside the call).
#
# Performance notes (the timings of each step, the C models and the attempts dropped:
# docs/history.md, "Automaton runner"). A walk is a chain of dependent loads (byte, class,
# move), so its time is the lookup's load-to-use latency and the mispredicted branch at each
# piece's end. Hence:
# * row offsets premultiplied into the table, and end of text as the row's last entry.
# * self-loop maps: a state's 128-bit map of the ASCII bytes it stays on, run through without
#   the table.
# * restart moves: a move that would die just after a match ends goes on as the start state's
#   move on the same character, so a run of pieces is one walk.
# * letter loops 8 bytes at a time: a state that stays on every ASCII letter, or on every
#   lowercase one, skips them with the hand-written scanners' SWAR test before the bitmap loop.
# * each move carries how the state it enters runs (none, bitmap, letters 8 at a time, exactly
#   the letters: no bitmap after them), so a move into a state without a run set reads nothing
#   more, and ASCII classes are bytes (a 128-byte table).
# * two lanes (dfa_scan_lanes): a text of DFA_LANE_MIN_BYTES or more is walked from its start
#   and from its middle at once, a character per lane per step, with no branch on what the
#   moves do (a restart writes its end unconditionally and moves the write pointer by its bit;
#   runs are not skipped). Two independent chains fill the time one of them waits, and the
#   step's only branches (a non-ASCII byte, a death) are rare on most text. A walk that dies
#   after a match restarts at the match's end inside the loop; one that dies with no match to
#   restart from sets its lane's stop, so the loop's test does not keep the walks' rows (gcc
#   had kept them on the stack, in the chain of loads). Four lanes would no longer fit in
#   registers.
# * pair moves (dfa_lane_pair_step): in the two-lane walk, two ASCII characters take one move,
#   from a table of the moves on every pair of ASCII classes (the paired layout: per state
#   16 x 16 pair moves, then its row of `trans`; automata of at most 64 states and 16 ASCII
#   classes, built by pattern_scanner._paired_table), so each lane's chain is one move per two
#   bytes. A walk that dies inside a pair, or a non-ASCII byte, takes the one-character step,
#   so the pieces are the same. The cl100k, GPT-2, Llama 3 and Qwen2 strings fit the layout;
#   o200k's (25 ASCII classes: it tells upper from lower case) keeps one-character moves.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from cybpe._c.ascii_letters cimport cybpe_ascii_letters8
from cybpe._c.utf8 cimport INVALID_CP, decode_cp
from cybpe.pretokenize.scanner_api cimport push_end, reserve_ends
from libc.stdlib cimport free
from libc.string cimport memcpy


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
    # A two-character move (an entry of DfaTables.pairs): DFA_MATCH and DFA_RESTART before the
    # first character, these two before the second; no run bits; row 0 when either step dies.
    DFA_PAIR_MATCH2 = 4
    DFA_PAIR_RESTART2 = 8
    DFA_PAIR_ROW = 288    # a state's row in the paired layout: its pair moves, then its row of
    DFA_PAIR_SINGLES = 256  # `trans` at this offset (pair c1, c2 at c1 * 16 + c2, both ASCII)
    DFA_LANE_MIN_BYTES = 512  # shorter texts are scanned as one lane
    DFA_LANE_BYTES = 4096     # most bytes of one run of the two-lane loop, per lane


cdef struct DfaTables:
    # trans: one row of `width` int32 moves per state, the state's row offset premultiplied:
    # * entries c < n_classes: the move on a character of class c;
    # * entry n_classes: bit 0 says a match ends at the end of the text;
    # * entries n_classes + 1 .. + 4: the state's run set, a 128-bit map of ASCII bytes.
    # Row 0 is the dead state; the start state's row is at offset `width`.
    const int32_t* trans
    int32_t width
    # pairs: NULL, or the paired layout's base (trans == pairs + DFA_PAIR_SINGLES, width ==
    # DFA_PAIR_ROW): the move on two ASCII characters of classes c1, c2 at row + c1 * 16 + c2
    # (ascii_hi[b] == ascii_class[b] * 16), the same row offsets as trans.
    const int32_t* pairs
    const uint8_t* ascii_hi     # 128 entries, when pairs is set
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


cdef struct DfaLane:
    # One scan of s[pos:] by walks from pos: its piece ends so far and where it stands.
    int64_t* ends               # malloc'ed; ends[0:count]
    Py_ssize_t count
    Py_ssize_t capacity
    Py_ssize_t pos              # where the next walk starts (a piece start, or a gap's char)
    Py_ssize_t gap              # where the unmatched text before pos began, or -1
    Py_ssize_t steps            # bytes read, for the budget
    Py_ssize_t limit            # the two-lane loop reads no byte at or past this


cdef inline Py_ssize_t dfa_piece(const DfaTables* t, const uint8_t* s, Py_ssize_t n,
                                 DfaLane* lane) noexcept nogil:
    """One walk from lane.pos, up to its first piece end (a restart move, or the walk's end):
    the ends it pushes, lane.pos moved past them. 0, DFA_NO_MEMORY or DFA_NO_MATCH (the walk
    ended with no match: lane.pos's character joined the unmatched text)."""
    cdef const int32_t* trans = t.trans
    cdef const uint32_t* run_map
    cdef const uint8_t* ascii_class = t.ascii_class
    cdef int32_t width = t.width, eot_at = t.n_classes
    cdef int32_t row = width, move, run
    cdef Py_ssize_t pos = lane.pos, p = lane.pos, last = DFA_NO_MATCH, q, run_start
    cdef uint8_t b
    cdef unsigned k
    while True:
        if p == n:
            if trans[row + eot_at] & 1:
                last = n
            break
        b = s[p]
        if b < 0x80:
            q = p + 1
            move = trans[row + ascii_class[b]]
            if q == n and b == 0x0A and t.nl_class >= 0:
                move = trans[row + t.final_nl_class]
        else:
            move = trans[row + dfa_class_of_non_ascii(t, s, n, p, &q)]
        if move & DFA_RESTART:  # the match from pos ends at p; the next starts with this
            lane.steps += p - pos
            lane.pos = p
            if push_match(&lane.ends, &lane.capacity, &lane.count, &lane.gap, pos, p):
                return DFA_NO_MEMORY
            return 0
        if move & DFA_MATCH:
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
    lane.steps += p - pos + 1
    if last > pos:
        lane.pos = last
        if push_match(&lane.ends, &lane.capacity, &lane.count, &lane.gap, pos, last):
            return DFA_NO_MEMORY
        return 0
    # No match starts at pos: its character joins the unmatched text.
    if lane.gap < 0:
        lane.gap = pos
    if s[pos] < 0x80:
        lane.pos = pos + 1
    else:
        decode_cp(s, n, pos, &q)
        lane.pos = q
    return DFA_NO_MATCH


cdef inline void dfa_lane_start(DfaLane* lane, int64_t* ends, Py_ssize_t capacity,
                                Py_ssize_t pos, Py_ssize_t limit) noexcept nogil:
    """A lane with no ends yet, whose walks start at pos."""
    lane.ends = ends
    lane.capacity = capacity
    lane.count = 0
    lane.pos = pos
    lane.gap = -1
    lane.steps = 0
    lane.limit = limit


cdef inline bint dfa_lane_close(DfaLane* lane, Py_ssize_t n) noexcept nogil:
    """The lane has read to n: unmatched text left before n becomes the last piece. True when
    out of memory."""
    return lane.gap >= 0 and push_end(&lane.ends, &lane.capacity, &lane.count, n)


cdef inline bint dfa_lane_ready(const DfaLane* lane) noexcept nogil:
    """The lane can enter the two-lane loop: at a piece start with room before its limit."""
    return lane.gap < 0 and lane.pos + 8 <= lane.limit


cdef inline void dfa_lane_step(const DfaTables* t, const int32_t* trans,
                               const uint8_t* ascii_class, const uint8_t* s, Py_ssize_t n,
                               Py_ssize_t* p, Py_ssize_t* row, int64_t** e, Py_ssize_t* last,
                               Py_ssize_t* stop, Py_ssize_t* reread, const int64_t* first,
                               Py_ssize_t start, Py_ssize_t width) noexcept nogil:
    """One step of a lane in dfa_two_lanes: the move on the character at *p; its end written
    always and kept when the move restarts. Inlined there, its arguments stay in registers
    (trans and ascii_class come as arguments: the stores through *e would otherwise make the
    compiler read them from t again)."""
    cdef Py_ssize_t c = s[p[0]], q, move
    if c < 0x80:
        q = p[0] + 1
        c = ascii_class[c]
    else:
        c = dfa_class_of_non_ascii(t, s, n, p[0], &q)
    move = trans[row[0] + c]
    e[0][0] = p[0]
    e[0] += (move >> 1) & 1
    if move & DFA_MATCH:
        last[0] = p[0]
    row[0] = move >> DFA_ROW_SHIFT
    p[0] = q
    if row[0] == 0:
        if last[0] > ((e[0] - 1)[0] if e[0] > first else start):
            # The walk died after a match: that match is a piece; a new walk starts at its end.
            stop[0] -= q - last[0]  # bytes read again count against the lane's bytes
            reread[0] += q - last[0]
            e[0][0] = last[0]
            e[0] += 1
            p[0] = last[0]
            row[0] = width
        else:
            stop[0] = q  # no match to restart from: the loop ends here


cdef inline void dfa_lane_pair_step(const DfaTables* t, const int32_t* trans,
                                    const int32_t* pairs, const uint8_t* ascii_hi,
                                    const uint8_t* ascii_class, const uint8_t* s, Py_ssize_t n,
                                    Py_ssize_t* p, Py_ssize_t* row, int64_t** e, Py_ssize_t* last,
                                    Py_ssize_t* stop, Py_ssize_t* reread, const int64_t* first,
                                    Py_ssize_t start, Py_ssize_t width) noexcept nogil:
    """dfa_lane_step for the two ASCII characters at *p, *p + 1 in one move of the paired
    layout; a non-ASCII character, or a walk that dies in the pair, takes dfa_lane_step (one
    character, exactly as without pairs). The caller leaves two bytes before the text's end."""
    cdef Py_ssize_t i = p[0], b1 = s[i], b2 = s[i + 1], move
    if (b1 | b2) < 0x80:
        move = pairs[row[0] + ascii_hi[b1] + ascii_class[b2]]
        if move >> DFA_ROW_SHIFT:
            e[0][0] = i
            e[0] += (move >> 1) & 1
            e[0][0] = i + 1
            e[0] += (move >> 3) & 1
            if move & DFA_MATCH:
                last[0] = i
            if move & DFA_PAIR_MATCH2:
                last[0] = i + 1
            row[0] = move >> DFA_ROW_SHIFT
            p[0] = i + 2
            return
    dfa_lane_step(t, trans, ascii_class, s, n, p, row, e, last, stop, reread, first, start, width)


cdef inline int dfa_two_lanes(const DfaTables* t, const uint8_t* s, Py_ssize_t n,
                              DfaLane* a, DfaLane* b) noexcept nogil:
    """Walk both lanes a character each per step (two ASCII characters, with pair moves), with
    no branch on what the moves do (but a death, or a non-ASCII byte next to a pair), until a
    walk dies with no match to restart from, or a lane nears its limit or has read
    DFA_LANE_BYTES. Each lane is then left at the start of the piece it was in: its next
    walk reads that piece again, the one that died included. Returns bit 0 set when a's walk
    died, bit 1 when b's did; or DFA_NO_MEMORY."""
    cdef const int32_t* trans = t.trans
    cdef const uint8_t* ascii_class = t.ascii_class
    cdef Py_ssize_t width = t.width, row_a = t.width, row_b = t.width
    cdef Py_ssize_t start_a = a.pos, start_b = b.pos, p_a = a.pos, p_b = b.pos, stop_a, stop_b
    cdef Py_ssize_t last_a = DFA_NO_MATCH, last_b = DFA_NO_MATCH, reread_a = 0, reread_b = 0
    cdef int64_t* e_a
    cdef int64_t* e_b
    cdef int64_t* first_a
    cdef int64_t* first_b
    # A step reads at most 4 bytes and pushes at most one end per byte it reads.
    stop_a = min(a.limit - 4, p_a + DFA_LANE_BYTES)
    stop_b = min(b.limit - 4, p_b + DFA_LANE_BYTES)
    # Ends strictly increase and stay below stop + 4.
    if (reserve_ends(&a.ends, &a.capacity, a.count + (stop_a - p_a) + 4) != 0
            or reserve_ends(&b.ends, &b.capacity, b.count + (stop_b - p_b) + 4) != 0):
        return DFA_NO_MEMORY
    first_a = e_a = a.ends + a.count
    first_b = e_b = b.ends + b.count
    # Two copies of the loop, one per layout, so that the choice is made once per call and not
    # in every step (the timings in docs/history.md, "Automaton runner", are of this form).
    if t.pairs != NULL:
        while True:
            dfa_lane_pair_step(t, trans, t.pairs, t.ascii_hi, ascii_class, s, n, &p_a, &row_a,
                               &e_a, &last_a, &stop_a, &reread_a, first_a, start_a, width)
            dfa_lane_pair_step(t, trans, t.pairs, t.ascii_hi, ascii_class, s, n, &p_b, &row_b,
                               &e_b, &last_b, &stop_b, &reread_b, first_b, start_b, width)
            if ((p_a - stop_a) & (p_b - stop_b)) >= 0:
                break
    else:
        while True:
            dfa_lane_step(t, trans, ascii_class, s, n, &p_a, &row_a, &e_a, &last_a, &stop_a,
                          &reread_a, first_a, start_a, width)
            dfa_lane_step(t, trans, ascii_class, s, n, &p_b, &row_b, &e_b, &last_b, &stop_b,
                          &reread_b, first_b, start_b, width)
            # Go on while both lanes are before their stops (a walk that dies for good stops
            # its lane): one sign test.
            if ((p_a - stop_a) & (p_b - stop_b)) >= 0:
                break
    # Bytes read: how far each lane got, and what its walks read again after dying.
    a.steps += p_a - start_a + reread_a
    b.steps += p_b - start_b + reread_b
    if e_a > first_a:
        a.pos = (e_a - 1)[0]
        a.count = e_a - a.ends
    if e_b > first_b:
        b.pos = (e_b - 1)[0]
        b.count = e_b - b.ends
    return (row_a == 0) | (row_b == 0) << 1


cdef inline Py_ssize_t dfa_join(DfaLane* a, Py_ssize_t i, const DfaLane* b,
                                Py_ssize_t j) noexcept nogil:
    """a's ends up to a.ends[i], then b's from b.ends[j]: their number, or DFA_NO_MEMORY."""
    cdef Py_ssize_t rest = b.count - j
    if reserve_ends(&a.ends, &a.capacity, i + 1 + rest) != 0:
        return DFA_NO_MEMORY
    memcpy(a.ends + i + 1, b.ends + j, rest * sizeof(int64_t))
    a.count = i + 1 + rest
    return a.count


cdef inline Py_ssize_t dfa_scan_lanes(const DfaTables* t, const uint8_t* s, Py_ssize_t n,
                                      DfaLane* a, DfaLane* b, Py_ssize_t mid,
                                      Py_ssize_t budget) noexcept nogil:
    """Lane a scans from 0 and lane b from mid (a character's start, not known to be a piece's)
    side by side; then a goes on past mid until one of its ends is mid or one of b's ends: from
    such a piece start both scans are the same, so b's ends from there are the text's."""
    cdef Py_ssize_t r, a_pos, b_pos, i, j = 0
    while a.pos < mid or b.pos < n:
        if a.steps > budget or b.steps > budget:
            return DFA_OVER_BUDGET
        if a.pos < mid and b.pos < n and dfa_lane_ready(a) and dfa_lane_ready(b):
            a_pos = a.pos
            b_pos = b.pos
            r = dfa_two_lanes(t, s, n, a, b)
            if r < 0:
                return r
            # A lane whose walk died (or whose piece outlasted the loop) takes it alone.
            if ((r & 1 or a.pos == a_pos) and dfa_piece(t, s, n, a) == DFA_NO_MEMORY
                    or (r & 2 or b.pos == b_pos) and dfa_piece(t, s, n, b) == DFA_NO_MEMORY):
                return DFA_NO_MEMORY
        elif a.pos < mid and (b.pos >= n or not dfa_lane_ready(a)):
            if dfa_piece(t, s, n, a) == DFA_NO_MEMORY:
                return DFA_NO_MEMORY
        elif dfa_piece(t, s, n, b) == DFA_NO_MEMORY:
            return DFA_NO_MEMORY
    if dfa_lane_close(b, n):
        return DFA_NO_MEMORY
    # Join: the first of a's ends at or past mid that b shares (b's last end is n).
    i = a.count
    while i > 0 and a.ends[i - 1] >= mid:
        i -= 1
    while True:
        while i < a.count:
            if a.ends[i] == mid:
                return dfa_join(a, i, b, 0)
            while j < b.count and b.ends[j] < a.ends[i]:
                j += 1
            if j < b.count and b.ends[j] == a.ends[i]:
                return dfa_join(a, i, b, j + 1)
            i += 1
        if a.pos >= n:
            break
        if a.steps > budget:
            return DFA_OVER_BUDGET
        if dfa_piece(t, s, n, a) == DFA_NO_MEMORY:
            return DFA_NO_MEMORY
    return DFA_NO_MEMORY if dfa_lane_close(a, n) else a.count


cdef inline Py_ssize_t dfa_scan_pieces(const DfaTables* t, const uint8_t* s, Py_ssize_t n,
                                       int64_t** ends, Py_ssize_t* capacity,
                                       Py_ssize_t budget) noexcept nogil:
    """Piece ends of s[0:n] (the backtracking scan_pieces' contract: the leftmost-first match
    from each position; unmatched text between matches is a piece of its own): their number,
    DFA_OVER_BUDGET once a scan read more than `budget` bytes (a pattern that rescans, like
    ``\\s*y|.`` on spaces), or DFA_NO_MEMORY. Texts of DFA_LANE_MIN_BYTES or more are scanned
    as two lanes (dfa_scan_lanes)."""
    cdef DfaLane a, b
    cdef Py_ssize_t count = 0, mid = n >> 1
    # Lane b starts at a character's first byte, so that its first piece is right more often
    # (any start would do: the lanes join only at an end both have).
    while mid < n and (s[mid] & 0xC0) == 0x80:
        mid += 1
    if n >= DFA_LANE_MIN_BYTES and mid + 16 <= n:
        dfa_lane_start(&a, ends[0], capacity[0], 0, mid)
        # (The two-lane loop leaves a lane's last 4 bytes to dfa_piece, which knows a final "\\n".)
        dfa_lane_start(&b, NULL, 0, mid, n)
        count = dfa_scan_lanes(t, s, n, &a, &b, mid, budget)
        free(b.ends)
    else:
        dfa_lane_start(&a, ends[0], capacity[0], 0, n)
        while a.pos < n and count == 0:
            if a.steps > budget:
                count = DFA_OVER_BUDGET
            elif dfa_piece(t, s, n, &a) == DFA_NO_MEMORY:
                count = DFA_NO_MEMORY
        if count == 0:
            count = DFA_NO_MEMORY if dfa_lane_close(&a, n) else a.count
    ends[0] = a.ends
    capacity[0] = a.capacity
    return count
