"""cybpe: fast, exact byte-level BPE — train, encode, and compare pre-tokenizers."""

from . import errors as errors
from ._pretokenizer import PreTokenizer as PreTokenizer
from ._registry import get_pretokenizer as get_pretokenizer
from ._registry import list_pretokenizers as list_pretokenizers
from ._registry import register_plugin as register_plugin
from ._registry import unregister_plugin as unregister_plugin
from ._version import __version__ as __version__
from .hookspecs import hookimpl as hookimpl
