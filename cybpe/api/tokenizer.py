"""The Tokenizer: a vocabulary, a pre-tokenizer and special tokens, with a tiktoken-like API."""

from __future__ import annotations

import operator
import os
from typing import AbstractSet, Any, Collection, Iterable, Iterator, Literal, Optional, Sequence, Union

import numpy as np

from cybpe._c.nfc import nfc
from cybpe.pretokenize.text import clean_surrogates
from cybpe.encode.encoder import RankEncoder
from cybpe.encode.fastpath import (
    OUTPUT_ARRAY,
    OUTPUT_COUNT,
    OUTPUT_LIST,
    encode_text,
    encode_texts_flat,
    encode_texts_scanned,
)
from cybpe.pretokenize.pretokenizer import PreTokenizer, regex_forced
from cybpe.pretokenize.registry import get_pretokenizer, pretokenizer_from_spec
from cybpe.pretokenize.specials import SpecialTokenSplitter
from cybpe.formats.vocab import Vocab
from cybpe.api.tokenizer_hf import TransformersMethods
from cybpe.encode import budgets, shared_encoders
from cybpe.encode.budgets import TextChunk, check_budget
from cybpe.encode.worker_threads import automatic_threads, run_sliced
from cybpe.encode.spans import EMPTY_SPANS, map_through, ordinary_spans, surrogate_alignment
from cybpe.errors import (
    CybpeError,
    DisallowedSpecialTokenError,
    EncodingError,
    FormatError,
    InvalidParameterError,
    InvalidTokenError,
    ParameterTypeError,
    check_error_handler,
    describe,
)

PathLike = Union[str, os.PathLike]
SpecialSet = Union[Literal["all"], AbstractSet[str], Collection[str]]
#: Version of the pickled state (``__getstate__``); states without one are version 0.
#: Version 2 adds the roles, the non-special added tokens and ``model_max_length``; version 3
#: holds its vocabulary in the packed form (``Vocab.__getstate__``), which older cybpe cannot
#: read, so that they refuse it by the version.
STATE_VERSION = 3
#: ``set_roles`` arguments left out keep their role.
_KEEP: Any = object()


def _exact_str(text: Any, caller: str) -> str:
    """``text`` as an exact ``str`` (a subclass's own code points, read by the C API: its
    Python-level methods such as ``encode`` are never called); EncodingError for a non-str."""
    if isinstance(text, str):
        return str.__str__(text)
    raise EncodingError(f"{caller}() takes a str, not {type(text).__name__}")


def _thread_count(num_threads: Any, items: Sequence) -> int:
    """``num_threads`` as given, or for None the automatic count for ``items`` (texts or id
    lists: their total length is the work)."""
    if num_threads is None:
        try:
            total = sum(map(len, items))
        except TypeError:  # not all sized: the call raises its own typed error on them
            total = 0
        return automatic_threads(total)
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise ParameterTypeError(f"num_threads must be an int or None, not {type(num_threads).__name__}")
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


GIL_HANDOFF_CHARS = 1 << 16  # characters per GIL-free pass of a batch (encode_ordinary_batch)


def _groups_of_chars(texts: list[str], chars: int) -> Iterator[list[str]]:
    """Consecutive runs of ``texts`` of at least ``chars`` characters each (the last may be
    shorter), in order. A non-str item counts as empty: the encoder refuses it with its typed
    error."""
    start, size = 0, 0
    for i, text in enumerate(texts):
        size += len(text) if isinstance(text, str) else 0
        if size >= chars:
            yield texts[start:i + 1]
            start, size = i + 1, 0
    if start < len(texts):
        yield texts[start:]


