"""The GPT-2 / Hugging Face ``ByteLevel`` alphabet: one printable character for each byte.

Rule: a byte that is a printable, non-space Latin-1 character (``!``..``~``, ``¡``..``¬``,
``®``..``ÿ``) stands for itself; the other 68 bytes (controls, space, DEL, the C1 range, NBSP and
the soft hyphen), taken in increasing order, stand for U+0100, U+0101, ... U+0143. So the space
is ``Ġ`` (U+0120) and the newline ``Ċ`` (U+010A).

Conversions run over whole strings with ``str.translate`` and the Latin-1 codec (no per-character
Python loop): bytes -> Latin-1 text -> translate to the alphabet, and back. Characters outside the
alphabet are translated to U+FFFF, which the Latin-1 encoder rejects, so validity is checked by
the same C call that converts.
"""

from __future__ import annotations


def _build_table() -> dict[int, str]:
    self_mapped = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table = {b: chr(b) for b in self_mapped}
    shifted = 0x100
    for b in range(256):
        if b not in table:
            table[b] = chr(shifted)
            shifted += 1
    return dict(sorted(table.items()))


#: byte value -> its ByteLevel character.
BYTE_TO_CHAR: dict[int, str] = _build_table()
#: ByteLevel character -> byte value.
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in BYTE_TO_CHAR.items()}

_INVALID = "\uffff"  # not encodable in Latin-1
# Latin-1 char of byte b -> alphabet char of b.
_ENCODE_TABLE = {b: c for b, c in BYTE_TO_CHAR.items()}
# Alphabet char -> Latin-1 char of its byte; Latin-1 chars that are not in the alphabet -> invalid.
_DECODE_TABLE: dict[int, str] = {cp: _INVALID for cp in range(256)}
_DECODE_TABLE.update({ord(c): chr(b) for c, b in CHAR_TO_BYTE.items()})


def bytes_to_bytelevel(data: bytes) -> str:
    """The ByteLevel string of ``data`` (one character per byte)."""
    return data.decode("latin-1").translate(_ENCODE_TABLE)


def bytelevel_to_bytes(text: str) -> bytes:
    """The bytes a ByteLevel string stands for; ValueError if a character is not in the alphabet."""
    try:
        return text.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValueError(
            f"character {bad!r} (U+{ord(bad):04X}) at position {exc.start} of {text!r} "
            "is not in the ByteLevel alphabet"
        ) from None


def is_bytelevel(text: str) -> bool:
    """True when every character of ``text`` is in the ByteLevel alphabet."""
    try:
        text.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True
