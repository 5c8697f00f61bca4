"""The compiled matcher for pre-tokenizer patterns that have no hand-written scanner.

``PatternScanner(pattern)`` splits UTF-8 bytes, GIL released, with ``regex.finditer``'s spans:
the leftmost match from each position, leftmost-first alternatives, greedy/lazy/possessive
repeats, atomic groups and lookaheads; text no match covers becomes a piece of its own, as in
``PreTokenizer``. Two backends (``.backend``): "dfa", a deterministic automaton
(``dfa_compiler.py`` builds it, ``dfa_runner.pxd`` runs it) for the common subset that every
built-in and published pattern is in; "backtrack", the program that ``pattern_compiler`` makes
of the pattern, run by the backtracking matcher below, for the rest. ``compile_scanner(pattern)``
takes the automaton when it can, else the program, each only when it gives the ``regex``
module's spans on a sample of hostile text; otherwise None.

Performance notes (the timings: docs/history.md, "Pattern matcher")
-----------------
* A repeat of one character class (``\\p{L}+``, ``\\s*``, ``\\p{N}{1,3}+``) is one REPEAT
  instruction that consumes in a tight loop and leaves at most one backtrack frame (greedy:
  "give one character back"; lazy: "take one more"), not a frame per character.
* ASCII code points test a class through a 128-bit map; others decode once and test the
  class's few items (ranges and property bits from the generated Unicode tables).
* Each match attempt counts its steps; past a budget proportional to the text the scan stops
  and the caller uses the ``regex`` module for that text (the same answer, never a hang that
  the regex module would not have too).
* The automaton reads each character once per walk (a class lookup, a table lookup) where the
  backtracking matcher tries alternatives one after the other, which brings a custom pattern
  close to the hand-written scanners. See dfa_runner.pxd for the walk's tricks.
* Texts of 512 bytes and more are walked as two lanes at once (dfa_runner.pxd,
  dfa_scan_lanes).
* An automaton of at most PAIR_MAX_STATES states and 16 ASCII classes gets the paired layout
  (``_paired_table``): the two-lane walk then takes two ASCII characters per move.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cybpe.pretokenize.dfa_runner cimport (DFA_PAIR_ROW, DFA_PAIR_SINGLES, DFA_RESTART,
                                            DFA_ROW_SHIFT, DFA_RUN_BITMAP, DFA_RUN_EXACT,
                                            DFA_RUN_LETTERS, DFA_RUN_LOWER, DFA_RUN_MATCH,
                                            dfa_scan_pieces, push_match)
from cybpe.pretokenize.pattern_scanner cimport CharClass, ClassItem, Instruction
from cybpe.pretokenize.scanner_api cimport push_end
from cybpe._c.utf8 cimport INVALID_CP, decode_cp, ends_to_code_points, is_cont
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import numpy as np
import regex

from cybpe.pretokenize.dfa_compiler import MAX_STATES as _DFA_MAX_STATES
from cybpe.pretokenize.dfa_compiler import NotDeterministic, build_dfa
from cybpe.pretokenize.pattern_compiler import UnsupportedPattern, compile_pattern
from cybpe.pretokenize.regex_spans import regex_spans
from cybpe.errors import InvalidParameterError


cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    void* PyUnicode_DATA(object o)


cdef extern from "unicode_tables.h" nogil:
    uint32_t cybpe_cp_class(uint32_t cp)


cdef enum:
    OP_CHAR = 0
    OP_CLASS = 1
    OP_SPLIT = 2
    OP_JMP = 3
    OP_MATCH = 4
    OP_REPEAT = 5
    OP_ATOMIC = 6
    OP_LOOK = 7
    OP_SUCCEED = 8
    OP_AT_END = 9
    OP_AT_END_STRING = 10
    OP_AT_BEGIN = 11
    REPEAT_GREEDY = 0
    REPEAT_LAZY = 1
    REPEAT_POSSESSIVE = 2
    ITEM_RANGE = 0
    ITEM_PROPS = 1
    ITEM_NOT_PROPS = 2
    FRAME_BRANCH = 0        # resume at pc with pos
    FRAME_GIVE_BACK = 1     # greedy repeat at pc: one character fewer, not below aux
    FRAME_TAKE_MORE = 2     # lazy repeat at pc: one character more; aux = how many so far
    NO_MATCH = -1
    OVER_BUDGET = -2
    NO_MEMORY = -3
    PROPERTY_MASK = 0xFF    # the property bits of cybpe_cp_class (the rest are byte-table only)

cdef Py_ssize_t STEPS_PER_BYTE = 200
cdef Py_ssize_t STEPS_BASE = 1_000_000
cdef Py_ssize_t MAX_FRAMES = 1 << 22     # backtrack frames (96 MB) before the regex module takes over


cdef struct Frame:
    int32_t pc
    int32_t kind
    Py_ssize_t pos
    Py_ssize_t aux


cdef struct Machine:
    const Instruction* code
    const CharClass* classes
    const ClassItem* items
    Frame* frames           # the backtrack stack, shared by nested runs
    Py_ssize_t n_frames
    Py_ssize_t frame_capacity
    Py_ssize_t budget       # steps left


# ---------------------------------------------------------------- characters

cdef inline uint32_t char_at(const uint8_t* s, Py_ssize_t n, Py_ssize_t p,
                             Py_ssize_t* q) noexcept nogil:
    """The code point at p (< n), *q = where the next starts: the scanners' decoding (lone
    surrogates decode; a malformed byte is one INVALID_CP character)."""
    if s[p] < 0x80:
        q[0] = p + 1
        return s[p]
    return decode_cp(s, n, p, q)


cdef inline Py_ssize_t char_before(const uint8_t* s, Py_ssize_t n, Py_ssize_t p) noexcept nogil:
    """Where the character that ends at p (> 0) starts."""
    cdef Py_ssize_t start = p - 1, q
    if s[start] < 0x80:
        return start
    while start > 0 and start > p - 4 and is_cont(s[start]):
        start -= 1
    char_at(s, n, start, &q)
    return start if q == p else p - 1


cdef bint class_has_slow(const CharClass* cls, const ClassItem* items, uint32_t cp) noexcept nogil:
    cdef uint32_t props = 0
    cdef bint props_known = False, found = False
    cdef const ClassItem* item
    cdef int32_t i
    for i in range(cls.n_items):
        item = &items[cls.first_item + i]
        if item.kind == ITEM_RANGE:
            found = item.low <= cp <= item.high
        else:
            if not props_known:
                props = (cybpe_cp_class(cp) & PROPERTY_MASK) if cp != INVALID_CP else 0
                props_known = True
            found = (props & item.low) != 0
            if item.kind == ITEM_NOT_PROPS:
                found = not found
        if found:
            break
    return found != cls.negated


cdef inline bint class_has(const Machine* m, int32_t k, uint32_t cp) noexcept nogil:
    cdef const CharClass* cls = &m.classes[k]
    if cp < 128:
        return (cls.ascii[cp >> 6] >> (cp & 63)) & 1
    return class_has_slow(cls, m.items, cp)


# ---------------------------------------------------------------- the matcher

cdef inline int push_frame(Machine* m, int32_t pc, int32_t kind, Py_ssize_t pos,
                           Py_ssize_t aux) noexcept nogil:
    """0, NO_MEMORY, or OVER_BUDGET past MAX_FRAMES (the regex module takes that text)."""
    cdef Frame* grown
    if m.n_frames == m.frame_capacity:
        if m.frame_capacity >= MAX_FRAMES:
            return OVER_BUDGET
        grown = <Frame*>realloc(m.frames, 2 * m.frame_capacity * sizeof(Frame))
        if grown == NULL:
            return NO_MEMORY
        m.frames = grown
        m.frame_capacity *= 2
    m.frames[m.n_frames].pc = pc
    m.frames[m.n_frames].kind = kind
    m.frames[m.n_frames].pos = pos
    m.frames[m.n_frames].aux = aux
    m.n_frames += 1
    return 0


cdef Py_ssize_t run(Machine* m, const uint8_t* s, Py_ssize_t n, int32_t pc,
                    Py_ssize_t pos) noexcept nogil:
    """Match the program from pc at pos: the end of the first match (leftmost-first), or
    NO_MATCH, OVER_BUDGET, NO_MEMORY. Frames pushed here are gone when it returns."""
    cdef Py_ssize_t base = m.n_frames, q, p, min_end, count, limit, take, e
    cdef int pushed
    cdef const Instruction* ins
    cdef Frame frame
    while True:
        m.budget -= 1
        if m.budget < 0:
            m.n_frames = base
            return OVER_BUDGET
        ins = &m.code[pc]
        if ins.op == OP_CHAR:
            if pos < n and char_at(s, n, pos, &q) == <uint32_t>ins.a:
                pos = q
                pc += 1
                continue
        elif ins.op == OP_CLASS:
            if pos < n and class_has(m, ins.a, char_at(s, n, pos, &q)):
                pos = q
                pc += 1
                continue
        elif ins.op == OP_SPLIT:
            pushed = push_frame(m, ins.b, FRAME_BRANCH, pos, 0)
            if pushed != 0:
                m.n_frames = base
                return pushed
            pc = ins.a
            continue
        elif ins.op == OP_JMP:
            pc = ins.a
            continue
        elif ins.op == OP_MATCH or ins.op == OP_SUCCEED:
            m.n_frames = base
            return pos
        elif ins.op == OP_REPEAT:
            # Take the minimum (lazy) or as many as allowed (greedy, possessive) characters of
            # the class, then leave one frame: "one more" (lazy) or "one fewer" (greedy).
            limit = ins.c if ins.c >= 0 else n + 1
            take = ins.b if ins.d == REPEAT_LAZY else limit
            count = 0
            p = min_end = pos
            while count < take and p < n and class_has(m, ins.a, char_at(s, n, p, &q)):
                p = q
                count += 1
                if count == ins.b:
                    min_end = p
            m.budget -= count
            if count >= ins.b:
                pushed = 0
                if ins.d == REPEAT_LAZY and count < limit:
                    pushed = push_frame(m, pc, FRAME_TAKE_MORE, p, count)
                elif ins.d == REPEAT_GREEDY and count > ins.b:
                    pushed = push_frame(m, pc, FRAME_GIVE_BACK, p, min_end)
                if pushed != 0:
                    m.n_frames = base
                    return pushed
                pos = p
                pc += 1
                continue
        elif ins.op == OP_ATOMIC or ins.op == OP_LOOK:
            e = run(m, s, n, pc + 1, pos)
            if e == OVER_BUDGET or e == NO_MEMORY:
                m.n_frames = base
                return e
            if ins.op == OP_ATOMIC:
                if e >= 0:
                    pos = e
                    pc = ins.a
                    continue
            elif (e >= 0) != (ins.b != 0):  # a lookahead that holds (or a negative that fails)
                pc = ins.a
                continue
        elif ins.op == OP_AT_END:  # "$": the end, or just before a final "\n"
            if pos == n or (pos == n - 1 and s[pos] == 10):
                pc += 1
                continue
        elif ins.op == OP_AT_END_STRING:
            if pos == n:
                pc += 1
                continue
        elif ins.op == OP_AT_BEGIN:
            if pos == 0:
                pc += 1
                continue
        # Failure: resume the newest frame of this run.
        while True:
            if m.n_frames == base:
                return NO_MATCH
            m.n_frames -= 1
            frame = m.frames[m.n_frames]
            if frame.kind == FRAME_BRANCH:
                pc = frame.pc
                pos = frame.pos
                break
            ins = &m.code[frame.pc]
            if frame.kind == FRAME_GIVE_BACK:
                pos = char_before(s, n, frame.pos)
                if pos > frame.aux:
                    push_frame(m, frame.pc, FRAME_GIVE_BACK, pos, frame.aux)  # the slot just freed
                pc = frame.pc + 1
                break
            # FRAME_TAKE_MORE
            if frame.pos < n and class_has(m, ins.a, char_at(s, n, frame.pos, &q)):
                limit = ins.c if ins.c >= 0 else n + 1
                if frame.aux + 1 < limit:
                    push_frame(m, frame.pc, FRAME_TAKE_MORE, q, frame.aux + 1)
                pos = q
                pc = frame.pc + 1
                break


cdef Py_ssize_t scan_pieces(Machine* m, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                            Py_ssize_t* capacity) noexcept nogil:
    """Piece ends of s[0:n] into the malloc'ed *ends (grown as needed): their number, or
    OVER_BUDGET / NO_MEMORY (the buffer stays the caller's to free)."""
    cdef Py_ssize_t pos = 0, count = 0, gap = -1, e, q
    m.budget = STEPS_BASE + STEPS_PER_BYTE * n
    while pos < n:
        e = run(m, s, n, 0, pos)
        if e == OVER_BUDGET or e == NO_MEMORY:
            return e
        if e > pos:
            if push_match(ends, capacity, &count, &gap, pos, e):
                return NO_MEMORY
            pos = e
        else:  # no match starts here: this character joins the unmatched text
            if gap < 0:
                gap = pos
            char_at(s, n, pos, &q)
            pos = q
    if gap >= 0 and push_end(ends, capacity, &count, n):
        return NO_MEMORY
    return count


# ---------------------------------------------------------------- the Python class

cdef class PatternScanner(BaseScanner):
    """Compiled splitting for a regex ``pattern`` (see the module docstring). Every method is
    safe to call from several threads at once: the program and the automaton's tables are
    read-only once built, and each scan keeps its own frames and piece ends."""

    def __cinit__(self, str pattern, backend="auto", int max_dfa_states=_DFA_MAX_STATES):
        """backend: "auto" (the automaton when the pattern is in its subset, else the
        backtracking matcher), "dfa" (NotDeterministic outside that subset) or "backtrack"."""
        if type(backend) is not str or backend not in ("auto", "dfa", "backtrack"):
            raise InvalidParameterError(f"backend must be 'auto', 'dfa' or 'backtrack', not {backend!r}")
        program = compile_pattern(pattern)  # UnsupportedPattern when outside the subset
        self.pattern = pattern
        self.backend = "backtrack"
        if backend != "backtrack":
            try:
                self._use_dfa(build_dfa(program, _cp_props, max_dfa_states))
            except NotDeterministic:
                if backend == "dfa":
                    raise
        self._regex = regex.compile(pattern)
        self.n_code = len(program.code)
        self.n_classes = len(program.classes)
        n_items = sum(len(items) for _, items in program.classes)
        self.code = <Instruction*>malloc(max(1, self.n_code) * sizeof(Instruction))
        self.classes = <CharClass*>malloc(max(1, self.n_classes) * sizeof(CharClass))
        self.items = <ClassItem*>malloc(max(1, n_items) * sizeof(ClassItem))
        if self.code == NULL or self.classes == NULL or self.items == NULL:
            raise MemoryError()
        cdef Py_ssize_t i, k = 0
        cdef uint32_t cp
        for i, (op, a, b, c, d) in enumerate(program.code):
            self.code[i].op, self.code[i].a, self.code[i].b = op, a, b
            self.code[i].c, self.code[i].d = c, d
        for i, (negated, items) in enumerate(program.classes):
            self.classes[i].first_item = <int32_t>k
            self.classes[i].n_items = len(items)
            self.classes[i].negated = negated
            for kind, low, high in items:
                self.items[k].kind, self.items[k].low, self.items[k].high = kind, low, high
                k += 1
            self.classes[i].ascii[0] = self.classes[i].ascii[1] = 0
            for cp in range(128):
                if class_has_slow(&self.classes[i], self.items, cp):
                    self.classes[i].ascii[cp >> 6] |= (<uint64_t>1) << (cp & 63)

    def _use_dfa(self, dfa):
        trans, width = _runner_table(dfa)
        paired = _paired_table(dfa, trans, width)
        props_class = np.asarray(dfa.props_class, dtype=np.int32)
        exc_cp = np.asarray([cp for cp, _ in dfa.exceptions] or [0], dtype=np.uint32)
        exc_class = np.asarray([c for _, c in dfa.exceptions] or [0], dtype=np.int32)
        # One byte per ASCII class: dfa_compiler numbers the ASCII characters' classes first.
        ascii_class = np.asarray(dfa.ascii_class, dtype=np.uint8)
        ascii_hi = (ascii_class * 16).astype(np.uint8)
        if paired is not None:
            trans, width = paired, DFA_PAIR_ROW
        self._dfa_arrays = (trans, props_class, exc_cp, exc_class, ascii_class, ascii_hi)
        self.n_dfa_states = dfa.n_states
        cdef const int32_t[::1] v_trans = trans, v_props = props_class
        cdef const uint8_t[::1] v_ascii = ascii_class, v_ascii_hi = ascii_hi
        cdef const int32_t[::1] v_exc_class = exc_class
        cdef const uint32_t[::1] v_exc_cp = exc_cp
        self.dfa.pairs = NULL
        self.dfa.ascii_hi = &v_ascii_hi[0]
        if paired is not None:
            self.dfa.pairs = &v_trans[0]
            self.dfa.trans = &v_trans[DFA_PAIR_SINGLES]
        else:
            self.dfa.trans = &v_trans[0]
        self.dfa.props_class = &v_props[0]
        self.dfa.ascii_class = &v_ascii[0]
        self.dfa.exc_cp = &v_exc_cp[0]
        self.dfa.exc_class = &v_exc_class[0]
        self.dfa.n_exc = len(dfa.exceptions)
        self.dfa.n_classes = dfa.n_classes
        self.dfa.width = width
        self.dfa.nl_class = dfa.nl_class
        self.dfa.final_nl_class = dfa.final_nl_class
        self.backend = "dfa"
        self.use_dfa = True

    def __dealloc__(self):
        free(self.code)
        free(self.classes)
        free(self.items)

    cdef Py_ssize_t scan_all(self, const uint8_t* s, Py_ssize_t n, int64_t** ends,
                             Py_ssize_t* capacity) noexcept nogil:
        cdef Machine m
        cdef Py_ssize_t count
        if self.use_dfa:
            return dfa_scan_pieces(&self.dfa, s, n, ends, capacity, STEPS_BASE + STEPS_PER_BYTE * n)
        m.code = self.code
        m.classes = self.classes
        m.items = self.items
        m.frame_capacity = 256
        m.n_frames = 0
        m.frames = <Frame*>malloc(m.frame_capacity * sizeof(Frame))
        if m.frames == NULL:
            return NO_MEMORY
        count = scan_pieces(&m, s, n, ends, capacity)
        free(m.frames)
        return count

    cdef object _ends(self, const uint8_t* s, Py_ssize_t n):
        """int64 array of piece ends (bytes), or None past the step budget."""
        cdef int64_t* ends = NULL
        cdef Py_ssize_t capacity = 0, count
        cdef int64_t[::1] view
        try:
            with nogil:
                count = self.scan_all(s, n, &ends, &capacity)
            if count == NO_MEMORY:
                raise MemoryError()
            if count == OVER_BUDGET:
                return None
            out = np.empty(count, dtype=np.int64)
            if count:
                view = out
                memcpy(&view[0], ends, count * sizeof(int64_t))
            return out
        finally:
            free(ends)

    def split_utf8(self, data) -> np.ndarray:
        """int64 array of the piece END byte offsets of UTF-8 ``data`` (bytes-like)."""
        cdef const uint8_t[::1] buf = data
        if buf.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        ends = self._ends(&buf[0], buf.shape[0])
        if ends is None:  # past the step budget: the regex module decides
            text = bytes(buf).decode("utf-8", "surrogatepass")
            sizes = [len(text[a:b].encode("utf-8", "surrogatepass"))
                     for a, b in self._regex_spans(text)]
            ends = np.cumsum(np.array(sizes, dtype=np.int64))
        return ends

    def _compiled_ends(self, data):
        """split_utf8 without the regex fallback: None past the step budget (for tests)."""
        cdef const uint8_t[::1] buf = data
        if buf.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        return self._ends(&buf[0], buf.shape[0])

    def _regex_spans(self, str text) -> list:
        return regex_spans(self._regex, text)

    def split_spans(self, str text) -> list:
        """``(start, end)`` code-point offsets of the pieces, covering ``text``."""
        cdef bytes encoded
        cdef const uint8_t* s
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), k, start = 0
        cdef int64_t[::1] ends
        if n == 0:
            return []
        ascii = PyUnicode_IS_COMPACT_ASCII(text)
        if ascii:  # its data is its UTF-8, and bytes are code points
            s = <const uint8_t*>PyUnicode_DATA(text)
            found = self._ends(s, n)
        else:
            encoded = text.encode("utf-8", "surrogatepass")
            s = <const uint8_t*>PyBytes_AS_STRING(encoded)
            found = self._ends(s, PyBytes_GET_SIZE(encoded))
        if found is None:
            return self._regex_spans(text)
        ends = found
        if not ascii and ends.shape[0]:
            ends_to_code_points(s, &ends[0], ends.shape[0])
        spans = []
        for k in range(ends.shape[0]):
            spans.append((start, ends[k]))
            start = ends[k]
        return spans

    def split(self, str text) -> list:
        """The pieces of ``text``; they concatenate back to it."""
        return [text[a:b] for a, b in self.split_spans(text)]

    @property
    def dfa_states(self) -> int:
        """The number of automaton states (0 on the backtracking backend)."""
        return self.n_dfa_states

    @property
    def dfa_pair_moves(self) -> bool:
        """Whether the automaton's two-lane walk reads two ASCII characters per move
        (dfa_runner.pxd, the paired layout)."""
        return self.use_dfa and self.dfa.pairs != NULL

    def __reduce__(self):
        return (PatternScanner, (self.pattern, self.backend))

    def __repr__(self) -> str:
        return f"PatternScanner({self.pattern!r}, backend={self.backend!r})"


