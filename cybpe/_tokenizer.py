"""The Tokenizer: a vocabulary, a pre-tokenizer and special tokens, with a tiktoken-like API."""

from __future__ import annotations

import operator
import os
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Any, Collection, Iterable, Iterator, Literal, Optional, Sequence, Union

import numpy as np

from cybpe.pretokenize.text import clean_surrogates
from cybpe.encode.encoder import RankEncoder
from cybpe.encode.fastpath import encode_scanned, encode_texts_flat, encode_texts_scanned
from cybpe.pretokenize.scanner_api import BaseScanner
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer
from cybpe.pretokenize.specials import SpecialTokenSplitter
from cybpe.formats.vocab import Vocab
from cybpe.encode import budgets
from cybpe.encode.budgets import TextChunk, check_budget
from cybpe.encode.spans import EMPTY_SPANS, map_through, ordinary_spans, surrogate_alignment
from cybpe.errors import (
    CybpeError,
    DisallowedSpecialTokenError,
    EncodingError,
    FormatError,
    InvalidParameterError,
    InvalidTokenError,
    ParameterTypeError,
    describe,
)

PathLike = Union[str, os.PathLike]
SpecialSet = Union[Literal["all"], AbstractSet[str], Collection[str]]
#: Version of the pickled state (``__getstate__``); states without one are version 0.
STATE_VERSION = 1


def _exact_str(text: Any, caller: str) -> str:
    """``text`` as an exact ``str`` (a subclass's own code points, read by the C API: its
    Python-level methods such as ``encode`` are never called); EncodingError for a non-str."""
    if isinstance(text, str):
        return str.__str__(text)
    raise EncodingError(f"{caller}() takes a str, not {type(text).__name__}")


def _thread_count(num_threads: Any) -> int:
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise ParameterTypeError(f"num_threads must be an int, not {type(num_threads).__name__}")
    return num_threads


def _text_list(texts: Any, caller: str) -> list:
    if isinstance(texts, (str, bytes, bytearray)):
        raise ParameterTypeError(
            f"{caller}() takes a sequence of str, not a single {type(texts).__name__} "
            "(wrap one text in a list)")
    try:
        return list(texts)
    except TypeError:
        raise ParameterTypeError(
            f"{caller}() takes a sequence of str, not {type(texts).__name__}") from None


