"""cybpe's own tokenizer file: one JSON document holding everything needed to rebuild a tokenizer.

::

    {
     "format": "cybpe-tokenizer",
     "version": 1,
     "pretokenizer": {...},                 # the pre-tokenizer spec, as given
     "ignore_merges": true,
     "encode_by_rank": false,               # optional (absent: false)
     "special_tokens": {"<|endoftext|>": 100257},
     "metadata": {...},
     "roles": {"bos_token": null, "eos_token": "<|endoftext|>", ...},   # version 2 only
     "non_special_tokens": ["<think>"],    # version 2 only: added tokens that are not special
     "model_max_length": null | 8192,      # version 2 only
     "post_processor": null | {...},       # version 2 only: tokenizer.json's post-processor
     "transformers": null | {...},         # version 2 only: the transformers config cybpe keeps
     "tokens": ["IQ==", ...],               # base64 of each ordinary token, in id order
     "merges": null | [[left_id, right_id], ...]
    }

Version 2 adds the tokenizer fields marked above (transformers' token roles, the added
tokens that are matched in text but are not special, the length limit, the HF post-processor
and the rest of a transformers folder's config: chat templates, padding side...). A file that needs
none of them is still written as version 1, so that older cybpe releases keep reading it;
version 1 files load with no roles, every added token special (or as the legacy
``metadata["hf_special"]`` list says) and no length limit.

The small fields come first so that the head of the file is readable; the two long arrays are
written one element per line (assembled by hand: ``json.dumps(indent=...)`` takes its slow
pure-Python path on arrays of this size).
"""

from __future__ import annotations

import binascii
import json
import os
from itertools import chain
from typing import Any, Optional

from cybpe.io.atomic import PathLike, atomic_write_text, checked_path, read_json
from cybpe.formats.b64 import strict_b64decode
from cybpe.formats.vocab import Vocab
from cybpe.errors import FormatError, InvalidParameterError, describe

FORMAT_NAME = "cybpe-tokenizer"
#: The newest version this cybpe reads (and writes when the tokenizer fields are needed).
FORMAT_VERSION = 2
#: The fields version 2 adds (see the module docstring), with their "not set" values.
TOKENIZER_FIELDS: dict[str, Any] = {"roles": {}, "non_special_tokens": [], "model_max_length": None,
                                     "post_processor": None, "transformers": None}


def save_native(
    path: PathLike,
    vocab: Vocab,
    pretokenizer_spec: dict[str, Any],
    metadata: Optional[dict[str, Any]] = None,
    fields: Optional[dict[str, Any]] = None,
) -> None:
    """Write ``vocab`` with its pre-tokenizer spec and free-form metadata, atomically.

    ``pretokenizer_spec`` and ``metadata`` must be JSON-serializable dicts
    (:class:`InvalidParameterError` otherwise). ``fields``: the version-2 tokenizer fields
    (keys of :data:`TOKENIZER_FIELDS`); when all are unset the file is version 1.
    """
    vocab.validate("vocabulary to save")
    extra = {key: value for key, value in (fields or {}).items()
             if key in TOKENIZER_FIELDS and value != TOKENIZER_FIELDS[key]}
    head: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": 2 if extra else 1,
        "pretokenizer": pretokenizer_spec,
        "ignore_merges": vocab.ignore_merges,
        "encode_by_rank": vocab.encode_by_rank,
        "special_tokens": dict(sorted(vocab.special_tokens.items(), key=lambda kv: kv[1])),
        "metadata": {} if metadata is None else metadata,
        **extra,
    }
    for key in ("pretokenizer", "metadata"):
        if not isinstance(head[key], dict):
            raise InvalidParameterError(f"{key} must be a dict, not {type(head[key]).__name__}")
    try:
        text = json.dumps(head, indent=1, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"pretokenizer spec or metadata is not JSON: {exc}") from None
    b2a = binascii.b2a_base64
    parts = [text[: text.rindex("}")].rstrip(), ',\n "tokens": [\n  "']
    parts.append('",\n  "'.join(b2a(t, newline=False).decode("ascii") for t in vocab.tokens))
    if vocab.merges is None:
        parts.append('"\n ],\n "merges": null\n}\n')
    else:
        parts.append('"\n ],\n "merges": [\n  ')
        parts.append(",\n  ".join(f"[{a}, {b}]" for a, b in vocab.merges))
        parts.append("\n ]\n}\n")
    atomic_write_text(path, "".join(parts))


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def load_native(path: PathLike) -> tuple[Vocab, dict[str, Any], dict[str, Any]]:
    """Read a file written by :func:`save_native`: ``(vocab, pretokenizer spec, metadata)``."""
    return load_native_fields(path)[:3]  # type: ignore[return-value]


