"""HF ``tokenizer.json`` post-processors: read, applied as HF tokenizers applies them, written back.

A post-processor runs after a text (or a pair of texts) is encoded. transformers calls it from
``tokenizer(text, text_pair, add_special_tokens=True)``; cybpe does too, in the
transformers-shaped ``Tokenizer.__call__`` (cybpe/_tokenizer_hf.py). The tiktoken-shaped
``encode`` never adds tokens: the post-processor is kept, not applied there.

The forms read (anything else is a :class:`~cybpe.errors.FormatError` at load, never ignored):

* ``null``: nothing added.
* ``ByteLevel``: nothing added; with ``trim_offsets`` it moves each token's offsets past its
  leading and trailing spaces (the first token keeps one leading space when
  ``add_prefix_space``), as HF tokenizers' ``process_offsets``.
* ``TemplateProcessing``: ``single`` and ``pair`` lists of ``{"SpecialToken": {"id", "type_id"}}``
  and ``{"Sequence": {"id": "A" | "B", "type_id"}}``; ``special_tokens`` give each special
  piece's ids. Llama 3's BOS (``<|begin_of_text|> $A``) is one.
* ``RobertaProcessing`` / ``BertProcessing``: read as the templates they stand for
  (``cls $A sep`` / ``cls $A sep sep $B sep``; BERT's ``cls $A sep $B:1 sep:1``), with
  Roberta's offset trimming.
* ``Sequence`` of those (at most one that adds tokens; trimming before it).

The document is written back as it was read (:attr:`PostProcessor.spec`), so a save keeps it
byte for byte in JSON terms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from cybpe.errors import FormatError, InvalidParameterError, describe

#: A template item: ("special", name, type_id) or ("sequence", "A" | "B", type_id).
Item = tuple[str, str, int]


@dataclass(frozen=True)
class PostProcessor:
    """A parsed post-processor (see the module docstring). ``spec``: the JSON as read."""

    spec: Any
    single: tuple[Item, ...] = (("sequence", "A", 0),)
    pair: tuple[Item, ...] = (("sequence", "A", 0), ("sequence", "B", 1))
    #: special piece name -> the ids it inserts
    pieces: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: None (offsets untouched), or whether the first token keeps one leading space
    trim: Optional[bool] = None
    #: special piece name -> the token strings it inserts (HF's ``tokens``), or None where the
    #: file does not give one string per id
    piece_tokens: Mapping[str, Optional[tuple[str, ...]]] = field(default_factory=dict)

    def added(self, is_pair: bool) -> int:
        """How many ids ``add_special_tokens=True`` adds (HF's ``num_special_tokens_to_add``)."""
        return sum(len(self.pieces[name]) for kind, name, _ in (self.pair if is_pair else self.single)
                   if kind == "special")

    def adds_tokens(self) -> bool:
        return bool(self.added(False) or self.added(True))

    def apply(self, first: list[int], second: Optional[list[int]], add_special_tokens: bool,
              first_offsets: Optional[list[tuple[int, int]]] = None,
              second_offsets: Optional[list[tuple[int, int]]] = None) -> tuple[list[int], list[int], list[int], list[tuple[int, int]]]:
        """``(ids, type_ids, special_mask, offsets)`` of one sequence or a pair, as HF's
        ``post_process``: the template's special pieces when ``add_special_tokens`` (offsets
        (0, 0)), each sequence with the template's type id. ``*_offsets`` are (trimmed here
        when the processor trims); None gives empty offsets."""
        template = self.pair if second is not None else self.single
        seqs = {"A": (first, first_offsets), "B": (second, second_offsets)}
        ids: list[int] = []
        types: list[int] = []
        mask: list[int] = []
        offsets: list[tuple[int, int]] = []
        for kind, name, type_id in template:
            if kind == "special":
                if not add_special_tokens:
                    continue
                extra = self.pieces[name]
                ids += extra
                types += [type_id] * len(extra)
                mask += [1] * len(extra)
                offsets += [(0, 0)] * len(extra)
            else:
                seq, offs = seqs[name]
                assert seq is not None
                ids += seq
                types += [type_id] * len(seq)
                mask += [0] * len(seq)
                if offs is not None:
                    offsets += offs
        return ids, types, mask, offsets


#: What HF's ByteLevel offset trimming counts as a space: ``char::is_whitespace`` (Python's
#: ``str.isspace`` also counts U+001C..U+001F, so the set is written out), and ``Ġ``, the
#: byte-level character of the space byte.
_TRIMMED = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
            "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u0120")


