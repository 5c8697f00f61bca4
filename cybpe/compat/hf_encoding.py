"""What the patched backend returns: :class:`Encoding`, shaped like ``tokenizers.Encoding``, and
the steps HF tokenizers runs around the post-processor (truncation, padding), redone in Python
over the ids cybpe encodes; the post-processors are in :mod:`cybpe.compat.hf_postprocessors`.

The steps follow the Rust code of HF tokenizers (0.2x: ``tokenizer/encoding.rs``,
``utils/truncation.rs``, ``utils/padding.rs``) one operation at a time, so that every field
comes out as HF's: ``truncate`` (with stride: the overflowing windows), ``merge_with`` (which
combines the overflowing windows of both sides), ``pad`` (which pads the overflowing windows
too). ``tests/compat/test_transformers_patch*.py`` checks the result against the unpatched
tokenizer field by field.

Two levels of detail, so that the common call pays for what it reads:

* *light*: ``ids``, ``type_ids``, ``special_tokens_mask``, ``attention_mask``, the overflowing
  windows and the sequence ranges: what transformers reads from every call.
* *full*: also ``tokens``, ``offsets`` and ``word_ids``, which need each token's string, its
  character span and its pre-tokenizer piece. An :class:`Encoding` made light computes them on
  first use by running the same steps again at full detail for its call (the source text and
  the settings of the call are kept with it), and fills them in for itself and for every
  window of its call.

The common call (texts without truncation, padding or a pair) gets leaner encodings still: only
their ``ids`` list is theirs. ``type_ids``, the two masks and the sequence ranges follow from
the number of ids and the post-processor's template, so a *layout* shared by the call's
encodings (:class:`cybpe.compat.hf_postprocessors.SingleLayout`) makes them when they are
read; the filler that computes the full fields is shared by the call too, and the encoding keeps
its own text. An encoding is then two objects the collector tracks (itself and its ids), as
HF's are, instead of a dozen: the collector's passes over a batch's encodings cost more than
their encoding did.

Thread safety: an :class:`Encoding` is filled in at most once more (idempotently) after it is
returned; reading it from several threads is safe.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from cybpe.errors import InvalidParameterError
from cybpe.formats.hf_truncation import kept_lengths


class Unsupported(Exception):
    """This call (or tokenizer) is not one the patched path reproduces: HF's engine runs it."""


