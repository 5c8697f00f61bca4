"""``tiktoken.core``: :class:`Encoding`, a :class:`cybpe.Tokenizer` with tiktoken's constructor
and the members tiktoken's ``Encoding`` has beyond cybpe's (``_pat_str``, ``_mergeable_ranks``,
``_special_tokens``, ``_encode_bytes``, ``_encode_single_piece``, ``_encode_only_native_bpe``,
pickling by name for registered encodings)."""

from __future__ import annotations

import operator
import threading
from typing import Any, Optional

from cybpe.api.tokenizer import Tokenizer
from cybpe.encodings import registry as _cybpe_registry
from cybpe.errors import FormatError, InvalidParameterError, ParameterTypeError
from cybpe.formats.vocab import MAX_ID, Vocab

#: tiktoken's pattern for gpt2, r50k_base and p50k_*: cybpe's "gpt2" pre-tokenizer splits as it
#: does (tests/encodings/test_encodings_registry.py checks the splits on real text)
R50K_PAT_STR = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_SPACE_BYTES = frozenset(b" \n\t")


def pretokenizer_for_pat_str(pat_str: str) -> Any:
    """The pre-tokenizer that splits as tiktoken splits with ``pat_str``: a built-in one when
    the pattern is a known encoding's, else a ``regex`` pre-tokenizer of the pattern."""
    from cybpe.formats.known import pretokenizer_for_pattern
    from cybpe.pretokenize.registry import get_pretokenizer

    if not isinstance(pat_str, str):
        raise ParameterTypeError(f"pat_str must be a str, not {type(pat_str).__name__}")
    if pat_str == R50K_PAT_STR:
        return get_pretokenizer("gpt2")
    return pretokenizer_for_pattern(pat_str)


def pat_str_of(tokenizer: Tokenizer) -> str:
    """The ``pat_str`` tiktoken would give the tokenizer's pre-tokenizer."""
    pre = tokenizer.pretokenizer
    if pre.name == "gpt2":
        return R50K_PAT_STR
    return pre.export_pattern or pre.pattern


def _tokens_by_rank(mergeable_ranks: Any) -> list[Optional[bytes]]:
    """``mergeable_ranks`` (bytes -> rank) as the token list of a rank-only :class:`Vocab`:
    ``tokens[rank]``, ``None`` at a rank no token has."""
    if not isinstance(mergeable_ranks, dict):
        raise ParameterTypeError(f"mergeable_ranks must be a dict of bytes to rank, not "
                                 f"{type(mergeable_ranks).__name__}")
    if not mergeable_ranks:
        raise InvalidParameterError("mergeable_ranks is empty")
    try:
        ranks = [operator.index(r) for r in mergeable_ranks.values()]
    except TypeError:
        raise ParameterTypeError("mergeable_ranks: every rank must be an int") from None
    top = max(ranks)
    if min(ranks) < 0 or top > MAX_ID:
        raise InvalidParameterError(f"mergeable_ranks: ranks must be in 0..{MAX_ID}")
    if top + 1 - len(ranks) > len(ranks):
        raise InvalidParameterError(
            f"mergeable_ranks: {len(ranks)} tokens with ranks up to {top} skip more ids than there "
            "are tokens; cybpe keeps a table of every id up to the largest rank")
    tokens: list[Optional[bytes]] = [None] * (top + 1)
    for token, rank in zip(mergeable_ranks, ranks):
        if not isinstance(token, (bytes, bytearray)):
            raise ParameterTypeError(f"mergeable_ranks: key {token!r} is not bytes")
        if tokens[rank] is not None:
            raise FormatError(f"mergeable_ranks: rank {rank} is given to {tokens[rank]!r} and {bytes(token)!r}")
        tokens[rank] = bytes(token)
    return tokens


