"""Type stub for the compiled BPE merge trainer (``cybpe/training/trainer.pyx``)."""

from typing import Callable, Iterable, Literal, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

TIE_BREAKS: tuple[str, ...]
PROGRESS_EVERY: int
MAX_NODES: int

StopReason = Literal["vocab_size", "min_frequency", "no_pairs"]
Weights = Union[Sequence[int], Iterable[int], npt.NDArray[np.integer]]
ProgressCallback = Callable[[int, int], object]

class MergeResult:
    merges: list[tuple[int, int]]
    new_ids: list[int]
    counts: list[int]
    token_bytes: list[bytes]
    stop_reason: StopReason
    def __init__(
        self,
        merges: list[tuple[int, int]],
        new_ids: list[int],
        counts: list[int],
        token_bytes: list[bytes],
        stop_reason: StopReason,
    ) -> None: ...

def huggingface_byte_order() -> list[int]: ...
def train_merges(
    chunks: Iterable[bytes],
    weights: Weights,
    n_new_tokens: int,
    *,
    min_frequency: int = 0,
    tie_break: str = "ids",
    progress: Optional[ProgressCallback] = None,
) -> MergeResult: ...
def _train_merges_seeded(
    chunks: Iterable[bytes],
    weights: Weights,
    n_new_tokens: int,
    seed_tokens: Sequence[bytes],
    *,
    min_frequency: int = 0,
    tie_break: str = "ids",
    progress: Optional[ProgressCallback] = None,
) -> tuple[MergeResult, dict[str, int]]: ...

class _MergeTrainer:
    def load(
        self,
        chunks: list[bytes],
        weights: npt.NDArray[np.int64],
        byte_order: list[int],
        n_target: int,
        min_frequency: int,
        seed_tokens: list[bytes],
    ) -> None: ...
    def run(self, progress: Optional[ProgressCallback]) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def result(self) -> MergeResult: ...
