"""The built-in encodings plugin: OpenAI's public encodings as tiktoken defines them, plus the
Llama 3 and Qwen 3 vocabularies (from their ``tokenizer.json``).

It registers through the same hook (``cybpe_register_encodings``) and entry-point group
(``cybpe.encodings``) as a third-party encodings package. Each definition's special tokens, size
and files are tiktoken's (``tiktoken_ext/openai_public.py``), written out here, and its pattern
is the named built-in pre-tokenizer's; the tests compare both with what tiktoken's own encoding
constructors return. The model tables are tiktoken's
``MODEL_TO_ENCODING`` and ``MODEL_PREFIX_TO_ENCODING`` (``tiktoken/model.py``).

Two of them are not plain: p50k_base's and p50k_edit's ranks skip 50256 (the id of
``<|endoftext|>``), and ``o200k_harmony`` gives the id 200018 to two special strings
(``<|endofprompt|>`` from o200k_base and ``<|reserved_200018|>`` from its reserved range). Both
load as tiktoken builds them: a gap and an alias of :class:`~cybpe.Vocab` (200018 decodes to
``<|endofprompt|>``, as tiktoken 0.14 decodes it).
"""

from __future__ import annotations

import functools
from typing import Any

from cybpe.encodings.cache import EncodingFile
from cybpe.errors import FormatError
from cybpe.formats.known import KNOWN_ENCODINGS
from cybpe.hookspecs import hookimpl

BLOB = "https://openaipublic.blob.core.windows.net/"

GPT2_VOCAB_BPE = EncodingFile("gpt2/vocab.bpe", "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
                              BLOB + "gpt-2/encodings/main/vocab.bpe")
GPT2_ENCODER_JSON = EncodingFile("gpt2/encoder.json",
                                 "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
                                 BLOB + "gpt-2/encodings/main/encoder.json")
R50K = EncodingFile("r50k_base.tiktoken", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
                    BLOB + "encodings/r50k_base.tiktoken")
P50K = EncodingFile("p50k_base.tiktoken", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
                    BLOB + "encodings/p50k_base.tiktoken")
CL100K = EncodingFile("cl100k_base.tiktoken", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                      BLOB + "encodings/cl100k_base.tiktoken")
O200K = EncodingFile("o200k_base.tiktoken", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                     BLOB + "encodings/o200k_base.tiktoken")
# Copies of the Hugging Face tokenizer.json files (no address whose bytes are known to hash to
# these is registered, so cybpe.download cannot fetch them: the user supplies the file).
LLAMA3 = EncodingFile("llama3/tokenizer.json", "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78")
QWEN3 = EncodingFile("qwen3/tokenizer.json", "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4")

#: name -> tiktoken's definition: the pre-tokenizer, special tokens and size of the one table
#: (cybpe/formats/known.py), with the files.
_FILES = {"gpt2": (GPT2_VOCAB_BPE, GPT2_ENCODER_JSON), "r50k_base": (R50K,), "p50k_base": (P50K,),
          "p50k_edit": (P50K,), "cl100k_base": (CL100K,), "o200k_base": (O200K,),
          "o200k_harmony": (O200K,)}
TIKTOKEN_DEFINITIONS: dict[str, dict[str, Any]] = {
    name: {**KNOWN_ENCODINGS[name], "files": files} for name, files in _FILES.items()}

MODELS: dict[str, tuple[str, ...]] = {
    "o200k_base": ("o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"),
    "cl100k_base": ("gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
                    "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"),
    "p50k_base": ("text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001",
                  "code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex"),
    "p50k_edit": ("text-davinci-edit-001", "code-davinci-edit-001"),
    "r50k_base": ("text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001",
                  "davinci", "curie", "babbage", "ada",
                  *(f"text-similarity-{m}-001" for m in ("davinci", "curie", "babbage", "ada")),
                  *(f"text-search-{m}-doc-001" for m in ("davinci", "curie", "babbage", "ada")),
                  "code-search-babbage-code-001", "code-search-ada-code-001"),
    "gpt2": ("gpt2", "gpt-2"),
}
MODEL_PREFIXES: dict[str, tuple[str, ...]] = {
    "o200k_base": ("o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-",
                   "ft:gpt-4o"),
    "o200k_harmony": ("gpt-oss-",),
    "cl100k_base": ("gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-", "ft:gpt-4", "ft:gpt-3.5-turbo",
                    "ft:davinci-002", "ft:babbage-002"),
}


def _build_from_gpt2_files(name: str, definition: dict[str, Any], vocab_bpe: str, encoder_json: str) -> Any:
    """GPT-2's vocab.bpe + encoder.json, read as tiktoken reads them: as ranks (a token's rank
    is its id), merged by rank rather than by the merge list. Written as .tiktoken, these ranks
    are byte for byte r50k_base.tiktoken (tested)."""
    from cybpe.api.tokenizer import Tokenizer
    from cybpe.formats.gpt2 import load_gpt2
    from cybpe.formats.vocab import Vocab

    specials = definition["special_tokens"]
    files = load_gpt2(encoder_json, vocab_bpe)
    if files.special_tokens != specials:
        raise FormatError(f"{encoder_json} has the special tokens {files.special_tokens}, not {specials}")
    return Tokenizer(Vocab(list(files.tokens), None, dict(specials), True), definition["pretokenizer"],
                     name=name, source=encoder_json)


def _build_from_tiktoken_file(name: str, definition: dict[str, Any], path: str) -> Any:
    from cybpe.api.tokenizer import Tokenizer

    return Tokenizer.from_tiktoken(path, definition["pretokenizer"], definition["special_tokens"], name=name)


def _hf_build(path: str) -> Any:
    from cybpe.api.tokenizer import Tokenizer

    return Tokenizer.from_hf(path)


@hookimpl
def cybpe_register_encodings(register):
    """OpenAI's public encodings (tiktoken's definitions), Llama 3 and Qwen 3."""
    for name, definition in TIKTOKEN_DEFINITIONS.items():
        builder = _build_from_gpt2_files if len(definition["files"]) == 2 else _build_from_tiktoken_file
        register(name, files=definition["files"], build=functools.partial(builder, name, definition),
                 n_vocab=definition["n_vocab"], models=MODELS.get(name, ()),
                 model_prefixes=MODEL_PREFIXES.get(name, ()),
                 description=f"tiktoken's {name}")
    register("llama3", files=(LLAMA3,), build=_hf_build,
             description="Meta Llama 3's tokenizer.json (128000 ranks, 256 special tokens)")
    register("qwen3", files=(QWEN3,), build=_hf_build,
             description="Qwen 3's tokenizer.json (151643 ranks and 26 added tokens)")
