"""``tiktoken_ext.openai_public``: tiktoken's encoding constructors (``cl100k_base()``...), each
returning the keyword arguments of ``tiktoken.Encoding`` for a registered encoding, built from
cybpe's copy of its files (offline), and ``ENCODING_CONSTRUCTORS``."""

from __future__ import annotations

import functools
from typing import Any, Callable

from cybpe.compat.tiktoken.core import R50K_PAT_STR, pat_str_of
from cybpe.compat.tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe
from cybpe.formats.known import KNOWN_ENCODINGS

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"
r50k_pat_str = R50K_PAT_STR

__all__ = ["ENCODING_CONSTRUCTORS", "data_gym_to_mergeable_bpe_ranks", "load_tiktoken_bpe"]


def _constructor(name: str) -> dict[str, Any]:
    from cybpe.encodings.registry import get_encoding

    tok = get_encoding(name)
    out = {"name": name, "pat_str": pat_str_of(tok),
           "mergeable_ranks": {t: i for i, t in enumerate(tok.vocab.tokens) if t is not None},
           "special_tokens": dict(tok.vocab.special_tokens)}
    if KNOWN_ENCODINGS[name]["n_vocab"] is not None:
        out["explicit_n_vocab"] = KNOWN_ENCODINGS[name]["n_vocab"]
    return out


ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] = {
    name: functools.partial(_constructor, name) for name in KNOWN_ENCODINGS}
gpt2 = ENCODING_CONSTRUCTORS["gpt2"]
r50k_base = ENCODING_CONSTRUCTORS["r50k_base"]
p50k_base = ENCODING_CONSTRUCTORS["p50k_base"]
p50k_edit = ENCODING_CONSTRUCTORS["p50k_edit"]
cl100k_base = ENCODING_CONSTRUCTORS["cl100k_base"]
o200k_base = ENCODING_CONSTRUCTORS["o200k_base"]
o200k_harmony = ENCODING_CONSTRUCTORS["o200k_harmony"]
