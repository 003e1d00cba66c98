"""kvgen: autoregressive text generation on the CPU.

A C++ core (samplers, search, KV-cached transformers) behind a small Python API.
"""

from kvgen import _config
from kvgen._config import from_dict, from_hf
from kvgen._core import GenerationConfig, StepResult, VerifyResult, get_num_threads, sample, set_num_threads
from kvgen._default_model import default_model_path, load_default
from kvgen._generator import Generator, generate, stream
from kvgen._model import Model, WindowNotStoredWarning
from kvgen._processor import LogitsProcessor, transformers_generate_kwargs
from kvgen.generation.model_generator import ModelGenerator
from kvgen.generation.results import GenerationResult, GenerationStats, TextPiece

__version__ = "0.1.0"

GenerationConfig.from_dict = staticmethod(from_dict)
GenerationConfig.from_hf = staticmethod(from_hf)
_config.install()

__all__ = [
    "GenerationConfig",
    "GenerationResult",
    "GenerationStats",
    "Generator",
    "LogitsProcessor",
    "Model",
    "ModelGenerator",
    "StepResult",
    "VerifyResult",
    "TextPiece",
    "WindowNotStoredWarning",
    "default_model_path",
    "generate",
    "get_num_threads",
    "load_default",
    "sample",
    "set_num_threads",
    "stream",
    "transformers_generate_kwargs",
    "__version__",
]
