"""HF's post-processors, as the patched backend runs them over :class:`~cybpe.compat.hf_encoding.Encoding`:
``ByteLevel`` (offset trimming), ``TemplateProcessing`` (special tokens around and between the
sequences) and a ``Sequence`` of them, each following the Rust code of HF tokenizers
(``processors/bytelevel.rs``, ``template.rs``, ``sequence.rs``), built from the live
post-processor's JSON state. Any other post-processor raises
:class:`~cybpe.compat.hf_encoding.Unsupported` (the call then runs on HF's engine).

Thread safety: a parsed post-processor is read-only; ``process`` changes only the encodings
it is given, so one post-processor serves any number of threads.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from cybpe.compat.hf_encoding import Encoding, Unsupported

#: post-processor's offset trimming uses; Python's ``str.isspace`` also counts U+001C..U+001F.
_RUST_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
#: The ByteLevel character standing for the byte of a space (``Ġ``).
_BYTELEVEL_SPACE = "\u0120"
_TRIMMED = _RUST_WHITESPACE | {_BYTELEVEL_SPACE}


class PostProcessor:
    """One of HF's post-processors, as the patched path runs it (``process_encodings`` and
    ``added_tokens``); ``process`` is the Rust trait's default method."""

    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def process_encodings(self, encodings: list, add_special_tokens: bool) -> list:
        raise NotImplementedError

    def process(self, encoding: Encoding, pair: Optional[Encoding], add_special_tokens: bool) -> Encoding:
        encodings = [encoding] if pair is None else [encoding, pair]
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            for o in e._overflowing:
                o.set_sequence_id(i)
            e._set_type_ids(i)
        processed = self.process_encodings(encodings, add_special_tokens)
        if len(processed) == 1:  # merging one encoding into an empty one gives it back unchanged
            return processed[0]
        out = Encoding._empty(encoding._full)
        for e in processed:
            out._merge_with(e, False)
        return out


class ByteLevelProcessor(PostProcessor):
    """``processors.ByteLevel``: only ``trim_offsets`` changes anything (the offsets)."""

    def __init__(self, trim_offsets: bool, add_prefix_space: bool) -> None:
        self.trim_offsets = trim_offsets
        self.add_prefix_space = add_prefix_space

    def process_encodings(self, encodings: list, add_special_tokens: bool) -> list:
        if self.trim_offsets:
            for e in encodings:
                _trim_offsets(e, self.add_prefix_space)
                for o in e._overflowing:
                    _trim_offsets(o, self.add_prefix_space)
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        return encodings


def _trim_offsets(e: Encoding, add_prefix_space: bool) -> None:
    """``process_offsets`` of the ByteLevel post-processor (full detail only: it reads tokens)."""
    if e._tokens is None or e._offsets is None:
        return
    out = e._offsets
    for i, (token, (start, end)) in enumerate(zip(e._tokens, e._offsets)):
        lead = 0
        for c in token:
            if c not in _TRIMMED:
                break
            lead += 1
        trail = 0
        for c in reversed(token):
            if c not in _TRIMMED:
                break
            trail += 1
        if not (lead or trail):
            continue
        if lead:
            if (i == 0 or start == 0) and add_prefix_space and lead == 1:
                lead = 0
            start = min(start + lead, end)
        if trail and end >= trail:
            end = max(end - trail, start)
        if out is e._offsets:
            out = list(e._offsets)
        out[i] = (start, end)
    e._offsets = out