def load_native_fields(path: PathLike) -> tuple[Vocab, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Like :func:`load_native`, plus the version-2 tokenizer fields (every key of
    :data:`TOKENIZER_FIELDS`, "not set" values for a version 1 file). Their types are checked
    here; whether the roles name added tokens is the tokenizer's check."""
    src = checked_path(path)
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise FormatError(f"{src}: not a cybpe tokenizer file (no \"format\": \"{FORMAT_NAME}\")")
    version = doc.get("version")
    if not _is_int(version) or version < 1:
        raise FormatError(f"{src}: invalid format version {version!r}")
    if version > FORMAT_VERSION:
        raise FormatError(
            f"{src}: written by a newer cybpe (format version {version}); this cybpe reads "
            f"versions 1..{FORMAT_VERSION} only: upgrade cybpe to load it"
        )
    _check_encodable(doc, src)
    spec, metadata = doc.get("pretokenizer"), doc.get("metadata", {})
    if not isinstance(spec, dict):
        raise FormatError(f"{src}: \"pretokenizer\" is not an object")
    if not isinstance(metadata, dict):
        raise FormatError(f"{src}: \"metadata\" is not an object")
    ignore_merges = doc.get("ignore_merges")
    if not isinstance(ignore_merges, bool):
        raise FormatError(f"{src}: \"ignore_merges\" is not true or false")
    encode_by_rank = doc.get("encode_by_rank", False)
    if not isinstance(encode_by_rank, bool):
        raise FormatError(f"{src}: \"encode_by_rank\" is not true or false")
    specials = doc.get("special_tokens")
    if not isinstance(specials, dict) or not all(_is_int(i) for i in specials.values()):
        raise FormatError(f"{src}: \"special_tokens\" is not an object of integer ids")
    encoded = doc.get("tokens")
    if not isinstance(encoded, list) or not all(isinstance(t, str) for t in encoded):
        raise FormatError(f"{src}: \"tokens\" is not a list of base64 strings")
    a2b = strict_b64decode
    try:
        tokens = [a2b(t) for t in encoded]
    except (binascii.Error, ValueError):
        bad = next(i for i, t in enumerate(encoded) if not _valid_base64(t))
        shown = encoded[bad][:40]
        raise FormatError(f"{src}: tokens[{bad}] {shown!r} is not valid base64") from None
    merges_doc = doc.get("merges")
    merges: Optional[list[tuple[int, int]]] = None
    if merges_doc is not None:
        if not isinstance(merges_doc, list):
            raise FormatError(f"{src}: \"merges\" is neither null nor a list")
        # Checked with C-level map/set calls: a generator over 280k pairs tripled the load time.
        try:
            merges = list(map(tuple, merges_doc))
        except TypeError:
            merges = None
        if merges is None or (
            merges
            and (
                set(map(len, merges)) != {2}
                or not set(map(type, chain.from_iterable(merges))) <= {int}
            )
        ):
            raise FormatError(f"{src}: \"merges\" is not a list of [left_id, right_id] pairs")
    vocab = Vocab(tokens, merges, dict(specials), ignore_merges, encode_by_rank)
    vocab.validate(src)
    return vocab, spec, metadata, _tokenizer_fields(src, doc)


def _tokenizer_fields(src: str, doc: dict[str, Any]) -> dict[str, Any]:
    fields = {key: doc.get(key, default) for key, default in TOKENIZER_FIELDS.items()}
    roles, plain, limit = fields["roles"], fields["non_special_tokens"], fields["model_max_length"]
    if not isinstance(roles, dict) or not all(v is None or isinstance(v, str) for v in roles.values()):
        raise FormatError(f"{src}: \"roles\" is not an object of token strings")
    if not isinstance(plain, list) or not all(isinstance(t, str) for t in plain):
        raise FormatError(f"{src}: \"non_special_tokens\" is not a list of strings")
    if limit is not None and not (_is_int(limit) and limit > 0):
        raise FormatError(f"{src}: \"model_max_length\" is not a positive integer or null")
    for key in ("post_processor", "transformers"):
        if fields[key] is not None and not isinstance(fields[key], dict):
            raise FormatError(f"{src}: \"{key}\" is not an object or null")
    return fields


def _check_encodable(doc: dict[str, Any], src: str) -> None:
    """FormatError when a string of the document (a key or a value, outside the base64
    ``tokens`` and the integer ``merges``) holds a lone surrogate: JSON's ``\\ud800`` escapes
    read as one, but no UTF-8 file can hold it, so ``save`` could not write the tokenizer
    back. Refused here rather than carried to a failing save."""
    stack: list[tuple[str, Any]] = [(repr(k), v) for k, v in doc.items() if k not in ("tokens", "merges")]
    stack += [("key " + repr(k), k) for k in doc]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise FormatError(f"{src}: {where} holds a lone surrogate ({describe(value)}), "
                                  f"which a UTF-8 file cannot store") from None
        elif isinstance(value, dict):
            for k, v in value.items():
                stack.append((f"{where} key {describe(k, 40)}", k))
                stack.append((f"{where}[{describe(k, 40)}]", v))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))


def _valid_base64(text: str) -> bool:
    try:
        strict_b64decode(text)
    except (binascii.Error, ValueError):
        return False
    return True
