"""transformers + torch as a benchmark engine: the reference semantics, float32 on the CPU.

From a ``save_pretrained`` directory (GPT-2) or from a GGUF file (``from_pretrained(dir,
gguf_file=...)``: the file's weights dequantized to float32 at load, the reference kvgen's
quantized compute is held to). Threads: ``torch.set_num_threads``. EOS is kept from ending
a run by ``min_new_tokens``; token times come from a streamer passed to ``generate``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.generation.streamers import BaseStreamer


def versions() -> dict:
    return {"torch": torch.__version__, "transformers": transformers.__version__}


def set_threads(threads: int) -> None:
    torch.set_num_threads(threads)


def threads() -> int:
    return torch.get_num_threads()


def quiet() -> None:
    """transformers' logging at errors only (its warnings about generation settings)."""
    transformers.logging.set_verbosity_error()


def load_gguf(path: Path) -> transformers.PreTrainedModel:
    """``AutoModelForCausalLM`` from a GGUF file, dequantized to float32 (no progress bars)."""
    transformers.utils.logging.disable_progress_bar()
    return transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                             dtype=torch.float32).eval()


def gguf_tokenizer(path: Path):
    """transformers' tokenizer from a GGUF file's metadata."""
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


class TokenTimes(BaseStreamer):
    """HF streamer: generate() puts the prompt first, then each new token."""

    def __init__(self):
        self.times, self.puts = [], 0

    def put(self, value) -> None:
        self.puts += 1
        if self.puts > 1:
            self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


class HFEngine:
    """A transformers causal LM under ``torch.inference_mode()``; eos: the EOS (and pad) id to
    pass to ``generate``, None for the model's own."""

    def __init__(self, model: transformers.PreTrainedModel, eos: int | None = None):
        self.model = model
        self.eos = eos

    @classmethod
    def gpt2(cls, directory: Path, eos: int | None = None) -> HFEngine:
        """``GPT2LMHeadModel`` from a ``save_pretrained`` directory, float32."""
        return cls(transformers.GPT2LMHeadModel.from_pretrained(directory, dtype=torch.float32).eval(), eos)

    @classmethod
    def gguf(cls, path: Path) -> HFEngine:
        """The model of a GGUF file, dequantized to float32."""
        return cls(load_gguf(path))

    def _ids(self) -> dict:
        return {} if self.eos is None else {"eos_token_id": self.eos, "pad_token_id": self.eos}

    def generate(self, prompt: list[int], new_tokens: int, beams: int = 1) -> tuple[list[int], list[float]]:
        """New token ids and, under greedy search, when each became known (a streamer; HF
        streamers do not work with beams: an empty list there)."""
        ids = torch.tensor([prompt])
        streamer = TokenTimes() if beams == 1 else None
        with torch.inference_mode():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                      min_new_tokens=new_tokens, do_sample=False, num_beams=beams,
                                      streamer=streamer, **self._ids())
        return out[0, len(prompt):].tolist(), streamer.times if streamer else []

    def run(self, prompt: list[int], new_tokens: int, sampling: dict | None = None) -> dict:
        """One new token, greedy: a forward over the prompt (with its KV cache) and an argmax;
        else ``generate`` with a streamer for the token times (sampling: ``torch.manual_seed``
        of its seed, then ``do_sample``)."""
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            if new_tokens == 1 and not sampling:
                start = time.perf_counter()
                token = int(self.model(ids, use_cache=True).logits[0, -1].argmax())
                return {"tokens": [token], "ttft": time.perf_counter() - start, "decode": 0.0, "steps": 0}
            extra = {"do_sample": False}
            if sampling:
                torch.manual_seed(sampling["seed"])
                extra = {"do_sample": True, **{k: v for k, v in sampling.items() if k != "seed"}}
            streamer = TokenTimes()
            start = time.perf_counter()
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                      min_new_tokens=new_tokens, streamer=streamer, **self._ids(), **extra)
        t = streamer.times
        return {"tokens": out[0, len(prompt):].tolist(), "ttft": t[0] - start, "decode": t[-1] - t[0],
                "steps": len(t) - 1}

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """[len(ids), vocab] float32: one forward pass over every position, no cache."""
        with torch.inference_mode():
            return self.model(torch.from_numpy(ids)[None], use_cache=False).logits[0].float().numpy()

    def parameters(self) -> int:
        """Parameters, a tied embedding counted once."""
        return sum(p.numel() for p in self.model.parameters())
