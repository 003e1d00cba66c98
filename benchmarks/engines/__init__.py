"""Adapters: one module per engine the benchmarks run, each a thin layer over its own API.

An adapter knows how to load its engine on a given file or weights, generate a fixed number
of tokens with EOS kept from ending the run, time prefill and decode, and report its version
(``versions()``; kvgen's version and core come with ``harness.environment``). The figure
scripts combine adapters with the harness (``harness.py``); ``PROTOCOL.md`` is the protocol.

* ``kvgen_engine``: ``kvgen.Model`` and ``kvgen.Generator``; the ``kvgen`` command lines.
* ``llama_cpp_engine``: llama-cpp-python (the main peer), in process, in a worker process
  (another interpreter) and as ``python -m llama_cpp.server``; llama.cpp's quantizer.
* ``hf_engine``: transformers + torch (the reference), from a directory or a GGUF file.
* ``ct2_engine``: CTranslate2, from a transformers directory it converts.

Two generation calls, both with exactly ``new_tokens`` new tokens:

* ``generate(prompt, new_tokens, beams=1) -> (tokens, token_times)``: ``time.perf_counter()``
  when each new token became known (greedy search only; an empty list under beam search).
  The caller times the whole call, so TTFT and the decode span come from the same call.
* ``run(prompt, new_tokens, sampling=None) -> {"tokens", "ttft", "decode", "steps"}``: the
  engine's own split of one call: seconds to the first new token (prefill), seconds from the
  first to the last new token and the decode steps in that span. ``sampling`` is None
  (greedy) or the chain's settings (``temperature``, ``top_k``, ``top_p``,
  ``repetition_penalty``, ``seed``).

benchmarks/ is not a package: scripts import ``engines.<adapter>`` from their own directory.
The peers' adapters import their engine only when used, so a missing peer is named and skipped.
"""
