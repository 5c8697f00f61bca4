r"""Translate split patterns between Python ``regex`` and Oniguruma (what HF ``tokenizers`` runs).

The two dialects read a few constructs differently (notes §C.1–C.2, checked with ``tokenizers``):

=================  ======================================  ===================================
construct          Python ``regex`` (no flags)             Oniguruma (Ruby syntax)
=================  ======================================  ===================================
``X{m,n}+``        possessive interval                     ``(?:X{m,n})+`` (a nested repeat)
``X?+ X*+ X++``    possessive                              possessive (the same)
``^``              start of text                           start of a line
``$``              end of text, or before a final newline  end of a line
``\Z``             end of text                             end, or before a final newline
``\z``             end of text                             end of text
``(?s)``           dot matches newline                     undefined (an error)
``(?m)``           ``^``/``$`` match at lines              dot matches newline
=================  ======================================  ===================================

:func:`to_oniguruma` rewrites a Python pattern into an Oniguruma one that matches the same
spans; :func:`from_oniguruma` goes the other way. Both walk the pattern once, keeping a stack of
open groups as lists of atoms, so that a quantifier can wrap exactly the atom before it (an
escape such as ``\p{N}``, a class ``[...]``, a group, or one character). Python's ``(?m)`` is
refused: its line anchors would need rewriting inside its scope only.
"""

from __future__ import annotations

import re

_INTERVAL = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)([:)])")
_NAMED_GROUP = re.compile(r"\(\?(?:P?<(?![=!])[^>]*>|'[^']*')")
_HEX_ESCAPE = {"x": 2, "u": 4, "U": 8}

#: Python-side anchors -> Oniguruma equivalents, and back.
_ANCHORS_TO_ONIG = {"^": r"\A", "$": r"(?=\n?\z)", r"\Z": r"\z", r"\z": r"\z"}
_ANCHORS_FROM_ONIG = {
    "^": r"(?:\A|(?<=\n)(?!\Z))",
    "$": r"(?=\n|\Z)",
    r"\Z": r"(?=\n?\Z)",
    r"\z": r"\Z",
}


class PatternSyntaxError(ValueError):
    """The pattern cannot be translated (unbalanced, or uses a flag the other side lacks)."""


def _escape_end(p: str, i: int) -> int:
    """End (exclusive) of the escape sequence starting with the backslash at ``p[i]``."""
    if i + 1 >= len(p):
        raise PatternSyntaxError("pattern ends with a lone backslash")
    c = p[i + 1]
    j = i + 2
    if c in "pPxNko" and j < len(p) and p[j] in "{<":
        close = "}" if p[j] == "{" else ">"
        end = p.find(close, j)
        if end < 0:
            raise PatternSyntaxError(f"unterminated \\{c}{p[j]} escape")
        return end + 1
    if c in "pP" and j < len(p):  # \pL
        return j + 1
    if c in _HEX_ESCAPE:
        k = j
        while k < len(p) and k - j < _HEX_ESCAPE[c] and p[k] in "0123456789abcdefABCDEF":
            k += 1
        return k
    if c.isdigit():
        while j < len(p) and p[j].isdigit():
            j += 1
    return j


