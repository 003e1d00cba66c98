"""GGUF files: the validating container reader (``file``), typed metadata (``metadata``), the
tokenizer the metadata describes (``tokenizer``) and the model's tensors and config (``model``)."""