# A sample on which a compiled pattern must give the regex module's spans before it is used:
# every class of character the built-in patterns care about, in runs and alone.
_CHECK_SAMPLE = (
    "Hello, World! It's 2026; we'LL see: I'M, you'RE, they'VE, she'D, he'S. ſ K Å ǅ "
    "x = f(y) + 12345678 * 3.14159e-10; // comment\n\tif (a<=b) {return [1,2,3];}\r\n"
    "   spaces   and\ttabs\t\t\n\n\n  \r\n \u00a0\u2003\u3000 nbsp \u2028\u2029\x0b\x0c\x1c\x1f\x85 "
    "Ünïcödé façade naïve coöperate ÀÉÎÕÜ ǅungla ǈ ǋ ʰʲ ˢ ᵃ "
    "中文字符测试，标点。日本語のテキスト、カタカナ！한국어 텍스트입니다? "
    "हिन्दी में लिखा गया पाठ क्षत्रिय ज्ञान ि ् தமிழ் ภาษาไทย ไม่ ကြွ မြန်မာ "
    "Ελληνικά Русский текст ٣٤٥ عربي ١٢٣٤ ½ Ⅻ ① ²³ 𝟘𝟙 "
    "emoji 🙂👍🏽 👨‍👩‍👧 ❤️ #hashtag @user https://example.com/a?b=c&d=e "
    "''' \"\"\" ``` ... --- !!! ??? ;;; ::: ~~~ ^^^ |||| \\\\ //// ++++ ==== "
    "ALLCAPS CamelCaseWord snake_case_word kebab-case-word 123abc abc123 a1b2c3 "
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D trailing  \n\n  "
)