def _class_end(p: str, i: int) -> int:
    """End (exclusive) of the character class opening at ``p[i] == '['`` (nested sets allowed)."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":  # a leading ']' is a literal
        j += 1
    while j < len(p):
        c = p[j]
        if c == "\\":
            j = _escape_end(p, j)
        elif c == "[":
            j = _class_end(p, j)
        elif c == "]":
            return j + 1
        else:
            j += 1
    raise PatternSyntaxError("unterminated character class")


def _translate_flags(flags: str, to_onig: bool) -> str:
    on, _, off = flags.partition("-")
    allowed = "ixs" if to_onig else "ixm"
    for f in on + off:
        if f not in allowed:
            side = "Oniguruma" if to_onig else "Python regex"
            raise PatternSyntaxError(f"inline flag {f!r} has no {side} equivalent here")
    swap = {"s": "m"} if to_onig else {"m": "s"}
    on = "".join(swap.get(f, f) for f in on)
    off = "".join(swap.get(f, f) for f in off)
    return on + ("-" + off if off else "")


def _translate(p: str, to_onig: bool) -> str:
    anchors = _ANCHORS_TO_ONIG if to_onig else _ANCHORS_FROM_ONIG
    # One (group opener, atoms) frame per open group; the outermost frame has no opener.
    stack: list[tuple[str, list[str]]] = [("", [])]
    i, n = 0, len(p)

    def quantify(suffix: str) -> None:
        atoms = stack[-1][1]
        if atoms and atoms[-1] != "|":
            atoms[-1] += suffix
        else:  # nothing to repeat: leave it for the regex engine to reject
            atoms.append(suffix)

    while i < n:
        c = p[i]
        atoms = stack[-1][1]
        if c == "\\":
            j = _escape_end(p, i)
            atoms.append(anchors.get(p[i:j], p[i:j]))
            i = j
        elif c == "[":
            j = _class_end(p, i)
            atoms.append(p[i:j])
            i = j
        elif c == "(":
            flag = _FLAG_GROUP.match(p, i)
            named = _NAMED_GROUP.match(p, i)
            if p.startswith("(?#", i):
                j = p.find(")", i)
                if j < 0:
                    raise PatternSyntaxError("unterminated comment group")
                i = j + 1  # comments carry no meaning: drop them
            elif flag:
                head = "(?" + _translate_flags(flag.group(1), to_onig)
                if flag.group(2) == ")":
                    atoms.append(head + ")")
                else:
                    stack.append((head + ":", []))
                i = flag.end()
            elif named:
                stack.append((named.group(0), []))
                i = named.end()
            else:
                head = next(
                    h
                    for h in ("(?<=", "(?<!", "(?:", "(?>", "(?=", "(?!", "(?|", "(")
                    if p.startswith(h, i)
                )
                stack.append((head, []))
                i += len(head)
        elif c == ")":
            if len(stack) == 1:
                raise PatternSyntaxError("unbalanced ')'")
            head, inner = stack.pop()
            stack[-1][1].append(head + "".join(inner) + ")")
            i += 1
        elif c in "*+?":
            j = i + 1
            if j < n and p[j] in "+?":  # possessive or lazy
                j += 1
            quantify(p[i:j])
            i = j
        elif c == "{" and _INTERVAL.match(p, i):
            j = _INTERVAL.match(p, i).end()  # type: ignore[union-attr]
            interval = p[i:j]
            if j < n and p[j] == "+" and atoms and atoms[-1] != "|":
                atom = atoms.pop()
                if to_onig:  # possessive in Python -> atomic group
                    atoms.append(f"(?>{atom}{interval})")
                else:  # nested repeat in Oniguruma -> explicit group
                    atoms.append(f"(?:{atom}{interval})+")
                j += 1
                if j < n and p[j] in "+?":  # a modifier of that outer repeat
                    atoms[-1] += p[j]
                    j += 1
            else:
                if j < n and p[j] == "?":
                    j += 1
                quantify(p[i:j])
            i = j
        else:
            atoms.append(anchors.get(c, c) if c in "^$" else c)
            i += 1
    if len(stack) != 1:
        raise PatternSyntaxError("unbalanced '('")
    return "".join(stack[0][1])


def to_oniguruma(pattern: str) -> str:
    """A pattern that Oniguruma matches exactly as Python ``regex`` matches ``pattern``."""
    return _translate(pattern, to_onig=True)


def from_oniguruma(pattern: str) -> str:
    """A pattern that Python ``regex`` matches exactly as Oniguruma matches ``pattern``."""
    return _translate(pattern, to_onig=False)
