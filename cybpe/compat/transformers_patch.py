"""``cybpe.patch_transformers()``: transformers' fast tokenizers encode and decode with cybpe.

How: transformers keeps each fast tokenizer's ``tokenizers.Tokenizer`` in the instance
attribute ``_tokenizer`` and reaches it through ``self._tokenizer`` everywhere. The patch puts a
data descriptor named ``_tokenizer`` on the class that owns that attribute
(``TokenizersBackend`` in transformers 5, ``PreTrainedTokenizerFast`` in 4.x). A data
descriptor on the class wins over the instance's ``__dict__``, so every access, on tokenizers
made before the patch as on those made after (``AutoTokenizer.from_pretrained``,
``PreTrainedTokenizerFast(tokenizer_file=...)``, ``tokenizer_object=``...), gets the same
:class:`~cybpe.compat.hf_backend.CybpeBackend` around the instance's own Rust tokenizer, which
stays in the instance's ``__dict__``, untouched. So:

* nothing else in transformers changes, and a patched tokenizer pickles (and deep-copies) as
  an unpatched one: its state holds the Rust tokenizer only;
* unpatching removes the descriptor and every tokenizer is HF's again, as it was;
* assigning ``tok._tokenizer = x`` stores ``x`` (a backend given is unwrapped).

The backend of an instance is kept in its ``__dict__`` under ``_cybpe_backend`` inside a small
holder that pickles and copies as empty (:class:`~cybpe.compat.backend_slot.BackendSlot`), so
copies rebuild theirs.

``tokenizers.decoders.DecodeStream`` (vLLM's incremental detokenizer) is also replaced while the
patch is on, by a subclass-like wrapper that hands the Rust tokenizer to HF's own stream.

Thread safety: :func:`patch_transformers` and :func:`unpatch_transformers` take a lock; calling
them while other threads encode is safe (a call in flight finishes on whichever backend it
started with).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Iterator, Optional

from cybpe.compat.backend_slot import BackendGetter, BackendSlot

logger = logging.getLogger("cybpe.compat.transformers")

_LOCK = threading.RLock()
#: (class, the value its __dict__ had under "_tokenizer" or _MISSING) while patched
_patched: list[tuple[type, Any]] = []
_decode_stream: Optional[tuple[Any, Any]] = None
_MISSING = object()
_SLOT = "_cybpe_backend"


#: old pickles name the slot's class here
_Slot = BackendSlot


class _BackendDescriptor(BackendGetter):
    """The class attribute ``_tokenizer`` while patched (see the module docstring). Reads that
    the instance's slot answers stay in C (:class:`~cybpe.compat.backend_slot.BackendGetter`)."""

    def __init__(self, class_value: Any) -> None:
        super().__init__(class_value, _SLOT)

    def missing(self, d: dict) -> Any:
        """An instance's read that its slot does not answer (no slot yet, or a slot for a
        Rust tokenizer the instance no longer holds)."""
        raw = d.get("_tokenizer", _MISSING)
        if raw is None or raw is _MISSING:
            return self.class_value if raw is _MISSING else None
        return _attach(d, raw)

    def __set__(self, obj: Any, value: Any) -> None:
        from cybpe.compat.hf_backend import CybpeBackend

        d = obj.__dict__
        if isinstance(value, CybpeBackend):
            d["_tokenizer"] = value._inner
            d[_SLOT] = BackendSlot(value._inner, value)
        else:
            d["_tokenizer"] = value
            d.pop(_SLOT, None)

    def __delete__(self, obj: Any) -> None:
        obj.__dict__.pop(_SLOT, None)
        try:
            del obj.__dict__["_tokenizer"]
        except KeyError:
            raise AttributeError("_tokenizer") from None


def _attach(d: dict, raw: Any) -> Any:
    """The backend for the Rust tokenizer ``raw`` of an instance (made once, kept in its slot)."""
    import tokenizers

    from cybpe.compat.hf_backend import CybpeBackend

    if type(raw) is not tokenizers.Tokenizer:  # something else someone put there: left alone
        return raw
    backend = CybpeBackend(raw)
    slot = d.get(_SLOT)
    if isinstance(slot, BackendSlot) and slot.raw is raw:  # another thread was first
        return slot.backend
    d[_SLOT] = BackendSlot(raw, backend)
    return backend


