# Compiled pre-tokenizer scanners: the built-in regex patterns as hand-written state machines.
#
# Each scanner returns, for a piece starting at a byte offset, the byte offset where the
# pattern's leftmost match ends. The rule order follows the alternatives of the pattern
# (leftmost alternative first, as the regex module tries them); every rule is commented with the alternative
# it implements, and tests/pretokenize/test_scanner.py compares the spans with `regex` on corpora, on
# hypothesis text and on a hostile-alphabet fuzzer.
#
# Performance notes (the measurements: docs/history.md, "Hand-written scanners")
# -----------------------------------------------------------------------------------------
# * Classes come from one 256-entry table indexed by the current byte (`cybpe_byte_class`,
#   generated from `regex` with the Unicode tables): for an ASCII byte it holds the class bits
#   plus CR/LF, space, apostrophe and slash bits; for a byte >= 0x80 it holds only
#   CYBPE_NONASCII. The run loops therefore test `cls & mask` first (one load, one test for
#   the common "still inside the run" case) and decode UTF-8 only when the NONASCII bit says
#   so. The UTF-8 decoder is inlined too.
# * ASCII letter runs go 8 bytes at a time (SWAR, `cybpe_ascii_letters8`): the byte loop
#   mispredicted its exit at nearly every word end.
# * The cl100k-like kinds and o200k scan 64 bytes at a time where they can (ASCII and two-byte
#   letters; o200k only upper- and lower-case ones): class bitmasks (SSE2) and a few shifts
#   find every piece start in the window at once (cl100k_window.pxd, which says how), where the
#   per-piece scanner branched unpredictably on each piece's kind. A window's ends are written
#   eight per pass.
# * The cl100k-like kinds take text of three-byte letters and marks (Devanagari, Tamil, Khmer,
#   Tibetan: the marks are no \p{L}, so a word is two to four pieces of one or two characters)
#   a run of pieces at a time (three_byte_pieces): one loop, its decoding in line, where each
#   piece went through the window test, the per-piece dispatch and a call per class. o200k does
#   the same for words of caseless letters and marks (o200k_caseless_pieces: Korean, Indic,
#   Arabic), which its windows leave to the per-piece scanner. The class of each character in
#   those loops comes from cybpe_quick_class, forced in line: as a Cython inline function gcc
#   kept it a call once both loops used it.
# * scan_all has one loop per kind rather than a switch per piece: the loop is written once, as a
#   function fused over one empty type per kind (scan_pieces), and Cython writes it out per kind
#   with the scanner and its flags as constants. gcc does not inline the scanner bodies (too
#   large), so the flags (digits, marks, end-of-text-first) stay arguments; they are perfectly
#   predicted branches.
# * Right-to-left digit groups (gpt4-digits-rtl, superbpe) stay linear without state: at a number
#   character whose predecessor is also a number we are inside a run whose remaining length is
#   a multiple of three, so the group is the next three characters; only the first group of a
#   run scans to the run end to find its length modulo three.
# * o200k's words backtrack in the regex; here one pass over the "upper" run records the end
#   of the last Lm/Lo/M character, which is exactly where the regex's backtracking lands.
#   Every rule scans a bounded number of times past a piece's end, so all scanners are linear.
# * The Python methods (split_utf8, split_spans, split) come from BaseScanner (scanner_api.pyx),
#   which calls Scanner.scan_all through the class's vtable: one indirect call per text.

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from cybpe._c.ascii_letters cimport cybpe_ascii_letters8
from cybpe._c.ascii_masks cimport (
    AsciiMasks, bytes_below16, cybpe_ascii_masks64, cybpe_ascii_masks64_bytes)
from cybpe.pretokenize.cl100k_window cimport cl100k_window, fill_two_byte_kinds
from cybpe._c.utf8 cimport decode_cp, is_cont
from cybpe.pretokenize.scanner_api cimport BaseScanner, SCAN_NO_MEMORY, push_end, reserve_ends

from cybpe.errors import UnknownPreTokenizerError


cdef extern from "unicode_tables.h" nogil:
    # Class bits (see the generator); CRLF, SPACE, APOS and SLASH exist only in the byte table.
    enum:
        CYBPE_LL, CYBPE_M, CYBPE_N, CYBPE_S, CYBPE_L, CYBPE_UPPER, CYBPE_LOWER, CYBPE_BOTH
        CYBPE_CRLF, CYBPE_SPACE, CYBPE_APOS, CYBPE_SLASH, CYBPE_NONASCII
    const uint16_t cybpe_byte_class[256]
    const char cybpe_ascii_fold[128]
    uint32_t cybpe_cp_class(uint32_t cp)
    char cybpe_fold_extra(uint32_t cp)


