"""The plugin hook of cybpe: how a package adds pre-tokenizers.

A plugin is a module (or any object) with one function marked ``@cybpe.hookimpl``::

    import cybpe

    @cybpe.hookimpl
    def cybpe_register_pretokenizers(register):
        \"\"\"Whitespace-only splitting, for experiments.\"\"\"
        register("whitespace", r"\\S+|\\s+")

and an entry point in its ``pyproject.toml``::

    [project.entry-points."cybpe.pretokenizers"]
    whitespace = "my_package.my_module"

The built-in pre-tokenizers (``pretokenizers/`` in the source tree, imported as
``cybpe_pretokenizers``) are ordinary plugins registered through the same group.

A second hook, ``cybpe_register_encodings``, adds named encodings (``cybpe.get_encoding``); its
plugins are listed in the ``cybpe.encodings`` group, and the built-in encodings
(``cybpe.encodings.known_encodings``) come through it too.
"""

from __future__ import annotations

import pluggy

PROJECT_NAME = "cybpe"
ENTRY_POINT_GROUP = "cybpe.pretokenizers"
#: Entry points of plugins that add encodings (``cybpe_register_encodings``). The same plugin
#: manager loads both groups; a module implementing both hooks is listed in one group only.
ENCODINGS_ENTRY_POINT_GROUP = "cybpe.encodings"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


class _HookimplMarker(pluggy.HookimplMarker):
    """pluggy's marker, refusing (with a cybpe error) what is not a function."""

    def __call__(self, function=None, **options):  # type: ignore[no-untyped-def,override]
        if function is not None and not callable(function):
            from cybpe.errors import ParameterTypeError

            raise ParameterTypeError(f"@hookimpl marks a function, not {type(function).__name__}")
        return super().__call__(function, **options)


hookimpl = _HookimplMarker(PROJECT_NAME)


@hookspec
def cybpe_register_pretokenizers(register):  # type: ignore[no-untyped-def]
    """Register zero or more pre-tokenizers.

    :param register: call ``register(name, pattern, *, description=None, params=None,
        scanner=None, refine=None, export_pattern=None)`` once per pre-tokenizer. ``pattern`` is the exact regex
        string (for the ``regex`` module), or a function of the parameters returning it;
        ``params`` maps each parameter name to ``(default, allowed_values)`` (``None`` for
        "any value the pattern function accepts"); ``scanner`` is an optional compiled splitter
        (a subclass of ``cybpe.pretokenize.scanner_api.BaseScanner``, written in Cython against
        the contract in ``scanner_api.pxd``; encode, batch encode, counting and training then
        run it without the GIL) that gives the same spans as the pattern (without one, cybpe compiles the pattern
        itself when it can, see ``cybpe.pretokenize.pattern_compiler``); ``refine`` optionally post-processes the
        spans (for splits a leftmost regex cannot express); ``export_pattern`` (a string, or a
        function of the parameters) is one regex whose matches alone give the same final spans
        as ``pattern`` + ``refine``, which exports to HF ``tokenizers`` and tiktoken write
        (without it, exporting a pre-tokenizer with ``refine`` raises ``ExportError``). The
        description defaults to the docstring of the hook implementation.
    """


@hookspec
def cybpe_register_encodings(register):  # type: ignore[no-untyped-def]
    """Register zero or more named encodings (what ``cybpe.get_encoding(name)`` returns), the
    way a ``tiktoken_ext`` module's ``ENCODING_CONSTRUCTORS`` adds encodings to tiktoken.

    :param register: call ``register(name, *, files, build, n_vocab=None, models=(),
        model_prefixes=(), description=None)`` once per encoding. ``files`` is a sequence of
        ``cybpe.encodings.EncodingFile(path, sha256, url=None)``: each file's path relative to
        ``$CYBPE_ENCODINGS_DIR``, its sha256 (checked before use) and the address tiktoken
        caches it under (its cache file is named by the sha1 of that address). ``build`` is a
        function of the files' local paths, in that order, returning a ``cybpe.Tokenizer``; it
        runs on first use only. ``n_vocab`` (optional) is checked against what ``build`` returns.
        ``models`` maps model names to this encoding, ``model_prefixes`` model-name prefixes
        (for ``cybpe.encoding_for_model``). The description defaults to the docstring of the
        hook implementation. Example::

            @cybpe.hookimpl
            def cybpe_register_encodings(register):
                register("my_base", files=[EncodingFile("my_base.tiktoken", "ab12...")],
                         build=lambda path: cybpe.Tokenizer.from_tiktoken(
                             path, "cl100k", {"<|endoftext|>": 50000}))

        with an entry point in the ``cybpe.encodings`` group.
    """
