"""Pure-Python reference for token offsets (cybpe/encode/spans.py and the compiled char_spans).

Walks the text character by character: each character owns the bytes of its UTF-8 form (a lone
surrogate owns the three bytes of the U+FFFD that replaces it, a high + low surrogate pair the four
bytes of the character they make), and a token spans from the owner
of its first byte to one past the owner of its last byte.
"""

from __future__ import annotations

from typing import Sequence


def reference_offsets(text: str, token_bytes: Sequence[bytes]) -> list[tuple[int, int]]:
    """Character ``(start, end)`` of each token, the tokens laid end to end over ``text``."""
    owner: list[tuple[int, int]] = []  # per byte: the span of the character it belongs to
    index = 0
    while index < len(text):
        ch = text[index]
        if "\ud800" <= ch <= "\udbff" and text[index + 1:index + 2] and "\udc00" <= text[index + 1] <= "\udfff":
            owner.extend([(index, index + 2)] * 4)  # a surrogate pair: one 4-byte character
            index += 2
            continue
        size = 3 if "\ud800" <= ch <= "\udfff" else len(ch.encode("utf-8"))
        owner.extend([(index, index + 1)] * size)
        index += 1
    spans = []
    pos = 0
    for piece in token_bytes:
        spans.append((owner[pos][0], owner[pos + len(piece) - 1][1]))
        pos += len(piece)
    if pos != len(owner):
        raise ValueError(f"the tokens cover {pos} bytes, the text {len(owner)}")
    return spans