cdef extern from *:
    """
    #define CYBPE_NO_QUICK_CLASS 0xFFFFFFFFu
    /* The class bits of the code point at p (< n) when it is an ASCII byte or a well-formed
       three-byte character (an E0 lead needs a second byte from A0, as decode_cp checks), *q
       where the next starts; else CYBPE_NO_QUICK_CLASS and *q untouched. Always in line: the
       run loops call it once a character, from several places. */
    CYBPE_ALWAYS_INLINE uint32_t cybpe_quick_class(const uint8_t* s, Py_ssize_t n, Py_ssize_t p,
                                                   Py_ssize_t* q) {
        uint32_t b0 = s[p], b1, b2;
        if (b0 < 0x80) {
            *q = p + 1;
            return cybpe_byte_class[b0];
        }
        if (b0 < 0xE0 || b0 > 0xEF || p + 2 >= n) return CYBPE_NO_QUICK_CLASS;
        b1 = s[p + 1];
        b2 = s[p + 2];
        if ((b1 & 0xC0) != 0x80 || (b2 & 0xC0) != 0x80 || (b0 == 0xE0 && b1 < 0xA0))
            return CYBPE_NO_QUICK_CLASS;
        *q = p + 3;
        return cybpe_cp_class(((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F));
    }
    """
    const uint32_t NO_QUICK_CLASS "CYBPE_NO_QUICK_CLASS"
    uint32_t cybpe_quick_class(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t* q) noexcept nogil


SCANNER_NAMES = (
    "gpt2", "cl100k", "o200k", "llama3", "qwen2", "gpt4-digits1", "gpt4-digits2",
    "gpt4-digits3", "gpt4-digits-rtl", "abugida", "superbpe",
)
# Scanner kinds: indexes into SCANNER_NAMES, private to this module (other modules dispatch
# through BaseScanner.scan_all).
cdef enum:
    SCAN_GPT2 = 0
    SCAN_CL100K = 1
    SCAN_O200K = 2
    SCAN_LLAMA3 = 3
    SCAN_QWEN2 = 4
    SCAN_GPT4_DIGITS1 = 5
    SCAN_GPT4_DIGITS2 = 6
    SCAN_GPT4_DIGITS3 = 7
    SCAN_GPT4_DIGITS_RTL = 8
    SCAN_ABUGIDA = 9
    SCAN_SUPERBPE = 10

_KIND_OF_NAME = {name: kind for kind, name in enumerate(SCANNER_NAMES)}

fill_two_byte_kinds()  # (the windows' two-byte letters, cl100k_window.pxd; before any scan)


# ---------------------------------------------------------------------------------------------
# UTF-8 and classes
# ---------------------------------------------------------------------------------------------

cdef inline uint32_t decode_class(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t* q) noexcept nogil:
    """Class bits of the non-ASCII code point at p; *q = where the next starts. A well-formed
    three-byte sequence led by E1..EF (most of Indic, Southeast Asian and CJK text) is decoded
    here, as decode_cp would (only an E0 lead has an overlong form to refuse), without the
    call: decode_cp is too large for the compiler to inline into every loop."""
    cdef uint32_t b0 = s[p]
    if 0xE1 <= b0 <= 0xEF and p + 2 < n and is_cont(s[p + 1]) and is_cont(s[p + 2]):
        q[0] = p + 3
        return cybpe_cp_class(((b0 & 0x0F) << 12) | ((<uint32_t>s[p + 1] & 0x3F) << 6)
                              | (<uint32_t>s[p + 2] & 0x3F))
    if 0xC2 <= b0 <= 0xDF and p + 1 < n and is_cont(s[p + 1]):
        q[0] = p + 2
        return cybpe_cp_class(((b0 & 0x1F) << 6) | (<uint32_t>s[p + 1] & 0x3F))
    return cybpe_cp_class(decode_cp(s, n, p, q))


cdef inline uint32_t class_at(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t* q) noexcept nogil:
    """Class bits of the code point at p (< n); *q = where the next starts."""
    cdef uint8_t b = s[p]
    if b < 0x80:
        q[0] = p + 1
        return cybpe_byte_class[b]
    return decode_class(s, n, p, q)


