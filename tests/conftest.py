"""Shared pytest set-up. Helper modules beside the tests (hf_reference, sandbox, ...) are
importable through ``pythonpath = ["tests"]`` in pyproject.toml."""
