"""OLMo 2 (Olmo2ForCausalLM): Llama with the norms after attention and after the MLP instead of
before them (no pre-norm: each branch reads the residual stream itself, and its output is
RMS-normed before it is added), and q/k RMSNorms over each whole projection (all heads together,
heads x head_dim values) rather than per head.

The core computes both from the file: the norms a layer has (transformers' post_attention_layernorm
and post_feedforward_layernorm are renamed at load to the core's names for norms after a branch),
and the q/k norms' sizes. llama.cpp's converter writes ``olmo2`` files (attn_post_norm,
ffn_post_norm, attn_q_norm of heads x head_dim values), with the q/k rows as the checkpoint stores
them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kvgen.families.llama import LlamaFamily
from kvgen.loaders.gguf.model import GGUFContents

#: OLMo 2's names for the norms after each branch -> the core's (Llama's and GLM-4's names)
POST_NORMS = {"post_attention_layernorm": "post_self_attn_layernorm",
              "post_feedforward_layernorm": "post_mlp_layernorm"}


@dataclass(frozen=True)
class Olmo2Family(LlamaFamily):
    """Llama's translation; an ``olmo2`` file with a window is an OLMo 3 checkpoint's."""

    def gguf_window(self, gguf: GGUFContents, layers: int) -> dict[str, Any]:
        """llama.cpp's converter writes OLMo 3 as ``olmo2`` files with its window and the layers
        it binds (attention.sliding_window_pattern): those are read as OLMo 3's (gguf_windowed_as),
        each flagged layer windowed."""
        return LlamaFamily.gguf_window(replace(self, sliding_layers="layer_types"), gguf, layers)

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        """A windowed file's rotary settings per kind of layer, as OLMo 3's config keeps them: the
        file's (rope.freq_base, its scaling) on the full layers, rope.freq_base_swa unscaled on the
        sliding ones (llama.cpp's converter writes the full layers' scaling alone)."""
        swa_base = gguf.get(self.gguf_architecture + ".rope.freq_base_swa", float, None)
        if swa_base is None or not config.get("sliding_window"):
            return {}
        return {"rope_parameters": {"full_attention": config["rope_parameters"],
                                    "sliding_attention": {"rope_type": "default", "rope_theta": swa_base}}}


FAMILY = Olmo2Family("olmo2", ("olmo2",), "olmo2", "Olmo2ForCausalLM",
                     "norms after attention and MLP instead of before; q/k norms over the whole projection",
                     renamed=POST_NORMS, gguf_windowed_as="olmo3")
