"""Unpickling a Tokenizer without building its encoder again, where this process has it already.

Building the :class:`~cybpe.encode.encoder.RankEncoder` (its hash tables) is most of what
unpickling a tokenizer costs: 0.09 s of 0.12 s for cl100k, and a pickle is read in every
worker a tokenizer is shipped to (``datasets.map(num_proc=...)``, a ``multiprocessing`` pool,
Dask tasks, Spark executors). The encoder is read-only once built, so tokenizers with the same
vocabulary may share one.

How: a tokenizer's pickle carries a key, a digest of what its encoder is built from
(``encoder_key``: the sha256 of the token bytes, the merges the encoder uses, its flags and the
special tokens; computed once per tokenizer, at its first pickling). A digest rather than a
random name, so that the pickle stays the same from one run to the next: ``datasets`` hashes
the mapped function, tokenizer included, to name its cache files. Unpickling looks the key up,
in order, among

* the live tokenizers of this process that were pickled or unpickled (weakly held): a worker
  forked after the tokenizer was first pickled (``datasets.map(num_proc=...)`` hashes the
  function before it forks its workers) finds the parent's object in its copy of the memory,
  so the encoder costs nothing there;
* the encoders of the last ``KEEP`` tokenizers unpickled here (held): a worker that unpickles
  the same tokenizer for every task (Dask, a spawned pool) builds it once.

and builds the encoder only when neither has it. The key names one encoder built from one
vocabulary: a vocabulary changed in place after the tokenizer was made is not followed (it is
not by the tokenizer itself either).
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import numpy as np

#: Encoders of recently unpickled tokenizers kept alive in this process.
KEEP = 2

_lock = threading.Lock()
_live: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
_recent: "OrderedDict[str, Any]" = OrderedDict()
_local = threading.local()


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # a parent's thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


@contextmanager
def unpickling(key: Any) -> Iterator[None]:
    """Within: the Tokenizer built on this thread is the one unpickled with ``key``."""
    _local.key = key if isinstance(key, str) and key else None
    try:
        yield
    finally:
        _local.key = None


def _known(key: str, n_tokens: int) -> Optional[Any]:
    with _lock:
        owner = _live.get(key)
        encoder = getattr(owner, "_encoder", None) if owner is not None else _recent.get(key)
    if encoder is not None and encoder.n_tokens == n_tokens:
        return encoder
    return None


def encoder_for(tokenizer: Any, n_tokens: int, build: Callable[[], Any]) -> Any:
    """The encoder for ``tokenizer`` (being made): a known one when it is being unpickled with a
    key this process has seen, else ``build()``. Sets ``tokenizer._encoder_key`` (None until
    the first pickling when the tokenizer is not unpickled)."""
    key = getattr(_local, "key", None)
    _local.key = None
    encoder = _known(key, n_tokens) if key is not None else None
    if encoder is None:
        encoder = build()
    tokenizer._encoder_key = key
    if key is not None:
        with _lock:
            _recent[key] = encoder
            _recent.move_to_end(key)
            while len(_recent) > KEEP:
                _recent.popitem(last=False)
            _live[key] = tokenizer
    return encoder


def encoder_digest(tokenizer: Any) -> str:
    """The sha256 (hex) of what ``tokenizer``'s encoder is built from: token bytes (placeholders
    in the gaps), the merges when the encoder uses them, ``ignore_merges`` and the special
    tokens' ids and strings."""
    vocab = tokenizer.vocab
    tokens = tokenizer._encoder_tokens
    h = hashlib.sha256(b"cybpe-encoder-1\0")
    h.update(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)).tobytes())
    h.update(b"".join(tokens))
    merges = None if vocab.encode_by_rank else vocab.merges
    if merges is not None:
        h.update(b"merges\0")
        h.update(np.asarray(merges, dtype=np.int64).reshape(-1).tobytes())
    h.update(b"ignore_merges=%d\0" % bool(vocab.ignore_merges))
    for name, token_id in sorted(vocab.special_tokens.items()):
        h.update(name.encode("utf-8", "surrogatepass") + b"\0%d\0" % token_id)
    return h.hexdigest()


def key_for(tokenizer: Any) -> str:
    """``tokenizer``'s key (computed at the first call), registered as live in this process."""
    key = getattr(tokenizer, "_encoder_key", None)
    if key is None:
        key = tokenizer._encoder_key = encoder_digest(tokenizer)
    with _lock:
        _live[key] = tokenizer
    return key


def forget() -> None:
    """Drop every kept encoder (tests)."""
    with _lock:
        _recent.clear()
        _live.clear()
