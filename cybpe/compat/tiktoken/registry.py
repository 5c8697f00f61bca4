"""``tiktoken.registry``: ``get_encoding`` and ``list_encoding_names`` over cybpe's encoding
registry (:func:`cybpe.get_encoding`), with tiktoken's ``ENCODINGS`` cache of built encodings."""

from __future__ import annotations

from typing import Any, Callable, Optional

from cybpe.compat.tiktoken import core as _core
from cybpe.compat.tiktoken.core import Encoding
from cybpe.encodings import registry as _cybpe_registry

#: name -> the Encoding returned for it (as tiktoken's; pickling uses it to pickle by name)
ENCODINGS = _core.ENCODINGS
#: tiktoken fills this from its plugins; here: name -> a function giving the constructor's
#: keyword arguments, for every registered encoding (see tiktoken_ext.openai_public)
ENCODING_CONSTRUCTORS: Optional[dict[str, Callable[[], dict[str, Any]]]] = None


def get_encoding(encoding_name: str) -> Encoding:
    """The registered encoding ``encoding_name`` as an :class:`Encoding` (the same object on
    every call while cybpe's registry keeps the encoding; files found offline, never
    downloaded). An unknown name raises :class:`~cybpe.errors.UnknownEncodingError`, a
    ``ValueError`` as tiktoken raises."""
    return _core.registered_encoding(encoding_name)


def list_encoding_names() -> list[str]:
    """Every encoding registered with cybpe (tiktoken's six, o200k_harmony, llama3, qwen3 and
    any plugin's)."""
    return _cybpe_registry.list_encoding_names()
