"""Strict base64 decoding, the same on every supported Python: canonical base64 only.

``binascii.a2b_base64(data, strict_mode=True)`` exists from Python 3.11 only, and even it lets
some non-canonical input through (``"0000="``: padding after a complete group). The loaders want
one rule on every Python, so "strict" here means canonical: the alphabet, padding only where the
last group needs it, and no stray bits in the last character -- exactly the strings that
re-encode to themselves. Refusals raise ``binascii.Error`` (a ``ValueError``), as
``a2b_base64`` does.

Thread safety: a pure function; safe from any thread.
"""

from __future__ import annotations

import binascii
from functools import partial
from typing import Union


def strict_b64decode(data: Union[bytes, str]) -> bytes:
    """The bytes of canonical base64 ``data``; ``binascii.Error`` for anything else."""
    raw = data.encode("ascii") if isinstance(data, str) else data  # non-ASCII str: ValueError, as a2b
    return strict_b64decode_all([raw])[0]


def strict_b64decode_all(fields: list[bytes]) -> list[bytes]:
    """``[strict_b64decode(f) for f in fields]``; ``binascii.Error`` when any is not canonical.

    Canonical means "re-encodes to itself", so the whole list is decoded leniently and
    re-encoded by two C-level ``map`` passes and compared once: a few times faster than a
    per-token regex check and decode (docs/history.md, "Loading vocabularies").
    """
    decoded = list(map(binascii.a2b_base64, fields))
    if list(map(partial(binascii.b2a_base64, newline=False), decoded)) != fields:
        raise binascii.Error("not canonical base64")
    return decoded
