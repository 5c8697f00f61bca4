"""transformers tokenizer directories: ``tokenizer.json`` + ``tokenizer_config.json`` +
``special_tokens_map.json``.

What is written is the layout that ``AutoTokenizer.from_pretrained`` and
``PreTrainedTokenizerFast`` load alike in transformers 4.x and 5.x (tested on 4.57 and 5.x):

* ``tokenizer_config.json``: ``tokenizer_class: "PreTrainedTokenizerFast"`` (4.x needs a class
  it knows; 5.x maps it to its tokenizers backend), the roles ``bos_token``, ``eos_token``,
  ``unk_token``, ``pad_token`` as plain strings, ``model_max_length`` when known,
  ``clean_up_tokenization_spaces: false`` (true would change decoded text in 4.x),
  ``additional_special_tokens`` as a list (a list under ``extra_special_tokens`` breaks 4.x) and
  ``added_tokens_decoder`` (4.x's copy of the added tokens with their ``special`` flags);
  ``chat_template`` when the tokenizer carries one.
* ``special_tokens_map.json``: the roles again (the legacy file that 4.x writes and 5.x reads).

Reading accepts what transformers writes: roles as strings or ``AddedToken`` objects
(``{"content": ...}``), the roles from ``special_tokens_map.json`` where the config has none,
and special flags from ``added_tokens_decoder`` and ``additional_special_tokens``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from cybpe.io.atomic import PathLike, atomic_write_text, read_json
from cybpe.errors import FormatError

TOKENIZER_JSON = "tokenizer.json"
CONFIG_JSON = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_JSON = "special_tokens_map.json"
#: The roles a Tokenizer carries, in transformers' names.
ROLES = ("bos_token", "eos_token", "unk_token", "pad_token")


def _content(src: str, key: str, value: Any) -> Optional[str]:
    """A role or token given as a string, an AddedToken object, or null."""
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise FormatError(f"{src}: {key} is not a token string or an AddedToken object")


def _read_object(path: Path) -> dict[str, Any]:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise FormatError(f"{path}: expected a JSON object")
    return doc


def read_directory_config(folder: PathLike) -> dict[str, Any]:
    """The roles, extra special-token names, ``model_max_length`` and ``chat_template`` of a
    transformers directory (``{}``-like values when the files are absent)."""
    folder = Path(folder)
    config_path, map_path = folder / CONFIG_JSON, folder / SPECIAL_TOKENS_MAP_JSON
    config = _read_object(config_path) if config_path.is_file() else {}
    legacy = _read_object(map_path) if map_path.is_file() else {}
    roles: dict[str, str] = {}
    for role in ROLES:
        for src, doc in ((config_path, config), (map_path, legacy)):
            if role in doc:
                value = _content(os.fspath(src), role, doc[role])
                if value is not None:
                    roles[role] = value
                break
    special: set[str] = set()
    for src, doc in ((config_path, config), (map_path, legacy)):
        extra = doc.get("additional_special_tokens") or []
        if isinstance(doc.get("extra_special_tokens"), (list, dict)):  # 5.x list, 4.x dict
            extra_tokens = doc["extra_special_tokens"]
            extra = list(extra) + list(extra_tokens.values() if isinstance(extra_tokens, dict)
                                       else extra_tokens)
        if not isinstance(extra, list):
            raise FormatError(f"{src}: additional_special_tokens is not a list")
        special.update(filter(None, (_content(os.fspath(src), "additional_special_tokens", x)
                                     for x in extra)))
    decoder = config.get("added_tokens_decoder") or {}
    if not isinstance(decoder, dict):
        raise FormatError(f"{config_path}: added_tokens_decoder is not an object")
    for key, entry in decoder.items():
        if isinstance(entry, dict) and entry.get("special"):
            name = _content(os.fspath(config_path), f"added_tokens_decoder[{key}]", entry)
            if name:
                special.add(name)
    max_length = config.get("model_max_length")
    if max_length is not None and (not isinstance(max_length, (int, float)) or max_length <= 0):
        raise FormatError(f"{config_path}: model_max_length is not a positive number")
    template = config.get("chat_template")
    template_file = folder / "chat_template.jinja"
    if template_file.is_file():  # read in preference to the key, as transformers >= 4.47 does
        template = template_file.read_text(encoding="utf-8")
    return {
        "roles": roles,
        "special": special | set(roles.values()),
        "model_max_length": int(max_length) if max_length is not None and max_length < 1e18 else None,
        "chat_template": template if isinstance(template, str) else None,
    }


def write_directory_config(
    folder: PathLike,
    *,
    roles: dict[str, str],
    added_tokens: dict[str, int],
    special: set[str],
    model_max_length: Optional[int] = None,
    chat_template: Optional[str] = None,
) -> None:
    """Write ``tokenizer_config.json`` and ``special_tokens_map.json`` (each atomically).

    ``added_tokens`` maps every added token (special or not) to its id; ``special`` names the
    special ones (the role tokens among them).
    """
    import json

    folder = Path(folder)
    extra = [name for name, _ in sorted(added_tokens.items(), key=lambda kv: kv[1])
             if name in special and name not in roles.values()]
    config: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast"}
    config.update({role: roles.get(role) for role in ROLES})
    if model_max_length is not None:
        config["model_max_length"] = int(model_max_length)
    config["clean_up_tokenization_spaces"] = False
    config["additional_special_tokens"] = extra
    config["added_tokens_decoder"] = {
        str(tid): {"content": name, "lstrip": False, "normalized": False, "rstrip": False,
                   "single_word": False, "special": name in special}
        for name, tid in sorted(added_tokens.items(), key=lambda kv: kv[1])
    }
    if chat_template is not None:
        config["chat_template"] = chat_template
    legacy: dict[str, Any] = {role: roles[role] for role in ROLES if role in roles}
    if extra:
        legacy["additional_special_tokens"] = extra
    atomic_write_text(folder / CONFIG_JSON, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(folder / SPECIAL_TOKENS_MAP_JSON,
                      json.dumps(legacy, indent=2, ensure_ascii=False) + "\n")
