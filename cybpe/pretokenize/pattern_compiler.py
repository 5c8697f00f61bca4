"""A pre-tokenizer regex → a program for the backtracking matcher in ``pattern_scanner.pyx``.

Any pattern without a built-in scanner (the ``regex`` plugin, third-party plugins) can still
split text in C if it stays inside the subset compiled here: literals, classes built from
literals, ranges, ``\\s``/``\\S`` and the properties ``\\p{L}``, ``\\p{Lu}``, ``\\p{Ll}``,
``\\p{Lt}``, ``\\p{Lm}``, ``\\p{Lo}``, ``\\p{M}``, ``\\p{N}`` (and ``\\P{..}``); ``.``;
alternation; groups; ``(?i:...)``; greedy, lazy and possessive repeats; atomic groups;
lookaheads; ``^``, ``$``, ``\\A``, ``\\Z``. Patterns that can match the empty string are left
out. Anything else raises :class:`UnsupportedPattern` and the caller keeps the ``regex`` module.

The syntax is read by the standard library's ``re`` parser, after each ``\\p{..}`` has been
swapped for a private-use placeholder character (``re`` has no ``\\p``). Where ``re`` and
``regex`` could read the same text differently, the caller's check on a sample text (see
``_pattern_scanner.compile_scanner``) stands guard.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import regex

from cybpe.pretokenize.re_parser import ATOMIC_GROUP, POSSESSIVE_REPEAT, parse, sre

# Opcodes: the instruction set of the matcher (kept in step with pattern_scanner.pyx).
OP_CHAR, OP_CLASS, OP_SPLIT, OP_JMP, OP_MATCH, OP_REPEAT = 0, 1, 2, 3, 4, 5
OP_ATOMIC, OP_LOOK, OP_SUCCEED, OP_AT_END, OP_AT_END_STRING, OP_AT_BEGIN = 6, 7, 8, 9, 10, 11
REPEAT_GREEDY, REPEAT_LAZY, REPEAT_POSSESSIVE = 0, 1, 2
INFINITE = -1

# Class item kinds: a code point range, or "has / has none of" these property bits.
ITEM_RANGE, ITEM_PROPS, ITEM_NOT_PROPS = 0, 1, 2

# Property bits, as in cybpe/_c/unicode_tables.h.
LU, LT, LL, LM, LO, M, N, S = 1, 2, 4, 8, 16, 32, 64, 128
L = LU | LT | LL | LM | LO
PROPERTY_BITS = {
    "L": L, "Letter": L, "Lu": LU, "Uppercase_Letter": LU, "Ll": LL, "Lowercase_Letter": LL,
    "Lt": LT, "Titlecase_Letter": LT, "Lm": LM, "Modifier_Letter": LM, "Lo": LO,
    "Other_Letter": LO, "M": M, "Mark": M, "Combining_Mark": M, "N": N, "Number": N,
}
CASED_BITS = LU | LL | LT  # under (?i) these would match other cases too: not compiled

PLACEHOLDER_BASE = 0xF0000  # supplementary private use area A
PLACEHOLDER_SPAN = 0x100
MAX_PROGRAM = 20_000


class UnsupportedPattern(Exception):
    """The pattern uses something this compiler does not translate."""


@dataclass
class Program:
    """Instructions (op, a, b, c, d) and character classes (negated, items)."""

    code: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    classes: list[tuple[bool, list[tuple[int, int, int]]]] = field(default_factory=list)

    def emit(self, op: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> int:
        if len(self.code) >= MAX_PROGRAM:
            raise UnsupportedPattern("the compiled program would be too long")
        self.code.append((op, a, b, c, d))
        return len(self.code) - 1

    def patch(self, at: int, **fields: int) -> None:
        op, a, b, c, d = self.code[at]
        values = {"a": a, "b": b, "c": c, "d": d}
        values.update(fields)
        self.code[at] = (op, values["a"], values["b"], values["c"], values["d"])

    def add_class(self, negated: bool, items: list[tuple[int, int, int]]) -> int:
        self.classes.append((negated, items))
        return len(self.classes) - 1


def compile_pattern(pattern: str) -> Program:
    """The program for ``pattern``; UnsupportedPattern when it is outside the subset."""
    _refuse_regex_only_braces(pattern)
    text, properties = _swap_properties(pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "possible nested set" and the like: regex reads it otherwise
        try:
            items, flags = parse(text)
        except (re.error, RecursionError, OverflowError, Warning) as exc:
            raise UnsupportedPattern(f"the re parser does not read it as regex does: {exc}") from None
    if flags & ~(sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_IGNORECASE):
        raise UnsupportedPattern("flags other than (?i)")
    if _nullable(items):
        raise UnsupportedPattern("the pattern can match the empty string")
    compiler = _Compiler(properties)
    compiler.sequence(items, bool(flags & sre.SRE_FLAG_IGNORECASE))
    compiler.program.emit(OP_MATCH)
    return compiler.program


# ---------------------------------------------------------------- regex-only syntax

_INTERVAL = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")


def _refuse_regex_only_braces(pattern: str) -> None:
    """A ``{`` outside a class that does not open an interval: ``re`` reads it as text, the
    ``regex`` module may read fuzzy matching (``qq{e<=1}``), so the regex module keeps it."""
    i, n, depth = 0, len(pattern), 0
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            if i <= n and pattern[i - 1:i] in ("p", "P", "x", "N") and pattern.startswith("{", i):
                i = pattern.find("}", i) + 1 or n  # \p{..}, \x{..}, \N{..}
            continue
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif ch == "{" and not depth and not _INTERVAL.match(pattern, i):
            raise UnsupportedPattern("a '{' that is not an interval (fuzzy matching in regex)")
        i += 1


# ---------------------------------------------------------------- \p{..} placeholders

_PROPERTY = re.compile(r"\\([pP])(?:\{(\^?)([A-Za-z_&]+)\}|([A-Za-z]))")


def _swap_properties(pattern: str) -> tuple[str, dict[int, tuple[int, int]]]:
    """The pattern with each \\p{X} replaced by a placeholder character, and placeholder code
    point -> (item kind, property bits)."""
    if any(PLACEHOLDER_BASE <= ord(ch) < PLACEHOLDER_BASE + PLACEHOLDER_SPAN for ch in pattern):
        raise UnsupportedPattern("the pattern contains private-use placeholder characters")
    out: list[str] = []
    found: dict[tuple[int, int], int] = {}
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        m = _PROPERTY.match(pattern, i)
        if m is None:
            out.append(pattern[i:i + 2])  # any other escape, kept whole (so "\\\\p" stays)
            i += 2
            continue
        name = m.group(3) or m.group(4)
        if name not in PROPERTY_BITS:
            raise UnsupportedPattern(f"property {name!r}")
        negated = (m.group(1) == "P") != (m.group(2) == "^")
        key = (ITEM_NOT_PROPS if negated else ITEM_PROPS, PROPERTY_BITS[name])
        code = found.setdefault(key, PLACEHOLDER_BASE + len(found))
        out.append(chr(code))
        i = m.end()
    return "".join(out), {code: key for key, code in found.items()}


# ---------------------------------------------------------------- case folding

@functools.lru_cache(maxsize=1)
def _cased_code_points() -> tuple[int, ...]:
    """Every code point that case-insensitive matching can pair with another, by the regex
    module's own Unicode tables (Python's unicodedata may be older): cased letters and what
    changes under case folding or mapping."""
    # Every code point in one str, made from their UTF-32 (14 ms, where a join of 1.1 million
    # chr() calls took 118 ms of the first pattern's compile).
    everything = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    return tuple(ord(ch) for ch in regex.findall(r"[\p{Cased}\p{CWCF}\p{CWCM}]", everything))


@functools.lru_cache(maxsize=4096)
def _fold_set(cp: int) -> tuple[int, ...]:
    """Every code point that ``(?i)`` + this literal matches in the ``regex`` module."""
    literal = regex.compile("(?i)" + regex.escape(chr(cp)))
    return tuple(sorted({cp} | {x for x in _cased_code_points() if literal.fullmatch(chr(x))}))


# ---------------------------------------------------------------- the compiler

_CHARACTER_OPS = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY)


def _nullable(items: list) -> bool:
    """Can this sequence of parsed items match the empty string?"""
    return all(_item_nullable(op, av) for op, av in items)


def _item_nullable(op, av) -> bool:
    if op in _CHARACTER_OPS:
        return False
    if op is sre.BRANCH:
        return any(_nullable(list(alt)) for alt in av[1])
    if op is sre.SUBPATTERN:
        return _nullable(list(av[3]))
    if op is ATOMIC_GROUP:
        return _nullable(list(av))
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE_REPEAT):
        return av[0] == 0 or _nullable(list(av[2]))
    return True  # assertions and anchors consume nothing


class _Compiler:
    def __init__(self, properties: dict[int, tuple[int, int]]) -> None:
        self.program = Program()
        self.properties = properties

    # -- character classes -------------------------------------------------------------
    def _literal_items(self, cp: int, fold: bool) -> list[tuple[int, int, int]]:
        if cp in self.properties:
            kind, bits = self.properties[cp]
            if fold and bits & CASED_BITS:
                raise UnsupportedPattern("a cased property under (?i)")
            return [(kind, bits, 0)]
        points = _fold_set(cp) if fold else (cp,)
        return [(ITEM_RANGE, p, p) for p in points]

    def _class_items(self, op, av, fold: bool) -> tuple[bool, list[tuple[int, int, int]]]:
        """(negated, items) for one character-matching parsed item."""
        if op is sre.LITERAL:
            return False, self._literal_items(av, fold)
        if op is sre.NOT_LITERAL:
            return True, self._literal_items(av, fold)
        if op is sre.ANY:
            return True, [(ITEM_RANGE, 10, 10)]  # "." is anything but "\n"
        if op is sre.CATEGORY:
            return False, [self._category(av)]
        negated, items = False, []
        for item_op, item_av in av:  # sre.IN
            if item_op is sre.NEGATE:
                negated = True
            elif item_op is sre.LITERAL:
                items += self._literal_items(item_av, fold)
            elif item_op is sre.RANGE:
                low, high = item_av
                if any(PLACEHOLDER_BASE <= x < PLACEHOLDER_BASE + PLACEHOLDER_SPAN for x in item_av):
                    raise UnsupportedPattern("a property as a range end")
                if fold:
                    if high - low > 5000:
                        raise UnsupportedPattern("a long range under (?i)")
                    for cp in range(low, high + 1):
                        items += self._literal_items(cp, True)
                else:
                    items.append((ITEM_RANGE, low, high))
            elif item_op is sre.CATEGORY:
                items.append(self._category(item_av))
            else:
                raise UnsupportedPattern(f"class item {item_op}")
        return negated, items

    @staticmethod
    def _category(av) -> tuple[int, int, int]:
        if av is sre.CATEGORY_SPACE:
            return (ITEM_PROPS, S, 0)
        if av is sre.CATEGORY_NOT_SPACE:
            return (ITEM_NOT_PROPS, S, 0)
        raise UnsupportedPattern(f"category {av} (\\d and \\w differ between re and regex)")

    def _class(self, op, av, fold: bool) -> int:
        negated, items = self._class_items(op, av, fold)
        return self.program.add_class(negated, items)

    # -- sequences -----------------------------------------------------------------------
    def sequence(self, items: list, fold: bool) -> None:
        for op, av in items:
            self.item(op, av, fold)

    def item(self, op, av, fold: bool) -> None:
        p = self.program
        if op is sre.LITERAL and not fold and av not in self.properties:
            p.emit(OP_CHAR, av)
        elif op in _CHARACTER_OPS:
            p.emit(OP_CLASS, self._class(op, av, fold))
        elif op is sre.BRANCH:
            self._branch([list(alt) for alt in av[1]], fold)
        elif op is sre.SUBPATTERN:
            _group, add_flags, del_flags, body = av
            if (add_flags | del_flags) & ~sre.SRE_FLAG_IGNORECASE:
                raise UnsupportedPattern("scoped flags other than i")
            if add_flags & sre.SRE_FLAG_IGNORECASE:
                fold = True
            if del_flags & sre.SRE_FLAG_IGNORECASE:
                fold = False
            self.sequence(list(body), fold)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE_REPEAT):
            self._repeat(op, av, fold)
        elif op is ATOMIC_GROUP:
            self._sub_program(OP_ATOMIC, 0, list(av), fold)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            direction, body = av
            if direction != 1:
                raise UnsupportedPattern("lookbehind")
            self._sub_program(OP_LOOK, int(op is sre.ASSERT_NOT), list(body), fold)
        elif op is sre.AT:
            if av is sre.AT_END:
                p.emit(OP_AT_END)
            elif av is sre.AT_END_STRING:
                p.emit(OP_AT_END_STRING)
            elif av in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING):
                p.emit(OP_AT_BEGIN)
            else:
                raise UnsupportedPattern(f"anchor {av}")
        else:
            raise UnsupportedPattern(f"{op}")

    def _branch(self, alternatives: list[list], fold: bool) -> None:
        p = self.program
        jumps = []
        for k, alt in enumerate(alternatives):
            split = p.emit(OP_SPLIT) if k + 1 < len(alternatives) else None
            start = len(p.code)
            self.sequence(alt, fold)
            if split is not None:
                jumps.append(p.emit(OP_JMP))
                p.patch(split, a=start, b=len(p.code))
        for jump in jumps:
            p.patch(jump, a=len(p.code))

    def _sub_program(self, op: int, flag: int, body: list, fold: bool) -> None:
        """ATOMIC or LOOK: the body runs as its own match, ended by SUCCEED; a = what follows."""
        p = self.program
        at = p.emit(op, 0, flag)
        self.sequence(body, fold)
        p.emit(OP_SUCCEED)
        p.patch(at, a=len(p.code))

    def _repeat(self, op, av, fold: bool) -> None:
        low, high, body = av[0], av[1], list(av[2])
        high = INFINITE if high is sre.MAXREPEAT else high
        mode = {sre.MAX_REPEAT: REPEAT_GREEDY, sre.MIN_REPEAT: REPEAT_LAZY,
                POSSESSIVE_REPEAT: REPEAT_POSSESSIVE}[op]
        if high == 0:
            return
        if len(body) == 1 and body[0][0] in _CHARACTER_OPS:
            item_op, item_av = body[0]
            self.program.emit(OP_REPEAT, self._class(item_op, item_av, fold), low, high, mode)
            return
        if _nullable(body):
            raise UnsupportedPattern("a repeat of something that can match the empty string")
        if mode == REPEAT_POSSESSIVE:  # X{m,n}+ is (?>X{m,n})
            at = self.program.emit(OP_ATOMIC)
            self._expand(low, high, body, REPEAT_GREEDY, fold)
            self.program.emit(OP_SUCCEED)
            self.program.patch(at, a=len(self.program.code))
        else:
            self._expand(low, high, body, mode, fold)

    def _expand(self, low: int, high: int, body: list, mode: int, fold: bool) -> None:
        p = self.program
        for _ in range(low):
            self.sequence(body, fold)
        if high == INFINITE:  # loop: SPLIT body, out; body; JMP loop
            loop = p.emit(OP_SPLIT)
            self.sequence(body, fold)
            p.emit(OP_JMP, loop)
            self._order(loop, loop + 1, len(p.code), mode)
            return
        splits = []  # (?:X(?:X...)?)? : each optional copy may stop the whole rest
        for _ in range(high - low):
            splits.append(p.emit(OP_SPLIT))
            self.sequence(body, fold)
        for split in splits:
            self._order(split, split + 1, len(p.code), mode)

    def _order(self, split: int, body: int, out: int, mode: int) -> None:
        if mode == REPEAT_LAZY:
            self.program.patch(split, a=out, b=body)
        else:
            self.program.patch(split, a=body, b=out)
