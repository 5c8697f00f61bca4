"""Cutting special-token strings out of text (exact match, longest first)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

import os

import regex

from cybpe.errors import InvalidParameterError, ParameterTypeError


class SpecialTokenSplitter:
    """Finds special-token strings in text: leftmost match, the longest one at a position.

    Thread safety: every method may be called from several threads at once (the search
    pattern is compiled on first use; two threads compiling it at once build equal patterns).
    """

    def __init__(self, specials: Iterable[str]) -> None:
        self.specials = tuple(sorted(set(specials), key=lambda s: (-len(s), s)))
        # Compiled on first use: Llama 3's 256 special tokens take the regex module 26 ms to
        # compile, 8% of a first from_hf, and most tokenizers only ever ask `first` about texts
        # without the common prefix below (never needing the pattern).
        self._compiled: Optional[regex.Pattern] = None
        # What every special string starts with ("<|" for tiktoken's): ``str.__contains__``
        # rules most texts out at memory speed, before the regex search (about 10x slower).
        self._prefix = os.path.commonprefix(list(self.specials)) if self.specials else ""

    def _regex(self) -> regex.Pattern:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = regex.compile("|".join(regex.escape(s) for s in self.specials))
        return compiled

    def parts(self, text: str) -> Iterator[tuple[str, bool]]:
        """``(part, is_special)`` in order; ordinary parts are never empty."""
        if not self.specials:
            if text:
                yield text, False
            return
        pos = 0
        for m in self._regex().finditer(text):
            if m.start() > pos:
                yield text[pos:m.start()], False
            yield m.group(), True
            pos = m.end()
        if pos < len(text):
            yield text[pos:], False

    def ordinary_parts(self, text: str) -> Iterator[str]:
        for part, special in self.parts(text):
            if not special:
                yield part

    def first(self, text: str) -> Optional[str]:
        """The first special-token string in ``text``, or None."""
        if not self.specials or (self._prefix and not self._may_hold_prefix(text)):
            return None
        m = self._regex().search(text)
        return m.group() if m else None

    def none_in(self, texts: list) -> bool:
        """True when no text of ``texts`` (a list of str) holds a special-token string. False
        may be wrong (then ask :meth:`first` of each text): the texts are searched for the common
        prefix once, joined, which rules a batch out without a Python call per text."""
        if not self.specials:
            return True
        if not self._prefix:
            return False
        # A prefix that the separator completes is a false alarm, never a miss: each text is a
        # substring of the joined one.
        return not self._may_hold_prefix("\x00".join(texts))

    def _may_hold_prefix(self, text: str) -> bool:
        """Whether the common prefix occurs in ``text``. Why not ``prefix in text``: for a prefix
        of two or more characters that costs about a nanosecond per character (13 us on 16,000
        characters), while finding its first character is ``memchr`` (about 0.1 us); the rare
        places holding that character are checked one by one, and past 64 ``in`` takes over
        (at worst about twice the plain search)."""
        prefix = self._prefix
        if len(prefix) == 1:
            return prefix in text
        head = prefix[0]
        at = text.find(head)
        for _ in range(64):
            if at < 0:
                return False
            if text.startswith(prefix, at):
                return True
            at = text.find(head, at + 1)
        return at >= 0 and text.find(prefix, at) >= 0


def checked_special_tokens(special_tokens: Any, argument: str = "special_tokens") -> list[str]:
    """The special-token strings of ``special_tokens`` in order, duplicates dropped.

    A collection of non-empty strings without lone surrogates; a bare ``str`` is refused rather
    than read as its characters (:class:`~cybpe.errors.ParameterTypeError`), and so is anything
    that is not a collection of strings.
    """
    if isinstance(special_tokens, (str, bytes, bytearray)):
        raise ParameterTypeError(
            f"{argument} must be a collection of strings, not a single {type(special_tokens).__name__} "
            f"(write [{special_tokens!r}] for one special token)"
        )
    try:
        items = list(special_tokens)
    except TypeError:
        raise ParameterTypeError(
            f"{argument} must be a collection of strings, not {type(special_tokens).__name__}"
        ) from None
    out: dict[str, None] = {}
    for item in items:
        if not isinstance(item, str):
            raise ParameterTypeError(
                f"{argument}: a special token must be a str, not {type(item).__name__}")
        if not item:
            raise InvalidParameterError(f"{argument}: a special token must not be empty")
        try:
            str.encode(item, "utf-8")
        except UnicodeEncodeError:
            raise InvalidParameterError(
                f"{argument}: special token {item!r} has a lone surrogate (not UTF-8 text)") from None
        out[str.__str__(item)] = None
    return list(out)
