"""The pre-tokenizer registry: plugins found through pluggy, loaded lazily on first use.

Environment switches:

* ``CYBPE_DISABLE_PLUGIN_AUTOLOAD=1``: load only the built-ins, not third-party entry points.
* ``CYBPE_BLOCKED_PLUGINS=a,b``: never load the plugins (entry-point names) listed.
"""

from __future__ import annotations

import copyreg
import difflib
import importlib
import importlib.util
import inspect
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

import pluggy

from cybpe import hookspecs
from cybpe.pretokenize.pretokenizer import PreTokenizer, Refine, check_param_values, set_spec_builder
from cybpe.errors import (
    CybpeError,
    DuplicatePreTokenizerError,
    FormatError,
    InvalidParameterError,
    MissingPluginError,
    ParameterTypeError,
    PluginError,
    UnknownPreTokenizerError,
)

#: The built-in plugin modules. They are listed in the ``cybpe.pretokenizers`` entry-point group
#: too; this tuple registers whichever the installed metadata did not (a source checkout).
#: The package of the built-in pre-tokenizer plugins (the ``pretokenizers/`` folder).
BUILTIN_PACKAGE = "cybpe_pretokenizers"

BUILTIN_PLUGINS = (
    "cybpe_pretokenizers.gpt2",
    "cybpe_pretokenizers.cl100k",
    "cybpe_pretokenizers.o200k",
    "cybpe_pretokenizers.llama3",
    "cybpe_pretokenizers.qwen2",
    "cybpe_pretokenizers.gpt4_digits",
    "cybpe_pretokenizers.gpt4_digits_rtl",
    "cybpe_pretokenizers.abugida",
    "cybpe_pretokenizers.custom_regex",
    "cybpe_pretokenizers.superbpe",
)
#: The built-in encodings plugin (``cybpe.get_encoding``), in the ``cybpe.encodings`` group.
BUILTIN_ENCODING_PLUGINS = ("cybpe.encodings.known_encodings",)

PatternSource = Union[str, Callable[..., str]]


@dataclass(frozen=True)
class PreTokenizerEntry:
    """One registered pre-tokenizer and where it came from."""

    name: str
    description: str
    pattern: PatternSource
    params: dict[str, tuple[Any, Any]]
    scanner: Any
    refine: Optional[Refine]
    export_pattern: Optional[PatternSource]
    plugin: str
    distribution: Optional[str]
    version: Optional[str]

    def _values(self, given: dict[str, Any]) -> dict[str, Any]:
        try:
            return check_param_values(self.name, self.params, given)
        except TypeError as exc:  # an unhashable value compared with a set of choices
            raise ParameterTypeError(f"pre-tokenizer {self.name!r}: {exc}") from None

    def _pattern(self, values: dict[str, Any]) -> str:
        if callable(self.pattern):
            try:
                pattern = self.pattern(**values)
            except (TypeError, ValueError) as exc:
                raise InvalidParameterError(f"pre-tokenizer {self.name!r}: {exc}") from None
        else:
            pattern = self.pattern
        if not isinstance(pattern, str):
            raise PluginError(f"pre-tokenizer {self.name!r}: its pattern is not a str")
        return pattern

    def pattern_with(self, **given: Any) -> str:
        """The pattern ``build(**given)`` would have, without building (nothing compiled)."""
        return self._pattern(self._values(given))

    def build(self, **given: Any) -> PreTokenizer:
        values = self._values(given)
        pattern = self._pattern(values)
        try:
            scanner = self.scanner(**values) if callable(self.scanner) else self.scanner
        except (TypeError, ValueError) as exc:
            if isinstance(exc, CybpeError):
                raise
            raise InvalidParameterError(f"pre-tokenizer {self.name!r}: {exc}") from None
        export = self.export_pattern(**values) if callable(self.export_pattern) else self.export_pattern
        return PreTokenizer(
            self.name,
            pattern,
            params=values,
            description=self.description,
            plugin=self.distribution or self.plugin,
            version=self.version,
            scanner=scanner,
            refine=self.refine,
            export_pattern=export,
        )

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "params": {k: {"default": d, "allowed": list(a) if a is not None else None}
                       for k, (d, a) in self.params.items()},
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "has_scanner": self.scanner is not None,
        }


