"""A matcher program (``pattern_compiler.Program``) → a deterministic automaton, when it can be.

The subset: characters and classes, alternation (leftmost-first), groups, greedy and lazy
repeats (counted too), possessive repeats of one class, a lookahead ``(?=C)``/``(?!C)`` of one
class, ``$`` and ``\\Z``. Outside it (atomic groups, possessive groups, longer lookaheads, ``^``)
:class:`NotDeterministic` is raised and the backtracking matcher keeps the pattern.

Method
------
* The program becomes a Thompson NFA whose epsilon edges keep their priority order.
* The alphabet is cut into classes of code points that every atom of the pattern treats alike:
  each ASCII code point, each value of the property bits (``cybpe_cp_class & 0xFF``) for the
  other code points, and the non-ASCII code points a class names by range (kept in a sorted
  exception list; when these pass ``MAX_EXCEPTIONS`` the pattern is refused). End of text is a
  class of its own, and with ``$`` so is a ``\\n`` that is the text's last character.
* Leftmost-first subset construction: a state is the ordered list of NFA threads waiting to read
  a character (the "kernel", before the epsilon closure). The transition on class ``c`` walks
  the closure in priority order with the one-character lookaheads decided by ``c``; a thread
  that reaches MATCH records "a match ends before this character" and cuts every thread of
  lower priority; the threads that read ``c`` form the next kernel. The empty kernel is the dead
  state (0); the start state is 1.
* A possessive repeat of one class is the greedy repeat whose early exits are guarded by
  ``(?!C)``: both stop only where the next character is not in C (or the count is full), so
  they take the same characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from cybpe.pretokenize.pattern_compiler import (
    INFINITE, ITEM_NOT_PROPS, ITEM_PROPS, ITEM_RANGE, OP_AT_END, OP_AT_END_STRING, OP_CHAR,
    OP_CLASS, OP_JMP, OP_LOOK, OP_MATCH, OP_REPEAT, OP_SPLIT, OP_SUCCEED, REPEAT_LAZY,
    REPEAT_POSSESSIVE, Program, UnsupportedPattern)

MAX_STATES = 4096        # past this many states the backtracking matcher keeps the pattern
MAX_NFA_NODES = 50_000
MAX_EXCEPTIONS = 4096    # non-ASCII code points named by range, each a table entry
MAX_WORK = 5_000_000     # NFA nodes visited while building (about 5 s of Python): then give up

# NFA node kinds
_CONSUME, _EPS, _LOOK, _MATCH = 0, 1, 2, 3
# lookahead predicates besides an atom index
_AT_EOT, _AT_DOLLAR = -1, -2


class NotDeterministic(UnsupportedPattern):
    """The pattern is outside the DFA subset (or its automaton is too large)."""


@dataclass
class Dfa:
    """Tables for ``dfa_runner.pxd``: see DfaTables there."""

    n_states: int
    n_classes: int
    trans: list[int]           # n_states * n_classes: (next state << 1) | match-before bit
    eot_match: list[int]       # per state: a match ends at the end of the text
    ascii_class: list[int]     # 128
    props_class: list[int]     # 256
    exceptions: list[tuple[int, int]]  # sorted (code point, class)
    nl_class: int              # the class of "\n" when "$" is used, else -1
    final_nl_class: int        # the class of a final "\n" when "$" is used, else -1


def _member(negated: bool, items, cp: int | None, props: int) -> bool:
    """The backtracking matcher's class test (class_has_slow) for cp (None: no range holds)."""
    found = False
    for kind, low, high in items:
        if kind == ITEM_RANGE:
            found = cp is not None and low <= cp <= high
        else:
            found = (props & low) != 0
            if kind == ITEM_NOT_PROPS:
                found = not found
        if found:
            break
    return found != negated


