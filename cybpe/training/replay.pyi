"""Typed stub of the seam-cut merge replay (cybpe/training/replay.pyx)."""

from typing import Iterable, Union

import numpy as np
import numpy.typing as npt

from cybpe.encode.encoder import RankEncoder

_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

def encode_at_seams(
    encoder: RankEncoder, data: _BytesLike, ends: npt.ArrayLike, joined: npt.ArrayLike
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """``(ids, starts)`` of the chunks ``data[ends[i - 1]:ends[i]]``, encoded part by part
    between their seams (equal to encoding each whole chunk)."""

def joined_pairs(tokens: Iterable[bytes]) -> npt.NDArray[np.uint8]:
    """65536 uint8: 1 at ``x << 8 | y`` when some token holds byte ``x`` right before ``y``."""