class Encoding:
    """One encoded input, as ``tokenizers.Encoding``: ``ids``, ``type_ids``, ``tokens``,
    ``offsets``, ``word_ids`` (``words``), ``sequence_ids``, ``special_tokens_mask``,
    ``attention_mask``, ``overflowing``, ``n_sequences`` and the conversions
    (``char_to_token``, ``token_to_chars``, ``word_to_tokens``...), with HF's values.

    Thread safety: every read (the properties, the conversions, pickling, copies) may run in
    several threads at once; the lazy fields are filled in once, under a lock. ``pad`` and
    ``truncate`` change it in place: one thread at a time, with no reader."""

    __slots__ = ("_ids", "_type_ids", "_tokens", "_words", "_offsets", "_special", "_attention",
                 "_overflowing", "_ranges", "_filler", "_layout", "_source", "__weakref__")

    def __init__(self) -> None:
        self._ids: list = []
        self._type_ids: Optional[list] = []
        self._tokens: Optional[list] = []
        self._words: Optional[list] = []
        self._offsets: Optional[list] = []
        self._special: Optional[list] = []
        self._attention: Optional[list] = []
        self._overflowing: list = []
        self._ranges: dict = {}
        #: None when every field is here; else a callable that, given this encoding, fills in
        #: the full fields (it holds no reference to the encoding: no cycle for the collector)
        self._filler: Optional[Callable[["Encoding"], None]] = None
        #: None, or what makes ``type_ids``, the masks and the ranges, which are then None
        #: (``layout.type_ids(n)``, ``.special(n)``, ``.attention(n)``, ``.ranges(n)``)
        self._layout: Any = None
        #: the input the filler encodes again: a str, a (str, str) pair, or None
        self._source: Any = None

    # -- building (the Rust code's constructors) ---------------------------------------------
    @classmethod
    def _make(cls, ids: list, type_ids: Optional[list], tokens: Optional[list], words: Optional[list],
              offsets: Optional[list], special: Optional[list], attention: Optional[list]) -> "Encoding":
        e = cls.__new__(cls)
        e._ids, e._type_ids, e._tokens, e._words = ids, type_ids, tokens, words
        e._offsets, e._special, e._attention = offsets, special, attention
        e._overflowing, e._ranges, e._filler = [], {}, None
        e._layout = e._source = None
        return e

    @classmethod
    def _empty(cls, full: bool) -> "Encoding":
        return cls._make([], [], [] if full else None, [] if full else None, [] if full else None, [], [])

    @property
    def _full(self) -> bool:
        return self._tokens is not None

    def _clone(self) -> "Encoding":
        e = Encoding._make(list(self._ids), _copy(self._type_ids), _copy(self._tokens), _copy(self._words),
                           _copy(self._offsets), _copy(self._special), _copy(self._attention))
        e._overflowing = [o._clone() for o in self._overflowing]
        e._ranges = dict(self._ranges)
        return e

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"Encoding(num_tokens={len(self._ids)}, attributes=[ids, type_ids, tokens, offsets, " \
               f"attention_mask, special_tokens_mask, overflowing])"

    # -- the Rust operations -------------------------------------------------------------------
    def set_sequence_id(self, sequence_id: int) -> None:
        """All tokens belong to sequence ``sequence_id``."""
        self._ranges[sequence_id] = (0, len(self._ids))

    def _set_type_ids(self, type_id: int) -> None:
        if self._type_ids is not None:
            self._type_ids = [type_id] * len(self._ids)

    def _truncate(self, max_len: int, stride: int, direction: str) -> None:
        """``Encoding::truncate``: keep the first window, the others become ``overflowing``."""
        n = len(self._ids)
        if max_len >= n:
            return
        if max_len == 0:
            moved = Encoding._make(self._ids, self._type_ids, self._tokens, self._words, self._offsets,
                                   self._special, self._attention)
            moved._overflowing, moved._ranges = self._overflowing, self._ranges
            full = self._full
            self._ids, self._type_ids, self._special, self._attention = [], [], [], []
            self._tokens = [] if full else None
            self._words = [] if full else None
            self._offsets = [] if full else None
            self._ranges = {}
            self._overflowing = [moved]
            return
        if stride >= max_len:
            raise Unsupported("stride >= max_length (HF panics)")
        self._ranges = {}
        step = max_len - stride
        parts: list[tuple[int, int]] = []
        if direction == "right":
            for start in range(0, n, step):
                stop = min(start + max_len, n)
                parts.append((start, stop))
                if stop == n:
                    break
        else:
            for last in range(n - 1, -1, -step):
                stop = last + 1
                start = max(0, stop - max_len)
                parts.append((start, stop))
                if start == 0:
                    break

        def window(a: int, b: int) -> Encoding:
            return Encoding._make(self._ids[a:b], _cut(self._type_ids, a, b), _cut(self._tokens, a, b),
                                  _cut(self._words, a, b), _cut(self._offsets, a, b),
                                  _cut(self._special, a, b), _cut(self._attention, a, b))
        first = window(*parts[0])
        overflowing = [window(a, b) for a, b in parts[1:]]
        self._ids, self._type_ids, self._tokens = first._ids, first._type_ids, first._tokens
        self._words, self._offsets = first._words, first._offsets
        self._special, self._attention = first._special, first._attention
        self._overflowing = overflowing

    def _merge_with(self, pair: "Encoding", growing_offsets: bool) -> None:
        """``Encoding::merge_with``, the overflowing windows combined as HF combines them."""
        overflowings = []
        for own in self._overflowing:
            combined = own._clone()
            combined._merge_with(pair._clone(), growing_offsets)
            overflowings.append(combined)
            for other in pair._overflowing:
                combined = own._clone()
                combined._merge_with(other._clone(), growing_offsets)
                overflowings.append(combined)
        for other in pair._overflowing:
            combined = self._clone()
            combined._merge_with(other._clone(), growing_offsets)
            overflowings.append(combined)
        before = len(self._ids)
        for seq, (a, b) in pair._ranges.items():
            self._ranges[seq] = (before + a, before + b)
        self._ids.extend(pair._ids)
        _extend(self, "_type_ids", pair._type_ids)
        _extend(self, "_tokens", pair._tokens)
        _extend(self, "_words", pair._words)
        if self._offsets is not None and pair._offsets is not None:
            shift = self._offsets[-1][1] if growing_offsets and self._offsets else 0
            self._offsets.extend([(a + shift, b + shift) for a, b in pair._offsets] if shift else pair._offsets)
        else:
            self._offsets = None
        _extend(self, "_special", pair._special)
        _extend(self, "_attention", pair._attention)
        self._overflowing = overflowings

    def _pad(self, target: int, pad_id: int, pad_type_id: int, pad_token: str, direction: str) -> None:
        """``Encoding::pad``: the overflowing windows first, then this one."""
        for o in self._overflowing:
            o._pad(target, pad_id, pad_type_id, pad_token, direction)
        n = len(self._ids)
        if n >= target:
            return
        k = target - n
        if direction == "left":
            self._ids = [pad_id] * k + self._ids
            if self._type_ids is not None:
                self._type_ids = [pad_type_id] * k + self._type_ids
            if self._tokens is not None:
                self._tokens = [pad_token] * k + self._tokens
            if self._words is not None:
                self._words = [None] * k + self._words
            if self._attention is not None:
                self._attention = [0] * k + self._attention
            if self._special is not None:
                self._special = [1] * k + self._special
            if self._offsets is not None:
                self._offsets = [(0, 0)] * k + self._offsets
            self._ranges = {seq: (a + k, b + k) for seq, (a, b) in self._ranges.items()}
        else:
            self._ids.extend([pad_id] * k)
            if self._type_ids is not None:
                self._type_ids.extend([pad_type_id] * k)
            if self._tokens is not None:
                self._tokens.extend([pad_token] * k)
            if self._words is not None:
                self._words.extend([None] * k)
            if self._attention is not None:
                self._attention.extend([0] * k)
            if self._special is not None:
                self._special.extend([1] * k)
            if self._offsets is not None:
                self._offsets.extend([(0, 0)] * k)

    # -- lazy fields ---------------------------------------------------------------------------
    def _need_full(self) -> None:
        filler = self._filler
        if filler is not None:
            filler(self)

    # -- the tokenizers.Encoding surface -------------------------------------------------------
    @property
    def ids(self) -> list:
        """The token ids."""
        return list(self._ids)

    # A field that a layout makes is read as: the layout first, then the field. A filler sets
    # the fields before it drops the layout, so a None field with no layout read before it
    # means one the filler computes, never one it is halfway through setting.
    @property
    def type_ids(self) -> list:
        """The type id of each token (the template's, or the sequence's index)."""
        layout = self._layout
        found = self._type_ids
        if found is None:
            if layout is not None:
                return layout.type_ids(len(self._ids))
            self._need_full()
            found = self._type_ids
        return list(found)  # type: ignore[arg-type]

    @property
    def tokens(self) -> list:
        """Each token's string (HF's ByteLevel string; an added token's content)."""
        self._need_full()
        return list(self._tokens)  # type: ignore[arg-type]

    @property
    def offsets(self) -> list:
        """Each token's ``(start, end)`` character span in its input text."""
        self._need_full()
        return list(self._offsets)  # type: ignore[arg-type]

    @property
    def word_ids(self) -> list:
        """Each token's pre-tokenizer piece index (None for special and padding tokens)."""
        self._need_full()
        return list(self._words)  # type: ignore[arg-type]

    @property
    def words(self) -> list:
        """The same as :attr:`word_ids` (HF's deprecated name)."""
        return self.word_ids

    @property
    def special_tokens_mask(self) -> list:
        """1 for the tokens a post-processor or padding added, else 0."""
        layout = self._layout
        found = self._special
        if found is None:
            if layout is not None:
                return layout.special(len(self._ids))
            self._need_full()
            found = self._special
        return list(found)  # type: ignore[arg-type]

    @property
    def attention_mask(self) -> list:
        """0 for padding, else 1."""
        layout = self._layout
        found = self._attention
        if found is None:
            if layout is not None:
                return layout.attention(len(self._ids))
            self._need_full()
            found = self._attention
        return list(found)  # type: ignore[arg-type]

    @property
    def overflowing(self) -> list:
        """The windows that truncation cut off (with ``stride`` tokens of overlap)."""
        return list(self._overflowing)

    def _sequence_ranges(self) -> dict:
        """{sequence: (first token, last token + 1)}, read as the other fields a layout makes."""
        layout = self._layout
        ranges = self._ranges
        return layout.ranges(len(self._ids)) if ranges is None else ranges

    @property
    def n_sequences(self) -> int:
        """How many input sequences this encoding holds (1 or 2)."""
        if self._ranges is None:  # a layout's encoding, of one text
            return 1
        return len(self._ranges) or 1

    def _range(self, sequence_id: int) -> tuple[int, int]:
        return self._sequence_ranges().get(sequence_id, (0, len(self._ids)))

    @property
    def sequence_ids(self) -> list:
        """Each token's sequence index (None for tokens outside every sequence)."""
        out: list = [None] * len(self._ids)
        for seq in range(self.n_sequences):
            a, b = self._range(seq)
            out[a:b] = [seq] * (b - a)
        return out[:len(self._ids)]

    def token_to_sequence(self, token_index: int) -> Optional[int]:
        """The sequence holding token ``token_index``."""
        if token_index > len(self._ids):
            return None
        ranges = self._sequence_ranges()
        if not ranges:
            return 0
        for seq, (a, b) in ranges.items():
            if a <= token_index < b:
                return seq
        return None

    def token_to_chars(self, token_index: int) -> Optional[tuple[int, int]]:
        """The character span of token ``token_index``."""
        self._need_full()
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self._offsets):  # type: ignore[arg-type]
            return None
        return self._offsets[token_index]  # type: ignore[index]

    def token_to_word(self, token_index: int) -> Optional[int]:
        """The word (pre-tokenizer piece) holding token ``token_index``."""
        self._need_full()
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self._words):  # type: ignore[arg-type]
            return None
        return self._words[token_index]  # type: ignore[index]

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> Optional[tuple[int, int]]:
        """``(first token, last token + 1)`` of word ``word_index`` in sequence ``sequence_index``."""
        self._need_full()
        a, b = self._range(sequence_index)
        words = self._words[a:b] if a <= len(self._words) and b <= len(self._words) else None  # type: ignore[index,arg-type]
        if words is None:
            return None
        start = end = None
        for i, w in enumerate(words):
            if not _word_le(w, word_index):
                break
            if w == word_index:
                if start is None or i < start:
                    start = i
                if end is None or i >= end:
                    end = i + 1
        if start is None or end is None:
            return None
        return (a + start, a + end)

    def word_to_chars(self, word_index: int, sequence_index: int = 0) -> Optional[tuple[int, int]]:
        """The character span of word ``word_index``."""
        found = self.word_to_tokens(word_index, sequence_index)
        if found is None or found[1] == 0:
            return None
        return (self._offsets[found[0]][0], self._offsets[found[1] - 1][1])  # type: ignore[index]

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> Optional[int]:
        """The token covering character ``char_pos`` of sequence ``sequence_index``."""
        self._need_full()
        a, b = self._range(sequence_index)
        if b > len(self._offsets):  # type: ignore[arg-type]
            return None
        for i, (s, e) in enumerate(self._offsets[a:b]):  # type: ignore[index]
            if s <= char_pos < e:
                return a + i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> Optional[int]:
        """The word covering character ``char_pos``."""
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    def pad(self, length: int, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
            pad_token: str = "[PAD]") -> None:
        """Pad to ``length`` tokens (the overflowing windows too)."""
        if direction not in ("left", "right"):
            raise ValueError(f"Invalid padding direction: {direction}")
        self._need_full()
        self._pad(length, pad_id, pad_type_id, pad_token, direction)

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Cut to ``max_length`` tokens; the rest becomes ``overflowing`` windows."""
        if direction not in ("left", "right"):
            raise ValueError(f"Invalid truncation direction value : {direction}")
        if stride >= max_length and max_length < len(self._ids) and max_length:
            raise ValueError(f"stride ({stride}) must be strictly less than max_length ({max_length})")
        self._need_full()
        self._truncate(max_length, stride, direction)

    @staticmethod
    def merge(encodings: list, growing_offsets: bool = True) -> "Encoding":
        """The encodings one after the other (``tokenizers.Encoding.merge``)."""
        out = Encoding()
        for e in encodings:
            e._need_full()
            out._merge_with(e._clone(), growing_offsets)
        return out

    # -- pickling and copies: always the full fields -------------------------------------------
    def __reduce__(self) -> tuple:
        self._need_full()
        return (_rebuild, (self._ids, self._type_ids, self._tokens, self._words, self._offsets,
                           self._special, self._attention, self._overflowing, self._ranges))

    def __copy__(self) -> "Encoding":
        self._need_full()
        return self._clone()

    def __deepcopy__(self, memo: dict) -> "Encoding":
        self._need_full()
        return self._clone()


def _rebuild(ids, type_ids, tokens, words, offsets, special, attention, overflowing, ranges) -> Encoding:
    e = Encoding._make(ids, type_ids, tokens, words, offsets, special, attention)
    e._overflowing, e._ranges = list(overflowing), dict(ranges)
    return e


def _word_le(w: Optional[int], word: int) -> bool:
    """Rust's ``Option<u32> <= Some(word)``: None sorts first."""
    return w is None or w <= word