class Encoding(Tokenizer):
    """tiktoken's ``Encoding``: ``Encoding(name, *, pat_str, mergeable_ranks, special_tokens,
    explicit_n_vocab=None)``, built on :class:`cybpe.Tokenizer` (every cybpe method works too).

    ``mergeable_ranks`` maps token bytes to ranks (= ids; ranks may skip ids, as p50k_base's
    do), ``special_tokens`` special strings to ids (two strings may share one: it decodes to
    the first), ``pat_str`` is the split pattern (a known encoding's pattern gets cybpe's
    compiled pre-tokenizer, any other the ``regex`` module). ``explicit_n_vocab`` is checked as
    tiktoken checks it. Thread safety: as :class:`cybpe.Tokenizer`."""

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: dict[bytes, int],
                 special_tokens: dict[str, int], explicit_n_vocab: Optional[int] = None) -> None:
        if not isinstance(special_tokens, dict):
            raise ParameterTypeError(f"special_tokens must be a dict of str to id, not "
                                     f"{type(special_tokens).__name__}")
        tokens = _tokens_by_rank(mergeable_ranks)
        vocab = Vocab(tokens, None, dict(special_tokens), True)
        if explicit_n_vocab:
            top = max(len(tokens) - 1, max(special_tokens.values(), default=0))
            if len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab or top != explicit_n_vocab - 1:
                raise InvalidParameterError(
                    f"explicit_n_vocab={explicit_n_vocab}, but there are {len(mergeable_ranks)} "
                    f"ranks + {len(special_tokens)} special tokens and the largest id is {top}")
        super().__init__(vocab, pretokenizer_for_pat_str(pat_str), name=name, source="mergeable_ranks")
        self._pat_str = pat_str
        self.__dict__["_mergeable_ranks"] = mergeable_ranks
        self._special_tokens = special_tokens

    @classmethod
    def _of(cls, tokenizer: Tokenizer) -> "Encoding":
        """An Encoding sharing ``tokenizer``'s vocabulary and compiled tables (no copy)."""
        enc = cls.__new__(cls)
        enc.__dict__.update(tokenizer.__dict__)
        enc._pat_str = pat_str_of(tokenizer)
        enc._special_tokens = dict(tokenizer.vocab.special_tokens)
        enc.__dict__["_wraps"] = tokenizer
        return enc

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank, as tiktoken keeps them (built on first use for a registered
        encoding; the dict given to the constructor otherwise)."""
        found = self.__dict__.get("_mergeable_ranks")
        if found is None:
            found = self.__dict__["_mergeable_ranks"] = {
                t: i for i, t in enumerate(self.vocab.tokens) if t is not None}
        return found

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # -- tiktoken's private encoders -----------------------------------------------------------
    def _encode_single_piece(self, text_or_bytes: "str | bytes") -> list[int]:
        """BPE of one piece without the regex split (special tokens are text)."""
        data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        ids = self._encoder.encode_piece(data)
        if self._gaps and any(i in self._gaps for i in ids):  # the piece spelled a gap's placeholder
            ids = self._merge_only_encoder().encode_piece(data)
        return list(ids)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """Split with ``regex`` and ``_pat_str`` in Python, then BPE each piece."""
        import regex

        out: list[int] = []
        for piece in regex.findall(regex.compile(self._pat_str), text):
            out.extend(self._encode_single_piece(piece.encode("utf-8")))
        return out

    def _encode_bytes(self, text: bytes) -> list[int]:
        """tiktoken's ``_encode_bytes``: valid UTF-8 is encoded as ordinary text; otherwise the
        valid prefix is, and the tokens of its last piece (with the all-whitespace tokens before
        it) are merged again together with the invalid rest as one piece."""
        data = bytes(text)
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            valid = exc.start
        prefix = data[:valid].decode("utf-8")
        tokens = self.encode_ordinary(prefix)
        pieces = self.pretokenizer.split(prefix) if prefix else []
        last = len(self._encoder.encode_piece(pieces[-1].encode("utf-8"))) if pieces else 0
        if last and all(b in _SPACE_BYTES for b in self.decode_single_token_bytes(tokens[-last])):
            while last < len(tokens) and all(
                    b in _SPACE_BYTES for b in self.decode_single_token_bytes(tokens[-last - 1])):
                last += 1
        if tokens and last:
            unstable = self.decode_bytes(tokens[-last:]) + data[valid:]
            del tokens[-last:]
        else:
            unstable = data[valid:]
        if unstable:
            tokens.extend(self._encode_single_piece(unstable))
        return tokens

    # -- pickling as tiktoken: a registered encoding by name -------------------------------------
    def __getstate__(self) -> Any:  # type: ignore[override]
        if self.name is not None and ENCODINGS.get(self.name) is self:
            return self.name
        return {"name": self.name, "pat_str": self._pat_str, "mergeable_ranks": self._mergeable_ranks,
                "special_tokens": self._special_tokens}

    def __setstate__(self, value: Any) -> None:  # type: ignore[override]
        if isinstance(value, str):
            self.__dict__.update(registered_encoding(value).__dict__)
            return
        if not isinstance(value, dict):
            raise FormatError(f"Encoding state must be a name or a dict, not {type(value).__name__}")
        self.__init__(**value)  # type: ignore[misc]


def raise_disallowed_special_token(token: str) -> None:
    """tiktoken's helper: raise the error for a disallowed special token in text."""
    from cybpe.errors import DisallowedSpecialTokenError

    raise DisallowedSpecialTokenError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        "If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n")


# The cache of built encodings behind ``tiktoken.registry`` (ENCODINGS, get_encoding), kept here
# so that pickling by name needs no import of the registry module, which imports this one.
_lock = threading.RLock()
#: name -> the Encoding returned for it (``tiktoken.registry.ENCODINGS`` is this dict)
ENCODINGS: dict[str, Encoding] = {}


def registered_encoding(encoding_name: str) -> Encoding:
    """The Encoding of a registered name, built once and kept while cybpe's registry keeps the
    encoding (``tiktoken.registry.get_encoding``)."""
    if not isinstance(encoding_name, str):
        raise ParameterTypeError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    with _lock:
        tokenizer = _cybpe_registry.get_encoding(encoding_name)
        found = ENCODINGS.get(encoding_name)
        if found is None or found.__dict__.get("_wraps") is not tokenizer:
            found = ENCODINGS[encoding_name] = Encoding._of(tokenizer)
        return found


