"""The parts of bench_decode.py (end-to-end generation speed), one module each.

* ``models``: the models and prompts it runs on (a random GPT-2, GGUF files), made once;
* ``workloads``: one workload timed across engines, checked and summarized, and its table;
* ``gpt2``: the built-in GPT-2 against transformers and CTranslate2 (prefill, decode,
  beam search, long context);
* ``gguf``: GGUF files against llama-cpp-python and transformers (prefill, greedy and
  sampling-chain decode per thread count);
* ``load_memory``: load time and peak RSS of a GGUF file;
* ``batch``: kvgen's 4-beam search and batch-8 greedy against its batch-1 greedy.
"""