class Tokenizer(TransformersMethods):
    """Byte-level BPE tokenizer: ``encode`` / ``decode`` text with a vocabulary and a pre-tokenizer.

    Ids are exactly tiktoken's for the same ranks and pattern (and HF tokenizers' for the same
    ``tokenizer.json``). Build one with :func:`cybpe.train` or a loader
    (:meth:`load`, :meth:`from_tiktoken`, :meth:`from_hf`, :meth:`from_gpt2`,
    :meth:`from_pretrained`).

    Added tokens (``vocab.special_tokens``) are special unless named in ``non_special_tokens``:
    those are HF's ``special: false`` added tokens (Qwen's ``<tool_call>``), matched in text by
    :meth:`encode` like allowed specials but never raising. ``bos_token``, ``eos_token``,
    ``unk_token`` and ``pad_token`` give added tokens transformers' roles (see
    :meth:`set_roles`); ``model_max_length`` is kept for transformers' config.
    ``post_processor`` (a :class:`cybpe.formats.hf_post.PostProcessor` or its ``tokenizer.json``
    JSON) is what the transformers-shaped ``tok(...)`` adds; ``transformers_settings`` (a
    :class:`cybpe.formats.transformers_dir.TransformersSettings` or its JSON) the rest of a
    transformers config (chat templates, padding side...): :meth:`from_pretrained` reads both,
    :meth:`save_pretrained` writes them back.
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
        bos_token: Optional[str] = None,
        eos_token: Optional[str] = None,
        unk_token: Optional[str] = None,
        pad_token: Optional[str] = None,
        non_special_tokens: Collection[str] = (),
        model_max_length: Optional[int] = None,
        post_processor: Any = None,
        transformers_settings: Any = None,
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
        """``None``, or ``"NFC"``: the text is NFC-normalized before it is split (offsets still
        point into the original text)."""
        self.vocab = vocab
        """The :class:`~cybpe.Vocab`: token bytes by id, merges, special tokens."""
        self.pretokenizer = get_pretokenizer(pretokenizer)
        """The :class:`~cybpe.PreTokenizer` that splits text into the pieces BPE merges inside."""
        self.name = name
        """The encoding's name (tiktoken's ``Encoding.name``): set for registered and loaded
        encodings, ``None`` for a trained tokenizer unless given."""
        self.metadata = dict(metadata or {})
        """Free-form data saved with the tokenizer; ``metadata["training"]`` is what
        :func:`cybpe.train` recorded (settings, corpus size, stop reason, stages)."""
        from cybpe.formats.transformers_dir import check_model_max_length, check_non_special, check_roles

        plain = check_non_special(non_special_tokens, vocab.special_tokens)
        legacy = self.metadata.pop("hf_special", None)  # before the roles: the flagged names
        if not plain and isinstance(legacy, list):
            plain = frozenset(vocab.special_tokens) - {t for t in legacy if isinstance(t, str)}
        self.non_special_tokens: frozenset[str] = plain
        """The added tokens that are not special: ``encode`` matches them in text and never
        raises for them; ``encode_ordinary`` reads them as text."""
        self._roles = check_roles({"bos_token": bos_token, "eos_token": eos_token,
                                   "unk_token": unk_token, "pad_token": pad_token},
                                  vocab.special_tokens, "Tokenizer")
        self._model_max_length = check_model_max_length(model_max_length, "Tokenizer")
        self._post_processor = _post_processor_arg(post_processor, vocab)
        self._hf_settings = _settings_arg(transformers_settings)
        #: ordinary ids that are no token (``vocab.gaps``), and the specials sitting in them
        self._gaps: frozenset[int] = vocab.gaps
        decoder = {i: s.encode("utf-8") for i, s in vocab.special_decoder().items()}
        self._gap_specials = {i: decoder.pop(i) for i in self._gaps if i in decoder}
        self._encoder_tokens = _with_placeholders(vocab.tokens, self._gaps) if self._gaps else vocab.tokens
        self._encoder = shared_encoders.encoder_for(self, len(self._encoder_tokens), lambda: RankEncoder(
            self._encoder_tokens,
            None if vocab.encode_by_rank else vocab.merges,
            whole_piece_lookup=vocab.ignore_merges,
            special_tokens=decoder,
            lookup_when_exact=True,
        ))  # an unpickled tokenizer may reuse the encoder this process has (shared_encoders)
        # Splitters for the special-token sets that encode() is called with, built once each
        # (building one sorts, joins and compiles an alternation: 7x a short text's encode).
        self._splitters: dict[frozenset[str], SpecialTokenSplitter] = {}
        # The per-call fast path (encode_ordinary, count, and encode with its default arguments):
        # one compiled call from str to list (cybpe/encode/fastpath.pyx says why).
        self._fast_scanner = self.pretokenizer.compiled_scanner if normalizer is None else None
        # With a normalizer, ASCII text takes the fast path too (_normalized leaves it as it is).
        self._ascii_scanner = self.pretokenizer.compiled_scanner if normalizer is not None else None
        self._all_specials = self._splitter(set(vocab.special_tokens)) if vocab.special_tokens else None

    # -- properties --------------------------------------------------------------------------
    @property
    def special_tokens(self) -> dict[str, int]:
        """Every added token (special or not) -> its id, a copy."""
        return dict(self.vocab.special_tokens)

    @property
    def special_tokens_set(self) -> set[str]:
        """The added tokens' strings (tiktoken's ``special_tokens_set``), a copy."""
        return set(self.vocab.special_tokens)

    @property
    def roles(self) -> dict[str, Optional[str]]:
        """Role name (``bos_token``, ``eos_token``, ``unk_token``, ``pad_token``) -> token or None."""
        return dict(self._roles)

    def _role_id(self, role: str) -> Optional[int]:
        token = self._roles[role]
        return None if token is None else self.vocab.special_tokens[token]

    @property
    def bos_token(self) -> Optional[str]:
        """The beginning-of-sequence token, or None (see :meth:`set_roles`)."""
        return self._roles["bos_token"]

    @bos_token.setter
    def bos_token(self, token: Optional[str]) -> None:
        self.set_roles(bos_token=token)

    @property
    def eos_token(self) -> Optional[str]:
        """The end-of-sequence token, or None (see :meth:`set_roles`)."""
        return self._roles["eos_token"]

    @eos_token.setter
    def eos_token(self, token: Optional[str]) -> None:
        self.set_roles(eos_token=token)

    @property
    def unk_token(self) -> Optional[str]:
        """The unknown-token role, or None (byte-level BPE never needs one; kept for transformers)."""
        return self._roles["unk_token"]

    @unk_token.setter
    def unk_token(self, token: Optional[str]) -> None:
        self.set_roles(unk_token=token)

    @property
    def pad_token(self) -> Optional[str]:
        """The padding token, or None (transformers' ``padding=True`` needs one)."""
        return self._roles["pad_token"]

    @pad_token.setter
    def pad_token(self, token: Optional[str]) -> None:
        self.set_roles(pad_token=token)

    @property
    def bos_token_id(self) -> Optional[int]:
        """The id of :attr:`bos_token`, or None."""
        return self._role_id("bos_token")

    @property
    def eos_token_id(self) -> Optional[int]:
        """The id of :attr:`eos_token`, or None."""
        return self._role_id("eos_token")

    @property
    def unk_token_id(self) -> Optional[int]:
        """The id of :attr:`unk_token`, or None."""
        return self._role_id("unk_token")

    @property
    def pad_token_id(self) -> Optional[int]:
        """The id of :attr:`pad_token`, or None."""
        return self._role_id("pad_token")

    @property
    def model_max_length(self) -> Optional[int]:
        """The longest input a model takes, in tokens, for transformers' config (None: not set).
        Only recorded and saved: encoding never cuts at it."""
        return self._model_max_length

    @model_max_length.setter
    def model_max_length(self, value: Optional[int]) -> None:
        from cybpe.formats.transformers_dir import check_model_max_length

        self._model_max_length = check_model_max_length(value, "model_max_length")

    def set_roles(self, *, bos_token: Optional[str] = _KEEP, eos_token: Optional[str] = _KEEP,
                  unk_token: Optional[str] = _KEEP, pad_token: Optional[str] = _KEEP) -> None:
        """Give roles to added tokens (None clears a role; a role left out is kept). Each token
        must be an added token (:class:`InvalidParameterError` otherwise, and no role changes).
        The roles are replaced in one assignment, so a reader in another thread sees the old
        roles or the new ones, never a mix."""
        from cybpe.formats.transformers_dir import check_roles

        given = {"bos_token": bos_token, "eos_token": eos_token, "unk_token": unk_token,
                 "pad_token": pad_token}
        merged = {role: self._roles[role] if token is _KEEP else token for role, token in given.items()}
        self._roles = check_roles(merged, self.vocab.special_tokens, "set_roles")

    @property
    def n_vocab(self) -> int:
        """One more than the largest token id."""
        return self.vocab.n_vocab

    @property
    def merges(self) -> Optional[list[tuple[int, int]]]:
        """The merge list as (left id, right id) pairs in rank order, or None for a rank-only vocabulary (a .tiktoken file)."""
        return None if self.vocab.merges is None else list(self.vocab.merges)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Tokenizer{label} n_vocab={self.n_vocab} pretokenizer={self.pretokenizer!r}>"

    # -- encoding ----------------------------------------------------------------------------
    def _encode_ordinary_as(self, text: str, output: int) -> Any:
        """The ids of ``text`` (ordinary text) as encode_text's ``output`` says."""
        if type(text) is not str:
            text = _exact_str(text, "encode")
        if self.normalizer is not None:
            text = self._normalized(text)
        scanner = self.pretokenizer.compiled_scanner
        if scanner is not None and not regex_forced():  # one GIL-free pass: split + encode
            ids = encode_text(self._encoder, scanner, text, output)
            if ids is not None:
                return ids
            # the scanner gave up on this text (a compiled pattern past its step budget): its
            # split() asks the regex module instead
            array = self._encoder.encode_str_pieces(scanner.split(clean_surrogates(text)))
        else:
            array = self._encoder.encode_str_pieces(self.pretokenizer.split(clean_surrogates(text)))
        if output == OUTPUT_LIST:
            return self._encoder.ids_list(array)
        return int(array.shape[0]) if output == OUTPUT_COUNT else array

    def _encode_ordinary_array(self, text: str) -> np.ndarray:
        return self._encode_ordinary_as(text, OUTPUT_ARRAY)

    def _normalized(self, text: str) -> str:
        """``text`` (a str) in the normalizer's form, lone surrogates replaced first. ASCII text
        is every form already (no ASCII character decomposes or composes), and skips the
        normalizer's pass over the characters: a third of an English call's time for Qwen3's
        NFC."""
        if text.isascii():
            return text
        return nfc(clean_surrogates(text))

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ignoring special tokens (their strings are ordinary text)."""
        scanner = self._fast_scanner
        if scanner is None and self._ascii_scanner is not None and type(text) is str and text.isascii():
            scanner = self._ascii_scanner
        if scanner is not None and type(text) is str and not regex_forced():
            ids = encode_text(self._encoder, scanner, text)
            if ids is not None:
                return ids
        return self._encode_ordinary_as(text, OUTPUT_LIST)

    def _allowed(self, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> tuple[set[str], set[str]]:
        if type(allowed_special) is str and allowed_special == "all":
            allowed = self.special_tokens_set
        else:
            allowed = _special_set(allowed_special, "allowed_special")
        # A name that is no special token is ignored, as tiktoken ignores it: such text is
        # ordinary text (and raises only if disallowed_special names it).
        allowed &= self.special_tokens_set
        if type(disallowed_special) is str and disallowed_special == "all":
            disallowed = self.special_tokens_set - allowed - self.non_special_tokens
        else:
            disallowed = _special_set(disallowed_special, "disallowed_special")
        if self.non_special_tokens:  # matched in text as HF does, unless named as disallowed
            allowed = allowed | (self.non_special_tokens - disallowed)
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

        ``allowed_special``: special tokens encoded as such (``"all"`` for every one); a string
        that is no special token is ignored (as tiktoken does: it stays ordinary text).
        ``disallowed_special``: special strings that raise :class:`DisallowedSpecialTokenError`
        when present (default ``"all"``: every special not allowed); ``()`` encodes them as text.
        ``max_tokens``: at most this many ids, cut as :meth:`truncate` cuts (which also says where).
        Non-special added tokens (:attr:`non_special_tokens`) are always matched, as HF matches
        them, unless named in ``disallowed_special``; :meth:`encode_ordinary` reads every added
        token as text. So ``encode(text, allowed_special="all")`` equals transformers'
        ``tokenizer(text)`` and ``encode(text, disallowed_special=())`` its
        ``split_special_tokens=True``.
        """
        if max_tokens is not None:
            return self.truncate(text, max_tokens, allowed_special=allowed_special,
                                 disallowed_special=disallowed_special)[0]
        if (type(disallowed_special) is str and disallowed_special == "all" and type(text) is str
                and type(allowed_special) in (frozenset, set, tuple, list) and not allowed_special):
            # The default arguments: raise on any special string, else ordinary text. The
            # splitter's prefix test rules most texts out before its regex search.
            if self._all_specials is None or self._all_specials.first(text) is None:
                return self.encode_ordinary(text)
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
            return self._encode_ordinary_as(text, OUTPUT_COUNT)
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

    def encode_batch_with_offsets(self, texts: Sequence[str], *, num_threads: Optional[int] = None,
                                  allowed_special: SpecialSet = frozenset(),
                                  disallowed_special: SpecialSet = "all") -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`encode_with_offsets_to_numpy` of many texts on ``num_threads`` threads (each
        thread's slice in one GIL-free pass when the pre-tokenizer is a built-in scanner).
        ``num_threads=None`` (the default) lets cybpe choose: one thread per 64K characters of
        the batch, at most one per usable core."""
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
        scanner = self._fast_scanner
        if scanner is None or regex_forced():
            return None
        allowed, _ = self._allowed(allowed_special, disallowed_special)
        for text in texts:
            if isinstance(text, str):
                self._checked_specials(text, allowed_special, disallowed_special)  # raises on a disallowed one
                if allowed and self._splitter(allowed).first(text) is not None:
                    return None
        return encode_texts_flat(self._encoder, scanner, texts, limit, offsets)

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
                              num_threads: Optional[int] = None, allowed_special: SpecialSet = frozenset(),
                              disallowed_special: SpecialSet = "all",
                              dtype: Any = np.int64) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, attention_mask)``, both ``(len(texts), width)`` arrays: row j is
        ``encode(texts[j])``, cut to ``max_length`` ids when ``truncation`` (else a longer text
        raises), padded with ``pad_id`` on ``padding_side`` to the longest row (``padding=
        "longest"``) or to ``max_length`` (``"max_length"``). Encoding runs GIL-free on
        ``num_threads`` threads.
        ``num_threads=None`` (the default) lets cybpe choose: one thread per 64K characters of
        the batch, at most one per usable core."""
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

    def encode_batch(self, texts: Sequence[str], *, num_threads: Optional[int] = None,
                     allowed_special: SpecialSet = frozenset(),
                     disallowed_special: SpecialSet = "all") -> list[list[int]]:
        """Encode many texts on ``num_threads`` threads (the core releases the GIL).
        ``num_threads=None`` (the default) lets cybpe choose: one thread per 64K characters of
        the batch, at most one per usable core."""
        texts = _text_list(texts, "encode_batch")
        self._allowed(allowed_special, disallowed_special)  # bad arguments fail here, not in a thread

        def one(text: str) -> list[int]:
            return self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        return self._map(one, texts, num_threads)

    def encode_ordinary_batch(self, texts: Sequence[str], *, num_threads: Optional[int] = None) -> list[list[int]]:
        """Encode many texts as ordinary text (special-token strings are text) on ``num_threads`` threads; with a compiled scanner each thread encodes its share in GIL-free passes of about ``GIL_HANDOFF_CHARS`` characters.
        ``num_threads=None`` (the default) lets cybpe choose: one thread per 64K characters of
        the batch, at most one per usable core."""
        texts = _text_list(texts, "encode_ordinary_batch")
        scanner = self._fast_scanner
        normalizing = scanner is None and self.normalizer is not None
        if normalizing:  # each text normalized (with the GIL), then encoded as without a normalizer
            scanner = self.pretokenizer.compiled_scanner
        if scanner is not None and not regex_forced():
            # Each thread encodes its slice in GIL-free passes of about GIL_HANDOFF_CHARS
            # characters, building each pass's lists (with the GIL) before the next.
            #
            # Why passes: with one pass over the whole slice, both threads' GIL-free work would
            # end at about the same moment and their lists be built one thread after the other;
            # in passes one thread builds lists while the other encodes (the measurements:
            # docs/history.md, "Batch encoding").
            def encode_slice(part: list[str]) -> list[list[int]]:
                out: list[list[int]] = []
                if normalizing:  # (what is not a str keeps its typed error below)
                    part = [self._normalized(str.__str__(t)) if isinstance(t, str) else t for t in part]
                for group in _groups_of_chars(part, GIL_HANDOFF_CHARS):
                    out.extend(encode_texts_scanned(self._encoder, scanner, group))
                return out
            return self._map_slices(encode_slice, texts, num_threads)
        return self._map(self.encode_ordinary, texts, num_threads)

    def encode_arrow(self, array: Any, *, dtype: Any = "uint32", offsets: bool = False,
                     num_threads: Optional[int] = None, errors: str = "strict") -> Any:
        """``encode_ordinary`` of every text of a pyarrow string array (or ChunkedArray, Polars
        Series, NumPy string array) as a pyarrow list array of ``dtype`` ids, read from the
        array's UTF-8 buffer and encoded GIL-free on ``num_threads`` threads (default: every
        core); null texts give null lists. With ``offsets``, ``(ids, offsets)``. The rules:
        :mod:`cybpe.encode.arrow`. Needs ``pyarrow`` (``cybpe[arrow]``)."""
        from cybpe.encode.arrow import encode_arrow

        return encode_arrow(self, array, dtype, offsets, num_threads, errors)

    def count_arrow(self, array: Any, *, num_threads: Optional[int] = None, errors: str = "strict") -> Any:
        """The number of ids of each text of a pyarrow string array, as an int64 array (null
        for a null text): :meth:`encode_arrow` without keeping the ids."""
        from cybpe.encode.arrow import count_arrow

        return count_arrow(self, array, num_threads, errors)

    @staticmethod
    def _map(fn, texts: Sequence[str], num_threads: Optional[int]) -> list:
        return Tokenizer._map_slices(lambda part: [fn(t) for t in part], texts, num_threads)

    @staticmethod
    def _map_slices(fn, texts: Sequence[str], num_threads: Optional[int]) -> list:
        """fn over interleaved slices of texts (one per thread), results back in text order.
        Interleaved slices, one task per thread: per-text futures cost more than a short
        text's encoding, and interleaving balances long and short texts."""
        return run_sliced(fn, texts, _thread_count(num_threads, texts))

    def encode_single_token(self, token: Union[str, bytes]) -> int:
        """The id of one token, given as its bytes or as a ``str`` (its UTF-8 bytes), as
        tiktoken looks it up: an ordinary token with these bytes first, then a special token
        whose string these bytes are (so ``b"<|endoftext|>"`` works as well as the ``str``).
        Anything else raises :class:`InvalidTokenError`, which is also a ``KeyError`` (what
        tiktoken raises)."""
        if isinstance(token, str):
            text = str.__str__(token)
            try:
                data = str.encode(text, "utf-8")
            except UnicodeEncodeError:
                raise InvalidTokenError(f"{token!r} has a lone surrogate: not a token") from None
        elif isinstance(token, (bytes, bytearray, memoryview)):
            data, text = bytes(token), None
        else:
            raise ParameterTypeError(
                f"encode_single_token() takes bytes or str, not {type(token).__name__}")
        found = self._encoder.token_id(data)
        if found >= 0 and found not in self._gaps:
            return found
        if text is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is not None and text in self.vocab.special_tokens:
            return self.vocab.special_tokens[text]
        raise InvalidTokenError(f"{token!r} is not a token of this vocabulary")

    # -- decoding ----------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of the ids; an unknown id raises :class:`InvalidTokenError` naming it (also
        a ``KeyError``, as tiktoken raises)."""
        try:
            if self._gaps and not isinstance(ids, (np.ndarray, list)):
                ids = list(ids)  # read twice below
            data = self._encoder.decode_bytes(ids)
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, CybpeError):
                raise
            raise InvalidTokenError(f"ids must be a flat sequence of integer token ids ({exc})") from None
        if self._gaps:
            return self._decode_gapped(ids, data)
        return data

    def _decode_gapped(self, ids: Iterable[int], data: bytes) -> bytes:
        """decode_bytes when the vocabulary skips ids: the encoder has decoded (and checked)
        every other id, and wrote a placeholder for each gap id; each gap id becomes the special
        token sitting there, or raises."""
        values = np.asarray(ids).astype(np.int64).reshape(-1)
        where = np.flatnonzero(np.isin(values, np.fromiter(self._gaps, dtype=np.int64)))
        if where.size == 0:
            return data
        out, start = [], 0
        for position in where.tolist():
            gap = int(values[position])
            special = self._gap_specials.get(gap)
            if special is None:
                raise InvalidTokenError(f"token id {gap} (at position {position}) is not in the vocabulary")
            out.append(self._encoder.decode_bytes(values[start:position]))
            out.append(special)
            start = position + 1
        out.append(self._encoder.decode_bytes(values[start:]))
        return b"".join(out)

    def decode(self, ids: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: Optional[bool] = None) -> str:
        """The text of the ids (invalid UTF-8 handled by ``errors``, as ``bytes.decode``).
        ``skip_special_tokens=True`` leaves out the special added tokens (not the non-special
        ones), as transformers' ``decode``. ``clean_up_tokenization_spaces`` (default: the
        setting, :attr:`clean_up_tokenization_spaces`) removes the space before punctuation and
        English contractions as transformers does, and, as transformers 5 does for a BPE
        vocabulary, only when the config also sets
        ``clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output``."""
        if not isinstance(skip_special_tokens, (bool, np.bool_)):
            raise ParameterTypeError(f"skip_special_tokens must be True or False, not {describe(skip_special_tokens)}")
        if not (clean_up_tokenization_spaces is None or isinstance(clean_up_tokenization_spaces, (bool, np.bool_))):
            raise ParameterTypeError(f"clean_up_tokenization_spaces must be True, False or None, not "
                                     f"{describe(clean_up_tokenization_spaces)}")
        if skip_special_tokens:
            skipped = self._skipped_ids()
            ids = [i for i in (ids.tolist() if isinstance(ids, np.ndarray) else ids)
                   if not (isinstance(i, (int, np.integer)) and int(i) in skipped)]
        data = self.decode_bytes(ids)
        try:
            text = data.decode("utf-8", errors)
        except (LookupError, TypeError, UnicodeError, ValueError) as exc:
            # ValueError: a handler name with a NUL character ("embedded null character").
            raise InvalidParameterError(f"errors={describe(errors)} is not an error handler ({exc})") from None
        clean = self._hf_settings.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None \
            else clean_up_tokenization_spaces
        if clean and self._hf_settings.clean_up_for_bpe:
            text = _clean_up_tokenization(text)
        return text

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """The bytes of one id (an integer: ``5.7`` is an :class:`InvalidTokenError`, not 5).
        An id that is no token (one of cl100k_base's unused ids) raises
        :class:`InvalidTokenError`, which is also a ``KeyError`` (what tiktoken raises)."""
        return self.token_bytes(token_id)

    def decode_tokens_bytes(self, ids: Iterable[int]) -> list[bytes]:
        """The bytes of each id, one ``bytes`` per token (tiktoken's ``decode_tokens_bytes``)."""
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise InvalidTokenError(f"ids must be a sequence of integer token ids, not {type(ids).__name__}")
        if self._gaps:
            return [self.token_bytes(i) for i in ids]
        return [self._encoder.token_bytes(i) for i in ids]

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token id (the same as :meth:`decode_single_token_bytes`)."""
        found = self._encoder.token_bytes(token_id)  # checks the id (a gap gives its placeholder)
        if self._gaps and operator.index(token_id) in self._gaps:
            special = self._gap_specials.get(operator.index(token_id))
            if special is None:
                raise InvalidTokenError(f"token id {operator.index(token_id)} is not in the vocabulary")
            return special
        return found

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
                     num_threads: Optional[int] = None) -> list[str]:
        """:meth:`decode` of each id list, on ``num_threads`` threads.
        ``num_threads=None`` (the default) lets cybpe choose: one thread per 64K ids of
        the batch, at most one per usable core."""
        return self._map(lambda ids: self.decode(ids, errors), _batch_list(batch), num_threads)

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: Optional[int] = None) -> list[bytes]:
        """:meth:`decode_bytes` of each id list, on ``num_threads`` threads.
        ``num_threads=None`` (the default) lets cybpe choose: one thread per 64K ids of
        the batch, at most one per usable core."""
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
                last = self._normalized(last)
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
            ids = [i for i in range(len(tokens)) if i not in self._gaps] if self._gaps else range(len(tokens))
            order = sorted(ids, key=tokens.__getitem__)
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
                self._encoder_tokens, None if vocab.encode_by_rank else vocab.merges, whole_piece_lookup=False)
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
                "metadata": self.metadata, "normalizer": self.normalizer,
                "encoder_key": shared_encoders.key_for(self), **self._tokenizer_fields()}

    def _tokenizer_fields(self) -> dict[str, Any]:
        """The roles, non-special added tokens and length limit (native format version 2)."""
        from cybpe.formats.transformers_dir import TransformersSettings

        settings = self._hf_settings.to_json()
        return {"roles": {r: t for r, t in self._roles.items() if t is not None},
                "non_special_tokens": sorted(self.non_special_tokens),
                "model_max_length": self.model_max_length,
                "post_processor": None if self._post_processor is None else self._post_processor.spec,
                "transformers": None if settings == TransformersSettings().to_json() else settings}

    @staticmethod
    def _field_kwargs(fields: dict[str, Any]) -> dict[str, Any]:
        from cybpe.formats.transformers_dir import ROLE_NAMES

        roles = fields.get("roles") or {}
        if not isinstance(roles, dict) or not set(roles) <= set(ROLE_NAMES):
            raise InvalidParameterError(f"the roles are not a dict of {', '.join(ROLE_NAMES)}")
        return {**roles, "non_special_tokens": fields.get("non_special_tokens") or (),
                "model_max_length": fields.get("model_max_length"),
                "post_processor": fields.get("post_processor"),
                "transformers_settings": fields.get("transformers")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Versions 0 (no ``state_version``) to 3; a newer or damaged state is a FormatError."""
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
            with shared_encoders.unpickling(state.get("encoder_key")):
                self.__init__(vocab, pretokenizer_from_spec(spec),  # type: ignore[misc]
                              name=state.get("name"), metadata=state.get("metadata"),
                              normalizer=state.get("normalizer"), **self._field_kwargs(state))
        except InvalidParameterError as exc:
            raise FormatError(f"Tokenizer state: {exc}") from None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Tokenizer) and self.vocab == other.vocab
                and self.pretokenizer == other.pretokenizer)

    def __hash__(self) -> int:
        """Hashable (as tiktoken's ``Encoding``: ``functools.lru_cache`` and dict keys work),
        consistently with ``==``: equal tokenizers have equal hashes. The hash reads the
        pre-tokenizer, the special tokens and the ordinary tokens' count and last token, so it
        is cheap; a vocabulary changed in place after hashing changes it (do not do that to a
        dict key)."""
        vocab = self.vocab
        return hash((self.pretokenizer, len(vocab.tokens), vocab.tokens[-1] if vocab.tokens else None,
                     frozenset(vocab.special_tokens.items())))

    def save(self, path: PathLike) -> None:
        """Save in cybpe's versioned JSON format (atomically: temporary file, then rename)."""
        from cybpe.formats.native import save_native

        self.vocab.check_exportable("cybpe's native format", aliases=True)
        meta = {**self.metadata, "name": self.name, "normalizer": self.normalizer}
        save_native(path, self.vocab, self.pretokenizer.spec(), meta, self._tokenizer_fields())

    @classmethod
    def load(cls, path: PathLike) -> "Tokenizer":
        """Load a file written by :meth:`save`."""
        from cybpe.formats.native import load_native_fields

        vocab, spec, metadata, fields = load_native_fields(path)
        name = metadata.pop("name", None)
        normalizer = metadata.pop("normalizer", None)
        pretokenizer = pretokenizer_from_spec(spec)
        try:
            return cls(vocab, pretokenizer, name=name, metadata=metadata,
                       normalizer=normalizer, **cls._field_kwargs(fields))
        except InvalidParameterError as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"{path}: {exc}") from None

    @classmethod
    def from_tiktoken(cls, path: PathLike, pretokenizer: Union[str, PreTokenizer, None] = None,
                      special_tokens: Optional[dict[str, int]] = None, *, name: Optional[str] = None) -> "Tokenizer":
        """Load ``.tiktoken`` ranks. For ``cl100k_base``, ``o200k_base`` and ``r50k_base``/``gpt2``
        (taken from ``name`` or the file name) the pre-tokenizer and special tokens are known; so
        they are for a registered encoding's file under another name (a tiktoken cache file,
        named by the sha1 of its address, or any copy with the registered sha256); otherwise
        give them."""
        from cybpe.encodings.registry import registered_tiktoken_file
        from cybpe.formats.known import tiktoken_parts
        from cybpe.io.atomic import checked_path

        if name is not None and not isinstance(name, str):
            raise ParameterTypeError(f"name must be a str or None, not {type(name).__name__}")
        path = checked_path(path)
        if special_tokens is not None and not isinstance(special_tokens, dict):
            raise ParameterTypeError(
                f"special_tokens must be a dict of str to id, not {type(special_tokens).__name__}")
        entry = registered_tiktoken_file(path, pretokenizer, special_tokens, name)
        if entry is not None:
            return entry.load([path])
        return cls(**tiktoken_parts(path, pretokenizer, special_tokens, name=name))

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
        """Load a byte-level BPE ``tokenizer.json`` (Llama 3, Qwen, GPT-4o, GPT-2 style), or a
        transformers tokenizer directory (as :meth:`from_pretrained`). Added tokens flagged
        ``special: false`` become :attr:`non_special_tokens`."""
        from cybpe.io.atomic import checked_path

        if os.path.isdir(checked_path(path)):
            return cls.from_pretrained(path, name=name)
        return cls(**cls._hf_parts(path), name=name)

    @staticmethod
    def _hf_parts(path: PathLike) -> dict[str, Any]:
        """Constructor arguments read from a ``tokenizer.json``."""
        from cybpe.formats.hf import load_hf_tokenizer_json

        # An all-splits merge list (Llama 3's, or what to_hf writes) encodes as its ranks do:
        # keep the rank-only form, which also saves as .tiktoken.
        return Tokenizer._hf_parts_of(*load_hf_tokenizer_json(path, rank_if_all_splits=True))

    @staticmethod
    def _hf_parts_of(vocab: Vocab, info: dict[str, Any]) -> dict[str, Any]:
        """Constructor arguments from what :func:`cybpe.formats.hf.load_hf_tokenizer_json` (or
        ``load_hf_tokenizer_doc``) returned."""
        from cybpe.formats.known import pretokenizer_for_pattern

        pretokenizer = pretokenizer_for_pattern(info["pattern"], hf_pattern=info.get("hf_pattern"))
        flagged = set(info.get("special", []))
        return {"vocab": vocab, "pretokenizer": pretokenizer, "normalizer": info.get("normalizer"),
                "non_special_tokens": sorted(set(vocab.special_tokens) - flagged),
                "post_processor": info.get("post_processor")}

    @classmethod
    def from_pretrained(cls, directory: PathLike, *, name: Optional[str] = None) -> "Tokenizer":
        """Load a transformers tokenizer directory: its ``tokenizer.json`` (as :meth:`from_hf`,
        its post-processor included) with the roles, ``model_max_length``, the special /
        non-special status of the added tokens, the chat templates (``chat_template.jinja``
        files too) and every other config key from ``tokenizer_config.json`` and
        ``special_tokens_map.json`` (both optional): the settings cybpe honours become
        attributes (:attr:`padding_side`, :attr:`split_special_tokens`...), the rest is kept for
        :meth:`save_pretrained`. A role or special token that is not an added token of
        ``tokenizer.json``, or a setting cybpe cannot honour, is a
        :class:`~cybpe.errors.FormatError` (the rules: cybpe/formats/transformers_dir.py)."""
        from cybpe.formats.transformers_dir import read_transformers_dir, tokenizer_json_path
        from cybpe.io.atomic import checked_path

        folder = checked_path(directory, "directory")
        parts = cls._hf_parts(tokenizer_json_path(folder))
        info = read_transformers_dir(folder, parts["vocab"].special_tokens)
        plain = (set(parts["non_special_tokens"]) | info.non_special) - info.special
        tok = cls(parts["vocab"], parts["pretokenizer"], normalizer=parts["normalizer"],
                  name=name, non_special_tokens=sorted(plain),
                  model_max_length=info.model_max_length, post_processor=parts["post_processor"],
                  transformers_settings=info.settings, **info.roles)
        tok._check_bos_eos_flags(folder)
        return tok

    def save_pretrained(self, directory: PathLike) -> None:
        """Write a transformers tokenizer directory (``tokenizer.json``, ``tokenizer_config.json``,
        ``special_tokens_map.json``, the chat template files; created if missing) that
        transformers 4.x and 5.x load with ``AutoTokenizer.from_pretrained`` and that encodes
        exactly as this tokenizer, with its roles (so ``padding=True`` works once a
        ``pad_token`` is set), its post-processor, chat templates and every config key that
        :meth:`from_pretrained` read. What HF cannot encode
        alike raises :class:`~cybpe.errors.ExportError` (as :meth:`to_hf`); nothing is written
        then, nor when a write fails (:class:`~cybpe.errors.SaveError`)."""
        from cybpe.formats.transformers_dir import save_transformers_dir

        self.vocab.check_exportable("a transformers tokenizer directory")
        added = self.vocab.special_tokens
        save_transformers_dir(directory, self.to_hf, dict(added),
                              set(added) - self.non_special_tokens, self.roles,
                              self.model_max_length, self._hf_settings)

    def to_hf(self, path: PathLike) -> None:
        """Write a ``tokenizer.json`` that HF ``tokenizers`` loads and encodes identically, or
        raise :class:`~cybpe.errors.ExportError` naming what Oniguruma cannot split alike."""
        from cybpe.formats.exports import export_pattern
        from cybpe.formats.hf import save_hf_tokenizer_json

        vocab = self.vocab
        vocab.check_exportable("HF tokenizer.json")
        if vocab.encode_by_rank:  # HF applies merges literally: give it every split (all-splits)
            vocab = Vocab(vocab.tokens, None, dict(vocab.special_tokens), True)
        post = self._post_processor
        save_hf_tokenizer_json(path, vocab, export_pattern(self.pretokenizer, "HF tokenizers"),
                               special_flags={t: t not in self.non_special_tokens
                                              for t in vocab.special_tokens},
                               normalizer=self.normalizer,
                               post_processor=None if post is None else post.spec)

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

        self.vocab.check_exportable("GPT-2's encoder.json + vocab.bpe")
        merges = gpt2_merges(self.vocab, self.pretokenizer, (GPT2_PATTERN,))
        save_gpt2(encoder_json, vocab_bpe, self.vocab, merges)


