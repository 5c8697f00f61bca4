"""The compiled fast path of the ``.tiktoken`` reader (see tiktoken_lines.pyx)."""

from typing import Optional

def rank_lines_tokens(body: bytes) -> Optional[list[bytes]]: ...
