# The cl100k pattern over 64 bytes at once (ASCII and two-byte letters): piece starts from
# class bitmasks.
#
#   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
#   | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
#
# The same splits hold for the patterns that differ from cl100k's only in the digit group (1, 2 or
# 3) and at the end of the text (Llama 3, Qwen2, gpt4-digits1/2/3): `digits` says which group.
# o200k's (`cased`) differs in three more ways, each a few masks: a letter run splits where an
# upper-case letter follows a lower-case one; 's, 'll, ... right after a word ends the word's
# piece (there is no contraction piece of its own); and a punctuation piece takes [\r\n/]*,
# so slashes after its newlines are in it too.
#
# Usage (scanner.pyx, scan_pieces):
#     from cybpe.pretokenize.cl100k_window cimport cl100k_window
#     found = cl100k_window(s, pos, out, 3, False)   # s[pos:pos + 64] readable, pos a piece start,
#                                          # out[0:64] writable
#     # found > 0: out[0:found] are the next piece ends (all < pos + 64), and the last one is
#     # a piece start again; 0: nothing certain in this window, take one piece the scalar way.
#
# Why: the scalar scanner branches once or twice per piece on what the next piece is, and those
# branches are unpredictable in prose and code (~11 ns per piece on English, perf: scan_gpt4
# and skip_letters 30% of a count() call). Here a window costs the same shifts and masks
# whatever its text, and writes its ends eight at a time (the measurements: docs/history.md,
# "Hand-written scanners").
#
# How: scanning from a piece start depends only on the text from there (the pattern has no
# look-behind), so a window at a start reads its bytes as if they began the text. Every rule
# below says whether position q (1 <= q < 64) starts a piece from the classes of q-2 .. q+1,
# except three that look further, each handled where it is computed: digit groups (counted from
# their run's start), newlines absorbed by a punctuation run, and whitespace after a newline
# (a start only if no other newline follows in its run). Only starts at q <= valid - 4 are
# taken, where valid is the number of bytes before the first the window does not know (a
# non-ASCII byte that begins no two-byte letter, two_byte_letters), so no rule reads a byte the
# window does not know; the caller goes on from the last start taken. The window never covers
# the end of the text (the caller keeps 64 bytes ahead), so `\s++$` never applies here.
# tests/pretokenize/test_cl100k_window.py compares the spans with `regex` on texts built to put
# every rule at every offset of a window.
#
# Thread safety: pure functions of the bytes they read; call them from any thread.

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from cybpe._c.ascii_masks cimport AsciiMasks, cybpe_ascii_masks64
from cybpe._c.cpu cimport bit_count, lowest_bit, lowest_bit_any
from cybpe._c.utf8 cimport is_cont

cdef extern from "unicode_tables.h" nogil:
    enum:
        CYBPE_L, CYBPE_LU, CYBPE_LL
    uint32_t cybpe_cp_class(uint32_t cp)
    char cybpe_fold_extra(uint32_t cp)

cdef extern from *:
    """
    /* What a window makes of each two-byte code point (U+0080..U+07FF, indexed by the code
       point): 0 ends the window's known part, 1 a lower-case letter, 2 an upper-case one,
       3 another letter (Lt, Lm, Lo). Filled once when scanner.pyx is imported
       (fill_two_byte_kinds); all zeros until then, which makes windows stop at the first
       non-ASCII byte, as they did before they took letters: slower, never wrong. */
    static uint8_t cybpe_two_byte_kind[2048];
    """
    uint8_t two_byte_kind "cybpe_two_byte_kind"[2048]


cdef inline void fill_two_byte_kinds() noexcept nogil:
    """Fill two_byte_kind from the class table (once, at import: the table is read-only
    afterwards, so windows on any thread read it without a lock)."""
    cdef uint32_t cp, cls
    for cp in range(0x80, 0x800):
        cls = cybpe_cp_class(cp) & CYBPE_L
        if not cls or cybpe_fold_extra(cp):
            # (a letter that case-folds to a contraction letter, U+017F to s, ends an
            # '(?i:s) after an apostrophe: the window's contraction test reads ASCII only)
            two_byte_kind[cp] = 0
        elif cls == CYBPE_LL:
            two_byte_kind[cp] = 1
        elif cls == CYBPE_LU:
            two_byte_kind[cp] = 2
        else:
            two_byte_kind[cp] = 3


