"""transformers folders survive ``cybpe.Tokenizer.from_pretrained`` -> ``save_pretrained``: the
original folder and cybpe's copy of it, each loaded by transformers' ``AutoTokenizer``, give
equal ``tokenizer(...)`` (single, batch, pairs, padding, truncation, offsets), equal
``apply_chat_template(...)`` (as text and as ids), decode and batch decode; and cybpe's own
transformers-shaped calls give the same as the original (the BOS post-processor included).

Runs under whichever transformers is installed: 5.x in the test extra, 4.x in CI's
``.ci/stage-transformers4.sh``. The folders: the shared Llama 3, Qwen3 and GPT-4o folders, and
Llama 3 with Meta's BOS post-processor (built here from the Llama 3 folder). The default run
takes the BOS folder on a few texts; the full run (``--full``) every folder on ~480 documents.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import cybpe
from cybpe.errors import FormatError, InvalidParameterError

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders only: the hub is never asked
transformers = pytest.importorskip("transformers")
MAJOR = int(transformers.__version__.split(".")[0])

FOLDERS = ("llama3-bos", "llama3", "qwen3", "gpt4o-hf")
HOSTILE = ["Hello world . , don't", "", " ", "  leading and trailing  ", "中文 🙂 ça\n\n\tx",
           "<|begin_of_text|>hi<|eot_id|> <|end_of_text|>", "<|im_start|>user\nhi<|im_end|> <think>x</think>",
           "<|endoftext|> and <|endofprompt|>", "12345 678 3.14159", "a" * 300, "\r\n\r\n  \u00a0 \u3000 !!!"]
CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "2+2?"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "Why , though ?"}],
]

#: Meta's Llama 3 post-processor: ByteLevel offsets, then <|begin_of_text|> before each text.
META_BOS = {
    "type": "Sequence",
    "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                  {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                                  "tokens": ["<|begin_of_text|>"]}}},
    ],
}


def llama3_with_bos(source: Path, target: Path) -> Path:
    """A copy of the Llama 3 folder whose tokenizer.json has Meta's BOS post-processor."""
    target.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(source):
        shutil.copy(source / name, target / name)
    doc = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    doc["post_processor"] = META_BOS
    (target / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return target


def auto(folder: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def folders(shared_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("folders")
    out = {name: shared_dir / "vocab" / name for name in FOLDERS if name != "llama3-bos"}
    out["llama3-bos"] = llama3_with_bos(shared_dir / "vocab" / "llama3", base / "llama3-bos")
    return out


_LOADED: dict = {}


def loaded(name, folders, tmp_path_factory):
    """(cybpe tokenizer, transformers on the original, transformers on cybpe's save), once per
    module run."""
    if name not in _LOADED:
        ours = cybpe.Tokenizer.from_pretrained(folders[name])
        saved = tmp_path_factory.mktemp("saved") / name
        ours.save_pretrained(saved)
        _LOADED[name] = (ours, auto(folders[name]), auto(saved), saved)
    return _LOADED[name]


@pytest.fixture(scope="module")
def texts(shared_dir):
    docs = []
    for path in sorted((shared_dir / "corpora" / "eval").rglob("*.txt")):
        body = path.read_text(encoding="utf-8")
        docs += [body[i:i + 900] for i in range(0, min(len(body), 28 * 900), 900)]
    return HOSTILE + docs[:480]


def _plain(value):
    if isinstance(value, np.ndarray) and value.dtype == object:
        return ("rows", value.shape, [_plain(row) for row in value])
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.kind, value.shape, value.tolist())
    if isinstance(value, list):
        if value and type(value[0]) is int:  # a row of ids: as it is (the common case, kept cheap)
            return value
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return list(value)
    return value


def _same(a, b, what):
    assert set(a) == set(b), (what, sorted(a), sorted(b))
    for key in a:
        assert _plain(a[key]) == _plain(b[key]), (what, key)


def _calls(texts):
    """(args, kwargs) of tokenizer(...) calls: single, batch, pairs, padding, truncation, offsets."""
    batch = texts[:8]
    for text in texts[:24]:
        yield (text,), {}
    yield (texts,), {}  # every document, as one batch (the same ids as one call each)
    yield (batch,), {}
    yield (batch,), {"add_special_tokens": False}
    yield (batch, list(reversed(batch))), {}
    yield (texts[1], texts[2]), {"return_token_type_ids": True}
    yield (batch,), {"padding": True}
    yield (batch,), {"padding": True, "padding_side": "left", "return_tensors": "np"}
    yield (batch, batch[::-1]), {"padding": "max_length", "truncation": True, "max_length": 48}
    yield (batch, batch[::-1]), {"truncation": "only_second", "max_length": 200}
    yield (batch,), {"truncation": True, "max_length": 5, "return_offsets_mapping": True}
    yield (batch,), {"return_offsets_mapping": True, "return_special_tokens_mask": True}
    yield (batch,), {"padding": True, "pad_to_multiple_of": 8, "return_length": True}
    everything = {"return_offsets_mapping": True, "return_token_type_ids": True,
                  "return_special_tokens_mask": True, "return_length": True}
    yield (batch, batch[::-1]), {"padding": True, "padding_side": "left", **everything}
    yield (batch, batch[::-1]), {"padding": "max_length", "truncation": True, "max_length": 40,
                                 "return_tensors": "np", **everything}


def check_round_trip(name, folders, tmp_path_factory, texts):
    ours, original, again, saved = loaded(name, folders, tmp_path_factory)
    # the settings transformers reads from the config, equal after the round trip
    for attr in ("padding_side", "truncation_side", "model_input_names", "clean_up_tokenization_spaces",
                 "split_special_tokens", "bos_token", "eos_token", "unk_token", "pad_token",
                 "all_special_tokens", "model_max_length", "chat_template"):
        assert getattr(again, attr) == getattr(original, attr), (name, attr)
    assert type(again).__name__ == type(original).__name__, name
    assert len(again) == len(original) and again.get_vocab() == original.get_vocab()
    for tok in (original, again):  # the same pad token on both, as a user would set it
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
    for args, kwargs in _calls(texts):
        _same(again(*args, **kwargs), original(*args, **kwargs), (name, kwargs))
    # chat templates, as text and as ids
    for chat in CHATS:
        for generation in (False, True):
            if original.chat_template is None:
                with pytest.raises(ValueError):
                    original.apply_chat_template(chat, tokenize=False)
                with pytest.raises(ValueError):
                    again.apply_chat_template(chat, tokenize=False)
                continue
            kwargs = dict(add_generation_prompt=generation)
            assert again.apply_chat_template(chat, tokenize=False, **kwargs) == \
                original.apply_chat_template(chat, tokenize=False, **kwargs), name
            _plain_ids = lambda x: _plain(x["input_ids"] if isinstance(x, dict) else x)  # noqa: E731
            assert _plain_ids(again.apply_chat_template(chat, tokenize=True, **kwargs)) == \
                _plain_ids(original.apply_chat_template(chat, tokenize=True, **kwargs)), name
    # decode and batch decode
    rows = original(texts)["input_ids"]
    for skip in (False, True):
        assert again.batch_decode(rows, skip_special_tokens=skip) == original.batch_decode(rows, skip_special_tokens=skip)
        for row in rows[:20]:
            assert again.decode(row, skip_special_tokens=skip) == original.decode(row, skip_special_tokens=skip)


def check_cybpe_equals_original(name, folders, tmp_path_factory, texts):
    """cybpe's own calls equal transformers' on the original folder, the post-processor
    applied where transformers applies it."""
    ours, original, _, _ = loaded(name, folders, tmp_path_factory)  # (ours was saved already)
    if name == "gpt4o-hf" and MAJOR >= 5:
        # transformers 5 rebuilds GPT2Tokenizer folders with GPT-2's own split pattern; the
        # generic class reads tokenizer.json as it is, as cybpe does
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            original = transformers.PreTrainedTokenizerFast.from_pretrained(str(folders[name]))
    # (The tokenizers are shared by this module's tests, and check_round_trip compares the
    # original's pad token with the saved folder's: the one set here is taken back after.)
    pads = original.pad_token, ours.pad_token
    if original.pad_token is None:
        original.pad_token = original.eos_token
    if ours.pad_token is None:
        ours.pad_token = original.eos_token
    try:
        _check_cybpe_calls(name, ours, original, texts)
    finally:
        original.pad_token, ours.pad_token = pads


def _check_cybpe_calls(name, ours, original, texts):
    for args, kwargs in _calls(texts):
        _same(ours(*args, **kwargs), original(*args, **kwargs), (name, kwargs))
    rows = original(texts)["input_ids"]
    for skip in (False, True):
        assert ours.batch_decode(rows, skip_special_tokens=skip) == original.batch_decode(
            rows, skip_special_tokens=skip, clean_up_tokenization_spaces=False)
        if MAJOR >= 5:  # 4.x applies clean_up_tokenization_spaces to BPE, 5.x (and cybpe) do not
            assert ours.batch_decode(rows, skip_special_tokens=skip) == original.batch_decode(rows, skip_special_tokens=skip)
    for text in texts[:40]:
        assert ours.tokenize(text) == original.tokenize(text)
        assert ours.tokenize(text, add_special_tokens=True) == original.tokenize(text, add_special_tokens=True)


# --------------------------------------------------------------------------- the default run


def test_bos_folder_round_trip(folders, tmp_path_factory):
    check_round_trip("llama3-bos", folders, tmp_path_factory, HOSTILE)


def test_bos_folder_cybpe_equals_transformers(folders, tmp_path_factory):
    ours, original, _, saved = loaded("llama3-bos", folders, tmp_path_factory)
    assert original("hi")["input_ids"] == [128000, 6151]
    assert ours("hi")["input_ids"] == [128000, 6151] and ours("hi", add_special_tokens=False)["input_ids"] == [6151]
    assert ours.add_bos_token and not ours.add_eos_token
    assert ours.encode("hi") == [6151]  # the tiktoken-shaped encode never adds anything
    doc = json.loads((saved / "tokenizer.json").read_text(encoding="utf-8"))
    assert doc["post_processor"] == META_BOS
    check_cybpe_equals_original("llama3-bos", folders, tmp_path_factory, HOSTILE)


def test_saved_files_keep_every_key(folders, tmp_path_factory):
    for name in ("llama3-bos", "qwen3"):
        ours, _, _, saved = loaded(name, folders, tmp_path_factory)
        before = json.loads((folders[name] / "tokenizer_config.json").read_text(encoding="utf-8"))
        after = json.loads((saved / "tokenizer_config.json").read_text(encoding="utf-8"))
        for key, value in before.items():
            if key == "added_tokens_decoder":  # rewritten in cybpe's form: the same tokens and flags
                assert {k: (v["content"], v["special"]) for k, v in after[key].items()} == \
                    {k: (v["content"], v["special"]) for k, v in value.items()}
            elif key == "chat_template":
                assert after[key] == value  # kept where it was: in the config
            else:
                assert after[key] == value, (name, key)
        assert after["model_input_names"] == list(ours.model_input_names)
        assert not (saved / "chat_template.jinja").exists()


# --------------------------------------------------------------------------- the full run


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_real_folder_round_trip(name, folders, tmp_path_factory, texts):
    check_round_trip(name, folders, tmp_path_factory, texts)


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_real_folder_cybpe_equals_transformers(name, folders, tmp_path_factory, texts):
    check_cybpe_equals_original(name, folders, tmp_path_factory, texts)


# --------------------------------------------------------------------------- small folders


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A small trained tokenizer saved as a transformers folder, with roles."""
    from support import UDHR_DIR

    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
    tok = cybpe.train(texts, 600, "cl100k", ["<s>", "</s>", "<pad>"], progress=False)
    tok = cybpe.Tokenizer(tok.vocab, tok.pretokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    folder = tmp_path_factory.mktemp("small") / "tok"
    tok.save_pretrained(folder)
    return folder


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target


def test_chat_template_storage_forms(small, tmp_path):
    folder = _copy(small, tmp_path)
    simple = "{% for m in messages %}<s>{{ m['content'] }}</s>{% endfor %}"
    # 1. in the config, as one string and as named templates: kept there
    for value in (simple, [{"name": "default", "template": simple}, {"name": "tool_use", "template": "T" + simple}]):
        _edit(folder / "tokenizer_config.json", lambda d: d.__setitem__("chat_template", value))
        tok = cybpe.Tokenizer.from_pretrained(folder)
        tok.save_pretrained(tmp_path / "out")
        config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text(encoding="utf-8"))
        assert config["chat_template"] == value and not (tmp_path / "out" / "chat_template.jinja").exists()
        assert auto(tmp_path / "out").chat_template == auto(folder).chat_template
    # 2. as files (transformers' own form): they win over the config, and are written as files
    _edit(folder / "tokenizer_config.json", lambda d: d.__setitem__("chat_template", "ignored"))
    (folder / "chat_template.jinja").write_bytes(b"{{ 'file' }}\r\n")
    (folder / "additional_chat_templates").mkdir()
    (folder / "additional_chat_templates" / "rag.jinja").write_text("{{ 'rag' }}", encoding="utf-8")
    tok = cybpe.Tokenizer.from_pretrained(folder)
    assert tok.chat_template == {"default": "{{ 'file' }}\r\n", "rag": "{{ 'rag' }}"}
    tok.save_pretrained(tmp_path / "out")  # over the folder saved above
    out = tmp_path / "out"
    assert (out / "chat_template.jinja").read_bytes() == b"{{ 'file' }}\r\n"
    assert (out / "additional_chat_templates" / "rag.jinja").read_text(encoding="utf-8") == "{{ 'rag' }}"
    assert "chat_template" not in json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert auto(out).chat_template == auto(folder).chat_template
    # 3. a template set by hand, then none: stale files of an earlier save are removed
    tok.chat_template = simple
    tok.save_pretrained(out)
    assert (out / "chat_template.jinja").read_text(encoding="utf-8") == simple
    assert not (out / "additional_chat_templates" / "rag.jinja").exists()
    tok.chat_template = None
    tok.save_pretrained(out)
    assert not (out / "chat_template.jinja").exists() and auto(out).chat_template is None
    with pytest.raises(InvalidParameterError):
        tok.chat_template = {"../evil": "x"}
    with pytest.raises(InvalidParameterError):
        tok.chat_template = 7


def test_settings_kept_and_honoured(small, tmp_path):
    folder = _copy(small, tmp_path)
    _edit(folder / "tokenizer_config.json", lambda d: d.update(
        padding_side="left", truncation_side="left", split_special_tokens=True, errors="replace",
        add_prefix_space=False, legacy=False, some_future_key={"a": [1, 2]}, tokenizer_class="GPT2Tokenizer",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"]))
    _edit(folder / "special_tokens_map.json", lambda d: d.update(mask_token="<pad>"))
    tok = cybpe.Tokenizer.from_pretrained(folder)
    assert (tok.padding_side, tok.truncation_side, tok.split_special_tokens) == ("left", "left", True)
    assert tok.tokenizer_class == "GPT2Tokenizer"
    original = auto(folder)
    for args, kwargs in [(("x <s> y", "z"), {}), ((["a b c d", "e"],), {"padding": True}),
                         ((["a b c d e f g h", "e"],), {"truncation": True, "max_length": 3})]:
        _same(tok(*args, **kwargs), original(*args, **kwargs), kwargs)
    assert tok.tokenize("x <s> y") == original.tokenize("x <s> y")
    tok.save_pretrained(tmp_path / "out")
    config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["some_future_key"] == {"a": [1, 2]} and config["errors"] == "replace"
    assert config["legacy"] is False and config["tokenizer_class"] == "GPT2Tokenizer"
    assert json.loads((tmp_path / "out" / "special_tokens_map.json").read_text(encoding="utf-8"))["mask_token"] == "<pad>"
    # and through cybpe's own format and pickles
    tok.save(tmp_path / "tok.json")
    for again in (cybpe.Tokenizer.load(tmp_path / "tok.json"), __import__("pickle").loads(__import__("pickle").dumps(tok))):
        assert (again.padding_side, again.split_special_tokens, again.tokenizer_class) == ("left", True, "GPT2Tokenizer")
        again.save_pretrained(tmp_path / "again")
        assert json.loads((tmp_path / "again" / "tokenizer_config.json").read_text(encoding="utf-8")) == config


def test_clean_up_tokenization_spaces(small, tmp_path):
    """Applied to BPE as transformers 5 applies it: only with the config's
    ``clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output`` too."""
    folder = _copy(small, tmp_path)
    text = "Hello world . , don't ! it 's"
    for corrupt in (True, False):
        _edit(folder / "tokenizer_config.json", lambda d: d.update(
            clean_up_tokenization_spaces=True,
            clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output=corrupt))
        tok, theirs = cybpe.Tokenizer.from_pretrained(folder), auto(folder)
        ids = tok.encode(text)
        assert tok.decode(ids) == ("Hello world., don't! it's" if corrupt else text)
        assert tok.decode(ids, clean_up_tokenization_spaces=False) == text
        if MAJOR >= 5 or corrupt:  # (4.x cleans BPE up whenever the first flag is set)
            assert tok.decode(ids) == theirs.decode(ids)
        tok.save_pretrained(tmp_path / "out")
        assert auto(tmp_path / "out").decode(ids) == theirs.decode(ids)


def test_add_bos_token_setter(small, tmp_path):
    tok = cybpe.Tokenizer.from_pretrained(small)
    assert not tok.add_bos_token and tok("a")["input_ids"] == tok.encode("a")
    tok.add_bos_token = True
    tok.add_eos_token = True
    bos, eos = tok.bos_token_id, tok.eos_token_id
    assert tok("a")["input_ids"] == [bos, *tok.encode("a"), eos]
    tok.save_pretrained(tmp_path / "out")
    theirs = auto(tmp_path / "out")
    for args in (("a b",), ("a", "b"), (["a", "b c"],)):
        _same(tok(*args, return_token_type_ids=True), theirs(*args, return_token_type_ids=True), args)
    assert cybpe.Tokenizer.from_pretrained(tmp_path / "out")("a")["input_ids"] == [bos, *tok.encode("a"), eos]
    tok.set_roles(bos_token=None)
    tok.save_pretrained(tmp_path / "no-bos")  # (the flag without its role: still loads)
    assert cybpe.Tokenizer.from_pretrained(tmp_path / "no-bos").eos_token == "</s>"
    with pytest.raises(InvalidParameterError, match="bos_token"):
        tok.add_bos_token = True


@pytest.mark.parametrize("file, change, needle", [
    ("tokenizer_config.json", lambda d: d.__setitem__("add_bos_token", True), "add_bos_token=true"),
    ("tokenizer_config.json", lambda d: d.__setitem__("add_prefix_space", True), "add_prefix_space"),
    ("tokenizer_config.json", lambda d: d.__setitem__("padding_side", "middle"), "padding_side"),
    ("tokenizer_config.json", lambda d: d.__setitem__("split_special_tokens", "yes"), "split_special_tokens"),
    ("tokenizer_config.json", lambda d: d.__setitem__("model_input_names", "input_ids"), "model_input_names"),
    ("tokenizer_config.json", lambda d: d.__setitem__("chat_template", [{"name": "../x", "template": ""}]), "file name"),
    ("tokenizer_config.json", lambda d: d.__setitem__("chat_template", 3), "chat_template"),
    ("tokenizer.json", lambda d: d.__setitem__("post_processor", {"type": "Unknown"}), "post_processor"),
    ("tokenizer.json", lambda d: d.__setitem__("padding", {"strategy": "BatchLongest"}), "padding"),
    ("tokenizer.json", lambda d: d.__setitem__("truncation", {"max_length": 5}), "truncation"),
    ("tokenizer.json", lambda d: d.__setitem__("post_processor", {
        "type": "TemplateProcessing", "single": [{"Sequence": {"id": "B", "type_id": 0}}],
        "pair": [], "special_tokens": {}}), "TemplateProcessing|single"),
    ("tokenizer.json", lambda d: d.__setitem__("post_processor", {
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [10 ** 9], "tokens": ["<s>"]}}}), "ids"),
])
def test_what_cybpe_cannot_honour_is_refused(small, tmp_path, file, change, needle):
    folder = _copy(small, tmp_path)
    _edit(folder / file, change)
    with pytest.raises(FormatError, match=needle):
        cybpe.Tokenizer.from_pretrained(folder)


def test_added_tokens_json(small, tmp_path):
    """transformers 4.x adds an added_tokens.json's tokens on top: read only when it adds
    nothing."""
    folder = _copy(small, tmp_path)
    tok = cybpe.Tokenizer.from_pretrained(folder)
    (folder / "added_tokens.json").write_text(json.dumps({"<pad>": tok.pad_token_id}), encoding="utf-8")
    assert cybpe.Tokenizer.from_pretrained(folder).pad_token_id == tok.pad_token_id
    for doc in ({"<new>": tok.n_vocab}, {"<pad>": 3}):
        (folder / "added_tokens.json").write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(FormatError, match="added_tokens.json"):
            cybpe.Tokenizer.from_pretrained(folder)


def test_post_processor_forms_equal_tokenizers(small, tmp_path):
    """Each post-processor form cybpe reads, applied as HF tokenizers applies it (ids, type
    ids, offsets; trimming included), single and pair, with and without special tokens."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = cybpe.Tokenizer.from_pretrained(small)
    s, e = tok.bos_token_id, tok.eos_token_id
    forms = [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {"type": "RobertaProcessing", "sep": ["</s>", e], "cls": ["<s>", s], "trim_offsets": True, "add_prefix_space": False},
        {"type": "BertProcessing", "sep": ["</s>", e], "cls": ["<s>", s]},
        {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                        {"SpecialToken": {"id": "</s>", "type_id": 2}}],
             "pair": [{"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "<s>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}}],
             "special_tokens": {"<s>": {"id": "<s>", "ids": [s, e], "tokens": ["<s>", "</s>"]},
                                "</s>": {"id": "</s>", "ids": [e], "tokens": ["</s>"]}}}]},
    ]
    texts = [("  Hello  world ,  x  ", " second  one "), ("a", ""), ("", "b  "), (" x<s>y ", "  ")]
    for k, form in enumerate(forms):
        folder = tmp_path / f"f{k}"
        shutil.copytree(small, folder)
        _edit(folder / "tokenizer.json", lambda d: d.__setitem__("post_processor", form))
        ours = cybpe.Tokenizer.from_pretrained(folder)
        hf = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        for a, b in texts:
            for add in (True, False):
                for pair in (None, b):
                    theirs = hf.encode(a, pair, add_special_tokens=add)
                    got = ours(a, pair, add_special_tokens=add, return_token_type_ids=True,
                               return_offsets_mapping=True, return_special_tokens_mask=True)
                    what = (form["type"], a, pair, add)
                    assert got["input_ids"] == theirs.ids, what
                    assert got["token_type_ids"] == theirs.type_ids, what
                    assert got["special_tokens_mask"] == theirs.special_tokens_mask, what
                    assert [tuple(o) for o in got["offset_mapping"]] == theirs.offsets, what
        # and written back as read
        ours.save_pretrained(tmp_path / f"out{k}")
        assert json.loads((tmp_path / f"out{k}" / "tokenizer.json").read_text(encoding="utf-8"))["post_processor"] == form


def test_pair_truncation_equals_tokenizers(small):
    """HF tokenizers' pair truncation (longest_first splits the budget; only_first /
    only_second; both sides), with the added tokens counted, for every budget."""
    tok = cybpe.Tokenizer.from_pretrained(small)
    theirs = auto(small)
    tok.add_bos_token = True
    theirs.add_bos_token = True  # (transformers 5 rebuilds its template as cybpe does)
    if MAJOR < 5:
        pytest.skip("transformers 4.x's generic class has no add_bos_token to set")
    a, b = "one two three four five six seven", "eight nine ten"
    for side in ("right", "left"):
        tok.truncation_side = side
        theirs.truncation_side = side
        for strategy in ("longest_first", "only_first", "only_second"):
            for max_length in range(0, 16):
                try:
                    expected = theirs(a, b, truncation=strategy, max_length=max_length)
                except Exception:
                    with pytest.raises(InvalidParameterError):
                        tok(a, b, truncation=strategy, max_length=max_length)
                    continue
                _same(tok(a, b, truncation=strategy, max_length=max_length), expected, (side, strategy, max_length))
