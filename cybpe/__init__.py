"""cybpe: fast, exact byte-level BPE — train, encode, and compare pre-tokenizers."""

from . import errors as errors
from ._corpus import files as files
from ._counts import ChunkCounts as ChunkCounts
from ._pretokenizer import PreTokenizer as PreTokenizer
from ._registry import get_pretokenizer as get_pretokenizer
from ._registry import list_pretokenizers as list_pretokenizers
from ._registry import register_plugin as register_plugin
from ._registry import unregister_plugin as unregister_plugin
from ._regex_spans import set_regex_timeout as set_regex_timeout
from ._tokenizer import StreamDecoder as StreamDecoder
from ._tokenizer import Tokenizer as Tokenizer
from ._train import train as train
from ._bpb import bits_per_byte as bits_per_byte
from ._version import __version__ as __version__
from ._vocab import Vocab as Vocab
from .hookspecs import hookimpl as hookimpl