class Tokenizer:
    """Byte-level BPE tokenizer: ``encode`` / ``decode`` text with a vocabulary and a pre-tokenizer.

    Ids are exactly tiktoken's for the same ranks and pattern (and HF tokenizers' for the same
    ``tokenizer.json``). Build one with :func:`cybpe.train` or a loader
    (:meth:`load`, :meth:`from_tiktoken`, :meth:`from_hf`, :meth:`from_gpt2`).
    """

    def __init__(
        self,
        vocab: Vocab,
        pretokenizer: Union[str, PreTokenizer] = "cl100k",
        *,
        name: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        normalizer: Optional[str] = None,
        source: str = "vocabulary",
    ) -> None:
        if not isinstance(vocab, Vocab):
            raise ParameterTypeError(f"vocab must be a cybpe.Vocab, not {type(vocab).__name__}")
        vocab.validate(source)  # ``source`` names the file in errors when a loader calls this
        if not (normalizer is None or (isinstance(normalizer, str) and normalizer == "NFC")):
            raise InvalidParameterError(f"normalizer must be None or 'NFC', not {describe(normalizer)}")
        if name is not None and not isinstance(name, str):
            raise ParameterTypeError(f"name must be a str or None, not {type(name).__name__}")
        if metadata is not None and not isinstance(metadata, dict):
            raise ParameterTypeError(f"metadata must be a dict or None, not {type(metadata).__name__}")
        self.normalizer = normalizer
        self.vocab = vocab
        self.pretokenizer = get_pretokenizer(pretokenizer)
        self.name = name
        self.metadata = dict(metadata or {})
        self._encoder = RankEncoder(
            vocab.tokens,
            None if vocab.encode_by_rank else vocab.merges,
            whole_piece_lookup=vocab.ignore_merges,
            special_tokens={i: s.encode("utf-8") for s, i in vocab.special_tokens.items()},
        )
        # Splitters for the special-token sets that encode() is called with, built once each
        # (building one sorts, joins and compiles an alternation: 7x a short text's encode).
        self._splitters: dict[frozenset[str], SpecialTokenSplitter] = {}

    # -- properties --------------------------------------------------------------------------
    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self.vocab.special_tokens)

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.vocab.special_tokens)

    @property
    def n_vocab(self) -> int:
        """One more than the largest token id."""
        return self.vocab.n_vocab

    @property
    def merges(self) -> Optional[list[tuple[int, int]]]:
        return None if self.vocab.merges is None else list(self.vocab.merges)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Tokenizer{label} n_vocab={self.n_vocab} pretokenizer={self.pretokenizer!r}>"

    # -- encoding ----------------------------------------------------------------------------
    def _encode_ordinary_array(self, text: str) -> np.ndarray:
        if type(text) is not str:
            text = _exact_str(text, "encode")
        if self.normalizer is not None:
            text = unicodedata.normalize(self.normalizer, clean_surrogates(text))
        pre = self.pretokenizer
        if pre.uses_scanner and isinstance(pre.scanner, BaseScanner):  # one GIL-free pass
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: U+FFFD, as tiktoken
                data = clean_surrogates(text).encode("utf-8")
            ids = encode_scanned(self._encoder, pre.scanner, data)
            if ids is not None:
                return ids
            # the scanner gave up on this text (a compiled pattern past its step budget): its
            # split() asks the regex module instead
            return self._encoder.encode_str_pieces(pre.scanner.split(clean_surrogates(text)))
        return self._encoder.encode_str_pieces(pre.split(clean_surrogates(text)))

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ignoring special tokens (their strings are ordinary text)."""
        return self._encoder.ids_list(self._encode_ordinary_array(text))

    def _allowed(self, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> tuple[set[str], set[str]]:
        if type(allowed_special) is str and allowed_special == "all":
            allowed = self.special_tokens_set
        else:
            allowed = _special_set(allowed_special, "allowed_special")
        unknown = allowed - self.special_tokens_set
        if unknown:
            raise InvalidTokenError(f"allowed_special names tokens that are not special tokens: {sorted(unknown)}")
        if type(disallowed_special) is str and disallowed_special == "all":
            disallowed = self.special_tokens_set - allowed
        else:
            disallowed = _special_set(disallowed_special, "disallowed_special")
        return allowed, disallowed

    def _splitter(self, specials: set[str]) -> SpecialTokenSplitter:
        key = frozenset(specials)
        found = self._splitters.get(key)
        if found is None:
            if len(self._splitters) >= 64:  # callers that vary the set every call: stay bounded
                self._splitters.clear()
            found = self._splitters[key] = SpecialTokenSplitter(key)
        return found

    def _checked_specials(self, text: str, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> set[str]:
        """The allowed specials, after raising on a disallowed one in ``text``."""
        allowed, disallowed = self._allowed(allowed_special, disallowed_special)
        if disallowed:
            found = self._splitter(disallowed).first(text)
            if found is not None:
                raise DisallowedSpecialTokenError(
                    f"the text contains the special token {found!r}, which is not allowed. Pass "
                    f"allowed_special={{{found!r}}} (or 'all') to encode it as a special token, or "
                    f"disallowed_special=() to encode it as ordinary text."
                )
        return allowed

    def _encode_array(self, text: str, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> np.ndarray:
        if type(text) is not str:
            text = _exact_str(text, "encode")
        allowed = self._checked_specials(text, allowed_special, disallowed_special)
        if not allowed:
            return self._encode_ordinary_array(text)
        splitter = self._splitter(allowed)
        parts = []
        ids = self.vocab.special_tokens
        for part, special in splitter.parts(text):
            if special:
                parts.append(np.array([ids[part]], dtype=np.uint32))
            else:
                parts.append(self._encode_ordinary_array(part))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)

    def encode(self, text: str, *, allowed_special: SpecialSet = frozenset(),
               disallowed_special: SpecialSet = "all", max_tokens: Optional[int] = None) -> list[int]:
        """Encode ``text``; special-token strings raise unless allowed (tiktoken semantics).

        ``allowed_special``: special tokens encoded as such (``"all"`` for every one).
        ``disallowed_special``: special strings that raise :class:`DisallowedSpecialTokenError`
        when present (default ``"all"``: every special not allowed); ``()`` encodes them as text.
        ``max_tokens``: at most this many ids, cut as :meth:`truncate` cuts (which also says where).
        """
        if max_tokens is not None:
            return self.truncate(text, max_tokens, allowed_special=allowed_special,
                                 disallowed_special=disallowed_special)[0]
        return self._encoder.ids_list(self._encode_array(text, allowed_special, disallowed_special))

    def encode_to_numpy(self, text: str, *, allowed_special: SpecialSet = frozenset(),
                        disallowed_special: SpecialSet = "all") -> np.ndarray:
        """Like :meth:`encode`, as a ``uint32`` numpy array."""
        return self._encode_array(text, allowed_special, disallowed_special)

    def count(self, text: str, *, limit: Optional[int] = None) -> int:
        """How many tokens ``text`` takes as ordinary text; never raises on special strings.

        With ``limit``, encoding stops once the count passes it: the result is
        ``min(count(text), limit + 1)``, so ``count(text, limit=n) <= n`` says the text fits."""
        if limit is None:
            return int(self._encode_ordinary_array(text).shape[0])
        limit = check_budget(limit, "limit")
        if type(text) is not str:
            text = _exact_str(text, "count")
        ids, _ = ordinary_spans(self._encoder, self.pretokenizer, self.normalizer, text, limit, False)
        return min(int(ids.shape[0]), limit + 1)

    # -- offsets and budgets -------------------------------------------------------------------
    def _spans(self, text: str, allowed_special: SpecialSet, disallowed_special: SpecialSet,
               limit: int = -1, offsets: bool = True) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(ids, character spans) with special tokens; past ``limit`` ids (when >= 0) it stops."""
        if type(text) is not str:
            text = _exact_str(text, "encode")
        allowed = self._checked_specials(text, allowed_special, disallowed_special)
        if not allowed:
            return ordinary_spans(self._encoder, self.pretokenizer, self.normalizer, text, limit, offsets)
        id_parts, span_parts = [], []
        pos = total = 0
        for part, special in self._splitter(allowed).parts(text):
            if 0 <= limit < total:
                break
            if special:
                ids, spans = np.array([self.vocab.special_tokens[part]], dtype=np.uint32), np.array([[0, len(part)]])
            else:
                ids, spans = ordinary_spans(self._encoder, self.pretokenizer, self.normalizer, part,
                                            limit - total if limit >= 0 else -1, offsets)
            id_parts.append(ids)
            if offsets:
                span_parts.append(spans + pos)
            total += len(ids)
            pos += len(part)
        ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.uint32)
        if not offsets:
            return ids, None
        return ids, (np.concatenate(span_parts).astype(np.int64) if span_parts else EMPTY_SPANS.copy())

    def encode_with_offsets(self, text: str, *, allowed_special: SpecialSet = frozenset(),
                            disallowed_special: SpecialSet = "all") -> tuple[list[int], list[tuple[int, int]]]:
        """The ids of :meth:`encode` and each token's ``(start, end)`` character offsets into
        ``text``. A token holding part of a multi-byte character spans the whole character (HF
        tokenizers' byte-level rule, without trimming; the rule in full: cybpe/encode/spans.py)."""
        ids, spans = self._spans(text, allowed_special, disallowed_special)
        return self._encoder.ids_list(ids), [(int(a), int(b)) for a, b in spans]

    def encode_with_offsets_to_numpy(self, text: str, *, allowed_special: SpecialSet = frozenset(),
                                     disallowed_special: SpecialSet = "all") -> tuple[np.ndarray, np.ndarray]:
        """Like :meth:`encode_with_offsets`: uint32 ids and an int64 ``(n, 2)`` array of spans."""
        return self._spans(text, allowed_special, disallowed_special)  # type: ignore[return-value]

    def encode_batch_with_offsets(self, texts: Sequence[str], *, num_threads: int = 8,
                                  allowed_special: SpecialSet = frozenset(),
                                  disallowed_special: SpecialSet = "all") -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`encode_with_offsets_to_numpy` of many texts on ``num_threads`` threads (each
        thread's slice in one GIL-free pass when the pre-tokenizer is a built-in scanner)."""
        texts = _text_list(texts, "encode_batch_with_offsets")

        def encode_slice(part: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
            flat = self._flat_batch(part, -1, True, allowed_special, disallowed_special)
            if flat is None:
                return [self.encode_with_offsets_to_numpy(t, allowed_special=allowed_special,
                                                          disallowed_special=disallowed_special) for t in part]
            ids, row_ends, spans = flat
            starts = np.concatenate(([0], row_ends[:-1]))
            out = [(ids[a:b], spans[a:b]) for a, b in zip(starts, row_ends)]
            for j, text in enumerate(part):
                if len(clean_surrogates(text)) != len(text):  # a joined surrogate pair: back to text's indices
                    out[j] = (out[j][0], map_through(surrogate_alignment(text), out[j][1], len(text)))
            return out
        return self._map_slices(encode_slice, texts, num_threads)

    def _flat_batch(self, texts: list[str], limit: int, offsets: bool, allowed_special: SpecialSet,
                    disallowed_special: SpecialSet):
        """encode_texts_flat of texts when one GIL-free pass can do them (a compiled scanner that
        does not give up on them, no normalizer, no special token encoded as such), else None."""
        pre = self.pretokenizer
        if not (pre.uses_scanner and isinstance(pre.scanner, BaseScanner) and self.normalizer is None):
            return None
        allowed, _ = self._allowed(allowed_special, disallowed_special)
        for text in texts:
            if isinstance(text, str):
                self._checked_specials(text, allowed_special, disallowed_special)  # raises on a disallowed one
                if allowed and self._splitter(allowed).first(text) is not None:
                    return None
        return encode_texts_flat(self._encoder, pre.scanner, texts, limit, offsets)

    def decode_with_offsets(self, ids: Iterable[int]) -> tuple[str, list[int]]:
        """The text of ``ids`` and, per token, the character index where it starts (tiktoken's
        ``decode_with_offsets``): a token that begins inside a character (with a UTF-8
        continuation byte) gets that character's index. Invalid UTF-8 raises
        :class:`~cybpe.errors.EncodingError`."""
        pieces = self.decode_tokens_bytes(ids)
        starts, chars = [], 0
        for piece in pieces:
            inside = bool(piece) and 0x80 <= piece[0] < 0xC0
            starts.append(max(0, chars - inside))
            chars += sum(1 for b in piece if not 0x80 <= b < 0xC0)
        data = b"".join(pieces)
        try:
            return data.decode("utf-8"), starts
        except UnicodeDecodeError as exc:
            raise EncodingError(f"the ids do not decode to valid UTF-8 (byte {exc.start}: {exc.reason})") from None

    def truncate(self, text: str, max_tokens: int, *, allowed_special: SpecialSet = frozenset(),
                 disallowed_special: SpecialSet = "all") -> tuple[list[int], int]:
        """``(ids, stop)``: the first ids of ``encode(text)``, at most ``max_tokens`` of them,
        ending at a token boundary that is also a character boundary; ``text[:stop]`` is what
        they decode to. Only about ``max_tokens`` ids are encoded (the text is still scanned)."""
        max_tokens = check_budget(max_tokens)
        ids, spans = self._spans(text, allowed_special, disallowed_special, max_tokens, True)
        kept, stop = budgets.truncate(ids, spans, len(text), max_tokens)
        return self._encoder.ids_list(np.ascontiguousarray(kept)), stop

    def chunks(self, text: str, max_tokens: int, *, overlap: int = 0,
               allowed_special: SpecialSet = frozenset(),
               disallowed_special: SpecialSet = "all") -> Iterator[TextChunk]:
        """Windows of ``text`` (``TextChunk(text, start, end)``) whose own encodings take at most
        ``max_tokens`` ids, consecutive windows sharing about ``overlap`` tokens (for retrieval).
        Without overlap they tile the text. The exact rule: cybpe/encode/budgets.py."""
        return budgets.chunks(self, text, max_tokens, overlap, allowed_special, disallowed_special)

    def encode_batch_to_numpy(self, texts: Sequence[str], *, max_length: Optional[int] = None,
                              padding: str = "longest", truncation: bool = False,
                              padding_side: str = "right", pad_id: Optional[int] = None,
                              num_threads: int = 8, allowed_special: SpecialSet = frozenset(),
                              disallowed_special: SpecialSet = "all",
                              dtype: Any = np.int64) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, attention_mask)``, both ``(len(texts), width)`` arrays: row j is
        ``encode(texts[j])``, cut to ``max_length`` ids when ``truncation`` (else a longer text
        raises), padded with ``pad_id`` on ``padding_side`` to the longest row (``padding=
        "longest"``) or to ``max_length`` (``"max_length"``). Encoding runs GIL-free on
        ``num_threads`` threads."""
        budgets.check_padding(max_length, padding, truncation, padding_side)
        if pad_id is None:
            raise InvalidParameterError("give pad_id= (the id that fills the padding)")
        pad_id = check_budget(pad_id, "pad_id")
        limit = max_length if truncation else -1

        def encode_slice(part: list[str]) -> list[np.ndarray]:
            flat = self._flat_batch(part, limit, False, allowed_special, disallowed_special)
            if flat is None:
                return [self._spans(t, allowed_special, disallowed_special, limit, False)[0][:limit if limit >= 0 else None]
                        for t in part]
            ids, row_ends, _ = flat
            starts = np.concatenate(([0], row_ends[:-1]))
            return [ids[a:b] for a, b in zip(starts, row_ends)]
        rows = self._map_slices(encode_slice, texts, num_threads)
        return budgets.padded_batch(rows, max_length, padding, truncation, padding_side, pad_id, dtype)

    def encode_batch(self, texts: Sequence[str], *, num_threads: int = 8,
                     allowed_special: SpecialSet = frozenset(),
                     disallowed_special: SpecialSet = "all") -> list[list[int]]:
        """Encode many texts on ``num_threads`` threads (the core releases the GIL)."""
        texts = _text_list(texts, "encode_batch")
        self._allowed(allowed_special, disallowed_special)  # bad arguments fail here, not in a thread

        def one(text: str) -> list[int]:
            return self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        return self._map(one, texts, num_threads)

    def encode_ordinary_batch(self, texts: Sequence[str], *, num_threads: int = 8) -> list[list[int]]:
        texts = _text_list(texts, "encode_ordinary_batch")
        pre = self.pretokenizer
        if pre.uses_scanner and isinstance(pre.scanner, BaseScanner) and self.normalizer is None:
            # Each thread encodes its whole slice in one GIL-free pass.
            def encode_slice(part: list[str]) -> list[list[int]]:
                return encode_texts_scanned(self._encoder, pre.scanner, part)
            return self._map_slices(encode_slice, texts, num_threads)
        return self._map(self.encode_ordinary, texts, num_threads)

    @staticmethod
    def _map(fn, texts: Sequence[str], num_threads: int) -> list:
        return Tokenizer._map_slices(lambda part: [fn(t) for t in part], texts, num_threads)

    @staticmethod
    def _map_slices(fn, texts: Sequence[str], num_threads: int) -> list:
        """fn over interleaved slices of texts (one per thread), results back in text order."""
        texts = list(texts)
        num_threads = _thread_count(num_threads)
        if num_threads <= 1 or len(texts) <= 1:
            return fn(texts)
        # Interleaved slices, one task per thread: per-text futures cost more than a short
        # text's encoding, and interleaving balances long and short texts.
        n = min(num_threads, len(texts))
        with ThreadPoolExecutor(n) as pool:
            parts = list(pool.map(lambda k: fn(texts[k::n]), range(n)))
        out: list = [None] * len(texts)
        for k, part in enumerate(parts):
            out[k::n] = part
        return out

    def encode_single_token(self, token: Union[str, bytes]) -> int:
        """The id of one token given as its bytes (or a special token / ordinary text str)."""
        if isinstance(token, str):
            if token in self.vocab.special_tokens:
                return self.vocab.special_tokens[token]
            try:
                token = str.encode(token, "utf-8")
            except UnicodeEncodeError:
                raise InvalidTokenError(f"{token!r} has a lone surrogate: not a token") from None
        elif not isinstance(token, (bytes, bytearray, memoryview)):
            raise ParameterTypeError(
                f"encode_single_token() takes bytes or str, not {type(token).__name__}")
        found = self._encoder.token_id(token)
        if found < 0:
            raise InvalidTokenError(f"{token!r} is not a token of this vocabulary")
        return found

    # -- decoding ----------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of the ids; an unknown id raises :class:`InvalidTokenError` naming it."""
        try:
            return self._encoder.decode_bytes(ids)
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, CybpeError):
                raise
            raise InvalidTokenError(f"ids must be a flat sequence of integer token ids ({exc})") from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of the ids (invalid UTF-8 handled by ``errors``, as ``bytes.decode``)."""
        try:
            return self.decode_bytes(ids).decode("utf-8", errors)
        except (LookupError, TypeError, UnicodeError) as exc:
            raise InvalidParameterError(f"errors={describe(errors)} is not an error handler ({exc})") from None

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """The bytes of one id (an integer: ``5.7`` is an :class:`InvalidTokenError`, not 5)."""
        return self._encoder.token_bytes(token_id)

    def decode_tokens_bytes(self, ids: Iterable[int]) -> list[bytes]:
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise InvalidTokenError(f"ids must be a sequence of integer token ids, not {type(ids).__name__}")
        return [self._encoder.token_bytes(i) for i in ids]

    def token_bytes(self, token_id: int) -> bytes:
        return self._encoder.token_bytes(token_id)

    def stream_decoder(self, errors: str = "replace") -> "StreamDecoder":
        """A decoder fed ids piece by piece that holds back incomplete UTF-8 between calls."""
        return StreamDecoder(self, errors)

    # -- the rest of tiktoken's Encoding surface --------------------------------------------
    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>`` (:class:`InvalidTokenError` if it is not a special token)."""
        try:
            return self.vocab.special_tokens["<|endoftext|>"]
        except KeyError:
            raise InvalidTokenError("this tokenizer has no '<|endoftext|>' special token") from None

    @property
    def max_token_value(self) -> int:
        """The largest id, ordinary or special (tiktoken's ``max_token_value``)."""
        return max(len(self.vocab.tokens) - 1, max(self.vocab.special_tokens.values(), default=0))

    def is_special_token(self, token: int) -> bool:
        """Whether the id ``token`` is a special token's."""
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)):
            raise ParameterTypeError(f"is_special_token() takes an int id, not {type(token).__name__}")
        return int(token) in self._special_ids

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary (not special) token, sorted."""
        return list(self._sorted_tokens()[0])

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        """:meth:`decode` of each id list, on ``num_threads`` threads."""
        return self._map(lambda ids: self.decode(ids, errors), _batch_list(batch), num_threads)

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """:meth:`decode_bytes` of each id list, on ``num_threads`` threads."""
        return self._map(self.decode_bytes, _batch_list(batch), num_threads)

    def encode_with_unstable(self, text: str, *, allowed_special: SpecialSet = frozenset(),
                             disallowed_special: SpecialSet = "all") -> tuple[list[int], list[list[int]]]:
        """tiktoken's ``encode_with_unstable``: ``(stable ids, completions)``, where the stable
        ids decode to a prefix of ``text`` and every completion appended to them decodes to
        text that starts with ``text`` (:mod:`cybpe.encode.unstable` says how). Completions are
        sorted; tiktoken lists the same ones in an arbitrary order."""
        from cybpe.encode.unstable import unstable_completions

        if type(text) is not str:
            text = _exact_str(text, "encode_with_unstable")
        allowed = self._checked_specials(text, allowed_special, disallowed_special)
        tokens = self.encode(text, allowed_special=allowed, disallowed_special=())
        last = None
        for part, special in self._splitter(allowed).parts(text):
            last = None if special else part
        last_piece_len = 0
        if last:
            if self.normalizer is not None:
                last = unicodedata.normalize(self.normalizer, clean_surrogates(last))
            pieces = self.pretokenizer.split(clean_surrogates(last))
            if pieces:
                last_piece_len = len(self._encoder.encode_piece(pieces[-1].encode("utf-8")))
        return unstable_completions(tokens, last_piece_len, self._encoder.token_bytes, self._sorted_tokens(),
                                    lambda texts: self.encode_ordinary_batch(texts, num_threads=1),
                                    self._merge_only_encoder().encode_piece)

    @property
    def _special_ids(self) -> frozenset[int]:
        found = self.__dict__.get("_special_id_set")
        if found is None or found[0] is not self.vocab.special_tokens:
            found = self.__dict__["_special_id_set"] = (self.vocab.special_tokens,
                                                        frozenset(self.vocab.special_tokens.values()))
        return found[1]

    def _sorted_tokens(self) -> tuple[list[bytes], list[int]]:
        """The ordinary tokens' bytes sorted, with their ids (built once; a race builds it twice)."""
        found = self.__dict__.get("_sorted_token_cache")
        if found is None:
            tokens = self.vocab.tokens
            order = sorted(range(len(tokens)), key=tokens.__getitem__)
            found = self.__dict__["_sorted_token_cache"] = ([tokens[i] for i in order], order)
        return found

    def _merge_only_encoder(self) -> RankEncoder:
        """An encoder of the same vocabulary without the whole-piece lookup (tiktoken's
        ``byte_pair_encode``), for :meth:`encode_with_unstable`; built on first use."""
        if not self.vocab.ignore_merges:
            return self._encoder
        found = self.__dict__.get("_merge_only_cache")
        if found is None:
            vocab = self.vocab
            found = self.__dict__["_merge_only_cache"] = RankEncoder(
                vocab.tokens, None if vocab.encode_by_rank else vocab.merges, whole_piece_lookup=False)
        return found

    # -- training report -----------------------------------------------------------------------
    def merge_report(self) -> list[dict[str, Any]]:
        """Per merge of a trained tokenizer: rank, pair, new id, new token's bytes and the pair's
        count when it was merged (kept in ``metadata["training"]``, so it survives save/load)."""
        counts = self.metadata.get("training", {}).get("merge_counts")
        if counts is None or self.vocab.merges is None:
            raise InvalidTokenError("merge counts exist only for tokenizers trained by cybpe")
        tokens = self.vocab.tokens
        out = []
        for k, ((a, b), count) in enumerate(zip(self.vocab.merges, counts)):
            merged = tokens[a] + tokens[b]
            out.append({"rank": k, "pair": (a, b), "new_id": self._encoder.token_id(merged),
                        "bytes": merged, "count": count})
        return out

    # -- persistence ---------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"state_version": STATE_VERSION, "vocab": self.vocab,
                "pretokenizer": self.pretokenizer.spec(), "name": self.name,
                "metadata": self.metadata, "normalizer": self.normalizer}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Version 0 (no ``state_version``) and 1; a newer or damaged state is a FormatError."""
        version = state.get("state_version", 0) if isinstance(state, dict) else None
        if not isinstance(version, int) or version > STATE_VERSION:
            raise FormatError(f"Tokenizer state version {version!r}: this cybpe reads versions "
                              f"0..{STATE_VERSION} (pickled by a newer cybpe?)")
        try:
            vocab, spec = state["vocab"], state["pretokenizer"]
        except KeyError as exc:
            raise FormatError(f"Tokenizer state has no {exc.args[0]!r}") from None
        if not isinstance(spec, dict):
            raise FormatError("Tokenizer state: the pre-tokenizer spec is not a dict")
        try:
            self.__init__(vocab, PreTokenizer.from_spec(spec),  # type: ignore[misc]
                          name=state.get("name"), metadata=state.get("metadata"),
                          normalizer=state.get("normalizer"))
        except InvalidParameterError as exc:
            raise FormatError(f"Tokenizer state: {exc}") from None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Tokenizer) and self.vocab == other.vocab
                and self.pretokenizer == other.pretokenizer)

    def save(self, path: PathLike) -> None:
        """Save in cybpe's versioned JSON format (atomically: temporary file, then rename)."""
        from cybpe.formats.native import save_native

        meta = {**self.metadata, "name": self.name, "normalizer": self.normalizer}
        save_native(path, self.vocab, self.pretokenizer.spec(), meta)

    @classmethod
    def load(cls, path: PathLike) -> "Tokenizer":
        """Load a file written by :meth:`save`."""
        from cybpe.formats.native import load_native

        vocab, spec, metadata = load_native(path)
        name = metadata.pop("name", None)
        normalizer = metadata.pop("normalizer", None)
        return cls(vocab, PreTokenizer.from_spec(spec), name=name, metadata=metadata, normalizer=normalizer)

    @classmethod
    def from_tiktoken(cls, path: PathLike, pretokenizer: Union[str, PreTokenizer, None] = None,
                      special_tokens: Optional[dict[str, int]] = None, *, name: Optional[str] = None) -> "Tokenizer":
        """Load ``.tiktoken`` ranks. For ``cl100k_base``, ``o200k_base`` and ``r50k_base``/``gpt2``
        (taken from ``name`` or the file name) the pre-tokenizer and special tokens are known; so
        they are for a registered encoding's file under another name (a tiktoken cache file,
        named by the sha1 of its address, or any copy with the registered sha256); otherwise
        give them."""
        from cybpe.formats.tiktoken import load_tiktoken
        from cybpe.formats.known import KNOWN_ENCODINGS

        if name is not None and not isinstance(name, str):
            raise ParameterTypeError(f"name must be a str or None, not {type(name).__name__}")
        from cybpe.io.atomic import checked_path

        path = checked_path(path)
        if special_tokens is not None and not isinstance(special_tokens, dict):
            raise ParameterTypeError(
                f"special_tokens must be a dict of str to id, not {type(special_tokens).__name__}")
        guessed = os.path.basename(path).split(".")[0]
        if name is None and pretokenizer is None and special_tokens is None and guessed not in KNOWN_ENCODINGS:
            # A registered encoding's file under any name (tiktoken's cache names it by the sha1
            # of its address): recognised by that name or its sha256, built as registered.
            from cybpe.encodings.registry import tiktoken_file_encoding

            entry = tiktoken_file_encoding(path)
            if entry is not None:
                return entry.load([path])
        name = name or os.path.basename(path).split(".")[0]
        known = KNOWN_ENCODINGS.get(name)
        if pretokenizer is None:
            if known is None:
                raise InvalidParameterError(
                    f"{path}: give pretokenizer= (no known encoding is named {name!r}; known: "
                    f"{', '.join(KNOWN_ENCODINGS)})")
            pretokenizer = known["pretokenizer"]
        if special_tokens is None:
            special_tokens = dict(known["special_tokens"]) if known else {}
        vocab = load_tiktoken(path)
        vocab.special_tokens = dict(special_tokens)
        return cls(vocab, pretokenizer, name=name, source=path)

    def to_tiktoken(self, path: PathLike) -> None:
        """Write the ordinary ranks as ``.tiktoken`` (special tokens are not part of that format).

        tiktoken then encodes exactly as this tokenizer with ``pat_str=`` the pre-tokenizer's
        ``export_pattern``; a vocabulary that merges differently from tiktoken (an HF merge
        list) raises :class:`~cybpe.errors.ExportError` and nothing is written."""
        from cybpe.formats.exports import check_tiktoken_semantics
        from cybpe.formats.tiktoken import save_tiktoken

        check_tiktoken_semantics(self.vocab)
        save_tiktoken(path, self.vocab)

    @classmethod
    def from_hf(cls, path: PathLike, *, name: Optional[str] = None) -> "Tokenizer":
        """Load a byte-level BPE ``tokenizer.json`` (Llama 3, Qwen, GPT-4o, GPT-2 style)."""
        from cybpe.formats.hf import load_hf_tokenizer_json
        from cybpe.formats.known import pretokenizer_for_pattern
        from cybpe.formats.merges import rank_vocab_if_all_splits

        vocab, info = load_hf_tokenizer_json(path)
        # An all-splits merge list (Llama 3's, or what to_hf writes) encodes as its ranks do:
        # keep the rank-only form, which also saves as .tiktoken.
        vocab = rank_vocab_if_all_splits(vocab)
        pretokenizer = pretokenizer_for_pattern(info["pattern"], hf_pattern=info.get("hf_pattern"))
        return cls(vocab, pretokenizer, name=name,
                   normalizer=info.get("normalizer"), metadata={"hf_special": info.get("special", [])})

    def to_hf(self, path: PathLike) -> None:
        """Write a ``tokenizer.json`` that HF ``tokenizers`` loads and encodes identically, or
        raise :class:`~cybpe.errors.ExportError` naming what Oniguruma cannot split alike."""
        from cybpe.formats.exports import export_pattern
        from cybpe.formats.hf import save_hf_tokenizer_json

        vocab = self.vocab
        if vocab.encode_by_rank:  # HF applies merges literally: give it every split (all-splits)
            vocab = Vocab(vocab.tokens, None, dict(vocab.special_tokens), True)
        save_hf_tokenizer_json(path, vocab, export_pattern(self.pretokenizer, "HF tokenizers"),
                               special_flags=self.metadata.get("hf_special"),
                               normalizer=self.normalizer)

    @classmethod
    def from_gpt2(cls, encoder_json: PathLike, vocab_bpe: PathLike, *, name: Optional[str] = "gpt2") -> "Tokenizer":
        """Load the original GPT-2 ``encoder.json`` + ``vocab.bpe``."""
        from cybpe.formats.gpt2 import load_gpt2

        return cls(load_gpt2(encoder_json, vocab_bpe), "gpt2", name=name)

    def to_gpt2(self, encoder_json: PathLike, vocab_bpe: PathLike) -> None:
        """Write GPT-2 style ``encoder.json`` + ``vocab.bpe``. Readers of these files always split
        with GPT-2's pattern and apply the merges literally: another pre-tokenizer, or ids that
        need the whole-piece lookup, raise :class:`~cybpe.errors.ExportError`."""
        from cybpe.formats.exports import gpt2_merges
        from cybpe.formats.gpt2 import save_gpt2
        from cybpe.formats.hf import GPT2_PATTERN

        merges = gpt2_merges(self.vocab, self.pretokenizer, (GPT2_PATTERN,))
        save_gpt2(encoder_json, vocab_bpe, self.vocab, merges)


