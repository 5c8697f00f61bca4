"""The API layer: what a user calls, built on the stages below it.

``tokenizer`` (:class:`~cybpe.Tokenizer`, :class:`~cybpe.StreamDecoder`), ``tokenizer_hf`` (its
transformers-shaped methods), ``train`` (:func:`cybpe.train`, one module per mode), ``load``
(:data:`~cybpe.api.load.FORMATS`, :func:`cybpe.load`, :func:`cybpe.save`) and ``encode_files``
(:func:`cybpe.encode_files`). ``cybpe/__init__.py`` re-exports the public names; this package
re-exports nothing, so each module's name stays the module.
"""