class TemplateProcessor(PostProcessor):
    """``processors.TemplateProcessing``: special tokens around and between the sequences."""

    def __init__(self, single: list, pair: list, special_tokens: dict, added_single: int, added_pair: int) -> None:
        self.single, self.pair, self.special_tokens = single, pair, special_tokens
        self._added = (added_single, added_pair)

    def added_tokens(self, is_pair: bool) -> int:
        return self._added[1 if is_pair else 0]

    def process_encodings(self, encodings: list, add_special_tokens: bool) -> list:
        if len(encodings) not in (1, 2):
            raise Unsupported("a template over more than two sequences")
        template = self.pair if len(encodings) == 2 else self.single
        full = encodings[0]._full
        out = []
        for piece in template:
            if piece[0] == "seq":
                _, which, type_id = piece
                i = 0 if which == "A" else 1
                if i >= len(encodings):
                    raise Unsupported("a template names a sequence that is not there")
                e = encodings[i]
                e._set_type_ids(type_id)
                e.set_sequence_id(i)
                out.append(e._clone())
            elif add_special_tokens:
                _, name, type_id = piece
                ids, tokens = self.special_tokens[name]
                n = len(ids)
                out.append(Encoding._make(list(ids), [type_id] * n, list(tokens) if full else None,
                                          [None] * n if full else None, [(0, 0)] * n if full else None,
                                          [1] * n, [1] * n))
        return out


class SequenceProcessor(PostProcessor):
    """``processors.Sequence``: each processor's ``process_encodings`` in turn."""

    def __init__(self, processors: list) -> None:
        self.processors = processors

    def added_tokens(self, is_pair: bool) -> int:
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def process_encodings(self, encodings: list, add_special_tokens: bool) -> list:
        for p in self.processors:
            encodings = p.process_encodings(encodings, add_special_tokens)
        return encodings


def default_process(encodings: list) -> Encoding:
    """What HF does without a post-processor."""
    if len(encodings) == 1:
        return encodings[0]
    out = Encoding._empty(encodings[0]._full)
    for i, e in enumerate(encodings):
        e.set_sequence_id(i)
        out._merge_with(e, False)
    return out


def _template(pieces: Any) -> list:
    out = []
    if not isinstance(pieces, list):
        raise Unsupported("a template that is not a list")
    for piece in pieces:
        if not isinstance(piece, dict) or len(piece) != 1:
            raise Unsupported(f"template piece {piece!r}")
        if "Sequence" in piece:
            spec = piece["Sequence"]
            if spec.get("id") not in ("A", "B"):
                raise Unsupported(f"template piece {piece!r}")
            out.append(("seq", spec["id"], int(spec.get("type_id", 0))))
        elif "SpecialToken" in piece:
            spec = piece["SpecialToken"]
            out.append(("special", spec["id"], int(spec.get("type_id", 0))))
        else:
            raise Unsupported(f"template piece {piece!r}")
    return out


def post_processor_from_json(spec: Any) -> Optional[PostProcessor]:
    """The post-processor of a ``post_processor`` JSON object (None for none); anything else
    than ByteLevel, TemplateProcessing and a Sequence of them raises :class:`Unsupported`."""
    if spec is None:
        return None
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "ByteLevel":
        return ByteLevelProcessor(bool(spec.get("trim_offsets", True)), bool(spec.get("add_prefix_space", True)))
    if kind == "TemplateProcessing":
        specials = {}
        for name, token in (spec.get("special_tokens") or {}).items():
            ids, tokens = token.get("ids"), token.get("tokens")
            if not isinstance(ids, list) or not isinstance(tokens, list) or len(ids) != len(tokens):
                raise Unsupported(f"template special token {name!r}")
            specials[name] = ([int(i) for i in ids], [str(t) for t in tokens])
        single, pair = _template(spec.get("single")), _template(spec.get("pair"))
        for piece in single + pair:
            if piece[0] == "special" and piece[1] not in specials:
                raise Unsupported(f"template special token {piece[1]!r} is not defined")

        def count(pieces: list) -> int:
            return sum(len(specials[p[1]][0]) for p in pieces if p[0] == "special")
        return TemplateProcessor(single, pair, specials, count(single), count(pair))
    if kind == "Sequence":
        return SequenceProcessor([_required(post_processor_from_json(p)) for p in spec.get("processors") or []])
    raise Unsupported(f"post-processor {kind!r}")


def _required(p: Optional[PostProcessor]) -> PostProcessor:
    if p is None:
        raise Unsupported("a null post-processor inside a Sequence")
    return p


def parse_post_processor(state: bytes) -> Optional[PostProcessor]:
    """:func:`post_processor_from_json` of a post-processor's ``__getstate__()``."""
    return post_processor_from_json(json.loads(state))
