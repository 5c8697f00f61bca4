"""Typed errors. Every error cybpe raises on bad input derives from :class:`CybpeError`.

Where Python has a matching built-in exception, the typed error subclasses it too, so existing
``except`` clauses keep working: ``UnknownPreTokenizerError`` is a ``KeyError``;
``InvalidParameterError`` and its kin (``TrainingError``, ``CorpusError``, ``FormatError``,
``DisallowedSpecialTokenError``, ``InvalidTokenError``, ``EncodingError``) are ``ValueError``
(``InvalidTokenError`` is a ``KeyError`` too, as tiktoken raises for an unknown token);
``ParameterTypeError`` is a ``ValueError`` and a ``TypeError``; ``TooLargeError`` a ``ValueError``
and an ``OverflowError``; ``ConcurrentUseError`` a ``RuntimeError``; ``PatternTimeoutError`` a
``TimeoutError``; ``SaveError`` an ``OSError``. ``DuplicatePreTokenizerError`` and
``PluginError`` are only ``CybpeError``. The encoding registry's ``UnknownEncodingError`` is a
``KeyError`` and a ``ValueError``; ``MissingEncodingFileError`` a ``FileNotFoundError``;
``HashMismatchError`` a ``FormatError``; ``DownloadError`` an ``OSError``.
"""

from __future__ import annotations


class CybpeError(Exception):
    """Base class of every error raised by cybpe on bad input or bad state."""


class UnicodeVersionError(CybpeError, ImportError):
    """The installed ``regex`` implements another Unicode version than cybpe's compiled tables
    (raised when cybpe is imported; the message says which regex to install)."""


class UnknownPreTokenizerError(CybpeError, KeyError):
    """No pre-tokenizer is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicatePreTokenizerError(CybpeError):
    """Two plugins registered the same pre-tokenizer name."""


class PluginError(CybpeError):
    """A plugin raised while registering, or registered something invalid."""


class InvalidParameterError(CybpeError, ValueError):
    """A pre-tokenizer, trainer or tokenizer parameter has a value that is not allowed."""


class TrainingError(CybpeError, ValueError):
    """Training cannot proceed: vocabulary too small, empty corpus, nothing to merge..."""


class CorpusError(CybpeError, ValueError):
    """A corpus file cannot be read (missing, invalid UTF-8, ...). The message names the file."""


class FormatError(CybpeError, ValueError):
    """A vocabulary or tokenizer file is corrupt, truncated or of the wrong kind.

    The message names the file and, where it makes sense, the line.
    """


class MissingPluginError(FormatError):
    """A saved tokenizer names a pre-tokenizer plugin that is not installed."""


class DisallowedSpecialTokenError(CybpeError, ValueError):
    """The text contains a special-token string that the caller did not allow."""


class InvalidTokenError(CybpeError, ValueError, KeyError):
    """A token id (or token bytes) is not in the vocabulary.

    Both a ``ValueError`` and a ``KeyError``: tiktoken raises ``KeyError`` for an unknown id or
    token (``decode_single_token_bytes``, ``decode``, ``encode_single_token``), so code written
    for tiktoken (``except KeyError``) keeps working."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EncodingError(CybpeError, ValueError):
    """The text cannot be encoded (for example, it is not a ``str``)."""


class ExportError(CybpeError, ValueError):
    """A tokenizer cannot be written to a format so that the target library (tiktoken, HF
    tokenizers, transformers, GPT-2 readers) encodes exactly as cybpe does.

    The message names the construct (a pattern feature, a pre-tokenizer's post-processing, the
    vocabulary's merge semantics) that cannot be carried over. Nothing is written.
    """


class ParameterTypeError(InvalidParameterError, TypeError):
    """An argument has the wrong type (a float where an id is expected, a bare string where a
    collection is expected...). Both an :class:`InvalidParameterError` (so a ``ValueError``) and
    a ``TypeError``, so that either ``except`` clause catches it."""


class ConcurrentUseError(CybpeError, RuntimeError):
    """An object that takes one writer at a time was written from two threads at once (two
    ``ChunkCounts.update`` calls, for instance), or re-entered from inside one of its own calls.
    Subclasses ``RuntimeError``."""


class PatternTimeoutError(CybpeError, TimeoutError):
    """The ``regex`` module ran past its time bound while splitting with a pattern (catastrophic
    backtracking such as ``(a+)+$``). The message names the pattern and the position where the
    search was; the bound is set with :func:`cybpe.set_regex_timeout`. Subclasses
    ``TimeoutError``."""


class SaveError(CybpeError, OSError):
    """A file cannot be written: the destination is not a regular file (a directory, a device),
    its folder is missing or not writable... The message names the destination (never the
    temporary file). Subclasses ``OSError``."""


def describe(value: object, limit: int = 80) -> str:
    """A short ``repr`` of ``value`` for an error message, safe on anything (a deeply nested
    list, an object whose ``__repr__`` raises): never raises, at most ``limit`` characters."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - RecursionError, a broken __repr__...
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_error_handler(errors: object, where: str = "") -> None:
    """Raise unless ``errors`` names a codecs error handler (``"replace"``, ``"strict"``...):
    ``ParameterTypeError`` for a non-str, ``InvalidParameterError`` for an unknown name. The
    messages start with ``where`` (``"train(): "``). ``codecs.lookup_error`` raises ValueError,
    not LookupError, for a name holding a NUL character."""
    import codecs

    if not isinstance(errors, str):
        raise ParameterTypeError(f"{where}errors must be a str, not {type(errors).__name__}")
    try:
        codecs.lookup_error(errors)
    except (LookupError, UnicodeError, ValueError):
        raise InvalidParameterError(f"{where}errors={describe(errors)} is not an error handler") from None


class TooLargeError(InvalidParameterError, OverflowError):
    """A number does not fit where it goes: a count past ``2**63 - 1``, more distinct chunks
    than the table numbers... Both an :class:`InvalidParameterError` (``ValueError``) and an
    ``OverflowError``."""


class UnknownEncodingError(CybpeError, KeyError, ValueError):
    """No encoding is registered under the requested name, or no encoding is known for a model
    name. Both a ``KeyError`` (what tiktoken's ``encoding_for_model`` raises) and a
    ``ValueError`` (what tiktoken's ``get_encoding`` raises), so either ``except`` clause of code
    written for tiktoken catches it."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicateEncodingError(PluginError):
    """Two plugins registered the same encoding name, or mapped the same model name."""


class MissingEncodingFileError(CybpeError, FileNotFoundError):
    """A file an encoding needs is in none of the places cybpe looks (offline). The message
    names the file, its sha256, every place searched and where to put it; the exception has
    the attributes ``encoding``, ``file`` (its registered relative path), ``sha256`` and
    ``searched`` (the paths looked at). Subclasses ``FileNotFoundError``."""

    def __init__(self, message: str, *, encoding: str = "", file: str = "", sha256: str = "",
                 searched: tuple = ()) -> None:
        super().__init__(message)
        self.encoding, self.file, self.sha256, self.searched = encoding, file, sha256, tuple(searched)

    def __str__(self) -> str:  # OSError would format (errno, strerror)
        return str(self.args[0]) if self.args else ""


class HashMismatchError(FormatError):
    """A file found for an encoding (or downloaded for it) does not have the registered sha256:
    a different version, a truncated copy, or another file under the expected name. The message
    names the file and both hashes; nothing is loaded or written."""


class DownloadError(CybpeError, OSError):
    """:func:`cybpe.download` could not fetch a file (no network, an HTTP error, no download
    address registered for the file). Nothing is written. Subclasses ``OSError``."""
