"""Typed errors. Every error cybpe raises on bad input derives from :class:`CybpeError`."""

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


class InvalidTokenError(CybpeError, ValueError):
    """A token id (or token bytes) is not in the vocabulary."""


class EncodingError(CybpeError, ValueError):
    """The text cannot be encoded (for example, it is not a ``str``)."""


class ExportError(CybpeError, ValueError):
    """A tokenizer cannot be written to a format so that the target library (tiktoken, HF
    tokenizers, transformers, GPT-2 readers) encodes exactly as cybpe does.

    The message names the construct (a pattern feature, a pre-tokenizer's post-processing, the
    vocabulary's merge semantics) that cannot be carried over. Nothing is written.
    """
