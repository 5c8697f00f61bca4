"""transformers tokenizer directories: ``tokenizer.json`` plus ``tokenizer_config.json`` and
``special_tokens_map.json``, read and written.

Writing (:func:`save_transformers_dir`) produces the directory that transformers 4.x and 5.x
both load with ``AutoTokenizer.from_pretrained`` / ``PreTrainedTokenizerFast.from_pretrained``:

* ``tokenizer.json``: written by the tokenizer's own ``to_hf`` (which refuses, with
  :class:`~cybpe.errors.ExportError`, what HF tokenizers cannot encode identically). Every added
  token is in its ``added_tokens`` with its ``special`` flag; the post-processor is the one the
  tokenizer was read with (none for a trained one, so ``tokenizer(text)`` gives exactly cybpe's
  ``encode`` ids).
* ``tokenizer_config.json``: every key read from the original config and not interpreted
  (:class:`TransformersSettings`' ``config_extra``), as it was; then ``tokenizer_class`` (the
  original's, else ``"PreTrainedTokenizerFast"``, the one class name both majors know), the
  roles ``bos_token`` / ``eos_token`` / ``unk_token`` / ``pad_token`` (null when unset),
  ``model_max_length`` (left out when unset), ``model_input_names``, ``padding_side``,
  ``truncation_side``, ``split_special_tokens``, ``clean_up_tokenization_spaces``,
  ``add_bos_token`` / ``add_eos_token`` (when the original had them or they were set), the chat
  templates when they were read from the config, ``additional_special_tokens`` and
  ``added_tokens_decoder`` (as transformers 4.x writes them; 5.x reads both).
* ``special_tokens_map.json``: its unread keys, the roles and ``additional_special_tokens``.
* ``chat_template.jinja`` / ``additional_chat_templates/NAME.jinja``: the chat templates, when
  read from such files (or set by hand), byte for byte. Such a file left by an earlier save that
  this one does not write is removed after the renames (transformers would read it instead).

Nothing is half-written: every check runs and every file is written to a temporary file in
its folder first (with :mod:`cybpe.io.atomic`); only then is each renamed into place. A failure
before the renames leaves the directory as it was.

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
The rest of the config is read into :class:`TransformersSettings`: the settings cybpe honours
(chat templates, padding and truncation sides, ``split_special_tokens``,
``clean_up_tokenization_spaces``, ``model_input_names``, ``add_bos_token`` / ``add_eos_token``,
``tokenizer_class``) and every other key verbatim; what cybpe cannot honour (``add_prefix_space:
true``, a bad side or flag) is a FormatError.
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


CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"
#: The config keys cybpe regenerates or reads into a setting (every other key is kept as it is).
CONFIG_KEYS_READ = frozenset(ROLE_NAMES) | {
    "additional_special_tokens", "added_tokens_decoder", "model_max_length", "chat_template",
    "model_input_names", "clean_up_tokenization_spaces", "padding_side", "truncation_side",
    "split_special_tokens", "add_bos_token", "add_eos_token", "tokenizer_class",
    "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"}
#: The special_tokens_map.json keys cybpe regenerates (every other key is kept as it is).
MAP_KEYS_READ = frozenset(ROLE_NAMES) | {"additional_special_tokens"}
SIDES = ("right", "left")


@dataclass
class TransformersSettings:
    """What transformers' ``tokenizer_config.json`` (and its chat template files) say beyond the
    roles and special tokens, as cybpe keeps it: the settings it honours, and every other key
    verbatim (``config_extra``, ``map_extra``: written back unchanged).

    ``chat_template``: None, one template (str) or named templates (dict name -> str, the
    default one named ``"default"``); ``chat_template_files``: whether they are saved as
    ``chat_template.jinja`` / ``additional_chat_templates/NAME.jinja`` (transformers' current
    form) rather than in the config. ``add_bos_token`` / ``add_eos_token``: the config's flags as
    written (None: absent); what is added follows the post-processor, which the load checks
    agrees with them."""

    chat_template: Any = None
    chat_template_files: bool = True
    padding_side: str = "right"
    truncation_side: str = "right"
    clean_up_tokenization_spaces: bool = False
    clean_up_for_bpe: bool = False
    split_special_tokens: bool = False
    model_input_names: tuple[str, ...] = ("input_ids", "attention_mask")
    add_bos_token: Optional[bool] = None
    add_eos_token: Optional[bool] = None
    tokenizer_class: str = "PreTrainedTokenizerFast"
    #: the config's ``additional_special_tokens`` as read (names), written back while each is
    #: still special; None: cybpe lists every special added token that has no role
    extras: Optional[list[str]] = None
    config_extra: dict[str, Any] = field(default_factory=dict)
    map_extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (for cybpe's native format and pickles); :meth:`from_json` reads it."""
        return {"chat_template": self.chat_template, "chat_template_files": self.chat_template_files,
                "padding_side": self.padding_side, "truncation_side": self.truncation_side,
                "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces,
                "clean_up_for_bpe": self.clean_up_for_bpe,
                "split_special_tokens": self.split_special_tokens,
                "model_input_names": list(self.model_input_names),
                "add_bos_token": self.add_bos_token, "add_eos_token": self.add_eos_token,
                "tokenizer_class": self.tokenizer_class, "extras": self.extras,
                "config_extra": self.config_extra, "map_extra": self.map_extra}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> "TransformersSettings":
        if not isinstance(doc, dict):
            raise FormatError(f"{where}: the transformers settings are not an object")
        out = cls()
        for key, value in doc.items():
            if key in ("config_extra", "map_extra"):
                if not isinstance(value, dict):
                    raise FormatError(f"{where}: transformers.{key} is not an object")
                setattr(out, key, value)
            elif key == "model_input_names":
                out.model_input_names = check_input_names(value, where, FormatError)
            elif key == "chat_template":
                out.chat_template = check_chat_template(value, where, FormatError)
            elif key in ("padding_side", "truncation_side"):
                setattr(out, key, check_side(value, f"{where}: {key}", FormatError))
            elif key in ("chat_template_files", "clean_up_tokenization_spaces", "clean_up_for_bpe",
                         "split_special_tokens"):
                setattr(out, key, check_flag(value, f"{where}: {key}", FormatError))
            elif key in ("add_bos_token", "add_eos_token"):
                setattr(out, key, None if value is None else check_flag(value, f"{where}: {key}", FormatError))
            elif key == "extras":
                if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                    raise FormatError(f"{where}: transformers.extras is not a list of str")
                out.extras = value
            elif key == "tokenizer_class":
                if not isinstance(value, str) or not value:
                    raise FormatError(f"{where}: tokenizer_class is not a class name")
                out.tokenizer_class = value
            else:
                raise FormatError(f"{where}: unknown transformers setting {key!r}")
        return out


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
    settings: TransformersSettings = field(default_factory=TransformersSettings)


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


