"""Well-known encodings: which pre-tokenizer and special tokens go with a vocabulary."""

from __future__ import annotations

from typing import Optional

from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer, list_pretokenizers

KNOWN_ENCODINGS: dict[str, dict] = {
    "cl100k_base": {
        "pretokenizer": "cl100k",
        "special_tokens": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                           "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    },
    "o200k_base": {"pretokenizer": "o200k", "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}},
    "r50k_base": {"pretokenizer": "gpt2", "special_tokens": {"<|endoftext|>": 50256}},
    "gpt2": {"pretokenizer": "gpt2", "special_tokens": {"<|endoftext|>": 50256}},
}


def pretokenizer_for_pattern(pattern: str, *, hf_pattern: Optional[str] = None) -> PreTokenizer:
    """The registered pre-tokenizer whose default pattern is ``pattern`` (or whose
    Oniguruma-safe form is ``hf_pattern``, as ``to_hf`` writes it), else a ``regex`` one."""
    from cybpe.formats.hf import hf_safe_pattern

    for info in list_pretokenizers():
        if info["name"] == "regex" or any(v["default"] is None for v in info["params"].values()):
            continue
        candidate = get_pretokenizer(info["name"])
        if candidate.pattern == pattern or (hf_pattern is not None and hf_safe_pattern(candidate.pattern) == hf_pattern):
            return candidate
    return get_pretokenizer("regex", pattern=pattern)
