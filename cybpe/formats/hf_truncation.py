"""HF tokenizers' truncation rule (``utils/truncation.rs``, ``truncate_encodings``): how many
tokens each sequence of an input keeps. Its two users cut differently shaped things with it:
``Tokenizer.__call__`` (cybpe/api/tokenizer_hf.py) cuts id lists, and the patched transformers
backend (cybpe/compat/hf_encoding.py) cuts encodings into overflowing windows with a stride.

Thread safety: a pure function.
"""

from __future__ import annotations

from typing import Optional

from cybpe.errors import InvalidParameterError


def kept_lengths(n1: int, n2: Optional[int], max_length: int, strategy: str) -> tuple[int, Optional[int]]:
    """How many tokens the first sequence (``n1`` long) and the second (``n2`` long; None
    without one) keep when the input is cut to ``max_length`` tokens by ``strategy``:
    ``"longest_first"`` keeps the shorter sequence whole when the longer can give up the
    difference, else splits ``max_length`` in halves (the odd one to the longer);
    ``"only_first"`` / ``"only_second"`` cut one of them. A length at least the sequence's own
    means it is not cut; ``max_length`` 0 cuts both to 0.

    Raises InvalidParameterError where HF raises: the sequence ``only_first`` /
    ``only_second`` names is too short to give up the excess (or absent), or an unknown
    ``strategy``."""
    if max_length == 0:
        return 0, None if n2 is None else 0
    total = n1 + (n2 or 0)
    if total <= max_length:
        return n1, n2
    remove = total - max_length
    if strategy == "longest_first":
        if n2 is None:
            return max_length, None
        a, b = n1, n2
        swap = a > b
        if swap:
            a, b = b, a
        b = a if a > max_length else max(a, max_length - a)
        if a + b > max_length:
            a = max_length // 2
            b = a + max_length % 2
        return (b, a) if swap else (a, b)
    if strategy == "only_first":
        if n1 <= remove:
            raise InvalidParameterError(f"truncation='only_first': the first text has {n1} tokens, "
                                        f"fewer than the {remove} to remove")
        return n1 - remove, n2
    if strategy == "only_second":
        if n2 is None:
            raise InvalidParameterError("truncation='only_second' needs text_pair")
        if n2 <= remove:
            raise InvalidParameterError(f"truncation='only_second': the second text has {n2} tokens, "
                                        f"fewer than the {remove} to remove")
        return n1, n2 - remove
    raise InvalidParameterError(f"unknown truncation strategy {strategy!r}")