def check_side(value: Any, where: str, error: type = InvalidParameterError) -> str:
    if not isinstance(value, str) or value not in SIDES:
        raise error(f"{where} must be 'right' or 'left', not {describe(value)}")
    return str.__str__(value)


def check_flag(value: Any, where: str, error: type = InvalidParameterError) -> bool:
    if not isinstance(value, bool):
        raise error(f"{where} must be True or False, not {describe(value)}")
    return value


def check_input_names(value: Any, where: str, error: type = InvalidParameterError) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise error(f"{where}: model_input_names must be a list of str, not {describe(value)}")
    return tuple(str.__str__(v) for v in value)


def _template_name_ok(name: Any) -> bool:
    return (isinstance(name, str) and bool(name) and name not in (".", "..")
            and not any(c in name for c in "/\\\0") and not name.startswith("."))


def check_chat_template(value: Any, where: str, error: type = InvalidParameterError) -> Any:
    """None, a template string, or a dict of template name -> string (a list of
    ``{"name", "template"}`` objects, transformers' config form, is read as that dict). A name
    must be usable as a file name (transformers saves ``additional_chat_templates/NAME.jinja``)."""
    if value is None or isinstance(value, str):
        return value if value is None else str.__str__(value)
    if isinstance(value, list):
        items = {}
        for k, item in enumerate(value):
            if not (isinstance(item, dict) and isinstance(item.get("name"), str)
                    and isinstance(item.get("template"), str)):
                raise error(f"{where}: chat_template[{k}] is not a {{\"name\", \"template\"}} object")
            items[item["name"]] = item["template"]
        value = items
    if isinstance(value, dict):
        out = {}
        for name, template in value.items():
            if not _template_name_ok(name):
                raise error(f"{where}: chat template name {describe(name)} cannot be a file name")
            if not isinstance(template, str):
                raise error(f"{where}: chat template {name!r} is not a str")
            out[str.__str__(name)] = str.__str__(template)
        return out
    raise error(f"{where}: chat_template must be None, a str or a dict of name -> str, not {describe(value)}")


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
    _check_encodable(doc, path)
    return doc


