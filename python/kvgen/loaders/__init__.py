"""Loaders: model files into what the C++ core takes. Hugging Face checkpoint directories
(``checkpoint``), quantize-at-load (``quantize``), rotary frequencies (``rope``), chat templates
(``chat_template``) and GGUF files (``gguf``: the container, its metadata, its tokenizer and the
model's tensors)."""
