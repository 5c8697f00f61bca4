"""Typed stub of the fused scan + encode path (cybpe/encode/fastpath.pyx)."""

import numpy as np
import numpy.typing as npt

from cybpe.encode.encoder import RankEncoder
from cybpe.pretokenize.scanner_api import BaseScanner

def encode_scanned(
    encoder: RankEncoder, scanner: BaseScanner, data: bytes | bytearray | memoryview
) -> npt.NDArray[np.uint32] | None:
    """Ids of UTF-8 ``data``; None when the scanner gave up on it (split it with ``scanner.split``)."""
OUTPUT_LIST: int
OUTPUT_ARRAY: int
OUTPUT_COUNT: int

def encode_text(
    encoder: RankEncoder, scanner: BaseScanner, text: str, output: int = ...
) -> list[int] | npt.NDArray[np.uint32] | int | None:
    """The ids of ``text`` as a list, a uint32 array or their number; None when the scanner gave up."""
def encode_texts_scanned(encoder: RankEncoder, scanner: BaseScanner, texts: list[str]) -> list[list[int]]:
    """Id lists of many texts in one GIL-free pass."""
def encode_scanned_spans(
    encoder: RankEncoder,
    scanner: BaseScanner,
    data: bytes | bytearray | memoryview,
    limit: int = -1,
    offsets: bool = True,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64] | None] | None: ...
def encode_scanned_words(
    encoder: RankEncoder, scanner: BaseScanner, data: bytes | bytearray | memoryview
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None: ...
def encode_texts_flat(
    encoder: RankEncoder, scanner: BaseScanner, texts: list[str], limit: int = -1, offsets: bool = False
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64] | None]: ...
def encode_utf8_rows(
    encoder: RankEncoder,
    scanner: BaseScanner,
    data: bytes | bytearray | memoryview | npt.NDArray[np.uint8],
    row_offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.uint8] | None = None,
    offsets: bool = False,
    count_only: bool = False,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64] | None, list[tuple[int, int]]]:
    """Rows of one UTF-8 buffer (an Arrow string array's data and offsets) in one GIL-free pass."""