def _check_encodable(doc: Any, src: str) -> None:
    """FormatError for a string (key or value) with a lone surrogate (a ``\\ud800`` escape):
    cybpe keeps the config to write it back, and no UTF-8 file can hold one."""
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise FormatError(f"{src}: a string holds a lone surrogate: {value[:40]!r}") from None


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
    seen = False  # whether either file exists
    legacy_extras: list[str] = []
    for name in (CONFIG_JSON, SPECIAL_TOKENS_MAP_JSON):  # the map is read last: it wins
        src = os.path.join(folder, name)
        doc = _read_object(src)
        if doc is None:
            continue
        seen = True
        if name == SPECIAL_TOKENS_MAP_JSON:
            info.settings.map_extra = {k: v for k, v in doc.items() if k not in MAP_KEYS_READ}
            if config_has_decoder:
                continue  # transformers 5.x reads the map's roles only for a config without the decoder
            listed = doc.get("additional_special_tokens")
            if isinstance(listed, list):
                legacy_extras = [n for n in (_token_content(x, src, f"additional_special_tokens[{k}]")
                                             for k, x in enumerate(listed)) if n is not None]
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
            _read_settings(doc, src, info.settings)
    info.roles = check_roles(roles, added, f"{folder}: the tokenizer config", FormatError)
    info.non_special -= info.special
    if info.settings.extras is None and seen:  # a config without the key lists no extras
        info.settings.extras = legacy_extras
    _check_added_tokens_json(folder, added)
    _read_chat_template_files(folder, info.settings)
    return info


def _check_added_tokens_json(folder: str, added: Mapping[str, int]) -> None:
    """transformers 4.x adds the tokens of an ``added_tokens.json`` on top of ``tokenizer.json``;
    cybpe reads the folder only when that adds nothing (each token already an added token of
    ``tokenizer.json``, with the same id), and refuses it otherwise (FormatError)."""
    path = os.path.join(folder, ADDED_TOKENS_JSON)
    doc = _read_object(path)
    if doc is None:
        return
    for token, token_id in doc.items():
        if added.get(token) != token_id or isinstance(token_id, bool):
            raise FormatError(
                f"{path}: {token!r} -> {describe(token_id)} is not an added token of {TOKENIZER_JSON} "
                f"with that id (there: {added.get(token)!r}); transformers 4.x would add it on top, "
                f"which cybpe does not do")


