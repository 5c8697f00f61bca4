"""The spans a pre-tokenizer takes from a compiled ``regex`` pattern, gaps filled."""

from __future__ import annotations

from typing import Any

Span = tuple[int, int]


def regex_spans(compiled: Any, text: str) -> list[Span]:
    """``finditer`` spans of ``compiled`` over ``text``, empty matches dropped, and the text
    between matches (which a well-formed pattern never leaves) as pieces of their own, so that
    the spans cover the text."""
    spans: list[Span] = []
    pos = 0
    for m in compiled.finditer(text):
        start, end = m.span()
        if start == end:
            continue
        if start > pos:
            spans.append((pos, start))
        spans.append((start, end))
        pos = end
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans
