"""``train()``: corpus -> chunk counts -> merges -> Tokenizer, one module per mode."""

from cybpe.api.train.plain import train as train
