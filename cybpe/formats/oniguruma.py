r"""Translate split patterns between Python ``regex`` and Oniguruma (what HF ``tokenizers`` runs).

Exact or refused: every construct of the pattern is either on the list below, where both
dialects match the same text (after the rewrite shown), or the translation raises
:class:`PatternSyntaxError` naming the construct. Each rewrite is tested against ``tokenizers``
itself (``tests/formats/test_pattern_translation.py``).

=========================  ===================================  ===================================
construct                  Python ``regex`` (no flags)          Oniguruma (as ``tokenizers`` runs it)
=========================  ===================================  ===================================
``X{m,n}+``                possessive interval                  ``(?:X{m,n})+`` (a nested repeat)
``X?+ X*+ X++``            possessive                           possessive (the same)
``^``                      start of text                        start of a line
``$``                      end of text, or before a final \n    end of a line
``\Z``                     end of text                          end, or before a final newline
``\z``                     end of text                          end of text
``(?s)``                   dot matches newline                  undefined (an error)
``(?m)``                   ``^``/``$`` match at lines           dot matches newline
``\pL``                    ``\p{L}``                            the letters ``pL``
``\p{Script=Latin}``       the Latin script                     an error (written ``\p{Latin}``)
``\w``                     Alphabetic, Mark, Nd, Pc, Join_C.    the same without Join_Control
``\h``                     an error                             a hexadecimal digit
``[a&&b]``                 the characters ``a``, ``&``, ``b``   an intersection
``{e<=1}`` after an atom   fuzzy matching                       the literal text ``{e<=1}``
``\UXXXXXXXX``             one code point                       the same (written ``\x{...}``)
``(?i)`` on ``İ``, ``ß``   simple case folding                  full (multi-character) folding
=========================  ===================================  ===================================

Refused, because no exact rewrite is known or worth its risk: word boundaries (``\b``, ``\B``),
graphemes (``\X``), ``\G``, ``\K``, ``\R``, back-references, recursion, conditionals, verbs,
POSIX classes and nested sets, set operations, fuzzy matching, ``(?x)``, ``(?a)``, ``(?V1)``,
version and other regex-only flags, inline flags in the middle of a pattern, non-ASCII text
(or a cased property) under ``(?i)``, variable-length lookbehind (Oniguruma rejects most), binary
Unicode properties, and any escape not listed. :func:`to_oniguruma` and :func:`from_oniguruma`
walk the pattern once, keeping a stack of open groups as lists of atoms, so that a quantifier
can wrap exactly the atom before it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

import regex

_INTERVAL = re.compile(r"\{(?:(\d+)(?:,(\d*))?|,(\d+))\}")
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z0-9]*(?:-[a-zA-Z]*)?)([:)])")
_PY_NAMED_GROUP = re.compile(r"\(\?P?<(?![=!])([A-Za-z_]\w*)>")
_ONIG_NAMED_GROUP = re.compile(r"\(\?<(?![=!])([A-Za-z_]\w*)>")
_HEX = "0123456789abcdefABCDEF"

#: Oniguruma's largest repeat count (ONIG_MAX_REPEAT_NUM).
MAX_REPEAT = 100_000

#: Python-side anchors -> Oniguruma equivalents, and back.
_ANCHORS_TO_ONIG = {"^": r"\A", "$": r"(?=\n?\z)", r"\Z": r"\z", r"\z": r"\z", r"\A": r"\A"}
_ANCHORS_FROM_ONIG = {"^": r"(?:\A|(?<=\n)(?!\Z))", "$": r"(?=\n|\Z)", r"\Z": r"(?=\n?\Z)",
                      r"\z": r"\Z", r"\A": r"\A"}

#: Unicode general categories (short and long names) that both engines read alike.
GENERAL_CATEGORIES = frozenset(
    "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp "
    "C Cc Cf Co Cn Letter Uppercase_Letter Lowercase_Letter Titlecase_Letter Modifier_Letter "
    "Other_Letter Mark Nonspacing_Mark Spacing_Mark Enclosing_Mark Number Decimal_Number "
    "Letter_Number Other_Number Punctuation Connector_Punctuation Dash_Punctuation "
    "Open_Punctuation Close_Punctuation Initial_Punctuation Final_Punctuation Other_Punctuation "
    "Symbol Math_Symbol Currency_Symbol Modifier_Symbol Other_Symbol Separator Space_Separator "
    "Line_Separator Paragraph_Separator Other Control Format Private_Use Unassigned".split()
)
#: Categories whose meaning changes under ``(?i)`` (and differently in the two engines).
CASED_CATEGORIES = frozenset(
    "L Lu Ll Lt Letter Uppercase_Letter Lowercase_Letter Titlecase_Letter".split()
)

#: Python regex's ``\w``, spelled with properties that Oniguruma reads alike.
_PY_WORD = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}"
_SIMPLE_ESCAPES = frozenset("sSdDntrfva")
#: ASCII punctuation that means itself after a backslash in both engines.
_PUNCTUATION = frozenset("\\.^$|?*+()[]{}-/'\"!#%&,:;<=>@_`~ ")


class _Repeated(str):
    """An atom that already carries a quantifier (another one would mean something else)."""


class PatternSyntaxError(ValueError):
    """The pattern cannot be translated exactly; the message names the construct."""


def _refuse(construct: str, why: str) -> PatternSyntaxError:
    return PatternSyntaxError(f"{construct!r}: {why}")


class _Translator:
    def __init__(self, pattern: str, to_onig: bool) -> None:
        self.p = pattern
        self.to_onig = to_onig
        self.side = "Oniguruma" if to_onig else "Python regex"
        self.source = "Python regex" if to_onig else "Oniguruma"

    # -- escapes -----------------------------------------------------------------------
    def _hex_escape(self, i: int) -> tuple[int, int]:
        """(end, code point) of ``\\xHH``, ``\\x{H..}``, ``\\uHHHH``, ``\\UHHHHHHHH`` at ``i``."""
        p, c = self.p, self.p[i + 1]
        if c == "x" and p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            digits = p[i + 3:end] if end > 0 else ""
            if not digits or any(ch not in _HEX for ch in digits):
                raise _refuse(p[i:i + 4], "a malformed \\x{...} escape")
            return end + 1, int(digits, 16)
        width = {"x": 2, "u": 4, "U": 8}[c]
        digits = p[i + 2:i + 2 + width]
        if len(digits) != width or any(ch not in _HEX for ch in digits):
            raise _refuse(p[i:i + 2 + width], f"\\{c} needs {width} hexadecimal digits")
        return i + 2 + width, int(digits, 16)

    def _property(self, i: int, fold: bool) -> tuple[int, str]:
        """(end, translated escape) of ``\\p{..}``/``\\P{..}``/``\\pX`` at ``i``."""
        p = self.p
        negated = p[i + 1] == "P"
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            if end < 0:
                raise _refuse(p[i:i + 3], "an unterminated property escape")
            name, j = p[i + 3:end], end + 1
        elif i + 2 < len(p):
            if not self.to_onig:
                raise _refuse(p[i:i + 3], "Oniguruma has no \\pX short form")
            name, j = p[i + 2], i + 3
        else:
            raise _refuse(p[i:], "a property escape without a name")
        text = p[i:j]
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        key, _, value = name.partition("=")
        script: Optional[str] = None
        if value and key.replace("_", "").lower() in ("script", "sc"):
            if not self.to_onig:
                raise _refuse(text, "not Oniguruma syntax")
            script = value
        elif value:
            raise _refuse(text, f"property {name!r} has no exact {self.side} equivalent")
        elif name not in GENERAL_CATEGORIES:
            if self.to_onig or not _is_script(name):
                raise _refuse(text, "only general categories and scripts (written Script=X "
                              "for Python regex) are translated")
            script = name
        if fold and name in CASED_CATEGORIES:
            raise _refuse(text, "a cased property under (?i) folds differently in the two engines")
        if script is not None:
            if not _is_script(script):
                raise _refuse(text, f"unknown script {script!r}")
            out = script if self.to_onig else f"Script={script}"
        else:
            out = name
        return j, ("\\P{" if negated else "\\p{") + out + "}"

    def escape(self, i: int, in_class: bool, fold: bool) -> tuple[int, str]:
        """(end, translated text) of the escape at ``p[i] == '\\'``."""
        p = self.p
        if i + 1 >= len(p):
            raise _refuse("\\", "the pattern ends with a lone backslash")
        c = p[i + 1]
        if c in "pP":
            return self._property(i, fold)
        if c in "xuU":
            if c in "uU" and not self.to_onig:
                raise _refuse(p[i:i + 2], "not Oniguruma syntax")
            j, cp = self._hex_escape(i)
            return j, self._code_point(cp, p[i:j], fold)
        if c == "N" and self.to_onig and p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            try:
                cp = ord(unicodedata.lookup(p[i + 3:end])) if end > 0 else -1
            except KeyError:
                cp = -1
            if cp < 0:
                raise _refuse(p[i:end + 1], "an unknown character name")
            return end + 1, self._code_point(cp, p[i:end + 1], fold)
        if c in _SIMPLE_ESCAPES:
            return i + 2, p[i:i + 2]
        if c in "wW":
            if not self.to_onig:  # Oniguruma's \w also takes some numbers (½, ৴): no exact form
                raise _refuse(p[i:i + 2], "Oniguruma's \\w has no exact Python regex form")
            body = _PY_WORD
            if in_class:
                if c == "W":
                    raise _refuse("\\W", "a negated \\W inside a class has no exact rewrite")
                return i + 2, body
            return i + 2, ("[^" if c == "W" else "[") + body + "]"
        if not in_class and (c in "AzZ"):
            return i + 2, (_ANCHORS_TO_ONIG if self.to_onig else _ANCHORS_FROM_ONIG)[p[i:i + 2]]
        if c in _PUNCTUATION:
            return i + 2, p[i:i + 2]
        what = {
            "b": "a word boundary", "B": "a word boundary", "X": "a grapheme cluster",
            "G": "a search anchor", "K": "keep-out", "R": "a line break", "h": "\\h",
            "H": "\\H", "m": "a word start", "M": "a word end", "L": "a named list",
            "N": "\\N", "g": "a subexpression call", "k": "a back-reference", "o": "an octal escape",
        }.get(c, "a back-reference" if c.isdigit() else f"the escape \\{c}")
        raise _refuse(p[i:i + 2], f"{what} has no exact {self.side} equivalent")

    def _code_point(self, cp: int, text: str, fold: bool) -> str:
        if not 0 <= cp <= 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            raise _refuse(text, "not a Unicode scalar value")
        _check_fold(chr(cp), fold, text)
        # Oniguruma spells any code point \x{...}; Python regex has no braces form.
        return "\\x{%X}" % cp if self.to_onig else "\\U%08X" % cp

    def literal(self, ch: str, fold: bool) -> str:
        _check_fold(ch, fold)
        return "\\" + ch if ch in "]}" else ch

    # -- classes -----------------------------------------------------------------------
    def char_class(self, i: int, fold: bool) -> tuple[int, str]:
        p = self.p
        j = i + 1
        out = ["["]
        if j < len(p) and p[j] == "^":
            out.append("^")
            j += 1
        first = True
        while j < len(p):
            c = p[j]
            if c == "]" and not first:
                out.append("]")
                return j + 1, "".join(out)
            if c == "\\":
                k, text = self.escape(j, True, fold)
                out.append(text)
                j = k
            elif c == "[":
                end = p.find("]", j)
                raise _refuse(p[j:end + 1] if end > 0 else "[", "a nested set or POSIX class")
            elif c == "&" and p.startswith("&&", j):
                if not self.to_onig:
                    raise _refuse("&&", "a class intersection (Python regex reads it as text)")
                out.append("&\\&")
                j += 2
            elif c == "]":  # a leading ']' is a literal in both
                out.append("\\]")
                j += 1
            elif c == "-":
                if fold and not first and j + 1 < len(p) and p[j + 1] != "]" and (
                        p[j - 1] == "}" or p[j + 1] == "\\" or p[j - 2:j - 1] == "\\"):
                    raise _refuse(p[j - 1:j + 2], "a range with an escaped end under (?i)")
                out.append("-")
                j += 1
            else:
                _check_fold(c, fold)
                if fold and j + 2 < len(p) and p[j + 1] == "-" and p[j + 2] != "]" \
                        and c <= "i" <= p[j + 2]:
                    raise _refuse(p[j:j + 3], "a range over 'i' under (?i) (regex folds İ into it)")
                out.append("\\" + c if c in "[]^\\" else c)
                j += 1
            first = False
        raise _refuse(p[i:], "an unterminated character class")

    # -- groups and flags --------------------------------------------------------------
    def flags(self, text: str, flags: str, fold: bool) -> tuple[str, Optional[bool]]:
        """The translated flag letters and the new case-folding state (None: unchanged)."""
        on, _, off = flags.partition("-")
        allowed = "is" if self.to_onig else "im"
        for f in on + off:
            if f not in allowed:
                raise _refuse(text, f"the inline flag {f!r} has no exact {self.side} equivalent")
        swap = {"s": "m"} if self.to_onig else {"m": "s"}
        new_on = "".join(swap.get(f, f) for f in on)
        new_off = "".join(swap.get(f, f) for f in off)
        state = True if "i" in on else (False if "i" in off else None)
        return new_on + ("-" + new_off if new_off else ""), state

    def translate(self) -> str:
        p, n = self.p, len(self.p)
        # One frame per open group: (opener, atoms, case folding, is a lookbehind).
        stack: list[tuple[str, list[str], bool, bool]] = [("", [], False, False)]
        i = 0

        def atoms() -> list[str]:
            return stack[-1][1]

        def quantify(suffix: str, text: str) -> None:
            current = atoms()
            if stack[-1][3] and self.to_onig:
                raise _refuse(text, "a repeat inside a lookbehind (Oniguruma needs fixed length)")
            if not current or current[-1] == "|" or isinstance(current[-1], _Repeated):
                raise _refuse(text, "a repeat of nothing, or of a repeat")
            current[-1] = _Repeated(current[-1] + suffix)

        while i < n:
            c = p[i]
            fold = stack[-1][2]
            if c == "\\":
                j, text = self.escape(i, False, fold)
                atoms().append(text)
                i = j
            elif c == "[":
                j, text = self.char_class(i, fold)
                atoms().append(text)
                i = j
            elif c == "(":
                i = self._open_group(i, stack)
            elif c == ")":
                if len(stack) == 1:
                    raise _refuse(")", "an unbalanced ')'")
                head, inner, _, _ = stack.pop()
                atoms().append(head + "".join(inner) + ")")
                i += 1
            elif c in "*+?":
                j = i + 1
                if j < n and p[j] in "+?":  # possessive or lazy
                    j += 1
                quantify(p[i:j], p[i:j])
                i = j
            elif c == "{":
                m = _INTERVAL.match(p, i)
                if m is None:
                    if self.to_onig:
                        raise _refuse(p[i:p.find("}", i) + 1 or n],
                                      "a '{' that is not an interval (Python regex may read "
                                      "fuzzy matching or a literal; escape it as \\{)")
                    atoms().append("\\{")
                    i += 1
                    continue
                counts = [int(x) for x in m.groups() if x]
                if any(x > MAX_REPEAT for x in counts):
                    raise _refuse(m.group(), f"a repeat count above {MAX_REPEAT}")
                j = m.end()
                interval = m.group()
                if j < n and p[j] == "+":
                    current = atoms()
                    quantify("", interval)  # checks there is an atom
                    atom = current.pop()
                    if self.to_onig:  # possessive in Python -> atomic group
                        current.append(_Repeated(f"(?>{atom}{interval})"))
                    else:  # a nested repeat in Oniguruma -> an explicit group
                        current.append(_Repeated(f"(?:{atom}{interval})+"))
                    j += 1
                    if j < n and p[j] in "+?":
                        current[-1] = _Repeated(current[-1] + p[j])
                        j += 1
                else:
                    if j < n and p[j] == "?":
                        j += 1
                    quantify(p[i:j], p[i:j])
                i = j
            elif c == "|":
                atoms().append("|")
                i += 1
            elif c in "^$":
                atoms().append((_ANCHORS_TO_ONIG if self.to_onig else _ANCHORS_FROM_ONIG)[c])
                i += 1
            elif c == ".":
                atoms().append(".")
                i += 1
            else:
                atoms().append(self.literal(c, fold))
                i += 1
        if len(stack) != 1:
            raise _refuse("(", "an unbalanced '('")
        return "".join(stack[0][1])

    def _open_group(self, i: int, stack: list) -> int:
        p = self.p
        fold = stack[-1][2]
        behind = stack[-1][3]
        if p.startswith("(?#", i):
            j = p.find(")", i)
            if j < 0:
                raise _refuse("(?#", "an unterminated comment")
            return j + 1  # comments carry no meaning: drop them
        if p.startswith("(*", i):
            raise _refuse(p[i:p.find(")", i) + 1], "a backtracking verb")
        flag = _FLAG_GROUP.match(p, i)
        if flag:
            letters, state = self.flags(flag.group(0), flag.group(1), fold)
            if flag.group(2) == ")":
                if i != 0:
                    raise _refuse(flag.group(0), "an inline flag in the middle of the pattern "
                                  "(the engines scope it differently)")
                if state is not None:
                    stack[-1] = (stack[-1][0], stack[-1][1], state, behind)
                if letters:
                    stack[-1][1].append(f"(?{letters})")
            else:
                new_fold = fold if state is None else state
                stack.append((f"(?{letters}:" if letters else "(?:", [], new_fold, behind))
            return flag.end()
        named = (_PY_NAMED_GROUP if self.to_onig else _ONIG_NAMED_GROUP).match(p, i)
        if named:
            stack.append((f"(?<{named.group(1)}>" if self.to_onig else f"(?P<{named.group(1)}>",
                          [], fold, behind))
            return named.end()
        for head in ("(?<=", "(?<!", "(?:", "(?>", "(?=", "(?!"):
            if p.startswith(head, i):
                stack.append((head, [], fold, behind or head.startswith("(?<")))
                return i + len(head)
        if p.startswith("(?", i):
            end = p.find(")", i)
            raise _refuse(p[i:end + 1] if end > 0 else p[i:i + 3],
                          f"a group kind with no exact {self.side} equivalent")
        stack.append(("(", [], fold, behind))
        return i + 1


def _check_fold(ch: str, fold: bool, text: Optional[str] = None) -> None:
    """Under (?i) only ASCII other than i/I folds alike: regex folds İ to i, Oniguruma does not,
    and non-ASCII letters differ more (ß, İ: Oniguruma folds to several characters)."""
    if fold and (ord(ch) > 0x7F or ch in "iI"):
        raise _refuse(text or ch, "under (?i) this folds differently in the two engines "
                      "(only ASCII other than i/I is translated)")


def _is_script(name: str) -> bool:
    try:
        regex.compile(r"\p{Script=%s}" % name)
    except regex.error:
        return False
    return True


def to_oniguruma(pattern: str) -> str:
    """A pattern that Oniguruma matches exactly as Python ``regex`` matches ``pattern``;
    :class:`PatternSyntaxError` naming the construct when there is none."""
    return _Translator(pattern, to_onig=True).translate()


def from_oniguruma(pattern: str) -> str:
    """A pattern that Python ``regex`` matches exactly as Oniguruma matches ``pattern``;
    :class:`PatternSyntaxError` naming the construct when there is none."""
    return _Translator(pattern, to_onig=False).translate()
