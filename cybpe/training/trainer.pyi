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
Veto = Callable[[bytes, bytes], object]
_Buffer = Union[bytes, bytearray, memoryview, npt.NDArray[np.integer]]

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
    max_token_length: Optional[int] = None,
    veto: Optional[Veto] = None,
    seed_tokens: Sequence[bytes] = (),
    forced_merges: Sequence[tuple[int, int]] = (),
    forced_counts: Optional[Sequence[int]] = None,
    replay: str = "encode",
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
    max_token_length: Optional[int] = None,
    veto: Optional[Veto] = None,
    forced_merges: Sequence[tuple[int, int]] = (),
    forced_counts: Optional[Sequence[int]] = None,
    replay: str = "encode",
) -> tuple[MergeResult, dict[str, int]]: ...
def train_merges_arrays(
    arena: _Buffer,
    offsets: _Buffer,
    weights: _Buffer,
    n_new_tokens: int,
    *,
    min_frequency: int = 0,
    tie_break: str = "ids",
    progress: Optional[ProgressCallback] = None,
    max_token_length: Optional[int] = None,
    veto: Optional[Veto] = None,
) -> MergeResult: ...
def train_merges_from(
    with_arrays: Callable[[Callable[[_Buffer, _Buffer, _Buffer], None]], object],
    n_new_tokens: int,
    *,
    min_frequency: int = 0,
    tie_break: str = "ids",
    progress: Optional[ProgressCallback] = None,
    max_token_length: Optional[int] = None,
    veto: Optional[Veto] = None,
) -> MergeResult: ...
def check_rules(max_token_length: Optional[int], veto: Optional[Veto]) -> int: ...
def check_forced(
    forced_merges: Iterable[Sequence[int]], seeds: Sequence[bytes]
) -> list[tuple[int, int]]: ...

class MergeRun:
    """The owner of one merge run's memory (a C pool) and of the Python side both compiled merge
    loops share; the base of their classes, never used alone."""

class _MergeTrainer(MergeRun):
    forced_counts: Optional[list[int]]
    def load_tokens(
        self,
        ids: npt.NDArray[np.int32],
        starts: npt.NDArray[np.int64],
        weights: npt.NDArray[np.int64],
        byte_order: list[int],
        n_target: int,
        min_frequency: int,
        seed_tokens: list[bytes],
        max_token_length: int,
        veto: Optional[Veto],
        forced_merges: list[tuple[int, int]],
        forced_counts: list[int],
    ) -> None: ...
    def load(
        self,
        chunks: list[bytes],
        weights: npt.NDArray[np.int64],
        byte_order: list[int],
        n_target: int,
        min_frequency: int,
        seed_tokens: list[bytes],
        max_token_length: int = 0,
        veto: Optional[Veto] = None,
        forced_merges: Optional[list[tuple[int, int]]] = None,
    ) -> None: ...
    def load_arrays(
        self,
        arena: _Buffer,
        offsets: _Buffer,
        weights: _Buffer,
        byte_order: list[int],
        n_target: int,
        min_frequency: int,
        max_token_length: int = 0,
        veto: Optional[Veto] = None,
        borrow_weights: bool = False,
    ) -> None: ...
    def run(self, progress: Optional[ProgressCallback]) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def result(self) -> MergeResult: ...
def _exercise_mem_pool(sizes: list[int]) -> dict[str, object]: ...
