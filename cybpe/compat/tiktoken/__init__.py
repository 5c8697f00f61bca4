"""tiktoken's public API on cybpe (what :func:`cybpe.compat.install_tiktoken` installs as
``tiktoken``): ``Encoding``, ``get_encoding``, ``encoding_for_model``,
``encoding_name_for_model``, ``list_encoding_names``, and the submodules ``core``, ``load``,
``registry`` and ``model``.

The differences from tiktoken 0.14 that remain (each error is also the built-in tiktoken raises,
unless said otherwise):

* errors are cybpe's typed errors: an unknown token or id raises
  :class:`~cybpe.errors.InvalidTokenError` (a ``KeyError`` and a ``ValueError``), a disallowed
  special token :class:`~cybpe.errors.DisallowedSpecialTokenError` (a ``ValueError``), an
  unknown encoding :class:`~cybpe.errors.UnknownEncodingError` (``ValueError`` and
  ``KeyError``); a float id is an ``InvalidTokenError`` (tiktoken: ``TypeError``), and
  ``is_special_token("x")`` a :class:`~cybpe.errors.ParameterTypeError` (tiktoken:
  ``AssertionError``); ``Encoding(...)`` refuses bad ranks with a
  :class:`~cybpe.errors.FormatError` / :class:`~cybpe.errors.InvalidParameterError` where
  tiktoken asserts or panics.
* ``Encoding(...)`` needs every single byte to be a token and special ids apart from ordinary
  ranks (tiktoken accepts both and fails later, when it meets such a byte or id).
* files are never downloaded: ``load_tiktoken_bpe`` and ``get_encoding`` read local files, the
  registered encodings' copies (``$CYBPE_ENCODINGS_DIR``, tiktoken's cache) or a path; an
  address whose file is nowhere local raises :class:`~cybpe.errors.MissingEncodingFileError`.
* ``list_encoding_names()`` lists every encoding registered with cybpe (also ``llama3`` and
  ``qwen3``); ``encode_with_unstable`` lists its completions sorted.
"""

from cybpe.compat.tiktoken import core as core
from cybpe.compat.tiktoken import load as load
from cybpe.compat.tiktoken import model as model
from cybpe.compat.tiktoken import registry as registry
from cybpe.compat.tiktoken.core import Encoding as Encoding
from cybpe.compat.tiktoken.model import encoding_for_model as encoding_for_model
from cybpe.compat.tiktoken.model import encoding_name_for_model as encoding_name_for_model
from cybpe.compat.tiktoken.registry import get_encoding as get_encoding
from cybpe.compat.tiktoken.registry import list_encoding_names as list_encoding_names

#: the tiktoken release whose API this presents
__version__ = "0.14.0"
