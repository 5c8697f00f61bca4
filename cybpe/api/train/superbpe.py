"""``train(..., mode=SuperBPE(from_=t))``: SuperBPE's two stages (arXiv 2503.13423).

Stage 1 is plain BPE up to ``t`` ordinary tokens; stage 2 counts the corpus again with the
superword pre-tokenizer and continues from stage 1 (``base=``) under the paper's vetoes.
"""

from __future__ import annotations

import time
from typing import Any, Optional, Sequence, Union

from cybpe.api.tokenizer import Tokenizer
from cybpe.api.train.options import Settings, SuperBPE
from cybpe.api.train.plain import train_plain
from cybpe.errors import InvalidParameterError
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.specials import checked_special_tokens
from cybpe.training.counts import ChunkCounts
from cybpe.training.rules import either, superbpe_vetoes


def train_superbpe(corpus: Any, vocab_size: int, pretokenizer: Union[str, PreTokenizer, None],
                   special_tokens: Sequence[str], mode: SuperBPE, settings: Settings, *,
                   base: Optional[Tokenizer] = None) -> Tokenizer:
    """The two SuperBPE stages (see :class:`~cybpe.api.train.options.SuperBPE`)."""
    if isinstance(corpus, ChunkCounts) or iter(corpus) is corpus:
        raise InvalidParameterError(
            "superword_from needs a corpus it can read twice (a list of texts or paths), not "
            f"{type(corpus).__name__}: stage 2 counts it again with another pre-tokenizer")
    if not mode.from_ <= vocab_size:
        raise InvalidParameterError(
            f"superword_from (SuperBPE.from_) must be in [256, vocab_size={vocab_size}]; got {mode.from_}")
    specials = checked_special_tokens(special_tokens)
    started = time.perf_counter()
    stage1, _ = train_plain(corpus, mode.from_ + len(specials), pretokenizer, specials, settings, base=base)
    stage1_seconds = time.perf_counter() - started
    stage2_settings = settings.but(pretokenizer_params=None, veto=either(superbpe_vetoes, settings.veto))
    stage2, _ = train_plain(corpus, vocab_size, mode.pretokenizer, specials, stage2_settings, base=stage1)
    report = stage2.metadata["training"]
    report["superword_from"] = mode.from_
    report["merge_veto"] = "superbpe" if settings.veto_name is None else f"superbpe+{settings.veto_name}"
    report["stages"][0]["seconds"] = round(stage1_seconds, 3)
    report["stages"][1]["seconds"] = round(time.perf_counter() - started - stage1_seconds, 3)
    return stage2