def trim_offsets(tokens: Sequence[str], offsets: list[tuple[int, int]], keep_first_space: bool) -> list[tuple[int, int]]:
    """HF's ByteLevel ``process_offsets``: each token's span moved past its leading and
    trailing spaces; the first token (or one at offset 0) keeps a single leading space when
    ``keep_first_space`` (HF's ``add_prefix_space``). ``tokens``: HF's token strings (the
    byte-level string of a vocabulary token, where only the space byte becomes a space, ``Ġ``;
    an added token's content, whose whitespace counts too). Returns ``offsets`` itself when
    nothing moves, else a new list."""
    out = offsets
    for i, (token, (start, end)) in enumerate(zip(tokens, offsets)):
        lead = len(token) - len(token.lstrip(_TRIMMED))
        trail = lead if lead == len(token) else len(token) - len(token.rstrip(_TRIMMED))
        if not (lead or trail):
            continue
        if lead:
            if (i == 0 or start == 0) and keep_first_space and lead == 1:
                lead = 0
            start = min(start + lead, end)
        if trail and end >= trail:
            end = max(end - trail, start)
        if out is offsets:
            out = list(offsets)
        out[i] = (start, end)
    return out


# ----------------------------------------------------------------------------------- reading


def _bad(src: str, where: str, value: Any, why: str = "") -> FormatError:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return FormatError(f"{src}: unsupported {where}: {shown}{' (' + why + ')' if why else ''}: cybpe "
                       f"applies null, ByteLevel, TemplateProcessing, RobertaProcessing, "
                       f"BertProcessing and a Sequence of them")


def _type_id(src: str, where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FormatError(f"{src}: {where}.type_id is not a non-negative integer: {describe(value)}")
    return value


def _template(src: str, where: str, items: Any, is_pair: bool) -> tuple[Item, ...]:
    if not isinstance(items, list):
        raise _bad(src, where, items, "not a list")
    out: list[Item] = []
    for k, item in enumerate(items):
        at = f"{where}[{k}]"
        if isinstance(item, dict) and len(item) == 1 and isinstance(item.get("SpecialToken"), dict):
            body = item["SpecialToken"]
            if not isinstance(body.get("id"), str):
                raise _bad(src, at, item)
            out.append(("special", body["id"], _type_id(src, at, body.get("type_id", 0))))
        elif isinstance(item, dict) and len(item) == 1 and isinstance(item.get("Sequence"), dict):
            body = item["Sequence"]
            if body.get("id") not in ("A", "B"):
                raise _bad(src, at, item)
            out.append(("sequence", body["id"], _type_id(src, at, body.get("type_id", 0))))
        else:
            raise _bad(src, at, item)
    names = sorted(name for kind, name, _ in out if kind == "sequence")
    if names != (["A", "B"] if is_pair else ["A"]):
        raise _bad(src, where, items, "a template names $A once" + (" and $B once" if is_pair else ""))
    return tuple(out)


def _pieces(src: str, where: str, value: Any, n_ids: int) -> tuple[dict[str, tuple[int, ...]],
                                                                   dict[str, Optional[tuple[str, ...]]]]:
    """(name -> ids, name -> token strings or None) of a template's ``special_tokens``."""
    if not isinstance(value, dict):
        raise _bad(src, where, value, "not an object")
    out = {}
    strings: dict[str, Optional[tuple[str, ...]]] = {}
    for name, body in value.items():
        ids = body.get("ids") if isinstance(body, dict) else None
        if not isinstance(ids, list) or not ids or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_ids for i in ids):
            raise FormatError(f"{src}: {where}[{name!r}].ids is not a non-empty list of token ids of "
                              f"this vocabulary: {describe(ids)}")
        out[name] = tuple(ids)
        tokens = body.get("tokens")
        strings[name] = (tuple(tokens) if isinstance(tokens, list) and len(tokens) == len(ids)
                         and all(isinstance(t, str) for t in tokens) else None)
    return out, strings


def _pair_token(src: str, where: str, value: Any, n_ids: int) -> tuple[str, int]:
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int) and not isinstance(value[1], bool) and 0 <= value[1] < n_ids):
        return value[0], value[1]
    raise FormatError(f"{src}: {where} is not a [token, id] pair of this vocabulary: {describe(value)}")


