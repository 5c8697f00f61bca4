"""A pre-tokenizer: a named, parametrized rule that cuts text into pieces BPE never merges across."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence

import regex

from cybpe.pretokenize.pattern_scanner import compile_scanner
from cybpe.pretokenize.scanner_api import BaseScanner
from cybpe.pretokenize.regex_spans import Span, regex_findall, regex_spans
from cybpe.errors import InvalidParameterError, ParameterTypeError, describe

Refine = Callable[[str, list[Span]], list[Span]]

#: Set to 1 to make every pre-tokenizer use its regex even when it has a compiled scanner
#: (for debugging and differential tests). Read once, when cybpe is imported; change the
#: setting while running with :func:`set_force_regex`.
FORCE_REGEX_ENV = "CYBPE_FORCE_REGEX"

# Reading os.environ on every encode call is a noticeable part of a short encode_ordinary, so
# the switch is read once here (the timing: docs/history.md, "Force-regex switch").
_force_regex_now = os.environ.get(FORCE_REGEX_ENV, "") not in ("", "0")


def regex_forced() -> bool:
    """True while every pre-tokenizer splits with its regex (``CYBPE_FORCE_REGEX=1`` at import,
    or :func:`set_force_regex`)."""
    return _force_regex_now


def set_force_regex(enabled: bool) -> bool:
    """Make every pre-tokenizer split with its regex (True), or with its compiled scanner where
    it has one (False), from now on; returns the previous setting. A thread encoding at the
    moment of the change may see either setting (both give the same ids)."""
    global _force_regex_now
    previous, _force_regex_now = _force_regex_now, bool(enabled)
    return previous


class PreTokenizer:
    """Splits text into pieces; the pieces always concatenate back to the text.

    The regex ``pattern`` is the definition. A compiled ``scanner``, when the plugin provides
    one, must give the same final spans (after ``refine``, which it replaces). Without one (and
    without ``refine``) the pattern is compiled for cybpe's own matcher when it stays inside
    that matcher's subset (:mod:`cybpe.pretokenize.pattern_compiler`). Either is used unless
    ``use_scanner=False``, the environment variable ``CYBPE_FORCE_REGEX=1`` (read at import) or
    :func:`set_force_regex` says otherwise. ``refine`` post-processes the spans for
    rules a leftmost regex cannot express (right-to-left digit grouping).
    ``export_pattern`` is one regex whose matches alone give the final spans (the pattern
    itself when there is no ``refine``; None when no such regex is known): exports to
    libraries without a refine step (HF ``tokenizers``, tiktoken) write it, or refuse.

    Text between matches (which a well-formed pattern never leaves) becomes a piece of its own,
    so that nothing is ever dropped.
    """

    def __init__(
        self,
        name: str,
        pattern: str,
        *,
        params: Optional[dict[str, Any]] = None,
        description: str = "",
        plugin: Optional[str] = None,
        version: Optional[str] = None,
        scanner: Any = None,
        refine: Optional[Refine] = None,
        use_scanner: Optional[bool] = None,
        export_pattern: Optional[str] = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ParameterTypeError(f"a pre-tokenizer name must be a non-empty str, not {describe(name)}")
        if not isinstance(pattern, str) or not pattern:
            raise ParameterTypeError(f"pre-tokenizer {name!r}: the pattern must be a non-empty str")
        name, pattern = str.__str__(name), str.__str__(pattern)  # exact str: read the code points
        if params is not None and not isinstance(params, dict):
            raise ParameterTypeError(f"pre-tokenizer {name!r}: params must be a dict")
        if refine is not None and not callable(refine):
            raise ParameterTypeError(f"pre-tokenizer {name!r}: refine must be a function")
        self.name = name
        """The registered name (``"cl100k"``)."""
        self.pattern = pattern
        """The regex (for the ``regex`` module) that defines the pieces."""
        self.params = dict(params or {})
        """The parameters it was built with (``{"digits": 2}``)."""
        self.description = description
        """One line on what it does, from its plugin."""
        self.plugin = plugin
        """The distribution (or plugin name) that registered it."""
        self.version = version
        """That plugin's version, saved with a tokenizer."""
        self.refine = refine
        """``refine(text, spans)``, a post-processing step on the regex's spans, or ``None``."""
        # One regex whose matches alone give the final spans (refine included): what exports
        # to libraries without a refine step write. None: no such pattern is known.
        self.export_pattern = export_pattern if export_pattern is not None else (
            pattern if refine is None else None)
        """One regex whose matches alone give the final spans, for exports (``None``: none
        is known)."""
        try:
            self._regex = regex.compile(pattern)
        except regex.error as exc:
            raise InvalidParameterError(
                f"pre-tokenizer {name!r}: pattern does not compile: {exc}"
            ) from None
        except (RecursionError, OverflowError, MemoryError) as exc:  # absurdly nested or sized
            raise InvalidParameterError(
                f"pre-tokenizer {name!r}: pattern does not compile: {type(exc).__name__}"
            ) from None
        if scanner is None and refine is None:
            # No hand-written scanner: the pattern itself, compiled, when it allows (else None).
            scanner = compile_scanner(pattern)
        self.scanner = scanner
        """The compiled splitter: a hand-written ``Scanner``, a ``PatternScanner`` (the pattern
        compiled; its ``backend`` is ``"dfa"`` or ``"backtrack"``), or ``None`` (the ``regex``
        module splits)."""
        self._use_scanner = use_scanner

    @property
    def uses_scanner(self) -> bool:
        """True when splits go through the scanner rather than the regex."""
        if self.scanner is None or self._use_scanner is False:
            return False
        return not _force_regex_now

    @property
    def compiled_scanner(self) -> Optional[BaseScanner]:
        """The compiled scanner (a :class:`~cybpe.pretokenize.scanner_api.BaseScanner`) that
        splits for this pre-tokenizer unless the regex is forced (:func:`regex_forced`); None
        when it splits with its regex or with a Python-level scanner."""
        if self._use_scanner is False or not isinstance(self.scanner, BaseScanner):
            return None
        return self.scanner

    def with_regex_only(self) -> "PreTokenizer":
        """The same pre-tokenizer, forced onto its regex path (the oracle for the scanner)."""
        return PreTokenizer(
            self.name,
            self.pattern,
            params=self.params,
            description=self.description,
            plugin=self.plugin,
            version=self.version,
            scanner=self.scanner,
            refine=self.refine,
            use_scanner=False,
            export_pattern=self.export_pattern,
        )

    # -- splitting -------------------------------------------------------------------------
    def regex_spans(self, text: str) -> list[Span]:
        """Spans from the regex alone (before ``refine``), gaps filled so the text is covered."""
        if type(text) is not str:
            if not isinstance(text, str):
                raise ParameterTypeError(f"regex_spans() takes a str, not {type(text).__name__}")
            text = str.__str__(text)
        return regex_spans(self._regex, text)

    def split_spans(self, text: str) -> list[Span]:
        """``(start, end)`` code-point offsets of the pieces, in order, covering ``text``."""
        if not isinstance(text, str):
            raise ParameterTypeError(f"split_spans() takes a str, not {type(text).__name__}")
        if type(text) is not str:
            text = str.__str__(text)  # a subclass's own code points, never its methods
        if self.uses_scanner:
            return self.scanner.split_spans(text)  # a scanner gives the final spans, refine included
        spans = self.regex_spans(text)
        if self.refine is not None:
            spans = self.refine(text, spans)
        return spans

    def split(self, text: str) -> list[str]:
        """The pieces of ``text``; ``"".join(split(text)) == text``."""
        if not isinstance(text, str):
            raise ParameterTypeError(f"split() takes a str, not {type(text).__name__}")
        if type(text) is not str:
            text = str.__str__(text)  # a subclass's own code points, never its methods
        if self.uses_scanner:
            return self.scanner.split(text)
        if self.refine is not None:
            return [text[s:e] for s, e in self.split_spans(text)]
        pieces = regex_findall(self._regex, text)
        # findall never drops text for the built-in patterns; verify cheaply, else take spans.
        if sum(map(len, pieces)) != len(text):
            return [text[s:e] for s, e in self.regex_spans(text)]
        return pieces

    # -- persistence -----------------------------------------------------------------------
    def spec(self) -> dict[str, Any]:
        """What a saved tokenizer records: the registered name, parameters and plugin version."""
        return {
            "name": self.name,
            "params": dict(self.params),
            "plugin": self.plugin,
            "version": self.version,
            "pattern": self.pattern,
        }

    def __repr__(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in sorted(self.params.items()))
        return f"<PreTokenizer {self.name!r}{params}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PreTokenizer)
            and self.name == other.name
            and self.params == other.params
            and self.pattern == other.pattern
        )

    def __hash__(self) -> int:
        return hash((self.name, self.pattern))

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> "PreTokenizer":
        """Rebuild a pre-tokenizer from :meth:`spec` through the plugin registry (the same as
        :func:`cybpe.pretokenizer_from_spec`); a missing plugin is a MissingPluginError."""
        if _spec_builder is None:  # only before cybpe.pretokenize.registry is imported
            raise RuntimeError("import cybpe first: the plugin registry rebuilds pre-tokenizers")
        return _spec_builder(spec)

    # Pickling and copying go by name and params through the plugin registry, which registers
    # the reduction with copyreg and installs its builder here (cybpe/pretokenize/registry.py):
    # this module never imports the registry, so imports run one way.


_spec_builder: Optional[Callable[[dict[str, Any]], PreTokenizer]] = None


def set_spec_builder(builder: Callable[[dict[str, Any]], PreTokenizer]) -> None:
    """Install the function :meth:`PreTokenizer.from_spec` rebuilds specs with (the registry's)."""
    global _spec_builder
    _spec_builder = builder


def check_param_values(
    name: str, choices: dict[str, tuple[Any, Optional[Sequence[Any]]]], given: dict[str, Any]
) -> dict[str, Any]:
    """Fill defaults and validate ``given`` against ``choices``; raise InvalidParameterError."""
    unknown = sorted(set(given) - set(choices))
    if unknown:
        allowed = ", ".join(sorted(choices)) or "none"
        raise InvalidParameterError(
            f"pre-tokenizer {name!r} has no parameter {unknown[0]!r} (parameters: {allowed})"
        )
    values = {}
    for key, (default, allowed_values) in choices.items():
        value = given.get(key, default)
        if allowed_values is not None and value not in allowed_values:
            shown = ", ".join(repr(v) for v in allowed_values)
            raise InvalidParameterError(
                f"pre-tokenizer {name!r}: parameter {key!r} must be one of {shown}, not {value!r}"
            )
        values[key] = value
    return values
