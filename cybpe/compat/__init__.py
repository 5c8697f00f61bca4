"""Drop-in layers that present another library's API on cybpe.

:func:`install_tiktoken` makes ``import tiktoken`` (and ``tiktoken.core``, ``tiktoken.load``,
``tiktoken.registry``, ``tiktoken.model``, ``tiktoken_ext.openai_public``) give modules that
present tiktoken 0.14's public API on cybpe: ``tiktoken.get_encoding("cl100k_base")`` returns a
:class:`cybpe.compat.tiktoken.Encoding`, a :class:`cybpe.Tokenizer` with tiktoken's constructor
and private members (``_pat_str``, ``_mergeable_ranks``, ``_special_tokens``,
``_encode_bytes``...). tiktoken's own test suite passes through it (``.ci/stage-tiktoken-suite.sh``).

Encodings are cybpe's registered ones (:func:`cybpe.get_encoding`: files found offline in
``$CYBPE_ENCODINGS_DIR`` or tiktoken's cache, checked by sha256); nothing is downloaded.
Where cybpe and tiktoken differ (see :mod:`cybpe.compat.tiktoken`), errors are cybpe's typed
errors, each also the built-in exception tiktoken raises (``KeyError``, ``ValueError``).
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

#: the sys.modules names install_tiktoken() fills, and the cybpe module each one gets
_MODULES = {
    "tiktoken": "cybpe.compat.tiktoken",
    "tiktoken.core": "cybpe.compat.tiktoken.core",
    "tiktoken.load": "cybpe.compat.tiktoken.load",
    "tiktoken.registry": "cybpe.compat.tiktoken.registry",
    "tiktoken.model": "cybpe.compat.tiktoken.model",
    "tiktoken_ext": "cybpe.compat.tiktoken_ext",
    "tiktoken_ext.openai_public": "cybpe.compat.tiktoken_ext.openai_public",
}
_lock = threading.Lock()
_saved: dict[str, object] = {}
_MISSING = object()


def install_tiktoken() -> ModuleType:
    """Put cybpe's tiktoken modules into ``sys.modules`` under tiktoken's names, so that every
    later ``import tiktoken`` (``from tiktoken.load import load_tiktoken_bpe``...) gets them;
    returns the ``tiktoken`` module. Idempotent and thread-safe. A real tiktoken imported
    earlier stays usable through the objects already taken from it, but ``sys.modules`` now
    names cybpe's; :func:`uninstall_tiktoken` puts the previous entries back."""
    import importlib

    with _lock:
        modules = {name: importlib.import_module(target) for name, target in _MODULES.items()}
        for name, module in modules.items():
            current = sys.modules.get(name, _MISSING)
            if current is module:
                continue
            _saved.setdefault(name, current)
            sys.modules[name] = module
        return modules["tiktoken"]


def uninstall_tiktoken() -> None:
    """Undo :func:`install_tiktoken`: ``sys.modules`` gets back what it held before (a real
    tiktoken, or nothing)."""
    with _lock:
        for name, previous in _saved.items():
            if previous is _MISSING:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous  # type: ignore[assignment]
        _saved.clear()


def tiktoken_is_installed() -> bool:
    """Whether ``sys.modules["tiktoken"]`` is cybpe's (after :func:`install_tiktoken`)."""
    module = sys.modules.get("tiktoken")
    return module is not None and getattr(module, "__name__", "") == _MODULES["tiktoken"]
