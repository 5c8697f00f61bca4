"""Text helpers shared by pre-tokenization, counting and encoding."""

from __future__ import annotations


def clean_surrogates(text: str) -> str:
    """Replace lone surrogates by U+FFFD (and join valid surrogate pairs), as tiktoken does."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
