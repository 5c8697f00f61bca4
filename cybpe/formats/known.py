"""Well-known encodings: which pre-tokenizer and special tokens go with a vocabulary."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from cybpe.errors import InvalidParameterError
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer, list_pretokenizers, pattern_of

_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_FIM_PREFIX, _FIM_MIDDLE, _FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"

#: tiktoken's encodings: the built-in pre-tokenizer whose pattern is tiktoken's ``pat_str``
#: (``cl100k``, ``o200k``) or splits exactly as it does (``gpt2``: GPT-2's original form of the
#: r50k pattern), the special tokens, and ``explicit_n_vocab`` (None where tiktoken gives none).
#: The one table of them: the encodings registry (cybpe/encodings/known_encodings.py) adds files.
KNOWN_ENCODINGS: dict[str, dict] = {
    "gpt2": {"pretokenizer": "gpt2", "special_tokens": {_ENDOFTEXT: 50256}, "n_vocab": 50257},
    "r50k_base": {"pretokenizer": "gpt2", "special_tokens": {_ENDOFTEXT: 50256}, "n_vocab": 50257},
    "p50k_base": {"pretokenizer": "gpt2", "special_tokens": {_ENDOFTEXT: 50256}, "n_vocab": 50281},
    "p50k_edit": {"pretokenizer": "gpt2", "n_vocab": None,
                  "special_tokens": {_ENDOFTEXT: 50256, _FIM_PREFIX: 50281, _FIM_MIDDLE: 50282,
                                     _FIM_SUFFIX: 50283}},
    "cl100k_base": {"pretokenizer": "cl100k", "n_vocab": None,
                    "special_tokens": {_ENDOFTEXT: 100257, _FIM_PREFIX: 100258, _FIM_MIDDLE: 100259,
                                       _FIM_SUFFIX: 100260, _ENDOFPROMPT: 100276}},
    "o200k_base": {"pretokenizer": "o200k", "n_vocab": None,
                   "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018}},
    # o200k_base's ranks with the harmony chat format's tokens; 200018 is both o200k_base's
    # <|endofprompt|> and <|reserved_200018|> (an alias: it decodes to <|endofprompt|>).
    "o200k_harmony": {"pretokenizer": "o200k", "n_vocab": None,
                      "special_tokens": {
                          _ENDOFTEXT: 199999, _ENDOFPROMPT: 200018, "<|startoftext|>": 199998,
                          "<|reserved_200000|>": 200000, "<|reserved_200001|>": 200001,
                          "<|return|>": 200002, "<|constrain|>": 200003, "<|reserved_200004|>": 200004,
                          "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007,
                          "<|message|>": 200008, "<|reserved_200009|>": 200009,
                          "<|reserved_200010|>": 200010, "<|reserved_200011|>": 200011, "<|call|>": 200012,
                          **{f"<|reserved_{i}|>": i for i in range(200013, 201088)}}},
}


def pretokenizer_for_pattern(pattern: str, *, hf_pattern: Optional[str] = None) -> PreTokenizer:
    """The registered pre-tokenizer whose default pattern is ``pattern`` (or whose
    Oniguruma-safe form is ``hf_pattern``, as ``to_hf`` writes it), else a ``regex`` one."""
    from cybpe.formats.hf import hf_safe_pattern

    for info in list_pretokenizers():
        if info["name"] == "regex" or any(v["default"] is None for v in info["params"].values()):
            continue
        # Patterns first, built only on a match: building compiles each candidate's regex.
        # First call with Llama 3's pattern, registry loaded: 8.9-9.6 ms -> 5.9-6.3 ms
        # (2026-12-03; what is left is building the match itself).
        candidate = pattern_of(info["name"])
        if candidate == pattern or (hf_pattern is not None and hf_safe_pattern(candidate) == hf_pattern):
            return get_pretokenizer(info["name"])
    return get_pretokenizer("regex", pattern=pattern)


def tiktoken_name(path: str) -> str:
    """The encoding name a ``.tiktoken`` path implies: its file name up to the first dot."""
    return os.path.basename(path).split(".")[0]


def tiktoken_parts(path: str, pretokenizer: Union[str, PreTokenizer, None] = None,
                   special_tokens: Optional[dict[str, int]] = None, *,
                   name: Optional[str] = None) -> dict[str, Any]:
    """The :class:`~cybpe.Tokenizer` arguments of a ``.tiktoken`` file (``vocab``,
    ``pretokenizer``, ``name``, ``source``): what is not given comes from the known encoding
    ``name`` names (else the file name, see :func:`tiktoken_name`); InvalidParameterError when
    no known encoding gives the pre-tokenizer."""
    from cybpe.formats.tiktoken import load_tiktoken

    name = name or tiktoken_name(path)
    known = KNOWN_ENCODINGS.get(name)
    if pretokenizer is None:
        if known is None:
            raise InvalidParameterError(
                f"{path}: give pretokenizer= (no known encoding is named {name!r}; known: "
                f"{', '.join(KNOWN_ENCODINGS)})")
        pretokenizer = known["pretokenizer"]
    if special_tokens is None:
        special_tokens = dict(known["special_tokens"]) if known else {}
    vocab = load_tiktoken(path)
    vocab.special_tokens = dict(special_tokens)
    return {"vocab": vocab, "pretokenizer": pretokenizer, "name": name, "source": path}