class _Nfa:
    def __init__(self, program: Program) -> None:
        self.atoms: list[tuple[bool, list]] = []  # (negated, items), like program.classes
        self._atom_of: dict = {}
        code = program.code
        self.nodes: list = [None] * len(code)
        self.uses_dollar = False
        for pc, (op, a, b, c, d) in enumerate(code):
            if op == OP_CHAR:
                self.nodes[pc] = (_CONSUME, self._atom(False, [(ITEM_RANGE, a, a)]), pc + 1)
            elif op == OP_CLASS:
                self.nodes[pc] = (_CONSUME, self._atom(*program.classes[a]), pc + 1)
            elif op == OP_SPLIT:
                self.nodes[pc] = (_EPS, (a, b))
            elif op == OP_JMP:
                self.nodes[pc] = (_EPS, (a,))
            elif op == OP_MATCH:
                self.nodes[pc] = (_MATCH,)
            elif op == OP_SUCCEED:
                self.nodes[pc] = (_EPS, ())  # the end of a lookahead body (not entered)
            elif op == OP_REPEAT:
                atom = self._atom(*program.classes[a])
                self.nodes[pc] = (_EPS, (self._repeat(atom, b, c, d, pc + 1),))
            elif op == OP_LOOK:
                body = code[pc + 1:a]
                if len(body) != 2 or body[0][0] not in (OP_CHAR, OP_CLASS) or body[1][0] != OP_SUCCEED:
                    raise NotDeterministic("a lookahead longer than one class")
                bop, ba = body[0][0], body[0][1]
                atom = (self._atom(False, [(ITEM_RANGE, ba, ba)]) if bop == OP_CHAR
                        else self._atom(*program.classes[ba]))
                self.nodes[pc] = (_LOOK, atom, bool(b), a)
            elif op == OP_AT_END:
                self.uses_dollar = True
                self.nodes[pc] = (_LOOK, _AT_DOLLAR, False, pc + 1)
            elif op == OP_AT_END_STRING:
                self.nodes[pc] = (_LOOK, _AT_EOT, False, pc + 1)
            else:
                raise NotDeterministic(f"opcode {op} (atomic groups, ^)")
            if len(self.nodes) > MAX_NFA_NODES:
                raise NotDeterministic("too many NFA nodes")

    def _atom(self, negated: bool, items) -> int:
        key = (negated, tuple(items))
        if key not in self._atom_of:
            self._atom_of[key] = len(self.atoms)
            self.atoms.append((negated, list(items)))
        return self._atom_of[key]

    def _new(self, node) -> int:
        self.nodes.append(node)
        if len(self.nodes) > MAX_NFA_NODES:
            raise NotDeterministic("too many NFA nodes")
        return len(self.nodes) - 1

    def _repeat(self, atom: int, low: int, high: int, mode: int, exit_: int) -> int:
        """Entry node of atom{low,high} (greedy, lazy or possessive) followed by exit_."""
        out = exit_
        if mode == REPEAT_POSSESSIVE:  # leave early only where the next character is not in atom
            out = self._new((_LOOK, atom, True, exit_))
        lazy = mode == REPEAT_LAZY

        def choice(body: int) -> tuple[int, ...]:
            return (out, body) if lazy else (body, out)

        if high == INFINITE:
            loop = self._new(None)
            self.nodes[loop] = (_EPS, choice(self._new((_CONSUME, atom, loop))))
            head = loop
        else:
            head = exit_  # count == high: leave, whatever follows
            for _ in range(high - low):
                head = self._new((_EPS, choice(self._new((_CONSUME, atom, head)))))
        for _ in range(low):
            head = self._new((_CONSUME, atom, head))
        return head


