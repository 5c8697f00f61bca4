"""Named encodings, as tiktoken's registry has them: ``cybpe.get_encoding(name)``.

* :mod:`.registry`: the encodings every ``cybpe_register_encodings`` hook implementation
  registers, built on first use and kept (``get_encoding``, ``encoding_for_model``).
* :mod:`.cache`: where an encoding's files are found offline, each checked by its sha256.
* :mod:`.download`: the explicit, opt-in :func:`cybpe.download`.
* :mod:`.known_encodings`: the built-in plugin (OpenAI's encodings, Llama 3, Qwen 3).

Internal: the public API is the top-level ``cybpe`` package (and :class:`EncodingFile` here,
for plugin authors)."""

from cybpe.encodings.cache import EncodingFile as EncodingFile
