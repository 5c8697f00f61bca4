"""The encoding registry: ``get_encoding``, ``list_encoding_names`` and ``encoding_for_model``.

Encodings come from the ``cybpe_register_encodings`` hook of every plugin the pre-tokenizer
registry's plugin manager loaded (the ``cybpe.pretokenizers`` and ``cybpe.encodings``
entry-point groups, the built-in :mod:`cybpe.encodings.known_encodings`, and plugins registered
in-process with :func:`cybpe.register_plugin`): one plugin manager, one loader. The entries are
collected again whenever the set of hook implementations changes, and an encoding is built
from its files on first use and then kept, like tiktoken's ``ENCODINGS`` cache.

Thread safety: every function here may be called from several threads at once; lookups and
the one-time build of each encoding run under one lock, so concurrent ``get_encoding`` calls
for the same name build it once and return the same :class:`~cybpe.Tokenizer` (itself safe to
share, see the README).
"""

from __future__ import annotations

import difflib
import inspect
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from cybpe.formats.known import KNOWN_ENCODINGS, tiktoken_name
from cybpe.formats.vocab import Vocab
from cybpe.encodings.cache import EncodingFile, check_sha256, find_file, sha256_of_file
from cybpe.errors import (
    CybpeError,
    DuplicateEncodingError,
    FormatError,
    ParameterTypeError,
    PluginError,
    UnknownEncodingError,
)


@dataclass(frozen=True)
class EncodingEntry:
    """One registered encoding: its files, how to build it, and which plugin registered it."""

    name: str
    files: tuple[EncodingFile, ...]
    build: Callable[..., Any]
    n_vocab: Optional[int]
    description: str
    plugin: str
    distribution: Optional[str]
    version: Optional[str]

    @property
    def source(self) -> tuple:
        """What identifies where a built encoding came from: plugin and files."""
        return (self.plugin, self.distribution, self.files, self.n_vocab)

    def load(self, paths: Sequence[str]) -> Any:
        """Build the tokenizer from local copies of the files (already checked), name it."""
        try:
            tok = self.build(*paths)
        except CybpeError:
            raise
        except Exception as exc:
            raise PluginError(f"encoding {self.name!r} (plugin {self.plugin!r}): its build function "
                              f"raised {exc!r}") from exc
        # A cybpe.Tokenizer by what it holds: the registry sits below the API layer (the
        # Tokenizer asks it for registered files), so it does not import the class.
        if not (isinstance(getattr(tok, "vocab", None), Vocab) and callable(getattr(tok, "encode", None))):
            raise PluginError(f"encoding {self.name!r} (plugin {self.plugin!r}): build returned "
                              f"{type(tok).__name__}, not a cybpe.Tokenizer")
        ordinary = len(tok.vocab.tokens) - len(tok.vocab.gaps)
        if self.n_vocab is not None and (tok.n_vocab != self.n_vocab or
                                         ordinary + len(tok.special_tokens) != self.n_vocab):
            raise FormatError(f"encoding {self.name!r}: {', '.join(paths)} give {tok.n_vocab} ids "
                              f"({ordinary} ordinary + {len(tok.special_tokens)} special), "
                              f"not the registered {self.n_vocab}")
        tok.name = self.name
        return tok

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "files": [{"path": f.path, "sha256": f.sha256, "url": f.url} for f in self.files],
                "plugin": self.plugin, "distribution": self.distribution, "version": self.version}