def _one(src: str, where: str, spec: Any, n_ids: int) -> PostProcessor:
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "ByteLevel":
        trim = spec.get("trim_offsets", True)
        prefix = spec.get("add_prefix_space", True)
        if not isinstance(trim, bool) or not isinstance(prefix, bool):
            raise _bad(src, where, spec)
        return PostProcessor(spec, trim=bool(prefix) if trim else None)
    if kind == "TemplateProcessing":
        single = _template(src, f"{where}.single", spec.get("single"), False)
        pair = _template(src, f"{where}.pair", spec.get("pair"), True)
        pieces, strings = _pieces(src, f"{where}.special_tokens", spec.get("special_tokens", {}), n_ids)
        for kind_, name, _ in single + pair:
            if kind_ == "special" and name not in pieces:
                raise FormatError(f"{src}: {where}: the template names {name!r}, which its "
                                  f"special_tokens do not give")
        return PostProcessor(spec, single, pair, pieces, piece_tokens=strings)
    if kind in ("RobertaProcessing", "BertProcessing"):
        sep = _pair_token(src, f"{where}.sep", spec.get("sep"), n_ids)
        cls = _pair_token(src, f"{where}.cls", spec.get("cls"), n_ids)
        pieces = {"<cls>": (cls[1],), "<sep>": (sep[1],)}
        strings = {"<cls>": (cls[0],), "<sep>": (sep[0],)}
        c, s = ("special", "<cls>", 0), ("special", "<sep>", 0)
        a, b0, b1 = ("sequence", "A", 0), ("sequence", "B", 0), ("sequence", "B", 1)
        if kind == "BertProcessing":
            return PostProcessor(spec, (c, a, s), (c, a, s, b1, ("special", "<sep>", 1)), pieces,
                                 piece_tokens=strings)
        trim = spec.get("trim_offsets", True)
        prefix = spec.get("add_prefix_space", True)
        if not isinstance(trim, bool) or not isinstance(prefix, bool):
            raise _bad(src, where, spec)
        return PostProcessor(spec, (c, a, s), (c, a, s, s, b0, s), pieces, trim=bool(prefix) if trim else None,
                             piece_tokens=strings)
    raise _bad(src, where, spec)


def read_post_processor(src: str, spec: Any, n_ids: int) -> Optional[PostProcessor]:
    """The post-processor of a ``tokenizer.json`` (``spec``: its ``post_processor`` value);
    ``n_ids``: one more than the largest token id (the special pieces' ids are checked
    against it). None for ``null``; FormatError for what cybpe does not apply."""
    if spec is None:
        return None
    if isinstance(spec, dict) and spec.get("type") == "Sequence":
        items = spec.get("processors")
        if not isinstance(items, list) or not items:
            raise _bad(src, "post_processor", spec)
        parsed = [_one(src, f"post_processor.processors[{k}]", item, n_ids) for k, item in enumerate(items)]
        adding = [k for k, p in enumerate(parsed) if p.adds_tokens()]
        trimming = [k for k, p in enumerate(parsed) if p.trim is not None]
        if len(adding) > 1 or len(trimming) > 1 or (adding and trimming and trimming[0] > adding[0]):
            raise _bad(src, "post_processor", spec, "one processor that adds tokens, trimming before it")
        base = parsed[adding[0]] if adding else parsed[0]
        trim = parsed[trimming[0]].trim if trimming else None
        return PostProcessor(spec, base.single, base.pair, base.pieces, trim, base.piece_tokens)
    return _one(src, "post_processor", spec, n_ids)


def template_for_flags(bos: Optional[tuple[str, int]], eos: Optional[tuple[str, int]]) -> Optional[PostProcessor]:
    """The TemplateProcessing transformers 5 builds from ``add_bos_token`` / ``add_eos_token``
    (``update_post_processor``): ``bos:0 $A:0 eos:0`` and ``... bos:1 $B:1 eos:1``, each part
    only when its flag is on (None for both off)."""
    if bos is None and eos is None:
        return None
    single: list[dict] = []
    pair_tail: list[dict] = []
    pieces: dict[str, Any] = {}
    for type_id, out in ((0, single), (1, pair_tail)):
        if bos is not None:
            out.append({"SpecialToken": {"id": bos[0], "type_id": type_id}})
        out.append({"Sequence": {"id": "A" if type_id == 0 else "B", "type_id": type_id}})
        if eos is not None:
            out.append({"SpecialToken": {"id": eos[0], "type_id": type_id}})
    for token in (bos, eos):
        if token is not None:
            pieces[token[0]] = {"id": token[0], "ids": [token[1]], "tokens": [token[0]]}
    spec = {"type": "TemplateProcessing", "single": single, "pair": single + pair_tail,
            "special_tokens": pieces}
    found = read_post_processor("add_bos_token/add_eos_token", spec, max(p[1] for p in (bos, eos) if p) + 1)
    return found


def same_effect(a: Optional[PostProcessor], b: Optional[PostProcessor]) -> bool:
    """Whether two post-processors add the same ids at the same places (offsets aside)."""
    def shape(p: Optional[PostProcessor], pair: bool) -> list:
        if p is None:
            return ["A", "B"] if pair else ["A"]
        return [p.pieces[name] if kind == "special" else name for kind, name, _ in (p.pair if pair else p.single)]
    return shape(a, False) == shape(b, False) and shape(a, True) == shape(b, True)


def check_post_processor(value: Any) -> Optional[PostProcessor]:
    if value is None or isinstance(value, PostProcessor):
        return value
    raise InvalidParameterError(f"post_processor must be a PostProcessor or None, not {describe(value)}")
