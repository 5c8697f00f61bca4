"""``tiktoken.model``: ``encoding_for_model``, ``encoding_name_for_model`` and tiktoken's two
tables, filled from cybpe's encoding registry (tiktoken's tables plus any plugin's models).

As in tiktoken, the functions read the module's tables at each call, so code that adds a model
to ``MODEL_TO_ENCODING`` or ``MODEL_PREFIX_TO_ENCODING`` is honoured; prefixes are tried in the
table's order (longest first here, which gives tiktoken's answers for its own table)."""

from __future__ import annotations

from cybpe.compat.tiktoken.core import Encoding
from cybpe.compat.tiktoken.registry import get_encoding
from cybpe.encodings.registry import model_tables
from cybpe.errors import ParameterTypeError, UnknownEncodingError


def _tables() -> tuple[dict[str, str], dict[str, str]]:
    models, prefixes = model_tables()
    return models, dict(sorted(prefixes.items(), key=lambda kv: -len(kv[0])))


#: model name -> encoding name; prefix of model names -> encoding name
MODEL_TO_ENCODING, MODEL_PREFIX_TO_ENCODING = _tables()


def encoding_name_for_model(model_name: str) -> str:
    """The encoding name of a model: the exact name, then the first matching prefix; else
    :class:`~cybpe.errors.UnknownEncodingError` (a ``KeyError``, as tiktoken raises)."""
    if not isinstance(model_name, str):
        raise ParameterTypeError(f"a model name must be a str, not {type(model_name).__name__}")
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise UnknownEncodingError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `tiktoken.get_encoding` to explicitly get the tokeniser you expect.")


def encoding_for_model(model_name: str) -> Encoding:
    """``get_encoding(encoding_name_for_model(model_name))``."""
    return get_encoding(encoding_name_for_model(model_name))
