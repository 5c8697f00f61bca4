"""Cutting special-token strings out of text (exact match, longest first)."""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

import regex


class SpecialTokenSplitter:
    """Finds special-token strings in text: leftmost match, the longest one at a position."""

    def __init__(self, specials: Iterable[str]) -> None:
        self.specials = tuple(sorted(set(specials), key=lambda s: (-len(s), s)))
        self._regex: Optional[regex.Pattern] = (
            regex.compile("|".join(regex.escape(s) for s in self.specials)) if self.specials else None
        )

    def parts(self, text: str) -> Iterator[tuple[str, bool]]:
        """``(part, is_special)`` in order; ordinary parts are never empty."""
        if self._regex is None:
            if text:
                yield text, False
            return
        pos = 0
        for m in self._regex.finditer(text):
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
        if self._regex is None:
            return None
        m = self._regex.search(text)
        return m.group() if m else None
