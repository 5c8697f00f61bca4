"""Exports that are exact or refused: the checks run before any file is written.

Each target library splits and merges in its own way; an export is allowed only when that way,
fed the written file, gives cybpe's ids for every text:

* HF ``tokenizers`` (``to_hf``, ``save_pretrained``): the split regex runs in Oniguruma, so the
  pre-tokenizer's :attr:`~cybpe.PreTokenizer.export_pattern` must translate exactly
  (:mod:`cybpe.formats.oniguruma`); merges are written so that HF's id-pair BPE equals cybpe's.
* tiktoken (``to_tiktoken``): the file holds ranks only and tiktoken merges by rank with a
  whole-piece lookup first, so the vocabulary must encode that way (no HF-style merge list).
* GPT-2 readers (``to_gpt2``; HF ``GPT2Tokenizer``, the original ``encoder.py``): the split is
  always GPT-2's own regex and the merges are applied literally, with no whole-piece lookup.

A refusal is an :class:`~cybpe.errors.ExportError` naming what cannot be carried over.
"""

from __future__ import annotations

from typing import Optional

from cybpe.encode.encoder import RankEncoder
from cybpe.formats.oniguruma import PatternSyntaxError, to_oniguruma
from cybpe.formats.merges import all_splits_merges
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.formats.vocab import Vocab
from cybpe.errors import ExportError


def export_pattern(pre: PreTokenizer, target: str) -> str:
    """The one regex that gives ``pre``'s final spans, or ExportError when there is none."""
    if pre.export_pattern is None:
        raise ExportError(
            f"pre-tokenizer {pre.name!r} post-processes its regex splits (refine) and has no "
            f"single pattern with the same splits, so {target} would split text differently"
        )
    return pre.export_pattern


def oniguruma_pattern(pre: PreTokenizer, target: str = "HF tokenizers") -> str:
    """``pre``'s splits as an Oniguruma pattern (exact), or ExportError naming the construct."""
    pattern = export_pattern(pre, target)
    try:
        return to_oniguruma(pattern)
    except PatternSyntaxError as exc:
        raise ExportError(
            f"pre-tokenizer {pre.name!r}: its pattern cannot be written for {target} "
            f"(Oniguruma) exactly: {exc}"
        ) from None


def check_tiktoken_semantics(vocab: Vocab) -> None:
    """tiktoken merges by rank (= id) after looking the whole piece up; refuse anything else."""
    if vocab.merges is not None and not vocab.encode_by_rank:
        raise ExportError(
            "the vocabulary applies its merge list (Hugging Face BPE semantics); tiktoken merges "
            "by rank instead, which gives different ids for some text. Export it with to_hf()"
        )
    if not vocab.ignore_merges:
        raise ExportError(
            "the vocabulary does not look whole pieces up before merging (ignore_merges false); "
            "tiktoken always does, which gives different ids for some pieces"
        )


def first_unreachable_token(tokens: list[bytes], merges: list[tuple[int, int]]) -> Optional[int]:
    """The first token id that applying ``merges`` to its own bytes does not rebuild, or None.

    When every token rebuilds itself, looking a whole piece up first (``ignore_merges``) never
    changes the result, so readers without that lookup give the same ids.
    """
    encoder = RankEncoder(tokens, merges, whole_piece_lookup=False)
    for i, tok in enumerate(tokens):
        if len(tok) > 1 and encoder.encode_piece(tok) != [i]:
            return i
    return None


def gpt2_merges(vocab: Vocab, pre: PreTokenizer, gpt2_patterns: tuple[str, ...]) -> list[tuple[int, int]]:
    """The merge list for GPT-2 files that readers apply exactly as cybpe encodes, or
    ExportError (another pre-tokenizer, or ids that depend on the whole-piece lookup)."""
    if pre.refine is not None or pre.pattern not in gpt2_patterns:
        raise ExportError(
            f"GPT-2 files have no place for a pre-tokenizer: readers always split with GPT-2's "
            f"pattern, and this tokenizer uses {pre.name!r}. Export it with to_hf() or "
            "save_pretrained() instead"
        )
    if vocab.merges is None or vocab.encode_by_rank:
        merges = all_splits_merges(vocab.tokens)  # rank semantics as a literal merge list
    else:
        merges = list(vocab.merges)
    if vocab.ignore_merges:
        bad = first_unreachable_token(vocab.tokens, merges)
        if bad is not None:
            raise ExportError(
                f"token id {bad} ({vocab.tokens[bad]!r}) is reached only by looking the whole "
                "piece up (ignore_merges), which GPT-2 readers do not do: they would give other ids"
            )
    return merges
