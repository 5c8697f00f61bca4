"""HF's post-processors run over :class:`~cybpe.compat.hf_encoding.Encoding`, as the patched
backend needs them: with the overflowing windows, type ids and sequence ranges that HF's Rust
code gives (``processors/bytelevel.rs``, ``template.rs``, ``sequence.rs``, and the trait's
``process``, which merges the pieces with ``Encoding::merge_with``).

What a post-processor does is read once, by :func:`cybpe.formats.hf_post.read_post_processor`
(the same reader as ``cybpe.load``'s, with its offset trimming, :func:`~cybpe.formats.hf_post.trim_offsets`):
``ByteLevel``, ``TemplateProcessing`` and a ``Sequence`` of them, flattened into one template
and one trimming rule. Anything else it reads (``RobertaProcessing``, ``BertProcessing``) or
refuses raises :class:`~cybpe.compat.hf_encoding.Unsupported`, and the call runs on HF's
engine.

Thread safety: a parsed post-processor is read-only; :func:`process` changes only the
encodings it is given, so one post-processor serves any number of threads.
"""

from __future__ import annotations

import json
from typing import Callable, Optional

from cybpe.compat.hf_encoding import Encoding, Unsupported
from cybpe.errors import FormatError
from cybpe.formats.hf_post import PostProcessor, read_post_processor, trim_offsets

#: The kinds this module runs (with a Sequence of them).
_RUN = frozenset({"ByteLevel", "TemplateProcessing"})
#: HF does not check a template's ids against the vocabulary: neither does the patched path.
_ANY_ID = 1 << 62


def parse_post_processor(state: bytes) -> Optional[PostProcessor]:
    """The post-processor of a live post-processor's ``__getstate__()`` (None for none);
    :class:`Unsupported` for what this module does not run."""
    spec = json.loads(state)
    if spec is None:
        return None
    kind = spec.get("type") if isinstance(spec, dict) else None
    items = spec.get("processors") if kind == "Sequence" else [spec]
    for item in items if isinstance(items, list) else [None]:
        found = item.get("type") if isinstance(item, dict) else None
        if found not in _RUN:
            raise Unsupported(f"post-processor {found!r}")
    try:
        parsed = read_post_processor("the post-processor", spec, _ANY_ID)
    except FormatError as exc:
        raise Unsupported(str(exc)) from None
    if parsed is not None and any(t is None for t in parsed.piece_tokens.values()):
        raise Unsupported("a template special token without one token string per id")
    return parsed


def _trim(e: Encoding, keep_first_space: bool) -> None:
    """ByteLevel's offset trimming of one encoding (full detail only: it reads the tokens)."""
    if e._tokens is not None and e._offsets is not None:
        e._offsets = trim_offsets(e._tokens, e._offsets, keep_first_space)


def process(pp: PostProcessor, encoding: Encoding, pair: Optional[Encoding], add_special_tokens: bool) -> Encoding:
    """The Rust trait's ``process``: sequence ids and type ids set, the offsets trimmed (when
    the post-processor trims), the template applied (``apply_template``), the pieces merged."""
    encodings = [encoding] if pair is None else [encoding, pair]
    for i, e in enumerate(encodings):
        e.set_sequence_id(i)
        for o in e._overflowing:
            o.set_sequence_id(i)
        e._set_type_ids(i)
    if pp.trim is not None:
        for e in encodings:
            _trim(e, pp.trim)
            for o in e._overflowing:
                _trim(o, pp.trim)
    full = encoding._full
    pieces = []
    for kind, name, type_id in (pp.single if pair is None else pp.pair):
        if kind == "sequence":
            i = 0 if name == "A" else 1
            e = encodings[i]
            e._set_type_ids(type_id)
            e.set_sequence_id(i)
            pieces.append(e._clone())
        elif add_special_tokens:
            ids, tokens = pp.pieces[name], pp.piece_tokens[name]
            n = len(ids)
            pieces.append(Encoding._make(list(ids), [type_id] * n, list(tokens) if full else None,  # type: ignore[arg-type]
                                         [None] * n if full else None, [(0, 0)] * n if full else None,
                                         [1] * n, [1] * n))
    if len(pieces) == 1:  # merging one encoding into an empty one gives it back unchanged
        return pieces[0]
    out = Encoding._empty(full)
    for e in pieces:
        out._merge_with(e, False)
    return out


class SingleLayout:
    """Where the ids of a text go in what the post-processor (or none) makes of one text, with
    no truncation or padding: the template's ids before and after it. A call's light encodings
    share it, holding only their ids (:meth:`encoding`); it makes the fields that follow from
    their number (``n``, the template's ids included) when they are read.

    Thread safety: read-only once made."""

    __slots__ = ("before", "after", "before_types", "after_types", "type_id", "has_ranges")

    def __init__(self, before: list, after: list, before_types: list, after_types: list, type_id: int,
                 has_ranges: bool) -> None:
        self.before, self.after = before, after
        self.before_types, self.after_types = before_types, after_types
        self.type_id, self.has_ranges = type_id, has_ranges

    @classmethod
    def of(cls, pp: Optional[PostProcessor], add_special_tokens: bool) -> Optional["SingleLayout"]:
        """The layout of ``pp``'s single template, or None for a template without exactly one
        sequence (those calls take the general path, :func:`process`)."""
        if pp is None:
            return cls([], [], [], [], 0, False)
        kinds = [kind for kind, _, _ in pp.single]
        if kinds.count("sequence") != 1:
            return None
        before: list = []
        after: list = []
        before_types: list = []
        after_types: list = []
        type_id = 0
        side, types = before, before_types
        for kind, name, piece_type in pp.single:
            if kind == "sequence":
                type_id = piece_type
                side, types = after, after_types
            elif add_special_tokens:
                extra = pp.pieces[name]
                side += extra
                types += [piece_type] * len(extra)
        return cls(before, after, before_types, after_types, type_id, True)

    def encoding(self, ids: list, source: str, filler: Callable) -> Encoding:
        """The light encoding of a text whose ids are ``ids`` (a list no one else holds: the
        template's ids are added to it, and it becomes the encoding's)."""
        e = Encoding.__new__(Encoding)  # (Encoding._make, without its call and lists)
        e._type_ids = e._special = e._attention = e._ranges = None  # type: ignore[assignment]
        e._tokens = e._words = e._offsets = None
        e._overflowing = ()  # type: ignore[assignment]  # never appended to: read, or replaced
        if self.before:  # ids is the engine's new list: moved up in place, not copied item by item
            ids[0:0] = self.before
        if self.after:
            ids += self.after
        e._ids = ids
        e._layout, e._source, e._filler = self, source, filler
        return e

    def _text_length(self, n: int) -> int:
        return n - len(self.before) - len(self.after)

    def type_ids(self, n: int) -> list:
        m = self._text_length(n)
        if not (self.before or self.after):
            return [self.type_id] * m
        return [*self.before_types, *[self.type_id] * m, *self.after_types]

    def special(self, n: int) -> list:
        m = self._text_length(n)
        if not (self.before or self.after):
            return [0] * m
        return [*[1] * len(self.before), *[0] * m, *[1] * len(self.after)]

    def attention(self, n: int) -> list:
        return [1] * n

    def ranges(self, n: int) -> dict:
        return {0: (len(self.before), n - len(self.after))} if self.has_ranges else {}


def default_process(encodings: list) -> Encoding:
    """What HF does without a post-processor."""
    if len(encodings) == 1:
        return encodings[0]
    out = Encoding._empty(encodings[0]._full)
    for i, e in enumerate(encodings):
        e.set_sequence_id(i)
        out._merge_with(e, False)
    return out