def _read_settings(doc: dict, src: str, settings: TransformersSettings) -> None:
    """The config's settings (see :class:`TransformersSettings`); every other key kept."""
    settings.config_extra = {k: v for k, v in doc.items() if k not in CONFIG_KEYS_READ}
    if doc.get("add_prefix_space") not in (None, False):
        # the GPT-2 / Qwen2 classes of transformers would put a space before every text
        raise FormatError(f"{src}: add_prefix_space {describe(doc['add_prefix_space'])}: cybpe does "
                          f"not add a prefix space (only false or absent is read)")
    if "chat_template" in doc:
        settings.chat_template = check_chat_template(doc["chat_template"], src, FormatError)
        settings.chat_template_files = False
    for key in ("padding_side", "truncation_side"):
        if doc.get(key) is not None:
            setattr(settings, key, check_side(doc[key], f"{src}: {key}", FormatError))
    for key, attr in (("clean_up_tokenization_spaces", "clean_up_tokenization_spaces"),
                      ("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output", "clean_up_for_bpe"),
                      ("split_special_tokens", "split_special_tokens")):
        if doc.get(key) is not None:
            setattr(settings, attr, check_flag(doc[key], f"{src}: {key}", FormatError))
    for key in ("add_bos_token", "add_eos_token"):
        if doc.get(key) is not None:
            setattr(settings, key, check_flag(doc[key], f"{src}: {key}", FormatError))
    listed = doc.get("additional_special_tokens")
    if isinstance(listed, list):
        names = [_token_content(item, src, f"additional_special_tokens[{k}]") for k, item in enumerate(listed)]
        settings.extras = [n for n in names if n is not None]
    if doc.get("model_input_names") is not None:
        settings.model_input_names = check_input_names(doc["model_input_names"], src, FormatError)
    cls = doc.get("tokenizer_class")
    if cls is not None:
        if not isinstance(cls, str) or not cls:
            raise FormatError(f"{src}: tokenizer_class is not a class name: {describe(cls)}")
        settings.tokenizer_class = cls


def _read_chat_template_files(folder: str, settings: TransformersSettings) -> None:
    """``chat_template.jinja`` (the default template) and ``additional_chat_templates/*.jinja``
    (named ones), which win over the config's ``chat_template``, as in transformers."""
    found: dict[str, str] = {}
    path = os.path.join(folder, CHAT_TEMPLATE_FILE)
    if os.path.isfile(path):
        found["default"] = _read_text(path)
    extra = os.path.join(folder, CHAT_TEMPLATE_DIR)
    if os.path.isdir(extra):
        for entry in sorted(os.listdir(extra)):
            if entry.endswith(".jinja") and os.path.isfile(os.path.join(extra, entry)):
                found[entry[: -len(".jinja")]] = _read_text(os.path.join(extra, entry))
    if found:
        settings.chat_template = found["default"] if list(found) == ["default"] else found
        settings.chat_template_files = True


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from None


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
                        model_max_length: Optional[int],
                        settings: Optional[TransformersSettings] = None) -> tuple[dict, dict]:
    """(``tokenizer_config.json``, ``special_tokens_map.json``) as dicts: the kept keys of
    ``settings`` first (in their order), then what cybpe writes (roles, special tokens,
    settings); the chat templates are in the config only when ``settings`` keeps them there."""
    settings = settings or TransformersSettings()
    role_tokens = {t for t in roles.values() if t is not None}
    if settings.extras is not None and all(t in special for t in settings.extras):
        extras = list(settings.extras)  # the config's own list (transformers' all_special_tokens)
    else:
        extras = [name for name, _ in sorted(added.items(), key=lambda kv: kv[1])
                  if name in special and name not in role_tokens]
    config: dict[str, Any] = dict(settings.config_extra)
    config.update({
        "tokenizer_class": settings.tokenizer_class,
        "clean_up_tokenization_spaces": settings.clean_up_tokenization_spaces,
        **{role: roles.get(role) for role in ROLE_NAMES},
    })
    if settings.clean_up_for_bpe:
        config["clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"] = True
    if model_max_length is not None:
        config["model_max_length"] = model_max_length
    config["model_input_names"] = list(settings.model_input_names)
    config["padding_side"] = settings.padding_side
    config["truncation_side"] = settings.truncation_side
    config["split_special_tokens"] = settings.split_special_tokens
    for flag in ("add_bos_token", "add_eos_token"):
        if getattr(settings, flag) is not None:
            config[flag] = getattr(settings, flag)
    if settings.chat_template is not None and not settings.chat_template_files:
        template = settings.chat_template
        config["chat_template"] = (template if isinstance(template, str)
                                   else [{"name": k, "template": v} for k, v in template.items()])
    config["additional_special_tokens"] = extras
    config["added_tokens_decoder"] = {
        str(tid): {"content": name, "lstrip": False, "normalized": False, "rstrip": False,
                   "single_word": False, "special": name in special}
        for name, tid in sorted(added.items(), key=lambda kv: kv[1])
    }
    special_map: dict[str, Any] = dict(settings.map_extra)
    special_map.update({role: token for role, token in roles.items() if token is not None})
    if extras:
        special_map["additional_special_tokens"] = extras
    return config, special_map


