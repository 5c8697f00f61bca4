"""transformers tokenizer directories: ``tokenizer.json`` plus ``tokenizer_config.json`` and
``special_tokens_map.json``, read and written.

Writing (:func:`save_transformers_dir`) produces the directory that transformers 4.x and 5.x
both load with ``AutoTokenizer.from_pretrained`` / ``PreTrainedTokenizerFast.from_pretrained``:

* ``tokenizer.json``: written by the tokenizer's own ``to_hf`` (which refuses, with
  :class:`~cybpe.errors.ExportError`, what HF tokenizers cannot encode identically). Every added
  token is in its ``added_tokens`` with its ``special`` flag; no post-processor, so transformers
  adds no BOS/EOS of its own and ``tokenizer(text)`` gives exactly cybpe's ids.
* ``tokenizer_config.json``: ``tokenizer_class: "PreTrainedTokenizerFast"`` (the one class name
  both majors know: 4.x refuses a folder without a class, 5.x maps it to its generic backend),
  the roles ``bos_token`` / ``eos_token`` / ``unk_token`` / ``pad_token`` (null when unset),
  ``model_max_length`` (left out when unset: transformers then uses its "no limit" value),
  ``added_tokens_decoder`` and ``additional_special_tokens`` (as transformers 4.x writes them; 5.x
  reads both), ``clean_up_tokenization_spaces: false`` (4.x would otherwise rewrite " ," on
  decode).
* ``special_tokens_map.json``: the roles and ``additional_special_tokens`` again (4.x reads it).

Nothing is half-written: every check runs and all three files are written to temporary files
in the directory first (with :mod:`cybpe.io.atomic`); only then is each renamed into place.
A failure before the renames leaves the directory as it was.

Reading (:func:`read_transformers_dir`) takes any transformers tokenizer directory, with the
rule of transformers 5.x (``PreTrainedTokenizerBase._from_pretrained``): the roles and extras
come from ``tokenizer_config.json``; ``special_tokens_map.json`` is read only when that config
has no ``added_tokens_decoder`` (a legacy folder), and then its roles win. transformers 4.x
differs where both files exist and disagree: it lets the map win even beside an
``added_tokens_decoder``; cybpe follows 5.x, the version its tests run against (a folder cybpe
writes holds the same roles in both files, so both majors read it alike). Each role is given as
a string, an ``AddedToken`` object (``{"content": ...}``) or null.
Names in ``additional_special_tokens`` / ``extra_special_tokens`` become special, and
``added_tokens_decoder`` may set an added token's ``special`` flag (as transformers 4.x does when
it re-adds those tokens). A role, extra or decoder entry that names no added token of
``tokenizer.json`` is a :class:`~cybpe.errors.FormatError` naming the file and key: cybpe does
not add tokens on the fly, as transformers would, since that would change the vocabulary.
Chat templates and encode-time options (``add_bos_token``, ``split_special_tokens``, padding
side...) are not read.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from cybpe.errors import FormatError, InvalidParameterError, ParameterTypeError, SaveError, describe
from cybpe.io.atomic import TEMP_SUFFIX, PathLike, destination, atomic_write_text, checked_path, read_json

#: The roles transformers gives special tokens (and that cybpe keeps), in transformers' order.
ROLE_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token")
TOKENIZER_JSON = "tokenizer.json"
CONFIG_JSON = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_JSON = "special_tokens_map.json"
#: Read by transformers 4.x next to tokenizer.json (it adds the tokens listed there): a save
#: into a folder that holds one is refused, since the folder would then load differently.
ADDED_TOKENS_JSON = "added_tokens.json"


@dataclass
class TransformersDir:
    """What a transformers tokenizer directory says beyond ``tokenizer.json``."""

    tokenizer_json: str
    roles: dict[str, Optional[str]] = field(default_factory=dict)
    #: added tokens that the config makes special (extras, or ``added_tokens_decoder`` flags)
    special: set[str] = field(default_factory=set)
    #: added tokens that ``added_tokens_decoder`` marks ``special: false``
    non_special: set[str] = field(default_factory=set)
    model_max_length: Optional[int] = None


# ----------------------------------------------------------------------------------- checks


def check_roles(roles: Mapping[str, Any], added: Mapping[str, int], where: str,
                error: type = InvalidParameterError) -> dict[str, Optional[str]]:
    """``roles`` (role name -> token string or None) checked against the added tokens: every
    role names one of them (``error`` otherwise, naming ``where``). Returns all four roles."""
    out: dict[str, Optional[str]] = {}
    for role in roles:
        if role not in ROLE_NAMES:
            raise error(f"{where}: {role!r} is not a role (roles: {', '.join(ROLE_NAMES)})")
    for role in ROLE_NAMES:
        token = roles.get(role)
        if token is not None:
            if not isinstance(token, str):
                raise error(f"{where}: {role} must be a token string or None, not {describe(token)}")
            token = str.__str__(token)  # a str subclass's own code points
            if token not in added:
                raise error(
                    f"{where}: {role} {token!r} is not an added token of the vocabulary (roles "
                    f"name special or added tokens; added: {_shown(added)})")
        out[role] = token
    return out


def check_non_special(tokens: Any, added: Mapping[str, int]) -> frozenset[str]:
    """``tokens`` (a collection of added-token strings) as a frozenset; a wrong type is a
    ParameterTypeError, a name that is not an added token an InvalidParameterError."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise ParameterTypeError(
            f"non_special_tokens must be a collection of added-token strings, not {describe(tokens)}")
    items = list(tokens)
    bad = [t for t in items if not isinstance(t, str)]
    if bad:
        raise ParameterTypeError(f"non_special_tokens: {describe(bad[0])} is not a str")
    plain = frozenset(str.__str__(t) for t in items)
    unknown = sorted(t for t in plain if t not in added)
    if unknown:
        raise InvalidParameterError(
            f"non_special_tokens names tokens that are not added tokens of the vocabulary: {unknown[:8]}")
    return plain