cdef inline uint32_t class_before(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """Class bits of the code point that ends at p (> 0); 0 when the bytes there are not one."""
    cdef Py_ssize_t start = p - 1
    cdef Py_ssize_t q
    cdef uint32_t cls
    if s[start] < 0x80:
        return cybpe_byte_class[s[start]]
    while start > 0 and start > p - 4 and is_cont(s[start]):
        start -= 1
    cls = decode_class(s, n, start, &q)
    return cls if q == p else 0


cdef struct ClassHint:
    # The class of the non-ASCII code point at `at` of the text being scanned, and where the
    # next one starts, as the run that stopped there decoded it. In text whose words are cut by
    # marks (Devanagari, Tamil with the cl100k-like patterns) a piece is one or two characters,
    # and the character that ends a run starts the next piece: the hint saves decoding it twice.
    # A class is a function of the text and the place alone, so an old hint is never wrong.
    Py_ssize_t at             # -1: none
    Py_ssize_t next
    uint32_t cls


cdef inline void keep_class(ClassHint* hint, Py_ssize_t at, Py_ssize_t next,
                            uint32_t cls) noexcept nogil:
    """Put the class and end of the non-ASCII code point at `at` into the hint (when not NULL)."""
    if hint != NULL:
        hint.at = at
        hint.next = next
        hint.cls = cls


cdef inline uint32_t class_at_hinted(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t* q,
                                     const ClassHint* hint) noexcept nogil:
    """class_at, from the hint when it holds the code point at p."""
    if hint != NULL and hint.at == p:
        q[0] = hint.next
        return hint.cls
    return class_at(s, n, p, q)


cdef inline Py_ssize_t skip_in_hinting(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, uint32_t mask,
                                       ClassHint* hint) noexcept nogil:
    """End of the run of code points from p whose class has a bit of `mask`; a non-ASCII code
    point that ends it goes into the hint (when not NULL)."""
    cdef uint32_t cls
    cdef Py_ssize_t q
    while p < n:
        cls = cybpe_byte_class[s[p]]
        if cls & mask:
            p += 1
        elif cls & CYBPE_NONASCII:
            cls = decode_class(s, n, p, &q)
            if not (cls & mask):
                keep_class(hint, p, q, cls)
                break
            p = q
        else:
            break
    return p


cdef inline Py_ssize_t skip_in(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, uint32_t mask) noexcept nogil:
    """End of the run of code points from p whose class has a bit of `mask`."""
    return skip_in_hinting(s, n, p, mask, NULL)


cdef inline Py_ssize_t skip_letters_hinting(const uint8_t* s, Py_ssize_t n, Py_ssize_t p,
                                            uint32_t mask, bint lower_only,
                                            ClassHint* hint) noexcept nogil:
    """skip_in_hinting for a letter class; ASCII letters go 8 bytes at a time.

    `mask` must contain every ASCII letter (lower_only False) or the lowercase ones and no
    uppercase one (lower_only True).
    """
    cdef unsigned k
    while p + 8 <= n:
        k = cybpe_ascii_letters8(s + p, lower_only)
        p += k
        if k < 8:
            break
    return skip_in_hinting(s, n, p, mask, hint)


cdef inline Py_ssize_t skip_letters(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, uint32_t mask,
                                    bint lower_only) noexcept nogil:
    """skip_letters_hinting without a hint."""
    return skip_letters_hinting(s, n, p, mask, lower_only, NULL)


cdef inline Py_ssize_t skip_out(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, uint32_t mask) noexcept nogil:
    """End of the run of code points from p whose class has no bit of `mask`."""
    cdef uint32_t cls
    cdef Py_ssize_t q
    while p < n:
        cls = cybpe_byte_class[s[p]]
        if not (cls & (mask | CYBPE_NONASCII)):
            p += 1
        elif cls & CYBPE_NONASCII:
            cls = decode_class(s, n, p, &q)
            if cls & mask:
                break
            p = q
        else:
            break
    return p


cdef inline Py_ssize_t skip_bytes(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, uint32_t mask) noexcept nogil:
    """End of the run of ASCII bytes from p whose byte-table bits include one of `mask`."""
    while p < n and (cybpe_byte_class[s[p]] & mask):
        p += 1
    return p


cdef inline Py_ssize_t skip_numbers(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, int count) noexcept nogil:
    """Advance over at most `count` more \\p{N} code points from p."""
    cdef Py_ssize_t q
    while count > 0 and p < n and (class_at(s, n, p, &q) & CYBPE_N):
        p = q
        count -= 1
    return p


cdef inline int fold_at(const uint8_t* s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t* q) noexcept nogil:
    """The contraction letter (s d m t l v e r) the code point at p case-folds to, else 0."""
    cdef uint8_t b = s[p]
    if b < 0x80:
        q[0] = p + 1
        return cybpe_ascii_fold[b]
    return cybpe_fold_extra(decode_cp(s, n, p, q))


cdef inline Py_ssize_t contraction_end(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """End of `'(?i:[sdmt]|ll|ve|re)` at p, or -1 (caller checked that s[p] is an apostrophe)."""
    cdef Py_ssize_t q1, q2
    cdef int first, second
    if p + 1 >= n:
        return -1
    first = fold_at(s, n, p + 1, &q1)
    if first == c's' or first == c'd' or first == c'm' or first == c't':
        return q1
    if (first == c'l' or first == c'v' or first == c'r') and q1 < n:
        second = fold_at(s, n, q1, &q2)
        if (first == c'l' and second == c'l') or (first != c'l' and second == c'e'):
            return q2
    return -1


cdef inline Py_ssize_t whitespace_end(const uint8_t* s, Py_ssize_t n, Py_ssize_t i,
                                      bint end_of_text_first, bint gpt2) noexcept nogil:
    """End of the whitespace piece at i (the code point at i is \\s).

    Let [i, k) be the whole \\s run. cl100k family (`\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s`):
    k at the end of the text; else up to the last CR/LF of the run; else all but the last
    character; else one character. Llama-3/o200k (`\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`) test the
    CR/LF rule before the end of the text. GPT-2 (`\\s+(?!\\S)|\\s+`) has no CR/LF rule.
    """
    cdef Py_ssize_t p = i
    cdef Py_ssize_t q
    cdef Py_ssize_t last_start = i
    cdef Py_ssize_t newline_end = -1
    cdef uint32_t cls
    while p < n:
        cls = class_at(s, n, p, &q)
        if not (cls & CYBPE_S):
            break
        if cls & CYBPE_CRLF:
            newline_end = q
        last_start = p
        p = q
    if not gpt2:
        if newline_end >= 0 and not (end_of_text_first and p == n):
            return newline_end
    if p == n:
        return p
    if last_start > i:
        return last_start
    return p


# ---------------------------------------------------------------------------------------------
# The scanners
# ---------------------------------------------------------------------------------------------

cdef inline Py_ssize_t scan_gpt2(const uint8_t* s, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    # 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    cdef Py_ssize_t j, j2
    cdef uint32_t c = class_at(s, n, i, &j)
    cdef uint32_t c2
    cdef uint8_t b1, b2
    if (c & CYBPE_APOS) and j < n:              # contractions, lowercase ASCII only
        b1 = s[j]
        if b1 == c's' or b1 == c't' or b1 == c'm' or b1 == c'd':
            return j + 1
        if j + 1 < n:
            b2 = s[j + 1]
            if (b1 == c'r' and b2 == c'e') or (b1 == c'v' and b2 == c'e') or (b1 == c'l' and b2 == c'l'):
                return j + 2
    if (c & CYBPE_SPACE) and j < n:             # the optional leading space of the next three
        c2 = class_at(s, n, j, &j2)
        if c2 & CYBPE_L:
            return skip_letters(s, n, j2, CYBPE_L, False)
        if c2 & CYBPE_N:
            return skip_in(s, n, j2, CYBPE_N)
        if not (c2 & (CYBPE_S | CYBPE_L | CYBPE_N)):
            return skip_out(s, n, j2, CYBPE_S | CYBPE_L | CYBPE_N)
    if c & CYBPE_L:
        return skip_letters(s, n, j, CYBPE_L, False)
    if c & CYBPE_N:
        return skip_in(s, n, j, CYBPE_N)
    if not (c & CYBPE_S):
        return skip_out(s, n, j, CYBPE_S | CYBPE_L | CYBPE_N)
    return whitespace_end(s, n, i, False, True)


cdef inline Py_ssize_t number_group_end(const uint8_t* s, Py_ssize_t n, Py_ssize_t i,
                                         Py_ssize_t j) noexcept nogil:
    """End of the right-to-left group of 1-3 numbers that starts at i (\\p{N}, ending at j).

    Inside a run (the predecessor is a number too) the rest of the run is a multiple of three,
    so the group is three numbers; the run's first group scans to the run end for its length.
    """
    cdef Py_ssize_t k, q, count
    if i > 0 and (class_before(s, n, i) & CYBPE_N):
        return skip_numbers(s, n, j, 2)
    k = j
    count = 1
    while k < n and (class_at(s, n, k, &q) & CYBPE_N):
        k = q
        count += 1
    count = count % 3
    return skip_numbers(s, n, j, (count if count else 3) - 1)


cdef inline Py_ssize_t scan_gpt4(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, int digits,
                                 bint marks, bint end_of_text_first, ClassHint* hint) noexcept nogil:
    # cl100k:  '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
    #          | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
    # digits:  1, 2 or 3 for \p{N}{1,digits}+; 0 for whole \p{N}++ runs cut in threes from the right.
    # marks:   abugida: words are [\p{L}\p{M}]++, and \p{M} leaves the prefix and punctuation classes.
    # end_of_text_first: False for the Llama-3/Qwen2 strings (\s*[\r\n]+ before \s+(?!\S)).
    cdef Py_ssize_t j, j2, e
    cdef uint32_t word = CYBPE_L | CYBPE_M if marks else CYBPE_L
    cdef uint32_t not_prefix = CYBPE_CRLF | CYBPE_N | word
    cdef uint32_t not_punct = CYBPE_S | CYBPE_N | word
    cdef uint32_t c = class_at_hinted(s, n, i, &j, hint)
    cdef uint32_t c2
    # '(?i:[sdmt]|ll|ve|re)
    if c & CYBPE_APOS:
        e = contraction_end(s, n, i)
        if e >= 0:
            return e
    # [^\r\n\p{L}\p{N}]?+\p{L}++ (possessive prefix: taken whenever the class allows it)
    if not (c & not_prefix):
        if j < n:
            c2 = class_at(s, n, j, &j2)
            if c2 & word:
                return skip_letters_hinting(s, n, j2, word, False, hint)
    elif c & word:
        return skip_letters_hinting(s, n, j, word, False, hint)
    # \p{N}{1,3}+
    if c & CYBPE_N:
        if digits > 0:
            return skip_numbers(s, n, j, digits - 1)
        return number_group_end(s, n, i, j)
    # ' ?[^\s\p{L}\p{N}]++[\r\n]*+'
    if (c & CYBPE_SPACE) and j < n:
        c2 = class_at(s, n, j, &j2)
        if not (c2 & not_punct):
            return skip_bytes(s, n, skip_out(s, n, j2, not_punct), CYBPE_CRLF)
    if not (c & not_punct):
        return skip_bytes(s, n, skip_out(s, n, j, not_punct), CYBPE_CRLF)
    return whitespace_end(s, n, i, end_of_text_first, False)  # c is \s: all else is covered


cdef inline uint32_t run_class(const uint8_t* s, Py_ssize_t n, Py_ssize_t p,
                               Py_ssize_t* q) noexcept nogil:
    """class_at for the loops of the run paths below: an ASCII byte or a well-formed three-byte
    character always in line (cybpe_quick_class), anything else through decode_class."""
    cdef uint32_t c = cybpe_quick_class(s, n, p, q)
    return c if c != NO_QUICK_CLASS else decode_class(s, n, p, q)


cdef inline Py_ssize_t letters_end(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """End of the run of letter code points (class L) from p."""
    cdef Py_ssize_t q
    while p < n and run_class(s, n, p, &q) & CYBPE_L:
        p = q
    return p


cdef inline Py_ssize_t others_end(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """End of the run of code points from p that are no letter, number or space: skip_out with
    those classes, through run_class."""
    cdef Py_ssize_t q
    while p < n and not (run_class(s, n, p, &q) & (CYBPE_S | CYBPE_N | CYBPE_L)):
        p = q
    return p


cdef Py_ssize_t three_byte_pieces(const uint8_t* s, Py_ssize_t n, Py_ssize_t pos,
                                  int64_t** ends, Py_ssize_t* capacity,
                                  Py_ssize_t* count) noexcept nogil:
    """The pieces of scan_gpt4 (marks False) from pos while each starts at a character of
    three or more bytes, or at a space before one, and is a letter run, one such character
    that is no letter, number or space and the letter run after it, or a run of characters
    that are none of the three (and the CR/LF bytes after it): Indic, Southeast Asian and Tibetan words cut
    at every mark. Their ends go to *ends; the return is where the next piece starts (pos: none
    taken), -1 when out of memory. The same rules as scan_gpt4 in their order, in one loop:
    there a piece of one or two characters paid the window test, the per-piece dispatch and a
    call per character class."""
    cdef Py_ssize_t q, q2, end
    cdef uint32_t c
    cdef uint32_t not_punct = CYBPE_S | CYBPE_N | CYBPE_L
    while pos < n:
        if s[pos] >= 0xE0:
            c = run_class(s, n, pos, &q)
            if c & CYBPE_L:                                 # \p{L}++
                end = letters_end(s, n, q)
            elif c & (CYBPE_S | CYBPE_N):                    # whitespace and numbers: scan_gpt4
                break
            elif q < n and run_class(s, n, q, &q2) & CYBPE_L:  # [^\r\n\p{L}\p{N}]?+\p{L}++
                end = letters_end(s, n, q2)
            else:                                            # [^\s\p{L}\p{N}]++[\r\n]*+
                end = skip_bytes(s, n, others_end(s, n, q), CYBPE_CRLF)
        elif s[pos] == 0x20 and pos + 1 < n and s[pos + 1] >= 0xE0:
            c = run_class(s, n, pos + 1, &q)
            if c & CYBPE_L:                                  # the space as the prefix
                end = letters_end(s, n, q)
            elif not (c & not_punct):                        # ' ?[^\s\p{L}\p{N}]++[\r\n]*+'
                end = skip_bytes(s, n, others_end(s, n, q), CYBPE_CRLF)
            else:
                break
        else:
            break
        if push_end(ends, capacity, count, end):
            return -1
        pos = end
    return pos


cdef inline Py_ssize_t contraction_suffix(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """p extended by o200k's optional (?i:'s|'t|'re|'ve|'m|'ll|'d)."""
    cdef Py_ssize_t e
    if p < n and s[p] == c"'":
        e = contraction_end(s, n, p)
        if e >= 0:
            return e
    return p


cdef inline Py_ssize_t o200k_word_a(const uint8_t* s, Py_ssize_t n, Py_ssize_t p,
                                    ClassHint* hint) noexcept nogil:
    """[Upper]*[Lower]+(contraction)? from p, or -1. A non-ASCII code point that ends the
    Upper run goes into the hint (when not NULL).

    Upper = [Lu Lt Lm Lo M], Lower = [Ll Lm Lo M]. The regex takes the longest Upper run, then
    backs off until a Lower character follows: that is the run's end when an Ll follows it,
    else the last Lm/Lo/M inside the run (whose Lower run is then that one character).
    """
    cdef Py_ssize_t q
    cdef Py_ssize_t after_both = -1
    cdef uint32_t cls = 0
    while p < n:
        cls = class_at(s, n, p, &q)
        if not (cls & CYBPE_UPPER):
            break
        if cls & CYBPE_BOTH:
            after_both = q
        p = q
    if p < n:  # cls and q are the class and end of the code point at p, which ended the run
        if s[p] >= 0x80:
            keep_class(hint, p, q, cls)
        if cls & CYBPE_LL:
            return contraction_suffix(s, n, skip_letters_hinting(s, n, q, CYBPE_LOWER, True, hint))
    if after_both >= 0:
        return contraction_suffix(s, n, after_both)
    return -1


cdef inline Py_ssize_t o200k_word_b(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """[Upper]+[Lower]*(contraction)? from p, or -1."""
    cdef Py_ssize_t e = skip_in(s, n, p, CYBPE_UPPER)
    if e == p:
        return -1
    return contraction_suffix(s, n, skip_letters(s, n, e, CYBPE_LOWER, True))


cdef inline Py_ssize_t scan_o200k(const uint8_t* s, Py_ssize_t n, Py_ssize_t i,
                                  ClassHint* hint) noexcept nogil:
    # [^\r\n\p{L}\p{N}]?[Upper]*[Lower]+(contraction)?     (A)
    # |[^\r\n\p{L}\p{N}]?[Upper]+[Lower]*(contraction)?    (B)
    # |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    cdef Py_ssize_t j, j2, e
    cdef uint32_t c = class_at_hinted(s, n, i, &j, hint)
    cdef uint32_t c2
    if not (c & (CYBPE_CRLF | CYBPE_L | CYBPE_N)):
        # The prefix may be taken; the regex tries A with it, A without it (possible only when
        # the prefix is itself a mark, which A then always matches), B with it.
        if j < n:
            e = o200k_word_a(s, n, j, hint)
            if e >= 0:
                return e
        if c & CYBPE_M:
            return o200k_word_a(s, n, i, hint)
        if j < n:
            e = o200k_word_b(s, n, j)
            if e >= 0:
                return e
    elif c & CYBPE_L:
        e = o200k_word_a(s, n, i, hint)
        if e >= 0:
            return e
        return o200k_word_b(s, n, i)  # c is Lu or Lt here, so B matches
    if c & CYBPE_N:
        return skip_numbers(s, n, j, 2)
    if (c & CYBPE_SPACE) and j < n:
        c2 = class_at(s, n, j, &j2)
        if not (c2 & (CYBPE_S | CYBPE_L | CYBPE_N)):
            return skip_bytes(s, n, skip_out(s, n, j2, CYBPE_S | CYBPE_L | CYBPE_N), CYBPE_CRLF | CYBPE_SLASH)
    if not (c & (CYBPE_S | CYBPE_L | CYBPE_N)):
        return skip_bytes(s, n, skip_out(s, n, j, CYBPE_S | CYBPE_L | CYBPE_N), CYBPE_CRLF | CYBPE_SLASH)
    return whitespace_end(s, n, i, False, False)


cdef Py_ssize_t o200k_caseless_pieces(const uint8_t* s, Py_ssize_t n, Py_ssize_t pos,
                                      int64_t** ends, Py_ssize_t* capacity,
                                      Py_ssize_t* count) noexcept nogil:
    """The pieces of scan_o200k from pos while each is a run of caseless letters and marks
    (Lm, Lo, M: in both its Upper and Lower classes), alone or after one prefix character,
    that ends before a character which is no letter and no apostrophe: Korean, Japanese,
    Chinese, Indic, Arabic and Hebrew words. Such a run is what alternative A takes whole
    (with a mark at pos, A without the prefix gives the same run). Their ends go to *ends; the
    return is where the next piece starts (pos: none taken), -1 when out of memory. A run that
    a cased letter or an apostrophe ends, and every other piece, go to scan_o200k."""
    cdef Py_ssize_t q, q2, start, end
    cdef uint32_t c
    while pos < n:
        c = run_class(s, n, pos, &q)
        if c & CYBPE_BOTH:
            start = q
        elif not (c & (CYBPE_CRLF | CYBPE_L | CYBPE_N)) and q < n and run_class(s, n, q, &q2) & CYBPE_BOTH:
            start = q2
        else:
            break
        end = start
        while end < n:
            c = run_class(s, n, end, &q)
            if not (c & CYBPE_BOTH):
                break
            end = q
        if end < n and (c & CYBPE_L or s[end] == c"'"):
            break
        if push_end(ends, capacity, count, end):
            return -1
        pos = end
    return pos


cdef inline Py_ssize_t scan_superbpe(const uint8_t* s, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    # \p{N}++|[^\p{N}]++, each number run then cut into groups of three from the right
    cdef Py_ssize_t j
    if class_at(s, n, i, &j) & CYBPE_N:
        return number_group_end(s, n, i, j)
    return skip_out(s, n, j, CYBPE_N)


# ---------------------------------------------------------------------------------------------
# Kinds as types: the loop over a text is one fused function, which Cython writes out once per
# kind with the kind's scanner and flags as constants (a runtime kind tested per piece, or a loop
# gcc declines to specialise, costs instructions on every piece)
# ---------------------------------------------------------------------------------------------

cdef struct Gpt2Kind:
    char unused
cdef struct Cl100kKind:
    char unused
cdef struct O200kKind:
    char unused
cdef struct Llama3Kind:
    char unused
cdef struct Qwen2Kind:
    char unused
cdef struct Digits1Kind:
    char unused
cdef struct Digits2Kind:
    char unused
cdef struct DigitsRtlKind:
    char unused
cdef struct AbugidaKind:
    char unused
cdef struct SuperBpeKind:
    char unused
cdef struct WholeKind:
    char unused

ctypedef fused Kind:
    Gpt2Kind
    Cl100kKind
    O200kKind
    Llama3Kind
    Qwen2Kind
    Digits1Kind
    Digits2Kind
    DigitsRtlKind
    AbugidaKind
    SuperBpeKind
    WholeKind


cdef inline Py_ssize_t piece_end(Kind* kind, const uint8_t* s, Py_ssize_t n,
                                 Py_ssize_t pos, ClassHint* hint) noexcept nogil:
    """The end of the piece starting at ``pos``: the one place a kind names its scanner. hint
    (NULL for none) carries a class from one piece of a text to the next."""
    if Kind is Gpt2Kind:
        return scan_gpt2(s, n, pos)
    elif Kind is Cl100kKind:
        return scan_gpt4(s, n, pos, 3, False, True, hint)
    elif Kind is O200kKind:
        return scan_o200k(s, n, pos, hint)
    elif Kind is Llama3Kind:
        return scan_gpt4(s, n, pos, 3, False, False, hint)
    elif Kind is Qwen2Kind:
        return scan_gpt4(s, n, pos, 1, False, False, hint)
    elif Kind is Digits1Kind:
        return scan_gpt4(s, n, pos, 1, False, True, hint)
    elif Kind is Digits2Kind:
        return scan_gpt4(s, n, pos, 2, False, True, hint)
    elif Kind is DigitsRtlKind:
        return scan_gpt4(s, n, pos, 0, False, True, hint)
    elif Kind is AbugidaKind:
        return scan_gpt4(s, n, pos, 3, True, True, hint)
    elif Kind is SuperBpeKind:
        return scan_superbpe(s, n, pos)
    elif Kind is WholeKind:
        return n  # an unknown kind: one piece (never reached through Scanner)


cdef inline int window_digits(Kind* kind) noexcept nogil:
    """The digit group of a kind that takes cl100k_window: 1, 2 or 3."""
    if Kind is Qwen2Kind or Kind is Digits1Kind:
        return 1
    elif Kind is Digits2Kind:
        return 2
    else:
        return 3


cdef inline Py_ssize_t scan_pieces(Kind* kind, const uint8_t* s, Py_ssize_t n,
                                   int64_t** ends, Py_ssize_t* capacity) noexcept nogil:
    """Every piece end of s[0:n]: their number, or SCAN_NO_MEMORY."""
    cdef Py_ssize_t count = 0
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t found
    cdef ClassHint hint
    hint.at = -1
    # A first guess of the piece count: about one piece per four bytes of prose.
    if reserve_ends(ends, capacity, n // 4 + 16) != 0:
        return SCAN_NO_MEMORY
    while pos < n:
        if (Kind is Cl100kKind or Kind is Llama3Kind or Kind is Qwen2Kind or Kind is Digits1Kind
                or Kind is Digits2Kind or Kind is O200kKind):
            # 64 bytes at a time where the text allows (cl100k_window.pxd: ASCII and two-byte
            # letters), tried where the next 16 bytes hold no lead of a three- or four-byte
            # character (o200k: nor of a two-byte one from U+0580 on, Hebrew, Arabic..., whose
            # letters have no case and end its windows at once); the last 64 bytes, and pieces
            # at other text, go one at a time. These patterns split like cl100k's but for the
            # digit group and at the end of the text, which no window reaches.
            if pos + 64 <= n and bytes_below16(s + pos, 0xD6 if Kind is O200kKind else 0xE0):
                if reserve_ends(ends, capacity, count + 64) != 0:
                    return SCAN_NO_MEMORY
                found = cl100k_window(s, pos, ends[0] + count, window_digits(kind), Kind is O200kKind)
                if found:
                    count += found
                    pos = ends[0][count - 1]
                    continue
        # Text of three-byte letters and marks (Indic, Southeast Asian, Tibetan) goes a run
        # of pieces at a time.
        if ((Kind is Cl100kKind or Kind is Llama3Kind or Kind is Qwen2Kind or Kind is Digits1Kind
                or Kind is Digits2Kind)
                and (s[pos] >= 0xE0 or (s[pos] == 0x20 and pos + 1 < n and s[pos + 1] >= 0xE0))):
            found = three_byte_pieces(s, n, pos, ends, capacity, &count)
            if found < 0:
                return SCAN_NO_MEMORY
            if found > pos:
                pos = found
                continue
        # o200k: words of caseless letters and marks, from the two-byte characters that its
        # windows leave (U+0580 on) up.
        if Kind is O200kKind and (s[pos] >= 0xD6 or (s[pos] == 0x20 and pos + 1 < n and s[pos + 1] >= 0xD6)):
            found = o200k_caseless_pieces(s, n, pos, ends, capacity, &count)
            if found < 0:
                return SCAN_NO_MEMORY
            if found > pos:
                pos = found
                continue
        pos = piece_end(kind, s, n, pos, &hint)
        if push_end(ends, capacity, &count, pos):
            return SCAN_NO_MEMORY
    return count


# The kind of a Scanner (an int) to its type, for one piece and for a whole text.

cdef Py_ssize_t scan_next(int kind, const uint8_t* s, Py_ssize_t n, Py_ssize_t pos) noexcept nogil:
    if kind == SCAN_GPT2:
        return piece_end(<Gpt2Kind*>NULL, s, n, pos, NULL)
    if kind == SCAN_CL100K or kind == SCAN_GPT4_DIGITS3:   # the same pattern
        return piece_end(<Cl100kKind*>NULL, s, n, pos, NULL)
    if kind == SCAN_O200K:
        return piece_end(<O200kKind*>NULL, s, n, pos, NULL)
    if kind == SCAN_LLAMA3:
        return piece_end(<Llama3Kind*>NULL, s, n, pos, NULL)
    if kind == SCAN_QWEN2:
        return piece_end(<Qwen2Kind*>NULL, s, n, pos, NULL)
    if kind == SCAN_GPT4_DIGITS1:
        return piece_end(<Digits1Kind*>NULL, s, n, pos, NULL)
    if kind == SCAN_GPT4_DIGITS2:
        return piece_end(<Digits2Kind*>NULL, s, n, pos, NULL)
    if kind == SCAN_GPT4_DIGITS_RTL:
        return piece_end(<DigitsRtlKind*>NULL, s, n, pos, NULL)
    if kind == SCAN_ABUGIDA:
        return piece_end(<AbugidaKind*>NULL, s, n, pos, NULL)
    if kind == SCAN_SUPERBPE:
        return piece_end(<SuperBpeKind*>NULL, s, n, pos, NULL)
    return piece_end(<WholeKind*>NULL, s, n, pos, NULL)


cdef Py_ssize_t scan_kind_all(int kind, const uint8_t* s, Py_ssize_t n,
                              int64_t** ends, Py_ssize_t* capacity) noexcept nogil:
    if kind == SCAN_GPT2:
        return scan_pieces(<Gpt2Kind*>NULL, s, n, ends, capacity)
    if kind == SCAN_CL100K or kind == SCAN_GPT4_DIGITS3:   # the same pattern
        return scan_pieces(<Cl100kKind*>NULL, s, n, ends, capacity)
    if kind == SCAN_O200K:
        return scan_pieces(<O200kKind*>NULL, s, n, ends, capacity)
    if kind == SCAN_LLAMA3:
        return scan_pieces(<Llama3Kind*>NULL, s, n, ends, capacity)
    if kind == SCAN_QWEN2:
        return scan_pieces(<Qwen2Kind*>NULL, s, n, ends, capacity)
    if kind == SCAN_GPT4_DIGITS1:
        return scan_pieces(<Digits1Kind*>NULL, s, n, ends, capacity)
    if kind == SCAN_GPT4_DIGITS2:
        return scan_pieces(<Digits2Kind*>NULL, s, n, ends, capacity)
    if kind == SCAN_GPT4_DIGITS_RTL:
        return scan_pieces(<DigitsRtlKind*>NULL, s, n, ends, capacity)
    if kind == SCAN_ABUGIDA:
        return scan_pieces(<AbugidaKind*>NULL, s, n, ends, capacity)
    if kind == SCAN_SUPERBPE:
        return scan_pieces(<SuperBpeKind*>NULL, s, n, ends, capacity)
    return scan_pieces(<WholeKind*>NULL, s, n, ends, capacity)


# ---------------------------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------------------------

def _code_point_classes() -> bytes:
    """The class byte of every code point U+0000..U+10FFFF (for the table tests)."""
    cdef bytearray out = bytearray(0x110000)
    cdef unsigned char* p = out
    cdef uint32_t cp
    for cp in range(0x110000):
        p[cp] = <unsigned char> cybpe_cp_class(cp)
    return bytes(out)


def _ascii_masks_both(data) -> tuple:
    """The class masks of 64 bytes from the vector form and from the byte loop (for tests)."""
    cdef const uint8_t[::1] buf = data
    cdef AsciiMasks a, b
    if buf.shape[0] != 64:
        raise ValueError("need exactly 64 bytes")
    cybpe_ascii_masks64(&buf[0], &a)
    cybpe_ascii_masks64_bytes(&buf[0], &b)
    return ((a.high, a.letter, a.digit, a.space, a.newline, a.blank, a.apostrophe, a.upper, a.slash),
            (b.high, b.letter, b.digit, b.space, b.newline, b.blank, b.apostrophe, b.upper, b.slash))


def _ends_by_scan_next(int kind, data) -> list:
    """Piece ends of UTF-8 ``data`` found one scan_next call at a time (tests the C API)."""
    cdef const uint8_t[::1] buf = data
    cdef Py_ssize_t n = buf.shape[0]
    cdef Py_ssize_t pos = 0
    cdef list ends = []
    while pos < n:
        pos = scan_next(kind, &buf[0], n, pos)
        ends.append(pos)
    return ends


cdef class Scanner(BaseScanner):
    """A compiled splitter with exactly the spans of one built-in pre-tokenizer pattern.

    ``Scanner("cl100k").split_spans(text)`` equals the ``regex.finditer`` spans of the
    cl100k pattern; ``gpt4-digits-rtl`` and ``superbpe`` also apply their right-to-left digit
    grouping.
    Immutable: every method is safe to call from several threads at once.
    """

    def __cinit__(self, str name):
        if name not in _KIND_OF_NAME:
            raise UnknownPreTokenizerError(
                f"no compiled scanner named {name!r}; available: {', '.join(SCANNER_NAMES)}"
            )
        self.name = name
        self.kind = _KIND_OF_NAME[name]

    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil:
        return scan_kind_all(self.kind, s, n, ends, capacity)

    def __reduce__(self):
        return (Scanner, (self.name,))

    def __repr__(self) -> str:
        return f"Scanner({self.name!r})"

    def __eq__(self, other):
        """Scanners of the same name are equal."""
        if not isinstance(other, Scanner):
            return NotImplemented
        return self.kind == (<Scanner> other).kind

    def __hash__(self):
        return hash(("cybpe.Scanner", self.name))