_ASCII_LOWERCASE = np.zeros(128, dtype=bool)
_ASCII_LOWERCASE[ord("a"):ord("z") + 1] = True
_ASCII_LETTERS = _ASCII_LOWERCASE.copy()
_ASCII_LETTERS[ord("A"):ord("Z") + 1] = True


def _runner_table(dfa):
    """The automaton's table as dfa_runner.pxd reads it (see DfaTables and the DFA_* move bits):
    (int32 array, width)."""
    n_classes = dfa.n_classes
    eot_at = n_classes
    width = eot_at + 5
    moves = np.asarray(dfa.trans, dtype=np.int64).reshape(dfa.n_states, n_classes)
    next_state, matched = moves >> 1, moves & 1
    # A move that dies right after a match ends (before this character) restarts from the
    # start state on the same character, when the start state can read it.
    start_next = next_state[1]
    restart = (next_state == 0) & (matched == 1) & (start_next != 0)[None, :]
    target = np.where(restart, start_next[None, :], next_state)
    # Each state's run set: the ASCII bytes on which it stays itself, no restart, same match bit.
    ascii_class = np.asarray(dfa.ascii_class)
    table = np.zeros((dfa.n_states, width), dtype=np.int64)
    run_bits = np.zeros(dfa.n_states, dtype=np.int64)
    for state in range(1, dfa.n_states):
        stays = (next_state[state, ascii_class] == state) & ~restart[state, ascii_class]
        if dfa.nl_class >= 0:
            stays[10] = False  # a final "\n" has a class of its own
        flag = int(matched[state, ascii_class][stays].max(initial=0))
        stays &= matched[state, ascii_class] == flag
        if not stays.any():
            continue
        words = np.zeros(4, dtype=np.int64)
        for b in np.flatnonzero(stays):
            words[b >> 5] |= 1 << (b & 31)
        table[state, eot_at + 1:eot_at + 5] = np.where(words >= 2**31, words - 2**32, words)
        if stays[_ASCII_LETTERS].all():
            run = DFA_RUN_LETTERS | (DFA_RUN_EXACT if (stays == _ASCII_LETTERS).all() else 0)
        elif stays[_ASCII_LOWERCASE].all():
            run = DFA_RUN_LOWER | (DFA_RUN_EXACT if (stays == _ASCII_LOWERCASE).all() else 0)
        else:
            run = DFA_RUN_BITMAP
        run_bits[state] = run | (DFA_RUN_MATCH if flag else 0)
    move = ((target * width << DFA_ROW_SHIFT) | run_bits[target] | (restart * DFA_RESTART)
            | np.where(restart, 0, matched))
    table[:, :eot_at] = move
    table[:, eot_at] = dfa.eot_match
    if table.max() >= 2**31:
        raise NotDeterministic("the automaton's table is too large")
    return np.ascontiguousarray(table.ravel(), dtype=np.int32), width