def check_model_max_length(value: Any, where: str, error: type = InvalidParameterError) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise error(f"{where}: model_max_length must be a positive int or None, not {describe(value)}")
    return value


def _shown(names: Mapping[str, int] | set[str], limit: int = 8) -> str:
    items = sorted(names)
    text = ", ".join(repr(x) for x in items[:limit])
    return (text + f", ... ({len(items)} in all)") if len(items) > limit else (text or "none")


# ----------------------------------------------------------------------------------- reading


def _token_content(value: Any, src: str, key: str) -> Optional[str]:
    """A role or extra as transformers saves it: a str, an AddedToken dict, or null."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise FormatError(f"{src}: {key} is not a token string, an AddedToken object or null: {describe(value)}")


def _read_object(path: str) -> Optional[dict]:
    if not os.path.exists(path):
        return None
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise FormatError(f"{path}: not a JSON object")
    return doc


def _extras(doc: dict, src: str) -> list[str]:
    names: list[str] = []
    for key in ("additional_special_tokens", "extra_special_tokens"):
        value = doc.get(key)
        if value is None:
            continue
        items = list(value.values()) if isinstance(value, dict) else value
        if not isinstance(items, list):
            raise FormatError(f"{src}: {key} is neither a list nor an object: {describe(value)}")
        for k, item in enumerate(items):
            name = _token_content(item, src, f"{key}[{k}]")
            if name is not None:
                names.append(name)
    return names


def read_transformers_dir(directory: PathLike, added: Mapping[str, int]) -> TransformersDir:
    """Read the config files of a transformers tokenizer directory (see the module docstring).

    ``added``: the added tokens of its ``tokenizer.json`` (name -> id), which every role, extra
    and ``added_tokens_decoder`` entry must name. The caller loads ``tokenizer.json`` itself
    (:func:`tokenizer_json_path` finds it) and passes its added tokens here.
    """
    folder = checked_path(directory, "directory")
    info = TransformersDir(tokenizer_json_path(folder))
    roles: dict[str, Optional[str]] = {}
    config_has_decoder = False
    for name in (CONFIG_JSON, SPECIAL_TOKENS_MAP_JSON):  # the map is read last: it wins
        src = os.path.join(folder, name)
        if name == SPECIAL_TOKENS_MAP_JSON and config_has_decoder:
            continue  # transformers 5.x reads the map only for a config without the decoder
        doc = _read_object(src)
        if doc is None:
            continue
        if name == CONFIG_JSON:
            config_has_decoder = "added_tokens_decoder" in doc
        for role in ROLE_NAMES:
            if role in doc:
                roles[role] = _token_content(doc[role], src, role)
        for extra in _extras(doc, src):
            if extra not in added:
                raise FormatError(f"{src}: the special token {extra!r} is not an added token of "
                                  f"{TOKENIZER_JSON} (added: {_shown(added)})")
            info.special.add(extra)
        if name == CONFIG_JSON:
            info.model_max_length = check_model_max_length(
                doc.get("model_max_length"), src, FormatError)
            _read_added_tokens_decoder(doc.get("added_tokens_decoder"), src, added, info)
    info.roles = check_roles(roles, added, f"{folder}: the tokenizer config", FormatError)
    info.non_special -= info.special
    return info


def _read_added_tokens_decoder(decoder: Any, src: str, added: Mapping[str, int],
                               info: TransformersDir) -> None:
    if decoder is None:
        return
    if not isinstance(decoder, dict):
        raise FormatError(f"{src}: added_tokens_decoder is not an object")
    for key, entry in decoder.items():
        where = f"added_tokens_decoder[{key!r}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise FormatError(f"{src}: {where} is not an AddedToken object")
        content = entry["content"]
        if not key.isdigit() or added.get(content) != int(key):
            raise FormatError(
                f"{src}: {where} {content!r} does not match {TOKENIZER_JSON}'s added tokens "
                f"({content!r} has id {added.get(content)!r} there)")
        special = entry.get("special", False)
        if not isinstance(special, bool):
            raise FormatError(f"{src}: {where}.special is not true or false")
        (info.special if special else info.non_special).add(content)


def tokenizer_json_path(directory: str) -> str:
    """``directory/tokenizer.json``; a missing folder or file is a :class:`FormatError`."""
    if not os.path.isdir(directory):
        raise FormatError(f"{directory}: not a directory (a transformers tokenizer folder is expected)")
    path = os.path.join(directory, TOKENIZER_JSON)
    if not os.path.isfile(path):
        found = sorted(os.listdir(directory))[:10]
        raise FormatError(
            f"{directory}: no {TOKENIZER_JSON} (cybpe reads transformers folders that hold one; "
            f"found: {', '.join(found) or 'nothing'})")
    return path


# ----------------------------------------------------------------------------------- writing


def transformers_config(added: Mapping[str, int], special: set[str],
                        roles: Mapping[str, Optional[str]],
                        model_max_length: Optional[int]) -> tuple[dict, dict]:
    """(``tokenizer_config.json``, ``special_tokens_map.json``) as dicts."""
    role_tokens = {t for t in roles.values() if t is not None}
    extras = [name for name, _ in sorted(added.items(), key=lambda kv: kv[1])
              if name in special and name not in role_tokens]
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        **{role: roles.get(role) for role in ROLE_NAMES},
    }
    if model_max_length is not None:
        config["model_max_length"] = model_max_length
    config["additional_special_tokens"] = extras
    config["added_tokens_decoder"] = {
        str(tid): {"content": name, "lstrip": False, "normalized": False, "rstrip": False,
                   "single_word": False, "special": name in special}
        for name, tid in sorted(added.items(), key=lambda kv: kv[1])
    }
    special_map: dict[str, Any] = {role: token for role, token in roles.items() if token is not None}
    if extras:
        special_map["additional_special_tokens"] = extras
    return config, special_map


def _prepare_directory(directory: PathLike) -> str:
    folder = checked_path(directory, "directory")
    try:
        mode = os.stat(folder).st_mode
    except FileNotFoundError:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise SaveError(f"{folder}: cannot create the directory: {exc.strerror or exc}") from None
        return folder
    except OSError as exc:
        raise SaveError(f"{folder}: cannot save there: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(mode):
        raise SaveError(f"{folder}: cannot save a transformers tokenizer there: it is not a directory")
    for name in (TOKENIZER_JSON, CONFIG_JSON, SPECIAL_TOKENS_MAP_JSON):
        destination(os.path.join(folder, name))  # SaveError for a folder, FIFO, device there
    if os.path.exists(os.path.join(folder, ADDED_TOKENS_JSON)):
        raise SaveError(
            f"{folder}: holds an {ADDED_TOKENS_JSON}, which transformers 4.x would read on top of "
            f"the saved tokenizer (its tokens added again): remove it or save elsewhere")
    return folder


def save_transformers_dir(directory: PathLike, write_tokenizer_json: Callable[[str], None],
                          added: Mapping[str, int], special: set[str],
                          roles: Mapping[str, Optional[str]],
                          model_max_length: Optional[int]) -> None:
    """Write the three files into ``directory`` (created if missing).

    ``write_tokenizer_json(path)`` writes ``tokenizer.json`` at ``path`` or raises (an
    :class:`~cybpe.errors.ExportError`); ``added`` are the added tokens (name -> id), ``special``
    the ones flagged special, ``roles`` role -> token (already checked by :func:`check_roles`).
    """
    config, special_map = transformers_config(added, special, roles, model_max_length)
    texts = {
        CONFIG_JSON: json.dumps(config, indent=2, ensure_ascii=False) + "\n",
        SPECIAL_TOKENS_MAP_JSON: json.dumps(special_map, indent=2, ensure_ascii=False) + "\n",
    }
    folder = _prepare_directory(directory)
    staged: dict[str, str] = {}
    try:
        targets = {}
        for name in (TOKENIZER_JSON, CONFIG_JSON, SPECIAL_TOKENS_MAP_JSON):
            # A symbolic link is written through, as atomic.py does: the file it points to is
            # replaced, by a temporary file in that file's folder.
            targets[name] = target = destination(os.path.join(folder, name))
            where, base = os.path.split(os.path.abspath(target))
            # Named as atomic.py names its temporary files, so a killed save's leftovers are
            # removed by the next save of the same file.
            staged[name] = os.path.join(where, f".{base}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
            if name == TOKENIZER_JSON:
                write_tokenizer_json(staged[name])
            else:
                atomic_write_text(staged[name], texts[name])
        for name, tmp in staged.items():
            os.replace(tmp, targets[name])
    except BaseException as exc:
        for tmp in staged.values():
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError) and not isinstance(exc, SaveError):
            raise SaveError(f"{folder}: cannot save: {exc.strerror or exc}") from exc
        raise
