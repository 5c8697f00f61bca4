"""Hugging Face ``tokenizer.json`` (byte-level BPE only): load into a :class:`Vocab`, and export.

Only files whose encoding cybpe reproduces exactly are accepted: model ``BPE`` over ByteLevel
strings, a pre-tokenizer that is one regex split followed by ``ByteLevel`` (or ``ByteLevel``
with its built-in GPT-2 regex), no prefix space, no text-changing normalizer except NFC. Anything
else is a :class:`FormatError` naming the file and the field.

Export writes merges that make HF's id-pair BPE encode as cybpe does: the vocabulary's own
merges, or, for rank semantics (no merge list, or ``encode_by_rank``), every split of every token
(:func:`cybpe.formats.merges.all_splits_merges`; with ``ignore_merges: true`` this is tiktoken's BPE), and a split pattern rewritten
for Oniguruma (:func:`hf_safe_pattern`). Special tokens become ``added_tokens``.

Speed: ByteLevel strings are converted with ``str.translate`` over whole tokens
(:mod:`cybpe.formats.bytelevel`); the document is one ``json.dumps`` without ``indent`` (the C
encoder), since ``indent`` selects json's slow pure-Python path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from typing import Any, Optional, Union

from cybpe.io.atomic import PathLike, atomic_write_text, checked_path, read_json
from cybpe.formats.bytelevel import bytelevel_to_bytes, bytes_to_bytelevel
from cybpe.formats.hf_post import read_post_processor
from cybpe.formats.oniguruma import PatternSyntaxError, from_oniguruma, to_oniguruma
from cybpe.formats.merges import all_splits_merges, rank_vocab_if_all_splits, resolve_merge
from cybpe.formats.vocab import Vocab
from cybpe.formats.vocab_checks import TokenIndex, bytelevel_tokens, ordinary_strings
from cybpe.errors import ExportError, FormatError, InvalidParameterError, describe

#: The regex HF's ``ByteLevel(use_regex=true)`` splits with: the original GPT-2 pattern.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

SpecialFlags = Union[Mapping[str, bool], Collection[str], None]


def hf_safe_pattern(pattern: str) -> str:
    """``pattern`` (Python ``regex`` syntax) rewritten so that Oniguruma splits identically.

    Chiefly, each possessive interval ``X{m,n}+`` becomes the atomic group ``(?>X{m,n})``
    (Oniguruma would read a nested repeat); ``?+ *+ ++`` stay as they are. Anchors and the
    dot-all flag are translated too (see :mod:`cybpe.formats.oniguruma`).
    """
    try:
        return to_oniguruma(pattern)
    except PatternSyntaxError as exc:
        raise ExportError(f"pattern {pattern!r} cannot be written for Oniguruma exactly: {exc}") from None


# ----------------------------------------------------------------------------------- loading


def _unsupported(src: str, field: str, value: Any) -> FormatError:
    shown = json.dumps(value, ensure_ascii=False)
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return FormatError(f"{src}: unsupported {field}: {shown} (cybpe reads byte-level BPE only)")


def _check_bytelevel(src: str, field: str, spec: dict, use_regex: bool) -> None:
    """A ByteLevel pre-tokenizer with no prefix space and the expected use of its own regex."""
    if spec.get("add_prefix_space", True) is not False:  # HF's default is true
        raise _unsupported(src, f"{field}.add_prefix_space", spec.get("add_prefix_space", True))
    if spec.get("use_regex", True) is not use_regex:
        raise _unsupported(src, f"{field}.use_regex", spec.get("use_regex", True))


def _read_pre_tokenizer(src: str, spec: Any) -> tuple[str, bool]:
    """(Oniguruma pattern, whether text between matches is dropped)."""
    field = "pre_tokenizer"
    if isinstance(spec, dict) and spec.get("type") == "Sequence":
        items = spec.get("pretokenizers")
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            raise _unsupported(src, field, spec)
        if len(items) == 1:
            spec, field = items[0], "pre_tokenizer.pretokenizers[0]"
        elif len(items) == 2 and [x.get("type") for x in items] == ["Split", "ByteLevel"]:
            split = items[0]
            pattern = split.get("pattern")
            if not (isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str)):
                raise _unsupported(src, "pre_tokenizer.pretokenizers[0].pattern", pattern)
            behavior, invert = split.get("behavior"), split.get("invert", False)
            if (behavior, invert) == ("Isolated", False):
                drops = False
            elif (behavior, invert) == ("Removed", True):  # keep only the matches
                drops = True
            else:
                raise _unsupported(
                    src, "pre_tokenizer.pretokenizers[0] behavior/invert", [behavior, invert]
                )
            _check_bytelevel(src, "pre_tokenizer.pretokenizers[1]", items[1], use_regex=False)
            return pattern["Regex"], drops
        else:
            raise _unsupported(src, field, spec)
    if isinstance(spec, dict) and spec.get("type") == "ByteLevel":
        _check_bytelevel(src, field, spec, use_regex=True)
        return GPT2_PATTERN, False
    raise _unsupported(src, field, spec)


def _read_normalizer(src: str, spec: Any) -> Optional[str]:
    """None, or "NFC" (the one normalizer accepted: it only composes characters)."""
    if spec is None:
        return None
    if isinstance(spec, dict) and spec.get("type") == "NFC":
        return "NFC"
    if isinstance(spec, dict) and spec.get("type") == "Sequence":
        parts = spec.get("normalizers")
        if isinstance(parts, list) and len(parts) <= 1:
            return _read_normalizer(src, parts[0]) if parts else None
    raise _unsupported(src, "normalizer", spec)


def _read_model_options(src: str, model: dict) -> bool:
    """Check the BPE options cybpe cannot honour; return ``ignore_merges``."""
    if model.get("type", "BPE") != "BPE":
        raise _unsupported(src, "model.type", model.get("type"))
    if model.get("dropout") not in (None, 0, 0.0):
        raise _unsupported(src, "model.dropout", model["dropout"])
    if model.get("byte_fallback", False):
        raise _unsupported(src, "model.byte_fallback", model["byte_fallback"])
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise _unsupported(src, f"model.{key}", model[key])
    ignore_merges = model.get("ignore_merges", False)
    if not isinstance(ignore_merges, bool):
        raise FormatError(f"{src}: model.ignore_merges is not a boolean")
    return ignore_merges


def _hf_added_ids(src: str, entries: list[tuple[str, int]], vocab: Any) -> dict[str, int]:
    """The id HF tokenizers gives each added token, from ``(content, id in the file)`` in file
    order: HF does not trust ``added_tokens[].id`` (it only logs a warning when it differs).

    Its rule, as tokenizers 0.23 behaves (tests/formats/test_hf_added_round2.py checks it
    against the installed tokenizers on generated files): a token whose content is a key of
    ``model.vocab`` gets that entry's id; the other ("fresh") tokens get ``len(model.vocab)``,
    ``len(model.vocab) + 1``, ... in file order, whatever ids the file gives them. A content
    seen before is skipped (its first id stays).

    cybpe follows that rule where it can: a fresh token's id is HF's (a file saying 130000 where
    HF counts 128256 loads with 128256). It refuses (FormatError) where HF's result is not a
    vocabulary cybpe can hold: an added token that HF maps onto an ordinary token of another
    id, or a fresh id that HF would give to a vocabulary entry too."""
    size = len(vocab) if isinstance(vocab, dict) else 0
    fresh = 0  # tokens numbered so far that are not in model.vocab
    taken = None
    out: dict[str, int] = {}
    for content, file_id in entries:
        if content in out:
            continue
        in_vocab = vocab.get(content) if isinstance(vocab, dict) else None
        if isinstance(in_vocab, int) and not isinstance(in_vocab, bool):
            if in_vocab != file_id:
                raise FormatError(
                    f"{src}: added token {content!r} has id {file_id}, but it is also "
                    f"model.vocab[{content!r}] = {in_vocab}, the id HF tokenizers gives it (HF "
                    f"only warns): cybpe refuses the file rather than encode differently")
            out[content] = in_vocab
            continue
        new_id = size + fresh
        fresh += 1
        if new_id != file_id:
            if taken is None:
                taken = set(vocab.values()) if isinstance(vocab, dict) else set()
            if new_id in taken:
                raise FormatError(
                    f"{src}: added token {content!r}: HF tokenizers numbers it {new_id} (not the "
                    f"file's {file_id}), an id model.vocab already uses")
        out[content] = new_id
    return out


def _read_added_tokens(src: str, added: Any, vocab: Any = None,
                       normalizer: Optional[str] = None) -> tuple[dict[str, int], list[str]]:
    if added is None:
        return {}, []
    if not isinstance(added, list):
        raise FormatError(f"{src}: added_tokens is not a list")
    specials: dict[str, int] = {}
    flagged: list[str] = []
    entries: list[tuple[str, int]] = []
    normalized: dict[str, bool] = {}
    for k, entry in enumerate(added):
        where = f"added_tokens[{k}]"
        if not isinstance(entry, dict):
            raise FormatError(f"{src}: {where} is not an object")
        content, tid = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not content:
            raise FormatError(f"{src}: {where}.content is not a non-empty string")
        if not isinstance(tid, int) or isinstance(tid, bool) or tid < 0:
            raise FormatError(f"{src}: {where}.id is not a non-negative integer")
        for option in ("lstrip", "rstrip", "single_word"):
            if entry.get(option, False):
                raise _unsupported(src, f"{where}.{option}", entry[option])
        # HF refuses a file without the key; cybpe reads it as false (matched as written)
        flag = entry.get("normalized", False)
        if not isinstance(flag, bool):
            raise FormatError(f"{src}: {where}.normalized is not true or false")
        if entry.get("special", False) and content not in flagged:
            flagged.append(content)  # (HF: special if any of its entries says so)
        if content in specials:
            # HF keeps the first entry of a content and skips the others, whatever their ids
            if normalized[content] != flag:
                raise FormatError(f"{src}: {where}: {content!r} is added twice with different "
                                  f"\"normalized\" flags (HF would match it in both passes)")
            continue
        specials[content] = tid
        entries.append((content, tid))
        normalized[content] = flag
    _check_normalized_flags(src, normalized, normalizer)
    return _hf_added_ids(src, entries, vocab), flagged


def _overlap(a: str, b: str) -> bool:
    """Whether an occurrence of ``a`` and one of ``b`` can share characters in some text."""
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


def _check_normalized_flags(src: str, normalized: dict[str, bool], normalizer: Optional[str]) -> None:
    """Refuse the ``"normalized": true`` added tokens cybpe would match differently from HF.

    HF finds the ``normalized: false`` tokens in the raw text first, normalizes what lies
    between them, and only then finds the ``normalized: true`` tokens in that normalized text.
    cybpe matches every added token in the raw text, in one leftmost-longest pass. The two agree
    when there is no normalizer and no ``normalized: true`` token can overlap a
    ``normalized: false`` one (then neither pass can hide a match of the other); otherwise the
    file is refused (FormatError naming the token) rather than encoded differently."""
    true = sorted(t for t, flag in normalized.items() if flag)
    if not true:
        return
    if normalizer is not None:
        raise FormatError(
            f"{src}: added token {true[0]!r} has \"normalized\": true with the {normalizer} "
            f"normalizer: HF matches it in the normalized text, which cybpe does not reproduce "
            f"(set \"normalized\": false to match it as written)")
    false = [t for t, flag in normalized.items() if not flag]
    if not false:
        return
    for a in true:
        for b in false:
            if _overlap(a, b):
                raise FormatError(
                    f"{src}: added tokens {a!r} (\"normalized\": true) and {b!r} (\"normalized\": "
                    f"false) overlap: HF matches them in two passes, which cybpe does not reproduce")


def _read_vocab(src: str, vocab: Any, specials: dict[str, int]) -> list[str]:
    """The ByteLevel strings of the ordinary tokens in id order (added tokens set aside)."""
    if not isinstance(vocab, dict):
        raise FormatError(f"{src}: model.vocab is not an object")
    special_ids = {i: s for s, i in specials.items()}
    if type(vocab) is dict:
        fast = ordinary_strings(vocab, special_ids)  # compiled; None for what the loop names
        if fast is not None:
            return fast
    if not set(map(type, vocab.values())) <= {int}:  # (one C-level pass; bool is not int here)
        for s, i in vocab.items():
            if not isinstance(i, int) or isinstance(i, bool):
                raise FormatError(f"{src}: model.vocab[{s!r}] is not an integer id")
    ordinary = len(vocab) - sum(1 for s, i in vocab.items() if i in special_ids)
    strings: list[Optional[str]] = [None] * ordinary
    for s, i in vocab.items():
        if i in special_ids:
            if special_ids[i] != s:
                raise FormatError(
                    f"{src}: model.vocab[{s!r}] has id {i}, which added_tokens gives to "
                    f"{special_ids[i]!r}"
                )
            continue
        if not 0 <= i < ordinary:
            raise FormatError(
                f"{src}: model.vocab[{s!r}] has id {i}: the {ordinary} ordinary token ids "
                f"must be 0..{ordinary - 1}"
            )
        if strings[i] is not None:
            raise FormatError(f"{src}: model.vocab: {strings[i]!r} and {s!r} share id {i}")
        strings[i] = s
    return strings  # type: ignore[return-value]  # every slot filled: ids are 0..n-1, unique


def _read_merges(src: str, merges: Any, strings: list[str],
                 index: Optional[TokenIndex]) -> list[tuple[int, int]]:
    """The merge lines (``"left right"`` strings or ``[left, right]`` lists) as id pairs.
    ``strings``: the ordinary tokens' ByteLevel strings in id order; ``index``: their bytes'
    compiled index (cybpe/formats/vocab_checks.pyx), which does the work when all is well."""
    if not isinstance(merges, list):
        raise FormatError(f"{src}: model.merges is not a list")
    pairs = None if index is None else index.merge_line_ids(merges)
    if pairs is not None:
        return pairs
    # A bad line (or bad tokens, which validate reports): the loop names the first bad line.
    return _read_merges_line_by_line(src, merges, {s: i for i, s in enumerate(strings)})


def _read_merges_line_by_line(src: str, merges: list, ids: dict[str, int]) -> list[tuple[int, int]]:
    get = ids.get
    pairs: list[tuple[int, int]] = []
    append = pairs.append
    for k, m in enumerate(merges):
        if type(m) is str:
            left, sep, right = m.partition(" ")
            if not sep or " " in right:
                raise FormatError(f"{src}: model.merges[{k}] {m!r} is not two tokens")
        elif isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m):
            left, right = m
        else:
            raise FormatError(f"{src}: model.merges[{k}] {m!r} is not two tokens")
        a = get(left)
        b = get(right)
        if a is None or b is None or left + right not in ids:
            resolve_merge(ids, left, right, f"{src}: model.merges[{k}] {m!r}", "the vocab")  # raises
        append((a, b))
    return pairs


def _list_or_empty(value: Any) -> list:
    return value if isinstance(value, list) else []


def load_hf_tokenizer_json(path: PathLike, *, rank_if_all_splits: bool = False) -> tuple[Vocab, dict[str, Any]]:
    """Read a byte-level BPE ``tokenizer.json``.

    Returns the :class:`Vocab` (every added token, special or not, becomes a special token) and
    an info dict: ``pattern`` (the split regex, translated to Python ``regex`` syntax),
    ``hf_pattern`` (as written in the file), ``add_prefix_space`` (always False: files that
    add one are refused), ``special`` (names of the added tokens flagged ``special: true``),
    ``normalizer`` (None or ``"NFC"``) and ``drops_unmatched`` (True when the split keeps only
    the regex matches, ``Removed`` + ``invert``; False for ``Isolated``).
    ``post_processor``: the file's post-processor (:class:`cybpe.formats.hf_post.PostProcessor`,
    or None), which transformers-shaped calls apply; a form cybpe does not apply is a
    FormatError (:func:`cybpe.formats.hf_post.read_post_processor`), and so is a file with
    ``truncation`` or ``padding`` set (transformers would make them default arguments).

    ``rank_if_all_splits``: an all-splits merge list (Llama 3's) gives the rank-only vocabulary,
    by :func:`cybpe.formats.merges.rank_vocab_if_all_splits` with the index built here.
    """
    src = checked_path(path)
    return load_hf_tokenizer_doc(read_json(path), src, rank_if_all_splits=rank_if_all_splits)


def load_hf_tokenizer_doc(doc: Any, src: str = "tokenizer.json", *,
                          rank_if_all_splits: bool = False) -> tuple[Vocab, dict[str, Any]]:
    """:func:`load_hf_tokenizer_json` of a document already parsed (``json.loads`` of a
    ``tokenizer.json``, or of what ``tokenizers.Tokenizer.to_str()`` gives); ``src`` names it in
    errors. :func:`cybpe.patch_transformers` reads a live tokenizer this way."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise FormatError(f"{src}: not a Hugging Face tokenizer.json (no 'model' object)")
    model = doc["model"]
    ignore_merges = _read_model_options(src, model)
    normalizer = _read_normalizer(src, doc.get("normalizer"))
    hf_pattern, drops_unmatched = _read_pre_tokenizer(src, doc.get("pre_tokenizer"))
    decoder = doc.get("decoder")
    if decoder is not None and not (
        isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"
    ):
        raise _unsupported(src, "decoder", decoder)
    for what, value in (("pre_tokenizer pattern", hf_pattern),
                        *((f"added token {describe(e.get('content'))}", e.get("content"))
                          for e in _list_or_empty(doc.get("added_tokens")) if isinstance(e, dict))):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a \ud800 escape: no UTF-8 file (and no save) can hold it
                raise FormatError(f"{src}: the {what} holds a lone surrogate") from None
    try:
        pattern = from_oniguruma(hf_pattern)
    except PatternSyntaxError as exc:
        raise FormatError(f"{src}: pre_tokenizer pattern {hf_pattern!r}: {exc}") from None
    specials, flagged = _read_added_tokens(src, doc.get("added_tokens"), model.get("vocab"), normalizer)
    strings = _read_vocab(src, model.get("vocab"), specials)
    tokens = bytelevel_tokens(strings)  # compiled; None when a string is not ByteLevel
    if tokens is None:
        for i, s in enumerate(strings):
            try:
                bytelevel_to_bytes(s)
            except ValueError as exc:
                raise FormatError(f"{src}: model.vocab entry id {i}: {exc}") from None
    index = TokenIndex.of(tokens)  # None for bad tokens, which validate reports
    merges = _read_merges(src, model.get("merges", []), strings, index)
    vocab = Vocab(tokens, merges, specials, ignore_merges)
    if rank_if_all_splits:  # (before validate: a rank-only vocabulary has no merges to check)
        vocab = rank_vocab_if_all_splits(vocab, index)
    vocab.validate(src)
    for option in ("truncation", "padding"):
        if doc.get(option) is not None:
            # transformers turns these into default tokenizer(...) arguments; cybpe would lose them
            raise _unsupported(src, option, doc[option])
    post_processor = read_post_processor(src, doc.get("post_processor"), vocab.n_vocab)
    info = {
        "pattern": pattern,
        "hf_pattern": hf_pattern,
        "add_prefix_space": False,
        "special": flagged,
        "normalizer": normalizer,
        "drops_unmatched": drops_unmatched,
        "post_processor": post_processor,
    }
    return vocab, info


# ----------------------------------------------------------------------------------- saving


def _special_flag_map(vocab: Vocab, special_flags: SpecialFlags) -> dict[str, bool]:
    if special_flags is None:
        return {name: True for name in vocab.special_tokens}
    if isinstance(special_flags, Mapping):
        flags = {name: bool(flag) for name, flag in special_flags.items()}
    elif isinstance(special_flags, str):
        raise InvalidParameterError("special_flags must be a mapping or a collection of names")
    else:
        flags = {name: True for name in special_flags}
    unknown = sorted(set(flags) - set(vocab.special_tokens))
    if unknown:
        raise InvalidParameterError(f"special_flags names tokens that are not special: {unknown}")
    return {name: flags.get(name, False) for name in vocab.special_tokens}


def _specials_in_model_vocab(vocab: Vocab) -> list[tuple[str, int]]:
    """The special tokens that must also be listed in ``model.vocab`` to keep their ids.

    ``tokenizers`` gives an added token that is missing from ``model.vocab`` the next id after
    the model's vocabulary, so specials numbered ``n, n+1, ...`` (Llama-3) can stay out, while
    any other numbering must be pinned in ``model.vocab`` too (as the o200k file does).
    """
    by_id = sorted(vocab.special_tokens.items(), key=lambda kv: kv[1])
    n = len(vocab.tokens)
    if all(tid == n + k for k, (_, tid) in enumerate(by_id)):
        return []
    ordinary = {bytes_to_bytelevel(t) for t in vocab.tokens}
    clash = [name for name, _ in by_id if name in ordinary]
    if clash:
        raise InvalidParameterError(
            f"special token {clash[0]!r} is spelled like an ordinary token's ByteLevel string, "
            "and its id is not contiguous with the vocabulary: tokenizer.json cannot hold both"
        )
    return by_id


def save_hf_tokenizer_json(
    path: PathLike,
    vocab: Vocab,
    pattern: str,
    *,
    special_flags: SpecialFlags = None,
    normalizer: Optional[str] = None,
    post_processor: Any = None,
) -> None:
    """Write a ``tokenizer.json`` that ``tokenizers`` loads and that encodes like tiktoken.

    ``pattern`` is the split regex in Python ``regex`` syntax (rewritten with
    :func:`hf_safe_pattern`, which raises :class:`ExportError` when no exact rewrite exists).
    A rank-only vocabulary (or one with ``encode_by_rank``) gets the all-splits merge list; otherwise its own merges are written. ``ignore_merges`` is the
    vocabulary's (true for tiktoken ranks), so HF's whole-piece lookup matches cybpe's.
    ``special_flags``: which special tokens HF marks ``special: true`` (skipped when decoding
    with ``skip_special_tokens``) — a mapping name -> bool, or a collection of the flagged names;
    default: all of them. ``normalizer``: None or ``"NFC"``. ``post_processor``: the JSON of
    the post-processor to write (a :class:`~cybpe.formats.hf_post.PostProcessor`'s ``spec``),
    or None.
    """
    vocab.validate("vocabulary to save")
    if normalizer not in (None, "NFC"):
        raise InvalidParameterError(f"normalizer must be None or 'NFC', not {normalizer!r}")
    hf_pattern = hf_safe_pattern(pattern)
    flags = _special_flag_map(vocab, special_flags)
    strings = [bytes_to_bytelevel(t) for t in vocab.tokens]
    # HF applies merges literally; rank semantics (no merge list, or ``encode_by_rank``) need
    # every split. ``ignore_merges`` mirrors cybpe's whole-piece lookup either way.
    if vocab.merges is None or vocab.encode_by_rank:
        merges = all_splits_merges(vocab.tokens)
    else:
        merges = vocab.merges
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": tid,
                "content": name,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": flags[name],
            }
            for name, tid in sorted(vocab.special_tokens.items(), key=lambda kv: kv[1])
        ],
        "normalizer": {"type": "NFC"} if normalizer else None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": hf_pattern},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                 "use_regex": False},
            ],
        },
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
    }
    strings_with_specials = {s: i for i, s in enumerate(strings)}
    strings_with_specials.update(_specials_in_model_vocab(vocab))
    doc["model"] = {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        "ignore_merges": vocab.ignore_merges,
        "vocab": strings_with_specials,
        # ByteLevel strings never contain a space, so "left right" is unambiguous (and loads
        # in every tokenizers version; the [left, right] form needs 0.20 or later).
        "merges": [strings[a] + " " + strings[b] for a, b in merges],
    }
    # No indent: json's C encoder then writes the whole document (with indent it falls back to
    # a pure-Python path that takes seconds for a 200k-token vocabulary).
    atomic_write_text(path, json.dumps(doc, ensure_ascii=False) + "\n")
