"""Text helpers shared by pre-tokenization, counting and encoding."""

from __future__ import annotations


def clean_surrogates(text: str) -> str:
    """Replace lone surrogates by U+FFFD (and join valid surrogate pairs), as tiktoken does."""
    try:
        str.encode(text, "utf-8")  # the code points themselves: a subclass's encode() is not called
        return text
    except UnicodeEncodeError:
        return str.encode(text, "utf-16", "surrogatepass").decode("utf-16", "replace")
