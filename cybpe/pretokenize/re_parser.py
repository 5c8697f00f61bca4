"""The standard library's regex parser, the same on Python 3.10 as on 3.11+ for the pattern compiler.

Python 3.11 moved the parser to ``re._parser``/``re._constants`` and taught it possessive
repeats (``X*+``) and atomic groups (``(?>X)``), which every tiktoken-style pattern uses. On
3.10 (``sre_parse``/``sre_constants``) :func:`parse` rewrites the pattern text first, outside
escapes and character classes: ``(?>`` becomes a named group ``(?P<_cybpe_atomic_N>``, and the
``+`` of a possessive repeat becomes an empty named group ``(?P<_cybpe_possessive_N>)`` right
after the repeat; then it turns those groups back into :data:`ATOMIC_GROUP` items and
:data:`POSSESSIVE_REPEAT` repeats in the parsed tree, shaped as 3.11 shapes them. The compiler
sees one tree either way; the differential tests (compiled spans == ``regex`` spans) run on
every claimed Python.
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    import re._constants as sre  # type: ignore[import-not-found]
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # Python 3.10: the same parser under its old names
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

NATIVE = hasattr(sre, "POSSESSIVE_REPEAT")
#: Opcodes of the parsed tree (3.10: private stand-ins with the same meaning).
POSSESSIVE_REPEAT = sre.POSSESSIVE_REPEAT if NATIVE else sre._NamedIntConstant(1001, "POSSESSIVE_REPEAT")
ATOMIC_GROUP = sre.ATOMIC_GROUP if NATIVE else sre._NamedIntConstant(1002, "ATOMIC_GROUP")

_ATOMIC, _POSSESSIVE = "_cybpe_atomic_", "_cybpe_possessive_"
_COUNTED = re.compile(r"\{\d*(?:,\d*)?\}")


def parse(text: str) -> tuple[list, int]:
    """The parsed items of ``text`` and its global flags; ``re.error`` as the parser raises it."""
    if NATIVE:
        parsed = sre_parse.parse(text, 0)
        return list(parsed), parsed.state.flags
    return parse_rewritten(text)


def parse_rewritten(text: str) -> tuple[list, int]:
    """:func:`parse` the 3.10 way; on 3.11+ too, so the tests compare it with the native parse."""
    if _ATOMIC in text or _POSSESSIVE in text:
        raise re.error("the pattern uses cybpe's private group names")
    parsed = sre_parse.parse(_rewrite(text), 0)
    names = {gid: name for name, gid in parsed.state.groupdict.items()}
    return _restore(list(parsed), names), parsed.state.flags


def _rewrite(text: str) -> str:
    """3.10 syntax for ``(?>`` and possessive ``+`` (see the module docstring)."""
    out: list[str] = []
    count = 0
    i, n = 0, len(text)
    after_repeat = False  # the previous token was a repeat (*, +, ?, {m,n}) not yet made lazy
    while i < n:
        c = text[i]
        if c == "\\":
            out.append(text[i:i + 2])
            i += 2
            after_repeat = False
        elif c == "[":
            end = i + 1
            if end < n and text[end] == "^":
                end += 1
            if end < n and text[end] == "]":  # a leading ] is a literal
                end += 1
            while end < n and text[end] != "]":
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            i = end + 1
            after_repeat = False
        elif text.startswith("(?>", i):
            out.append(f"(?P<{_ATOMIC}{count}>")
            count += 1
            i += 3
            after_repeat = False
        elif c == "+" and after_repeat:
            out.append(f"(?P<{_POSSESSIVE}{count}>)")
            count += 1
            i += 1
            after_repeat = False
        elif c == "?" and after_repeat:  # lazy: the repeat is complete
            out.append(c)
            i += 1
            after_repeat = False
        elif c in "*+?" and not (c == "?" and i > 0 and text[i - 1] == "(" and not _escaped(text, i - 1)):
            out.append(c)
            i += 1
            after_repeat = True
        elif c == "{" and (counted := _COUNTED.match(text, i)):
            out.append(counted.group())
            i = counted.end()
            after_repeat = True
        else:
            out.append(c)
            i += 1
            after_repeat = False
    return "".join(out)


def _escaped(text: str, i: int) -> bool:
    """Is text[i] escaped (an odd run of backslashes before it)?"""
    run = 0
    while i - run - 1 >= 0 and text[i - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _restore(items: list, names: dict[int, str]) -> list:
    """The 3.11 tree from the rewritten one: marker groups back to atomic groups and possessive repeats."""
    out: list = []
    for op, av in items:
        if op is sre.SUBPATTERN:
            group, add_flags, del_flags, body = av
            name = names.get(group, "")
            if name.startswith(_POSSESSIVE):
                # The rewrite put the marker right after a greedy repeat; the parser's factoring of
                # a prefix common to all alternatives can separate them: leave such patterns out.
                if not out or out[-1][0] is not sre.MAX_REPEAT:
                    raise re.error("a possessive repeat the 3.10 parser moved")
                out[-1] = (POSSESSIVE_REPEAT, out[-1][1])
                continue
            body = _restore(list(body), names)
            if name.startswith(_ATOMIC):
                out.append((ATOMIC_GROUP, body))
                continue
            out.append((op, (group, add_flags, del_flags, body)))
        elif op is sre.BRANCH:
            out.append((op, (av[0], [_restore(list(alt), names) for alt in av[1]])))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            out.append((op, (av[0], av[1], _restore(list(av[2]), names))))
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            out.append((op, (av[0], _restore(list(av[1]), names))))
        else:
            out.append((op, av))
    return out
