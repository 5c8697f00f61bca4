"""cybpe: fast, exact byte-level BPE — train, encode, and compare pre-tokenizers.

The public API, re-exported by pipeline stage (ARCHITECTURE.md says where each lives)."""

# The Unicode check runs first: cybpe refuses a ``regex`` whose Unicode tables differ from its own.
from cybpe._c.unicode_version import unicode_version as unicode_version
from cybpe._version import __version__ as __version__
from cybpe import errors as errors
from cybpe.hookspecs import hookimpl as hookimpl

# pre-tokenize
from cybpe.pretokenize.pretokenizer import PreTokenizer as PreTokenizer
from cybpe.pretokenize.registry import get_pretokenizer as get_pretokenizer
from cybpe.pretokenize.registry import list_pretokenizers as list_pretokenizers
from cybpe.pretokenize.registry import pretokenizer_from_spec as pretokenizer_from_spec
from cybpe.pretokenize.registry import register_plugin as register_plugin
from cybpe.pretokenize.registry import unregister_plugin as unregister_plugin
from cybpe.pretokenize.regex_spans import set_regex_timeout as set_regex_timeout

# count and train
from cybpe.training.corpus import count as count
from cybpe.training.corpus import files as files
from cybpe.training.counts import ChunkCounts as ChunkCounts
from cybpe.training.parity import ParallelSet as ParallelSet
from cybpe.training.shards import Shard as Shard
from cybpe.training.shards import shards as shards
from cybpe.api.train import train as train
from cybpe.api.train.options import Prune as Prune
from cybpe.api.train.options import SuperBPE as SuperBPE
from cybpe.training.parity_budget import train_parity_budget as train_parity_budget

# vocabularies, tokenizers and their files
from cybpe.formats.vocab import Vocab as Vocab
from cybpe.api.tokenizer import StreamDecoder as StreamDecoder
from cybpe.api.tokenizer import Tokenizer as Tokenizer
from cybpe.api.load import load as load
from cybpe.api.load import save as save
from cybpe.api.encode_files import encode_files as encode_files

# named encodings (tiktoken-style)
from cybpe.encodings.registry import encoding_for_model as encoding_for_model
from cybpe.encodings.registry import encoding_name_for_model as encoding_name_for_model
from cybpe.encodings.registry import get_encoding as get_encoding
from cybpe.encodings.registry import list_encoding_names as list_encoding_names
from cybpe.encodings.download import download as download

# report
from cybpe.report.metrics import bits_per_byte as bits_per_byte

# drop-in for transformers' fast tokenizers (transformers itself is imported by the call only)
from cybpe.compat.transformers_patch import patch_transformers as patch_transformers
from cybpe.compat.transformers_patch import transformers_patched as transformers_patched
from cybpe.compat.transformers_patch import unpatch_transformers as unpatch_transformers

# What ``from cybpe import *`` and the API reference (pdoc) list.
__all__ = [
    "bits_per_byte",
    "ChunkCounts",
    "count",
    "download",
    "encode_files",
    "encoding_for_model",
    "encoding_name_for_model",
    "errors",
    "files",
    "get_encoding",
    "get_pretokenizer",
    "hookimpl",
    "list_encoding_names",
    "list_pretokenizers",
    "load",
    "ParallelSet",
    "patch_transformers",
    "PreTokenizer",
    "Prune",
    "pretokenizer_from_spec",
    "register_plugin",
    "save",
    "set_regex_timeout",
    "Shard",
    "shards",
    "StreamDecoder",
    "SuperBPE",
    "Tokenizer",
    "train",
    "train_parity_budget",
    "transformers_patched",
    "unpatch_transformers",
    "unregister_plugin",
    "Vocab",
]
