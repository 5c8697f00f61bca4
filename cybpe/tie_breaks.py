"""The tie-break rules every BPE trainer offers, named once.

Among pairs of equal count, ``"ids"`` merges the smallest ``(left, right)`` pair of ids (as
rustbpe); ``"huggingface"`` compares the 256 byte ids in HF ByteLevel's code-point order (HF
``BpeTrainer``'s order). The compiled trainers (``cybpe/training/``), ``train()``
(``cybpe/api/train/``) and the pure-Python references (``cybpe/reference/``) all import this
list; it sits on the ground floor with ``errors.py`` so that the references import no fast stage.
"""

TIE_BREAKS: tuple[str, ...] = ("ids", "huggingface")
