"""Type stub for the compiled parity-aware merge loop (``cybpe/training/parity_merge.pyx``)."""

from typing import Callable, Optional

import numpy as np
import numpy.typing as npt

from cybpe.training.trainer import MergeRun

MAX_NODES: int

class _ParityTrainer(MergeRun):
    def load(
        self,
        chunks: list[bytes],
        train_start: npt.NDArray[np.int64],
        train_lang: npt.NDArray[np.int32],
        train_weight: npt.NDArray[np.int64],
        dev_start: npt.NDArray[np.int64],
        dev_lang: npt.NDArray[np.int32],
        dev_weight: npt.NDArray[np.int64],
        dev_lengths: list[int],
        byte_order: list[int],
        n_target: int,
        min_frequency: int,
        global_merges: int,
        max_token_length: int,
        veto: Optional[Callable[[bytes, bytes], object]],
        window: int,
        alpha: float,
    ) -> None: ...
    def set_budget(self, lang: int, limits: npt.NDArray[np.int64], summed: bool) -> None: ...
    def run(self) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def result(
        self,
    ) -> tuple[
        list[tuple[int, int]], list[int], list[int], list[bytes], list[int], list[int], str
    ]: ...

ParityTrainer = _ParityTrainer
