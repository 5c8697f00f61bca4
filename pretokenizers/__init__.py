"""cybpe's built-in pre-tokenizers, imported as ``cybpe_pretokenizers``.

Each module is one plugin with one ``@hookimpl``, registered through the
``cybpe.pretokenizers`` entry-point group like any third-party plugin.
"""