cdef inline uint64_t two_byte_letters(const uint8_t* w, uint64_t* high, uint64_t* upper,
                                     bint cased) noexcept nogil:
    """The bits of the two-byte letters (U+0080..U+07FF in \p{L}: Latin with accents,
    Greek, Cyrillic, Armenian, Hebrew, Arabic...) that the window w[0:64] holds from its first
    non-ASCII byte on, up to the first non-ASCII byte that does not begin one (`*high` is
    the window's mask of non-ASCII bytes; the letters' bits leave it). Both bytes of such a
    letter are a letter to the rules below: they compare byte classes only across a letter's
    edges, where a two-byte letter and an ASCII one behave the same. Two-byte digits, spaces
    and punctuation stay in *high: a digit group counts code points, and a lone punctuation
    character before letters is told from a run of two by its byte count. So do the letters
    that case-fold to a contraction letter (U+017F). cased (o200k): only \p{Lu} and \p{Ll}
    letters are taken, the upper-case ones added to *upper (its rules know one bit of case;
    \p{Lt}, \p{Lm} and \p{Lo} letters are on both sides of it)."""
    cdef uint64_t h = high[0], wide = 0, both
    cdef uint32_t lead
    cdef uint8_t kind
    cdef int i
    while h:
        i = lowest_bit(h)
        lead = w[i]
        if i == 63 or lead < 0xC2 or lead > 0xDF or not is_cont(w[i + 1]):
            break
        kind = two_byte_kind[((lead & 0x1F) << 6) | (<uint32_t>w[i + 1] & 0x3F)]
        if kind == 0 or (cased and kind == 3):
            break
        both = (<uint64_t>3) << i
        if cased and kind == 2:
            upper[0] |= both
        wide |= both
        h &= ~both
    high[0] = h
    return wide


cdef inline int contraction_length(const uint8_t* p) noexcept nogil:
    """Length of '(?i:[sdmt]|ll|ve|re) at p (p[0] is an apostrophe), or 0; reads p[1], p[2]."""
    cdef uint8_t first = p[1] | 0x20, second = p[2] | 0x20
    if first == c's' or first == c'd' or first == c'm' or first == c't':
        return 2
    if (first == c'l' and second == c'l') or ((first == c'v' or first == c'r') and second == c'e'):
        return 3
    return 0