def chat_template_files(settings: Optional[TransformersSettings]) -> dict[str, str]:
    """The chat template files to write (path inside the folder -> text): none when the
    templates live in the config."""
    if settings is None or settings.chat_template is None or not settings.chat_template_files:
        return {}
    template = settings.chat_template
    if isinstance(template, str):
        return {CHAT_TEMPLATE_FILE: template}
    return {(CHAT_TEMPLATE_FILE if name == "default" else f"{CHAT_TEMPLATE_DIR}/{name}.jinja"): text
            for name, text in template.items()}


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
                          model_max_length: Optional[int],
                          settings: Optional[TransformersSettings] = None) -> None:
    """Write the folder's files into ``directory`` (created if missing): ``tokenizer.json``,
    ``tokenizer_config.json``, ``special_tokens_map.json`` and the chat template files.

    ``write_tokenizer_json(path)`` writes ``tokenizer.json`` at ``path`` or raises (an
    :class:`~cybpe.errors.ExportError`); ``added`` are the added tokens (name -> id), ``special``
    the ones flagged special, ``roles`` role -> token (already checked by :func:`check_roles`),
    ``settings`` the rest of the config (:class:`TransformersSettings`). Every file is staged
    first and only then renamed into place; a chat template file of an earlier save that this
    one does not write is removed last (transformers would read it instead of the config's).
    """
    config, special_map = transformers_config(added, special, roles, model_max_length, settings)
    texts = {
        CONFIG_JSON: json.dumps(config, indent=2, ensure_ascii=False) + "\n",
        SPECIAL_TOKENS_MAP_JSON: json.dumps(special_map, indent=2, ensure_ascii=False) + "\n",
        **chat_template_files(settings),
    }
    folder = _prepare_directory(directory)
    if any(name.startswith(CHAT_TEMPLATE_DIR + "/") for name in texts):
        extra_dir = os.path.join(folder, CHAT_TEMPLATE_DIR)
        try:
            os.makedirs(extra_dir, exist_ok=True)
        except OSError as exc:
            raise SaveError(f"{extra_dir}: cannot create the directory: {exc.strerror or exc}") from None
    staged: dict[str, str] = {}
    try:
        targets = {}
        for name in (TOKENIZER_JSON, *texts):
            # A symbolic link is written through, as atomic.py does: the file it points to is
            # replaced, by a temporary file in that file's folder.
            targets[name] = target = destination(os.path.join(folder, name))
            where, base = os.path.split(os.path.abspath(target))
            # Named as atomic.py names its temporary files, so a killed save's leftovers are
            # removed by the next save of the same file.
            staged[name] = os.path.join(where, f".{base}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
            if name == TOKENIZER_JSON:
                write_tokenizer_json(staged[name])
            else:  # (newlines written as given: a template is kept byte for byte)
                try:
                    texts[name].encode("utf-8")
                except UnicodeEncodeError:
                    raise SaveError(f"{folder}: {name} would hold a lone surrogate, which no UTF-8 "
                                    f"file can") from None
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
    _remove_stale_templates(folder, set(texts))


def _remove_stale_templates(folder: str, written: set[str]) -> None:
    stale = [CHAT_TEMPLATE_FILE] if CHAT_TEMPLATE_FILE not in written else []
    extra = os.path.join(folder, CHAT_TEMPLATE_DIR)
    if os.path.isdir(extra):
        stale += [f"{CHAT_TEMPLATE_DIR}/{entry}" for entry in os.listdir(extra)
                  if entry.endswith(".jinja") and f"{CHAT_TEMPLATE_DIR}/{entry}" not in written]
    for name in stale:
        path = os.path.join(folder, name)
        if os.path.lexists(path):
            try:
                os.unlink(path)
            except OSError as exc:
                raise SaveError(f"{path}: an old chat template that transformers would read instead "
                                f"of the saved one, and it cannot be removed: {exc.strerror or exc}") from None
