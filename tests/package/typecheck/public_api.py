"""A script over kvgen's public API, type-checked (not run) by tests/package/test_typing.py: every call
here must check with mypy as written, and the ``# type: ignore`` lines must be errors (mypy's
``warn_unused_ignores`` reports an ignore that is not needed)."""

from __future__ import annotations

import inspect
from typing import Iterator

import numpy as np
import numpy.typing as npt

import kvgen

config = kvgen.GenerationConfig(do_sample=True, temperature=0.8, top_k=40, max_new_tokens=16, seed=0)
kvgen.GenerationConfig(temprature=0.5)  # type: ignore[call-arg]
kvgen.GenerationConfig(top_k="40")  # type: ignore[arg-type]
print(inspect.signature(kvgen.GenerationConfig), config.to_dict(), kvgen.GenerationConfig.from_hf({"top_k": 4}))

# Over external logits: the step API.
stepper: kvgen.Generator = kvgen.Generator(config, token_strings=["a", "b"])
stepper.append_tokens([[1, 2, 3]])
while not stepper.is_done():
    step: kvgen.StepResult = stepper.step(np.zeros((stepper.rows, 2), np.float32))
    tokens: npt.NDArray[np.int64] = step.tokens
result: kvgen.GenerationResult = stepper.result()
stepper.generate("Hi")  # type: ignore[attr-defined]

# With a built-in model.
model = kvgen.load_default()
generator: kvgen.ModelGenerator = kvgen.Generator(model, config)
kvgen.Generator(model, {"max_new_tokens": 8})
text: str = generator.generate("The capital of France is", max_new_tokens=5, seed=1)
texts: list[str] = generator.generate(["a", "b"])
ids_result: kvgen.GenerationResult = generator.generate([[1, 2, 3]])
pieces: Iterator[str] = generator.stream("Once", skip_special_tokens=False)
reply: str = generator.chat([{"role": "user", "content": "Hi"}], include_stop_str_in_output=False)
chunks: Iterator[str] = generator.chat_stream([{"role": "user", "content": "Hi"}])
stats: kvgen.GenerationStats = generator.last_stats
print(stats.summary(), generator.last_result, generator.kv_cache_bytes)
generator.append_tokens([[1]])  # type: ignore[attr-defined]
sampled: npt.NDArray[np.int64] = kvgen.sample(np.zeros((1, 4), np.float32), config)