def _copy(x: Optional[list]) -> Optional[list]:
    return None if x is None else list(x)


def _cut(x: Optional[list], a: int, b: int) -> Optional[list]:
    return None if x is None else x[a:b]


def _extend(e: Encoding, name: str, other: Optional[list]) -> None:
    mine = getattr(e, name)
    if mine is None or other is None:
        setattr(e, name, None)
    else:
        mine.extend(other)


def fill_from(light: Encoding, full: Encoding) -> None:
    """Copy the full fields of ``full`` (the same call at full detail) into ``light`` and its
    overflowing windows, which have the same shape."""
    if light._ids != full._ids or len(light._overflowing) != len(full._overflowing):
        raise RuntimeError("cybpe: the full-detail encoding differs from the returned one (a bug)")
    for a, b in zip(light._overflowing, full._overflowing):
        fill_from(a, b)
    # the full fields first; the layout and _filler last, so that a reader never sees None
    # after they are gone (the properties' reading order)
    light._tokens, light._words, light._offsets = full._tokens, full._words, full._offsets
    light._type_ids, light._special, light._attention = full._type_ids, full._special, full._attention
    if light._ranges is None:
        light._ranges = full._ranges
    light._layout = None
    light._filler = None


# ----------------------------------------------------------------------------------- the steps