#: The paired layout (dfa_runner.pxd) takes automata of at most this many states (1152 bytes
#: each).
PAIR_MAX_STATES = 64


def _paired_table(dfa, trans, width):
    """The runner's table in the paired layout (a row of DFA_PAIR_ROW int32 per state: the
    moves on two ASCII characters, then the row of `trans` at DFA_PAIR_SINGLES), or None when
    the automaton does not fit it (more than PAIR_MAX_STATES states, more than 16 ASCII
    classes, or a row of `trans` wider than the space left)."""
    n_ascii = int(max(dfa.ascii_class)) + 1  # dfa_compiler numbers the ASCII classes first
    if (dfa.n_states > PAIR_MAX_STATES or n_ascii > 16
            or DFA_PAIR_SINGLES + width > DFA_PAIR_ROW):
        return None
    single = np.asarray(trans, dtype=np.int64).reshape(dfa.n_states, width)
    moves = single[:, :dfa.n_classes]
    flags = moves & ((1 << DFA_ROW_SHIFT) - 1)
    target = (moves >> DFA_ROW_SHIFT) // width  # the state moved to
    table = np.zeros((dfa.n_states, DFA_PAIR_ROW), dtype=np.int64)
    table[:, DFA_PAIR_SINGLES:DFA_PAIR_SINGLES + width] = single
    table[:, DFA_PAIR_SINGLES:DFA_PAIR_SINGLES + dfa.n_classes] = (
        (target * DFA_PAIR_ROW << DFA_ROW_SHIFT) | flags)
    first_bits = flags[:, :n_ascii] & 3                     # DFA_MATCH, DFA_RESTART
    for c1 in range(n_ascii):
        middle = target[:, c1]                              # after the first character
        second = moves[middle, :n_ascii]                    # the moves on the second
        end = (second >> DFA_ROW_SHIFT) // width
        pair = ((end * DFA_PAIR_ROW << DFA_ROW_SHIFT) | first_bits[:, c1:c1 + 1]
                | (second & 3) << 2)                        # DFA_PAIR_MATCH2, DFA_PAIR_RESTART2
        dies = (middle == 0)[:, None] | (end == 0)
        table[:, c1 * 16:c1 * 16 + n_ascii] = np.where(dies, 0, pair)
    return np.ascontiguousarray(table.ravel(), dtype=np.int32)


def _cp_props(cp: int) -> int:
    """The property bits the matcher tests for cp (for dfa_compiler's alphabet)."""
    return cybpe_cp_class(cp) & PROPERTY_MASK


def compile_scanner(str pattern):
    """A PatternScanner for ``pattern``: the automaton when the pattern is in its subset, else
    the backtracking matcher, each used only if it gives the regex module's spans on the check
    sample; None when neither does (or the pattern is outside the compiled subset)."""
    for backend in ("auto", "backtrack"):
        try:
            scanner = PatternScanner(pattern, backend)
        except (UnsupportedPattern, RecursionError):
            return None
        if all(scanner.split_spans(sample) == scanner._regex_spans(sample)
               for sample in (_CHECK_SAMPLE, _CHECK_SAMPLE.strip(), "a", " ", "\n", "1234567")):
            return scanner
        if scanner.backend == "backtrack":
            return None
    return None
