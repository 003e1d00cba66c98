"""The activations modes tests run a model in (kvgen.Model.activations), and the skip of the
one this CPU may lack: "bf16" needs AVX512_BF16 (the reason comes from the core)."""

from __future__ import annotations

import pytest

from kvgen import _core

BF16_MISSING = _core._bf16_unavailable_reason()  # "" where this CPU runs activations="bf16"
needs_bf16 = pytest.mark.skipif(bool(BF16_MISSING), reason=f"activations='bf16': {BF16_MISSING}")
BF16 = pytest.param("bf16", marks=needs_bf16)