class EncodingRegistry:
    """The entries of every ``cybpe_register_encodings`` implementation, and built encodings."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._impls_key: Optional[tuple] = None
        self._entries: dict[str, EncodingEntry] = {}
        self._models: dict[str, str] = {}
        self._prefixes: dict[str, str] = {}
        self._built: dict[str, Any] = {}
        self._built_from: dict[str, tuple] = {}  # the EncodingEntry.source each was built from

    # -- collecting --------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Collect the entries again if the hook implementations changed (under the lock)."""
        from cybpe.pretokenize.registry import plugin_manager

        impls = plugin_manager().hook.cybpe_register_encodings.get_hookimpls()
        key = tuple((id(impl.plugin), id(impl.function)) for impl in impls)
        if key == self._impls_key:
            return
        entries: dict[str, EncodingEntry] = {}
        models: dict[str, str] = {}
        prefixes: dict[str, str] = {}
        for impl in reversed(impls):  # registration order: built-ins and entry points first
            register = self._make_register(impl, entries, models, prefixes)
            try:
                impl.function(register=register)
            except CybpeError:
                raise
            except Exception as exc:
                raise PluginError(f"plugin {impl.plugin_name!r} raised while registering encodings: "
                                  f"{exc!r}") from exc
        self._entries, self._models, self._prefixes = dict(sorted(entries.items())), models, prefixes
        # Keep what was built from an entry that is still registered by the same plugin with the
        # same files (a hook implementation makes new build functions each time it runs).
        self._built = {name: tok for name, tok in self._built.items()
                       if name in self._entries and self._built_from.get(name) == self._entries[name].source}
        self._impls_key = key

    @staticmethod
    def _make_register(impl, entries, model_table, prefix_table):
        from cybpe.pretokenize.registry import plugin_distribution

        plugin_name = impl.plugin_name
        dist_name, version = plugin_distribution(impl.plugin)
        doc = inspect.getdoc(impl.function) or ""

        def register(name: str, *, files: Sequence[EncodingFile], build: Callable[..., Any],
                     n_vocab: Optional[int] = None, models: Sequence[str] = (),
                     model_prefixes: Sequence[str] = (), description: Optional[str] = None) -> None:
            if not isinstance(name, str) or not name:
                raise PluginError(f"plugin {plugin_name!r} registered an encoding without a name")
            files = tuple(files)
            if not files or not all(isinstance(f, EncodingFile) for f in files):
                raise PluginError(f"plugin {plugin_name!r}: encoding {name!r} needs files=, a "
                                  "non-empty sequence of cybpe.encodings.EncodingFile")
            if not callable(build):
                raise PluginError(f"plugin {plugin_name!r}: build of encoding {name!r} is not callable")
            if n_vocab is not None and (isinstance(n_vocab, bool) or not isinstance(n_vocab, int)):
                raise PluginError(f"plugin {plugin_name!r}: n_vocab of encoding {name!r} must be an int")
            if name in entries:
                other = entries[name]
                raise DuplicateEncodingError(
                    f"encoding {name!r} is registered by two plugins: {other.plugin!r} "
                    f"({other.distribution or 'not packaged'}) and {plugin_name!r} "
                    f"({dist_name or 'not packaged'})")
            for table, keys, what in ((model_table, models, "model"), (prefix_table, model_prefixes, "model prefix")):
                for key in ([keys] if isinstance(keys, str) else keys):
                    if not isinstance(key, str) or not key:
                        raise PluginError(f"plugin {plugin_name!r}: a {what} of encoding {name!r} is not a str")
                    if key in table and table[key] != name:
                        raise DuplicateEncodingError(
                            f"{what} {key!r} is mapped to two encodings: {table[key]!r} and {name!r} "
                            f"(plugin {plugin_name!r})")
                    table[key] = name
            entries[name] = EncodingEntry(
                name=name, files=files, build=build, n_vocab=n_vocab,
                description=(description or doc).strip().split("\n\n")[0].replace("\n", " "),
                plugin=plugin_name, distribution=dist_name, version=version)

        return register

    # -- lookups -------------------------------------------------------------------------------
    def entry(self, name: str) -> EncodingEntry:
        if not isinstance(name, str):
            raise ParameterTypeError(f"an encoding name must be a str, not {type(name).__name__}")
        with self._lock:
            self._refresh()
            found = self._entries.get(name)
            if found is None:
                close = difflib.get_close_matches(name, self._entries, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise UnknownEncodingError(f"unknown encoding {name!r}.{hint} Registered: "
                                           f"{', '.join(self._entries)}")
            return found

    def names(self) -> list[str]:
        with self._lock:
            self._refresh()
            return list(self._entries)

    def get(self, name: str) -> Any:
        with self._lock:
            entry = self.entry(name)
            tok = self._built.get(name)
            if tok is None:
                tok = entry.load([find_file(f, name) for f in entry.files])
                self._built[name] = tok
                self._built_from[name] = entry.source
            return tok

    def name_for_model(self, model: str) -> str:
        """tiktoken's rule: the exact model name first, then a prefix. tiktoken takes the first
        prefix of its table that matches; its table lists a longer prefix before any shorter one
        it extends (``ft:gpt-4o`` before ``ft:gpt-4``), so the longest match gives the same answer
        whatever order plugins register in."""
        if not isinstance(model, str):
            raise ParameterTypeError(f"a model name must be a str, not {type(model).__name__}")
        with self._lock:
            self._refresh()
            if model in self._models:
                return self._models[model]
            matches = [prefix for prefix in self._prefixes if model.startswith(prefix)]
            if matches:  # the longest: independent of the order plugins registered in
                return self._prefixes[max(matches, key=len)]
        raise UnknownEncodingError(
            f"no encoding is known for model {model!r}: use cybpe.get_encoding(name) with one of "
            f"{', '.join(self.names())}")

    def model_tables(self) -> tuple[dict[str, str], dict[str, str]]:
        """Copies of ``{model: encoding}`` and ``{model prefix: encoding}``, collected afresh."""
        with self._lock:
            self._refresh()
            return dict(self._models), dict(self._prefixes)

    def tiktoken_file_encoding(self, path: str) -> Optional[EncodingEntry]:
        """The registered one-file ``.tiktoken`` encoding ``path`` is a copy of: by its name when
        that is tiktoken's cache name for the file (then the sha256 must match), else by its
        sha256; None when it is no registered file."""
        with self._lock:
            self._refresh()
            single = [e for e in self._entries.values()
                      if len(e.files) == 1 and e.files[0].path.endswith(".tiktoken")]
        base = os.path.basename(path)
        for entry in single:
            if entry.files[0].cache_name == base:
                check_sha256(path, entry.files[0], entry.name)
                return entry
        digest = sha256_of_file(path)
        for entry in single:
            if entry.files[0].sha256 == digest:
                return entry
        return None


_REGISTRY = EncodingRegistry()


def get_encoding(name: str) -> Any:
    """The :class:`~cybpe.Tokenizer` registered as ``name`` (``"cl100k_base"``, ``"o200k_base"``,
    ...), built from local files on first use and then shared (tiktoken's ``get_encoding``).

    Files are found offline (``$CYBPE_ENCODINGS_DIR``, then tiktoken's cache) and checked by
    sha256; a missing one raises :class:`~cybpe.errors.MissingEncodingFileError` saying where to
    put it, an unknown name :class:`~cybpe.errors.UnknownEncodingError`. Nothing is downloaded:
    see :func:`cybpe.download`."""
    return _REGISTRY.get(name)


def list_encoding_names() -> list[str]:
    """The names of every registered encoding, sorted (whether or not its files are present)."""
    return _REGISTRY.names()


def encoding_name_for_model(model: str) -> str:
    """The encoding name of a model (``"gpt-4o"`` -> ``"o200k_base"``): the exact name, then
    a known prefix (``"gpt-4-0613"``), as tiktoken's table; else
    :class:`~cybpe.errors.UnknownEncodingError` (a ``KeyError``, as tiktoken raises)."""
    return _REGISTRY.name_for_model(model)


def encoding_for_model(model: str) -> Any:
    """``get_encoding(encoding_name_for_model(model))``."""
    return get_encoding(encoding_name_for_model(model))


def forget_built() -> None:
    """Drop every built encoding, so the next ``get_encoding`` looks for the files again (after
    ``$CYBPE_ENCODINGS_DIR`` or the cache changed; the tests use it)."""
    with _REGISTRY._lock:
        _REGISTRY._built.clear()
        _REGISTRY._built_from.clear()


def list_encodings() -> list[dict[str, Any]]:
    """Every registered encoding: name, description, files (path, sha256, url) and plugin."""
    with _REGISTRY._lock:
        return [_REGISTRY.entry(name).info() for name in _REGISTRY.names()]


def encoding_entry(name: str) -> EncodingEntry:
    """The registry entry of ``name`` (its files and build function), for :mod:`.download`."""
    return _REGISTRY.entry(name)


def model_tables() -> tuple[dict[str, str], dict[str, str]]:
    """See :meth:`EncodingRegistry.model_tables` (tiktoken's two model tables, for the
    compatibility layer)."""
    return _REGISTRY.model_tables()


def tiktoken_file_encoding(path: str) -> Optional[EncodingEntry]:
    """See :meth:`EncodingRegistry.tiktoken_file_encoding`."""
    return _REGISTRY.tiktoken_file_encoding(path)


def registered_tiktoken_file(path: str, pretokenizer: Any = None, special_tokens: Any = None,
                             name: Optional[str] = None) -> Optional[EncodingEntry]:
    """The registered encoding a ``.tiktoken`` file is a copy of, when the arguments of
    ``Tokenizer.from_tiktoken`` leave it unidentified (nothing given, and a file name that is no
    known encoding's: tiktoken's cache names files by the sha1 of their address); else None."""
    if name is not None or pretokenizer is not None or special_tokens is not None:
        return None
    if tiktoken_name(path) in KNOWN_ENCODINGS:
        return None
    return tiktoken_file_encoding(path)