def _with_placeholders(tokens: list, gaps: frozenset[int]) -> list[bytes]:
    """``tokens`` with each gap (None) replaced by bytes the encoder can never produce, so that
    the compiled encoder, which numbers ordinary tokens 0..n-1 without holes, takes the
    vocabulary unchanged. A placeholder is invalid UTF-8 (no piece of a ``str`` is ever equal
    to it), no two tokens concatenate to it and it is no token's prefix or suffix (so no merge
    makes it or starts from it); :class:`Tokenizer` never lets its id out (decode, lookups and
    byte input check the gaps)."""
    present = [t for t in tokens if t is not None]
    known = set(present)
    out = list(tokens)
    for gap in sorted(gaps):
        salt = 0
        while True:
            candidate = b"\xff\xfe\xff gap %d/%d \xfe\xff" % (gap, salt)
            splits = any(candidate[:k] in known and candidate[k:] in known for k in range(1, len(candidate)))
            if (candidate not in known and not splits
                    and not any(t.startswith(candidate) or t.endswith(candidate) for t in present)):
                break
            salt += 1
        known.add(candidate)
        out[gap] = candidate
    return out


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
        check_error_handler(errors)
        self._tokenizer = tokenizer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors)

    def feed(self, ids: Union[int, Iterable[int]]) -> str:
        """Decode more ids; returns the text completed so far (a character split across calls waits for its last byte)."""
        if isinstance(ids, (int, np.integer)):
            ids = [ids]
        return self._decoder.decode(self._tokenizer.decode_bytes(ids))

    def flush(self) -> str:
        """Whatever is held back, decoded with the error handler (end of the stream)."""
        return self._decoder.decode(b"", final=True)