def _alphabet(nfa: _Nfa, props_of: Callable[[int], int]):
    """Class ids for ASCII, property-bit values and exceptional code points; per class, which
    atoms hold. Returns (ascii, props, exceptions, member rows, nl, final_nl, eot)."""
    exceptional: set[int] = set()
    for _negated, items in nfa.atoms:
        for kind, low, high in items:
            if kind == ITEM_RANGE and high >= 128:
                if high - max(low, 128) + 1 + len(exceptional) > MAX_EXCEPTIONS:
                    raise NotDeterministic("too many non-ASCII code points named by range")
                exceptional.update(range(max(low, 128), high + 1))
    signatures: dict[tuple, int] = {}
    rows: list[tuple[bool, ...]] = []

    def class_of(cp: int | None, props: int, tag: int = 0) -> int:
        sig = tuple(_member(neg, items, cp, props) for neg, items in nfa.atoms) + (tag,)
        if sig not in signatures:
            signatures[sig] = len(rows)
            rows.append(sig[:-1])
        return signatures[sig]

    # With "$", "\n" needs a class of its own (the runner swaps in final_nl at the last byte).
    ascii_ids = [class_of(cp, props_of(cp), 1 if (nfa.uses_dollar and cp == 10) else 0)
                 for cp in range(128)]
    props_ids = [class_of(None, v) for v in range(256)]
    exceptions = sorted((cp, class_of(cp, props_of(cp))) for cp in exceptional)
    nl = final_nl = -1
    if nfa.uses_dollar:
        nl = ascii_ids[10]
        final_nl = class_of(10, props_of(10), 2)
    return ascii_ids, props_ids, exceptions, rows, nl, final_nl


def build_dfa(program: Program, props_of: Callable[[int], int], max_states: int = MAX_STATES,
              max_work: int = MAX_WORK) -> Dfa:
    """The automaton of ``program``; NotDeterministic outside the subset, past max_states or
    past max_work node visits (large kernels times many states: building must not hang)."""
    nfa = _Nfa(program)
    ascii_ids, props_ids, exceptions, rows, nl, final_nl = _alphabet(nfa, props_of)
    n_classes = len(rows)
    nodes = nfa.nodes
    eot = -1
    work = [max_work]

    def passes(pred: int, negated: bool, c: int) -> bool:
        if pred == _AT_EOT:
            held = c == eot
        elif pred == _AT_DOLLAR:
            held = c == eot or c == final_nl
        else:
            held = c != eot and rows[c][pred]
        return held != negated

    def step(kernel: tuple[int, ...], c: int) -> tuple[tuple[int, ...], bool]:
        out: list[int] = []
        in_out: set[int] = set()
        seen: set[int] = set()
        stack = list(reversed(kernel))
        work[0] -= len(kernel) + 1
        if work[0] < 0:
            raise NotDeterministic("the automaton takes too long to build")
        while stack:
            node_id = stack.pop()
            if node_id in seen:
                continue
            seen.add(node_id)
            work[0] -= 1
            node = nodes[node_id]
            kind = node[0]
            if kind == _MATCH:
                return tuple(out), True  # threads of lower priority are cut
            if kind == _CONSUME:
                if c != eot and rows[c][node[1]] and node[2] not in in_out:
                    in_out.add(node[2])
                    out.append(node[2])
            elif kind == _EPS:
                stack.extend(reversed(node[1]))
            elif passes(node[1], node[2], c):
                stack.append(node[3])
        return tuple(out), False

    index: dict[tuple[int, ...], int] = {(): 0, (0,): 1}
    kernels: list[tuple[int, ...]] = [(), (0,)]
    trans: list[int] = [0] * n_classes  # the dead state loops on itself, never matching
    eot_match = [0]
    k = 1
    while k < len(kernels):
        kernel = kernels[k]
        for c in range(n_classes):
            nxt, matched = step(kernel, c)
            if nxt not in index:
                if len(kernels) >= max_states:
                    raise NotDeterministic(f"more than {max_states} automaton states")
                index[nxt] = len(kernels)
                kernels.append(nxt)
            trans.append((index[nxt] << 1) | matched)
        eot_match.append(int(step(kernel, eot)[1]))
        k += 1
    return Dfa(len(kernels), n_classes, trans, eot_match, ascii_ids, props_ids, exceptions,
               nl, final_nl)