def _owner_classes() -> list[type]:
    """The transformers classes whose ``_tokenizer`` attribute holds the Rust tokenizer."""
    found = []
    try:  # transformers 5
        from transformers.tokenization_utils_tokenizers import TokenizersBackend

        found.append(TokenizersBackend)
    except ImportError:
        pass
    if not found:
        try:  # transformers 4.x
            from transformers.tokenization_utils_fast import PreTrainedTokenizerFast

            found.append(PreTrainedTokenizerFast)
        except ImportError:
            pass
    if not found:
        raise ImportError("cybpe.patch_transformers: transformers (4.x or 5.x) is not installed, or "
                          "has neither TokenizersBackend nor PreTrainedTokenizerFast")
    return found


class _DecodeStream:
    """``tokenizers.decoders.DecodeStream`` that also takes a patched backend: it hands HF's
    own stream the Rust tokenizer inside."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._stream = _decode_stream_class()(*args, **kwargs)

    def step(self, tokenizer: Any, id: Any) -> Any:
        """HF's ``DecodeStream.step`` on the Rust tokenizer behind ``tokenizer``."""
        return self._stream.step(_unwrap(tokenizer), id)

    def __getattr__(self, name: str) -> Any:
        if name == "_stream":
            raise AttributeError(name)
        return getattr(self._stream, name)


def _decode_stream_class() -> Any:
    if _decode_stream is not None:
        return _decode_stream[1]
    import tokenizers.decoders

    found = tokenizers.decoders.DecodeStream
    return found if found is not _DecodeStream else None


def _unwrap(tokenizer: Any) -> Any:
    from cybpe.compat.hf_backend import CybpeBackend

    return tokenizer._inner if isinstance(tokenizer, CybpeBackend) else tokenizer


def is_patched() -> bool:
    """Whether :func:`patch_transformers` is in effect."""
    return bool(_patched)


def patch_transformers() -> None:
    """Make every transformers fast tokenizer (``PreTrainedTokenizerFast`` and its subclasses,
    those made before this call and after it) encode and decode with cybpe, with exactly HF's
    results. Tokenizers whose ``tokenizer.json`` cybpe cannot reproduce exactly stay on HF's
    engine (a ``logging.debug`` line on the ``cybpe.compat.transformers`` logger says why), and
    so do the calls the docs list as falling back. Calling it again does nothing;
    :func:`unpatch_transformers` undoes it. Raises ImportError without transformers.
    Thread-safe (under a lock), also while other threads encode."""
    global _decode_stream
    with _LOCK:
        if _patched:
            return
        classes = _owner_classes()
        for cls in classes:
            previous = cls.__dict__.get("_tokenizer", _MISSING)
            setattr(cls, "_tokenizer", _BackendDescriptor(None if previous is _MISSING else previous))
            _patched.append((cls, previous))
        try:
            import tokenizers.decoders

            original = tokenizers.decoders.DecodeStream
            _decode_stream = (tokenizers.decoders, original)
            tokenizers.decoders.DecodeStream = _DecodeStream
        except (ImportError, AttributeError):
            _decode_stream = None
        logger.debug("cybpe.patch_transformers: patched %s", ", ".join(c.__qualname__ for c in classes))


def unpatch_transformers() -> None:
    """Undo :func:`patch_transformers`: every fast tokenizer is on HF's engine again (those
    made while patched too). Calling it when not patched does nothing. Thread-safe (under the
    patch's lock), also while other threads encode."""
    global _decode_stream
    with _LOCK:
        while _patched:
            cls, previous = _patched.pop()
            if previous is _MISSING:
                delattr(cls, "_tokenizer")
            else:
                setattr(cls, "_tokenizer", previous)
        if _decode_stream is not None:
            module, original = _decode_stream
            if module.DecodeStream is _DecodeStream:
                module.DecodeStream = original
            _decode_stream = None


@contextlib.contextmanager
def transformers_patched() -> Iterator[None]:
    """``with cybpe.transformers_patched(): ...``: patched inside the block, as before after it
    (a patch already on stays on)."""
    with _LOCK:
        was = is_patched()
        patch_transformers()
    try:
        yield
    finally:
        if not was:
            unpatch_transformers()


def backend_of(tokenizer: Any) -> Any:
    """The :class:`~cybpe.compat.hf_backend.CybpeBackend` serving a transformers tokenizer
    while patched (``tokenizer.backend_tokenizer``), or None when it is not patched."""
    from cybpe.compat.hf_backend import CybpeBackend

    found = getattr(tokenizer, "_tokenizer", None)
    return found if isinstance(found, CybpeBackend) else None