def _special_set(value: Any, argument: str) -> set[str]:
    """allowed_special / disallowed_special as a set of str (a bare str other than "all", None
    or a non-collection is a ParameterTypeError, never read as its characters)."""
    if type(value) is frozenset or type(value) is set:
        items = set(value)
    elif isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ParameterTypeError(
            f"{argument} must be 'all' or a collection of special-token strings, not {describe(value)}")
    else:
        try:
            items = set(value)
        except TypeError:
            raise ParameterTypeError(f"{argument}: the special tokens must be str") from None
    for item in items:
        if type(item) is not str and not isinstance(item, str):
            raise ParameterTypeError(f"{argument}: {describe(item)} is not a str")
    return items


def _batch_list(batch: Any) -> list:
    """decode_batch()'s argument as a list of id sequences (a str or bytes is refused)."""
    if isinstance(batch, (str, bytes, bytearray)) or not hasattr(batch, "__iter__"):
        raise ParameterTypeError(f"the batch must be a sequence of id sequences, not {type(batch).__name__}")
    return list(batch)


class StreamDecoder:
    """Decodes ids as they arrive; incomplete UTF-8 sequences wait for the next call.

    Thread safety: none. It holds the bytes of an incomplete character between calls, so one
    instance serves one stream in one thread at a time (make one per stream)."""

    def __init__(self, tokenizer: Tokenizer, errors: str = "replace") -> None:
        import codecs

        if not isinstance(tokenizer, Tokenizer):
            raise ParameterTypeError(f"StreamDecoder takes a Tokenizer, not {type(tokenizer).__name__}")
        if not isinstance(errors, str):
            raise ParameterTypeError(f"errors must be a str, not {type(errors).__name__}")
        try:
            codecs.lookup_error(errors)
        except (LookupError, UnicodeError):
            raise InvalidParameterError(f"errors={describe(errors)} is not an error handler") from None
        self._tokenizer = tokenizer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors)

    def feed(self, ids: Union[int, Iterable[int]]) -> str:
        if isinstance(ids, (int, np.integer)):
            ids = [ids]
        return self._decoder.decode(self._tokenizer.decode_bytes(ids))

    def flush(self) -> str:
        """Whatever is held back, decoded with the error handler (end of the stream)."""
        return self._decoder.decode(b"", final=True)
