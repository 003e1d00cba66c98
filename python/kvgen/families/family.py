"""The interface of a model family: what one family module (kvgen.families.<family>) provides.

A ``Family`` turns a file's facts into the core's options: a Hugging Face config dict (a
directory's ``config.json``) into the C++ model's sizes and options (``build_core``), and a GGUF
file's keys and tensors into that config and the Hugging Face tensor names (``from_gguf``). It
says what a model of the family can do (``capabilities``) and names the transformers class it
equals (``transformers_class``, the tests' oracle). A family is recognised from the file, never
from a model's name: ``config.json``'s ``model_type``, GGUF's ``general.architecture``; every
other fact (head_dim, the rotary width, biases, q/k norms, windows, soft-caps) is read from the
file's own keys and tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Optional

import numpy as np

from kvgen.families.capabilities import Capabilities, capabilities_of, windowed

if TYPE_CHECKING:
    from kvgen import _core
    from kvgen.loaders.gguf.model import GGUFContents


@dataclass
class GGUFModel:
    """What a GGUF file holds, in the terms kvgen's models use (a family's ``from_gguf``)."""

    family: "Family"
    config: dict                      # Hugging Face config names
    arrays: dict[str, Any]            # float32 arrays or QuantizedTensors by Hugging Face name
    rope_freqs: Optional[np.ndarray] = None   # per-frequency divisors (Llama 3 files)
    norms_plus_one: bool = False      # Gemma's norm weights stored as 1 + w (llama.cpp's converter)
    tokenizer: Any = None             # kvgen.loaders.gguf.tokenizer.GGUFTokenizerInfo, or None
    metadata: dict = field(default_factory=dict)  # name and tensor type counts, for repr and the CLI
    pooling: Optional[str] = None     # the embeddings' pooling the file declares (kvgen.loaders.pooling)
    # what kvgen computes as llama.cpp does because the file does not store it (a window its
    # converter dropped): each a warning at load and a line of `kvgen info`
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Family:
    """One model family kvgen runs. Subclasses (one per core model: gpt2, llama, gemma2)
    implement the translation; a family module instantiates one with its facts."""

    name: str                 # as kvgen names it (Model.family, kvgen info)
    model_types: tuple[str, ...]  # config.json model_type values
    # GGUF general.architecture; None when llama.cpp's converter writes the family's files as
    # another family's (Mistral's as "llama": they are read as that family)
    gguf_architecture: Optional[str]
    transformers_class: str   # the reference class kvgen equals
    differs: str              # what differs from Llama, in a few words (docs, kvgen info)

    #: The C++ model that computes the family: "llama", "gemma" or "gpt2".
    core: ClassVar[str]
    #: The activation: (config key, value when absent, the values kvgen computes as transformers).
    activation: ClassVar[tuple[str, str, frozenset]]
    #: config key -> (the value kvgen implements, what a different value means; None: numerics
    #: only, accepted either way).
    refused: ClassVar[dict[str, tuple[Any, Optional[str]]]] = {}

    def check_config(self, config: dict) -> None:
        """ValueError naming a config key whose value kvgen does not compute as transformers."""
        key, default, allowed = self.activation
        act = config.get(key)
        act = default if act is None else act
        if not isinstance(act, str) or act not in allowed:
            raise ValueError(f"{self.core} config: {key}={act!r:.60} is not supported (supported: "
                             f"{', '.join(sorted(allowed))})")
        for k, (value, what) in self.refused.items():
            if what and config.get(k) not in (None, value):
                raise ValueError(f"{self.core} config: {k}={config[k]!r:.60} ({what}) is not supported")

    def sizes(self, config: dict) -> "_core._ModelConfig":
        """The sizes of a config dict, validated (ValueError naming the key) before anything
        they size is computed."""
        raise NotImplementedError

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """A directory's tensors (read by kvgen.loaders.checkpoint) in the layout the core reads,
        quantized to ``dtype`` ("q8_0", "q4_0") when given."""
        if dtype is None:
            return arrays
        from kvgen.loaders.quantize import quantize_checkpoint

        return quantize_checkpoint(self.core, arrays, dtype)

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        """The C++ model over ``arrays`` (Hugging Face names; float32 arrays or
        kvgen.loaders.quantize.QuantizedTensor) from a config dict (a directory's config.json or
        ``from_gguf``'s translation). rope_freqs, norms_plus_one: a GGUF file's (GGUFModel)."""
        raise NotImplementedError

    def build_mtp(self, config: dict, arrays: dict, core: "_core._Model", *, activations: str = "int8x2",
                  norms_plus_one: bool = False) -> Optional["_core._Model"]:
        """The checkpoint's multi-token-prediction head beside ``core`` (kvgen.generation.mtp), or
        None: a family whose checkpoints have none."""
        return None

    def from_gguf(self, gguf: "GGUFContents") -> GGUFModel:
        """A GGUF file's keys and tensors as a Hugging Face config and tensors."""
        raise NotImplementedError

    def long_rope_context(self, config: dict, core: "_core._Model") -> int:
        """LongRoPE's switch: the sequence length past which the long factors apply (0: none)."""
        return 0

    def capabilities(self, config: dict, core: "_core._Model") -> Capabilities:
        """What the engine may do with a model of this family loaded from ``config``."""
        return capabilities_of(sliding_window=windowed(config),
                               long_rope_context=self.long_rope_context(config, core))