def truncate_encodings(a: Encoding, b: Optional[Encoding], max_length: int, stride: int, strategy: str,
                       direction: str) -> None:
    """``truncate_encodings`` (in place): each sequence cut to the length
    :func:`cybpe.formats.hf_truncation.kept_lengths` gives, the rest into overflowing windows
    (:class:`Unsupported` where HF raises)."""
    try:
        n1, n2 = kept_lengths(len(a._ids), None if b is None else len(b._ids), max_length, strategy)
    except InvalidParameterError as exc:
        raise Unsupported(f"{exc} (HF raises)") from None
    a._truncate(n1, stride, direction)
    if b is not None:
        b._truncate(n2, stride, direction)  # type: ignore[arg-type]


def pad_encodings(encodings: list, padding: dict) -> Optional[int]:
    """``pad_encodings`` (in place); returns the length padded to (None for no encodings)."""
    if not encodings:
        return None
    length = padding.get("length")
    target = max(len(e._ids) for e in encodings) if length is None else int(length)
    multiple = padding.get("pad_to_multiple_of")
    if multiple and target % multiple:
        target += multiple - target % multiple
    direction = padding.get("direction", "right")
    for e in encodings:
        e._pad(target, padding["pad_id"], padding["pad_type_id"], padding["pad_token"], direction)
    return target