cdef inline Py_ssize_t cl100k_window(const uint8_t* s, Py_ssize_t pos, int64_t* out,
                                     int digits, bint cased) noexcept nogil:
    """Write the piece ends certain in s[pos:pos + 64] (pos a piece start) to out (room for 64
    entries; those past the ends written are overwritten freely); how many. digits: 3 for
    \p{N}{1,3}+, 2 for \p{N}{1,2}+, 1 for \p{N} (a constant at every call, so the compiler
    drops the other cases). cased: o200k's rules instead of the contraction pieces (see the
    module comment)."""
    cdef AsciiMasks m
    cybpe_ascii_masks64(s + pos, &m)
    cdef uint64_t high = m.high, wide = 0, upper_bits = m.upper
    if high:
        wide = two_byte_letters(s + pos, &high, &upper_bits, cased)
    cdef int valid = 64 if high == 0 else lowest_bit(high)
    if valid < 16:
        return 0
    cdef int cutoff = valid - 4          # the last offset a start may have (>= 12)
    cdef uint64_t inside = 0xFFFFFFFFFFFFFFFFULL if valid == 64 else ((<uint64_t>1) << valid) - 1
    cdef uint64_t letter = (m.letter | wide) & inside, digit = m.digit & inside
    cdef uint64_t space = m.space & inside, newline = m.newline & inside
    cdef uint64_t blank = m.blank & inside, apostrophe = m.apostrophe & inside
    cdef uint64_t upper = upper_bits & inside, slash = m.slash & inside
    cdef uint64_t other_space = space & ~newline                      # \s but not [\r\n]
    cdef uint64_t punct = inside & ~(letter | digit | space)          # [^\s\p{L}\p{N}]
    # Bit q of prev_X: byte q-1 is in X (nothing precedes offset 0: it starts the text here).
    cdef uint64_t prev_letter = letter << 1, prev_digit = digit << 1, prev_space = space << 1
    cdef uint64_t prev_newline = newline << 1, prev_punct = punct << 1, prev_blank = blank << 1
    cdef uint64_t prev_other = other_space << 1
    # [\r\n]*+ after a punctuation run: the newline runs that begin right after one. o200k's
    # [\r\n/]* goes on through slashes once it has begun (a slash right after the run is in it).
    # (A run may hold several newlines after punctuation, "/\n/\n": a second one meets the carry
    # and keeps its bit, so the seeds are added back.)
    cdef uint64_t tail = (newline | slash) if cased else newline
    cdef uint64_t seeds = newline & prev_punct
    cdef uint64_t absorbed = (((tail + seeds) ^ tail) & tail) | seeds
    cdef uint64_t starts, groups, grown, after_newline, rest, apostrophe_starts
    cdef int q, r, ended
    # A letter starts a piece after a digit or a newline, or after punctuation that is not one
    # lone [^\r\n\p{L}\p{N}] taking the letters as its prefix (a run of two, or " " + one).
    # (A slash an o200k tail took is not the same punctuation run. cl100k's tails are newlines,
    # which are no punctuation, so there punct & ~absorbed is punct.)
    cdef uint64_t run_punct = punct & ~absorbed
    starts = letter & (prev_digit | prev_newline | (prev_punct & ((run_punct << 2) | (blank << 2))))
    # Numbers: in groups of `digits` from each run's start.
    if digits == 1:
        groups = digit
    else:
        groups = digit & ~prev_digit
        while True:
            grown = (groups << digits) & digit & prev_digit
            if digits == 3:
                grown &= digit << 2
            if not (grown & ~groups):
                break
            groups |= grown
    starts |= groups
    # Punctuation runs start after anything but punctuation and a " " (which they take).
    starts |= punct & (prev_letter | prev_digit | prev_newline | (prev_other & ~prev_blank))
    # A whitespace run starts after a letter, digit or punctuation, unless its newlines
    # complete a punctuation piece.
    starts |= space & (prev_letter | prev_digit | (prev_punct & ~newline))
    # \s+(?!\S) leaves a run's last character to the next piece, unless it is a newline.
    starts |= other_space & prev_space & ~(space >> 1)
    # \s*[\r\n] ends after the run's last newline: other whitespace right after a newline starts
    # a piece if that newline ended a punctuation piece, or if no newline follows in the run.
    after_newline = other_space & prev_newline
    starts |= after_newline & (absorbed << 1)
    after_newline &= ~(absorbed << 1)
    while after_newline:
        q = lowest_bit(after_newline)
        after_newline &= after_newline - 1
        rest = ~other_space >> q         # nonzero: bits at and past valid are not other_space
        r = q + lowest_bit(rest) if rest else 64
        if r >= valid:
            # The run goes on past what the window knows. q stays unmarked, and nothing after
            # it can be marked (the run fills the rest of the window), so the next window,
            # which starts before q, decides it.
            break
        if not ((newline >> r) & 1):
            starts |= (<uint64_t>1) << q
    if cased:
        # o200k: a letter run splits where an upper-case letter follows a lower-case one; what
        # follows a tail's slash starts a piece.
        starts |= upper & ((letter & ~upper) << 1)
        starts = (starts & ~absorbed) | ((letter | punct) & ~absorbed & ((absorbed & slash) << 1))
    # Contractions. cl100k: an apostrophe that starts a piece (offset 0 always does) takes 's,
    # 'll, ... o200k: an apostrophe right after a letter that makes one ends the word's piece
    # instead of starting one, nothing inside it starts a piece ("'lL"), and an apostrophe right
    # where a contraction ended starts the next piece ("'s's" is one).
    apostrophe_starts = (apostrophe & prev_letter) if cased else ((starts | 1) & apostrophe)
    ended = -1
    while apostrophe_starts:
        q = lowest_bit(apostrophe_starts)
        apostrophe_starts &= apostrophe_starts - 1
        if q > cutoff:
            break
        r = contraction_length(s + pos + q)
        if not r:
            continue
        if not cased:
            starts |= (<uint64_t>1) << (q + r)
        elif q != ended:
            starts = (starts & ~((((<uint64_t>1) << r) - 1) << q)) | ((<uint64_t>1) << (q + r))
            ended = q + r
    starts &= (((<uint64_t>1) << (cutoff + 1)) - 1) & ~(<uint64_t>1)
    # Eight ends per pass, without a test between them (the caller keeps 64 entries free, and
    # entries past the last end are scratch): a loop of one end per pass mispredicted its exit
    # in most windows.
    cdef int found = 0, total = bit_count(starts), j
    while found < total:
        for j in range(8):   # a constant count: gcc unrolls it
            out[found + j] = pos + lowest_bit_any(starts)
            starts &= starts - 1
        found += 8
    return total