def _post_processor_arg(value: Any, vocab: Vocab) -> Any:
    """A PostProcessor, None, or its JSON (cybpe's native format and pickles keep the JSON),
    read against ``vocab``."""
    from cybpe.formats.hf_post import PostProcessor, read_post_processor

    if value is None or isinstance(value, PostProcessor):
        return value
    if isinstance(value, dict):
        try:
            return read_post_processor("post_processor", value, vocab.n_vocab)
        except FormatError as exc:
            raise InvalidParameterError(str(exc)) from None
    raise ParameterTypeError(f"post_processor must be a PostProcessor, its JSON or None, not {describe(value)}")


def _settings_arg(value: Any) -> Any:
    from cybpe.formats.transformers_dir import TransformersSettings

    if value is None:
        return TransformersSettings()
    if isinstance(value, TransformersSettings):
        import copy

        return copy.deepcopy(value)  # a tokenizer's own (its setters change it)
    if isinstance(value, dict):
        try:
            return TransformersSettings.from_json(value, "transformers_settings")
        except FormatError as exc:
            raise InvalidParameterError(str(exc)) from None
    raise ParameterTypeError(f"transformers_settings must be a TransformersSettings, a dict or None, "
                             f"not {describe(value)}")


def _clean_up_tokenization(text: str) -> str:
    """transformers' ``clean_up_tokenization``."""
    return (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
            .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m").replace(" 's", "'s")
            .replace(" 've", "'ve").replace(" 're", "'re"))