def _import_builtin(module_name: str) -> Any:
    """Import a built-in plugin module. In a source checkout built in place (``setup.py
    build_ext --inplace``, nothing installed) the ``pretokenizers/`` folder beside ``cybpe/`` is
    not importable as ``cybpe_pretokenizers``: it is then loaded from there under that name."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != BUILTIN_PACKAGE or not _load_source_builtins():
            raise
        return importlib.import_module(module_name)


def _load_source_builtins() -> bool:
    """Load ``<checkout>/pretokenizers`` as the package ``cybpe_pretokenizers``; False when
    there is no such folder (an installed cybpe always has the package)."""
    folder = Path(__file__).resolve().parents[2] / "pretokenizers"
    init = folder / "__init__.py"
    if not init.is_file():
        return False
    spec = importlib.util.spec_from_file_location(BUILTIN_PACKAGE, init, submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        return False
    package = importlib.util.module_from_spec(spec)
    sys.modules[BUILTIN_PACKAGE] = package
    try:
        spec.loader.exec_module(package)
    except BaseException:
        del sys.modules[BUILTIN_PACKAGE]
        raise
    return True


def _name_and_version(dist: Any) -> tuple[Optional[str], Optional[str]]:
    """A distribution's name and version, read from the header of its core metadata file.

    ``dist.metadata`` and ``dist.version`` each parse the whole file with the ``email`` package,
    long description included (cybpe's own METADATA holds the README), a cost paid by the first
    Tokenizer of every process. The name and version are header fields, and the header ends at
    the first blank line (the timing: docs/history.md, "Plugin metadata")."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and key.lower() in ("name", "version"):
            fields.setdefault(key.lower(), value.strip())
    if "name" in fields and "version" in fields:
        return fields["name"], fields["version"]
    return dist.metadata["name"], dist.version  # an unusual file: the full parser decides


class PreTokenizerRegistry:
    """Collects the entries that every plugin's ``cybpe_register_pretokenizers`` registers."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self._entries: dict[str, PreTokenizerEntry] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # -- loading ---------------------------------------------------------------------------
    def _load_plugins(self) -> None:
        for blocked in filter(None, os.environ.get("CYBPE_BLOCKED_PLUGINS", "").split(",")):
            self.pm.set_blocked(blocked.strip())
        if os.environ.get("CYBPE_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0"):
            for group in (hookspecs.ENTRY_POINT_GROUP, hookspecs.ENCODINGS_ENTRY_POINT_GROUP):
                try:
                    self.pm.load_setuptools_entrypoints(group)
                except Exception as exc:  # a broken third-party package must not hide the cause
                    raise PluginError(f"loading a {group} entry point failed: {exc!r}") from exc
        registered = set(self.pm.get_plugins())
        for module_name in BUILTIN_PLUGINS + BUILTIN_ENCODING_PLUGINS:
            module = _import_builtin(module_name)
            short = module_name.rsplit(".", 1)[1]
            if module not in registered and not self.pm.is_blocked(short):
                self.pm.register(module, name=short)
        self.pm.check_pending()

    def _collect(self) -> None:
        distinfo = {id(plugin): dist for plugin, dist in self.pm.list_plugin_distinfo()}
        entries: dict[str, PreTokenizerEntry] = {}
        for impl in reversed(self.pm.hook.cybpe_register_pretokenizers.get_hookimpls()):
            dist = distinfo.get(id(impl.plugin))
            if dist is not None:
                dist_name, version = _name_and_version(dist)
            else:
                dist_name, version = None, getattr(impl.plugin, "__version__", None)
            if dist is None and getattr(impl.plugin, "__name__", "").startswith("cybpe_pretokenizers"):
                from cybpe._version import __version__

                dist_name, version = "cybpe", __version__
            doc = inspect.getdoc(impl.function) or ""
            register = self._make_register(entries, impl.plugin_name, dist_name, version, doc)
            try:
                impl.function(register=register)
            except (DuplicatePreTokenizerError, InvalidParameterError):
                raise
            except Exception as exc:
                raise PluginError(
                    f"plugin {impl.plugin_name!r} ({dist_name or 'not packaged'}) raised while "
                    f"registering pre-tokenizers: {exc!r}"
                ) from exc
        self._entries = dict(sorted(entries.items()))

    def _make_register(self, entries, plugin_name, dist_name, version, doc):
        def register(
            name: str,
            pattern: PatternSource,
            *,
            description: Optional[str] = None,
            params: Optional[dict[str, tuple[Any, Any]]] = None,
            scanner: Any = None,
            refine: Optional[Refine] = None,
            export_pattern: Optional[PatternSource] = None,
        ) -> None:
            if not isinstance(name, str) or not name:
                raise PluginError(f"plugin {plugin_name!r} registered a pre-tokenizer without a name")
            if not (isinstance(pattern, str) or callable(pattern)):
                raise PluginError(
                    f"plugin {plugin_name!r}: pattern of {name!r} must be a str or a function"
                )
            if name in entries:
                other = entries[name]
                raise DuplicatePreTokenizerError(
                    f"pre-tokenizer {name!r} is registered by two plugins: "
                    f"{other.plugin!r} ({other.distribution or 'not packaged'}) and "
                    f"{plugin_name!r} ({dist_name or 'not packaged'})"
                )
            entries[name] = PreTokenizerEntry(
                name=name,
                description=(description or doc).strip().split("\n\n")[0].replace("\n", " "),
                pattern=pattern,
                params=dict(params or {}),
                scanner=scanner,
                refine=refine,
                export_pattern=export_pattern,
                plugin=plugin_name,
                distribution=dist_name,
                version=version,
            )

        return register

    def ensure_loaded(self) -> None:
        with self._lock:
            if not self._loaded:
                self._load_plugins()
                self._collect()
                self._loaded = True

    # -- public operations -----------------------------------------------------------------
    def register_plugin(self, plugin: Any, name: Optional[str] = None) -> str:
        """Register an in-process plugin object (a module or any object with the hook)."""
        if name is not None and not isinstance(name, str):
            raise ParameterTypeError(f"a plugin name must be a str, not {type(name).__name__}")
        if plugin is None or isinstance(plugin, (str, bytes, int, float)):
            raise ParameterTypeError(
                f"register_plugin() takes a module or object with a @hookimpl, not {type(plugin).__name__}")
        with self._lock:
            self.ensure_loaded()
            try:
                registered = self.pm.register(plugin, name=name)
            except CybpeError:
                raise
            except Exception as exc:  # pluggy's ValueError (already registered), a bad hook...
                raise PluginError(f"cannot register plugin {name or plugin!r}: {exc}") from None
            if registered is None:
                raise PluginError(f"plugin {name or plugin!r} is blocked")
            try:
                self.pm.check_pending()
                self._collect()
            except Exception:
                self.pm.unregister(plugin)
                self._collect()
                raise
            return registered

    def unregister_plugin(self, name: str) -> None:
        if not isinstance(name, str):
            raise ParameterTypeError(f"a plugin name must be a str, not {type(name).__name__}")
        with self._lock:
            self.ensure_loaded()
            if self.pm.unregister(name=name) is None:
                raise PluginError(f"no plugin named {name!r} is registered")
            self._collect()

    def entries(self) -> dict[str, PreTokenizerEntry]:
        self.ensure_loaded()
        return dict(self._entries)

    def entry(self, name: str) -> PreTokenizerEntry:
        if not isinstance(name, str):
            raise ParameterTypeError(
                f"a pre-tokenizer name must be a str (or a PreTokenizer), not {type(name).__name__}")
        entries = self.entries()
        try:
            return entries[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), entries, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise UnknownPreTokenizerError(
                f"unknown pre-tokenizer {name!r}.{hint} Available: {', '.join(entries)}"
            ) from None


_REGISTRY = PreTokenizerRegistry()


def plugin_manager() -> pluggy.PluginManager:
    """The loaded plugin manager behind every cybpe hook (pre-tokenizers and encodings): the
    encoding registry reads its ``cybpe_register_encodings`` implementations from it."""
    _REGISTRY.ensure_loaded()
    return _REGISTRY.pm


def plugin_distribution(plugin: Any) -> tuple[Optional[str], Optional[str]]:
    """(distribution name, version) of a registered plugin object; cybpe's for the built-ins,
    ``(None, its __version__)`` for an in-process plugin."""
    for registered, dist in _REGISTRY.pm.list_plugin_distinfo():
        if registered is plugin:
            return _name_and_version(dist)
    if getattr(plugin, "__name__", "").startswith(("cybpe_pretokenizers", "cybpe.")):
        from cybpe._version import __version__

        return "cybpe", __version__
    return None, getattr(plugin, "__version__", None)


def list_pretokenizers() -> list[dict[str, Any]]:
    """Every registered pre-tokenizer: name, description, params, providing plugin and version."""
    return [e.info() for e in _REGISTRY.entries().values()]


def get_pretokenizer(name: Union[str, PreTokenizer], **params: Any) -> PreTokenizer:
    """The pre-tokenizer registered as ``name``, built with ``params``."""
    if isinstance(name, PreTokenizer):
        if params:
            raise InvalidParameterError("parameters cannot be given with a PreTokenizer instance")
        return name
    return _REGISTRY.entry(name).build(**params)


def pattern_of(name: str, **params: Any) -> str:
    """The pattern of pre-tokenizer ``name`` with ``params`` (defaults for the rest), without
    building it: nothing is compiled, so comparing every registered pattern stays cheap."""
    return _REGISTRY.entry(name).pattern_with(**params)


def register_plugin(plugin: Any, name: Optional[str] = None) -> str:
    """Register an in-process plugin (an object or module with a ``@hookimpl``); returns its name."""
    return _REGISTRY.register_plugin(plugin, name)


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered with :func:`register_plugin`."""
    _REGISTRY.unregister_plugin(name)


def pretokenizer_from_spec(spec: dict[str, Any]) -> PreTokenizer:
    """Rebuild a saved pre-tokenizer; a missing plugin gives :class:`MissingPluginError`."""
    if not isinstance(spec, dict):
        raise FormatError(f"a saved pre-tokenizer spec must be an object, not {type(spec).__name__}")
    name, params = spec.get("name"), spec.get("params") or {}
    if not isinstance(name, str):
        raise FormatError(f"the saved pre-tokenizer name {name!r} is not a str")
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise FormatError(f"the saved parameters of pre-tokenizer {name!r} are not an object")
    try:
        entry = _REGISTRY.entry(name)
    except UnknownPreTokenizerError:
        plugin = spec.get("plugin") or "unknown plugin"
        raise MissingPluginError(
            f"the pre-tokenizer {name!r} (from {plugin} {spec.get('version') or ''}) is not "
            f"installed; install the package that provides it"
        ) from None
    return entry.build(**params)


def _reduce_pretokenizer(pretokenizer: PreTokenizer):
    """Pickle (and copy) a pre-tokenizer as its spec, rebuilt through the registry on load, so
    a plugin's pre-tokenizer comes back with its scanner and refine step."""
    return pretokenizer_from_spec, (pretokenizer.spec(),)


copyreg.pickle(PreTokenizer, _reduce_pretokenizer)
set_spec_builder(pretokenizer_from_spec)
