"""Typed stub of the fused scan + encode path (cybpe/encode/fastpath.pyx)."""

import numpy as np
import numpy.typing as npt

from cybpe.encode.encoder import RankEncoder
from cybpe.pretokenize.scanner_api import BaseScanner

def encode_scanned(
    encoder: RankEncoder, scanner: BaseScanner, data: bytes | bytearray | memoryview
) -> npt.NDArray[np.uint32] | None:
    """Ids of UTF-8 ``data``; None when the scanner gave up on it (split it with ``scanner.split``)."""
def encode_texts_scanned(encoder: RankEncoder, scanner: BaseScanner, texts: list[str]) -> list[list[int]]:
    """Id lists of many texts in one GIL-free pass."""
