from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

class RankEncoder:
    """Byte-level BPE of one piece at a time over an id-pair rank table (exact to tiktoken)."""

    n_tokens: int
    pair_table_size: int
    whole_piece_lookup: bool

    def __init__(
        self,
        tokens: Sequence[bytes],
        merges: Optional[Union[Sequence[tuple[int, int]], npt.NDArray[np.integer[Any]]]] = None,
        *,
        whole_piece_lookup: bool = True,
        special_tokens: Optional[Mapping[int, bytes]] = ...,
    ) -> None: ...
    def token_id(self, token: bytes) -> int: ...
    def token_bytes(self, token_id: int) -> bytes: ...
    def encode_piece(self, piece: bytes) -> list[int]: ...
    def _encode_piece_linear(self, piece: bytes) -> list[int]: ...
    def _encode_piece_heap(self, piece: bytes) -> list[int]: ...
    def encode_str_pieces(self, pieces: Iterable[str]) -> npt.NDArray[np.uint32]: ...
    def encode_utf8(
        self, data: bytes, ends: Union[Sequence[int], npt.NDArray[np.integer[Any]]]
    ) -> npt.NDArray[np.uint32]: ...
    def decode_bytes(
        self, ids: Union[Sequence[int], npt.NDArray[np.integer[Any]]]
    ) -> bytes: ...
    def _tokens(self) -> list[bytes]: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def _rebuild_rank_encoder(
    tokens: Sequence[bytes],
    merges: Optional[npt.NDArray[np.int32]],
    whole_piece_lookup: bool,
    special_tokens: Mapping[int, bytes],
) -> RankEncoder: ...
