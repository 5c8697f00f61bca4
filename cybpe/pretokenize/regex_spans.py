"""The spans a pre-tokenizer takes from a compiled ``regex`` pattern, gaps filled, within a time
bound.

Time bound: the ``regex`` module backtracks, so a user-supplied pattern such as ``(a+)+$``
takes exponential time on ``"a" * 30 + "!"``. Every split here passes ``timeout=`` to the
``regex`` module: ``seconds + per_million_chars * len(text) / 1e6`` (default 2 s + 10 s per
million characters: ordinary patterns split a million characters in well under a second even
on a loaded machine). Past it, :class:`~cybpe.errors.PatternTimeoutError` names the pattern
and the position the search had reached. (The ``regex`` module checks its clock every so
often: on a loaded machine the stop can come a few seconds after the bound.) Change the bound with :func:`set_regex_timeout` or,
at import, the environment variable ``CYBPE_REGEX_TIMEOUT`` (``"seconds"`` or
``"seconds,per_million_chars"``).
"""

from __future__ import annotations

import os
from typing import Any

from cybpe.errors import InvalidParameterError, PatternTimeoutError

Span = tuple[int, int]

DEFAULT_TIMEOUT = (2.0, 10.0)


def _from_environment() -> tuple[float, float]:
    raw = os.environ.get("CYBPE_REGEX_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        parts = [float(x) for x in raw.split(",")]
        return _checked(*parts)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"CYBPE_REGEX_TIMEOUT={raw!r}: expected 'seconds' or 'seconds,per_million_chars' "
            "(positive numbers)"
        ) from None


def _checked(seconds: float, per_million_chars: float = DEFAULT_TIMEOUT[1]) -> tuple[float, float]:
    for name, value in (("seconds", seconds), ("per_million_chars", per_million_chars)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidParameterError(
                f"set_regex_timeout(): {name} must be a number, not {type(value).__name__}")
        if not (0 <= value < float("inf")):
            raise InvalidParameterError(f"set_regex_timeout(): {name} must be >= 0 and finite, not {value!r}")
    if seconds <= 0 and per_million_chars <= 0:
        raise InvalidParameterError("set_regex_timeout(): the bound must be positive")
    return float(seconds), float(per_million_chars)


_bound = list(_from_environment())


def set_regex_timeout(seconds: float = DEFAULT_TIMEOUT[0],
                      per_million_chars: float = DEFAULT_TIMEOUT[1]) -> tuple[float, float]:
    """Bound every split that runs on the ``regex`` module to ``seconds + per_million_chars *
    len(text) / 1e6`` seconds; returns the previous ``(seconds, per_million_chars)``.

    Process-wide (every thread, every pre-tokenizer). A split past the bound raises
    :class:`~cybpe.errors.PatternTimeoutError`. Called with no arguments it restores the
    default (2 s + 10 s per million characters).
    """
    previous = (_bound[0], _bound[1])
    _bound[0], _bound[1] = _checked(seconds, per_million_chars)
    return previous


def regex_timeout(n_chars: int) -> float:
    """The time bound, in seconds, for one split of a text of ``n_chars`` characters."""
    return _bound[0] + _bound[1] * n_chars * 1e-6


def _timed_out(compiled: Any, text: str, position: int) -> PatternTimeoutError:
    pattern = compiled.pattern
    shown = pattern if len(pattern) <= 120 else pattern[:117] + "..."
    return PatternTimeoutError(
        f"the regex module ran past its time bound ({regex_timeout(len(text)):.3g} s for "
        f"{len(text)} characters) splitting with the pattern {shown!r}, searching from "
        f"position {position} (characters); the pattern backtracks catastrophically on this "
        "text. Simplify the pattern, or raise the bound with cybpe.set_regex_timeout()"
    )


def regex_spans(compiled: Any, text: str) -> list[Span]:
    """``finditer`` spans of ``compiled`` over ``text``, empty matches dropped, and the text
    between matches (which a well-formed pattern never leaves) as pieces of their own, so that
    the spans cover the text. Past the time bound: :class:`PatternTimeoutError`."""
    spans: list[Span] = []
    pos = 0
    try:
        for m in compiled.finditer(text, timeout=regex_timeout(len(text))):
            start, end = m.span()
            if start == end:
                continue
            if start > pos:
                spans.append((pos, start))
            spans.append((start, end))
            pos = end
    except TimeoutError:
        raise _timed_out(compiled, text, pos) from None
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans


def regex_findall(compiled: Any, text: str) -> list[str]:
    """``compiled.findall(text)`` within the time bound (:class:`PatternTimeoutError` past it;
    the search is then run again by :func:`regex_spans` to name the position)."""
    try:
        return compiled.findall(text, timeout=regex_timeout(len(text)))
    except TimeoutError:
        return [text[s:e] for s, e in regex_spans(compiled, text)]
