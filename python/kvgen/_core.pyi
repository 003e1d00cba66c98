"""Type stubs of the compiled kvgen._core module (kept in step by tests/test_stubs.py)."""

from typing import Any, Literal, Mapping, Sequence, overload

import numpy as np
import numpy.typing as npt

class GenerationConfig:
    max_new_tokens: int | None = None
    max_length: int | None = None
    min_new_tokens: int | None = None
    min_length: int = 0
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    min_p: float | None = None
    typical_p: float = 1.0
    epsilon_cutoff: float = 0.0
    eta_cutoff: float = 0.0
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = -1
    dry_sequence_breakers: list[str] | None = ['\n', ':', '"', '*']
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1
    top_n_sigma: float = -1.0
    mirostat: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    no_repeat_ngram_size: int = 0
    bad_words_ids: list[list[int]] | None = None
    suppress_tokens: list[int] | None = None
    begin_suppress_tokens: list[int] | None = None
    sequence_bias: dict[tuple[int, ...], float] | None = None
    logit_bias: dict[int, float] | None = None
    forced_bos_token_id: int | None = None
    forced_eos_token_id: int | list[int] | None = None
    remove_invalid_values: bool = False
    renormalize_logits: bool = False
    stop_sequences: list[list[int]] | None = None
    stop_strings: list[str] | None = None
    json_schema: str | dict[str, Any] | None = None
    regex: str | None = None
    grammar: str | None = None
    choices: list[str] | None = None
    num_beams: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | Literal["never"] = False
    num_return_sequences: int = 1
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    top_logprobs: int = 0
    seed: int | None = None
    def __init__(
        self, *,
        max_new_tokens: int | None = None,
        max_length: int | None = None,
        min_new_tokens: int | None = None,
        min_length: int = 0,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int = 50,
        top_p: float = 1.0,
        min_p: float | None = None,
        typical_p: float = 1.0,
        epsilon_cutoff: float = 0.0,
        eta_cutoff: float = 0.0,
        dry_multiplier: float = 0.0,
        dry_base: float = 1.75,
        dry_allowed_length: int = 2,
        dry_penalty_last_n: int = -1,
        dry_sequence_breakers: list[str] | None = ['\n', ':', '"', '*'],
        xtc_probability: float = 0.0,
        xtc_threshold: float = 0.1,
        top_n_sigma: float = -1.0,
        mirostat: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        repetition_penalty: float = 1.0,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        no_repeat_ngram_size: int = 0,
        bad_words_ids: list[list[int]] | None = None,
        suppress_tokens: list[int] | None = None,
        begin_suppress_tokens: list[int] | None = None,
        sequence_bias: dict[tuple[int, ...], float] | None = None,
        logit_bias: dict[int, float] | None = None,
        forced_bos_token_id: int | None = None,
        forced_eos_token_id: int | list[int] | None = None,
        remove_invalid_values: bool = False,
        renormalize_logits: bool = False,
        stop_sequences: list[list[int]] | None = None,
        stop_strings: list[str] | None = None,
        json_schema: str | dict[str, Any] | None = None,
        regex: str | None = None,
        grammar: str | None = None,
        choices: list[str] | None = None,
        num_beams: int = 1,
        length_penalty: float = 1.0,
        early_stopping: bool | Literal["never"] = False,
        num_return_sequences: int = 1,
        eos_token_id: int | list[int] | None = None,
        pad_token_id: int | None = None,
        bos_token_id: int | None = None,
        top_logprobs: int = 0,
        seed: int | None = None,
    ) -> None: ...
    def validate(self) -> None: ...
    @staticmethod
    def fields() -> list[str]: ...
    @staticmethod
    def _schema() -> list[tuple[str, str, bool, Any, str]]:
        """(name, stub annotation, nullable, default, doc) per field, from generation_config_fields.def."""
    def to_dict(self) -> dict[str, Any]: ...
    @staticmethod
    def from_dict(values: Mapping[str, Any]) -> GenerationConfig: ...
    @staticmethod
    def from_hf(source: Any, strict: bool = False) -> GenerationConfig: ...
    def __eq__(self, other: object) -> bool: ...
    def __copy__(self) -> GenerationConfig: ...
    def __deepcopy__(self, memo: Any) -> GenerationConfig: ...

class LogitsProcessor:
    def __init__(self, config: GenerationConfig, prompt_length: int | None = None) -> None: ...
    def __call__(self, input_ids: Any, scores: Any) -> Any: ...
    def reset(self) -> None:
        """Forgets the calling thread's sequence: its next call starts a new one (prompt = its input_ids)."""
    @overload
    def sample(
        self, logits: Any, input_ids: Any = None, *, step: int = 0,
        sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None,
        return_logprobs: Literal[False] = False,
    ) -> npt.NDArray[np.int64]: ...
    @overload
    def sample(
        self, logits: Any, input_ids: Any = None, *, step: int = 0,
        sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None,
        return_logprobs: Literal[True],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...
    @property
    def config(self) -> GenerationConfig: ...
    @property
    def prompt_length(self) -> int | None: ...

@overload
def sample(
    logits: Any, config: GenerationConfig, input_ids: Any = None, step: int = 0, *,
    sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None, return_logprobs: Literal[False] = False,
    prompt_length: int | None = None,
) -> npt.NDArray[np.int64]: ...
@overload
def sample(
    logits: Any, config: GenerationConfig, input_ids: Any = None, step: int = 0, *,
    sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None, return_logprobs: Literal[True],
    prompt_length: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...

class StepResult:
    def __init__(
        self, tokens: npt.NDArray[np.int64], beam_indices: npt.NDArray[np.int64] | None, done: bool,
        logprobs: npt.NDArray[np.float32] | None = None, top_token_ids: npt.NDArray[np.int64] | None = None,
        top_logprobs: npt.NDArray[np.float32] | None = None, raw_top_token_ids: npt.NDArray[np.int64] | None = None,
        raw_top_logprobs: npt.NDArray[np.float32] | None = None,
    ) -> None: ...
    @property
    def tokens(self) -> npt.NDArray[np.int64]: ...
    @property
    def beam_indices(self) -> npt.NDArray[np.int64] | None: ...
    @property
    def done(self) -> bool: ...
    @property
    def logprobs(self) -> npt.NDArray[np.float32]: ...
    @property
    def top_token_ids(self) -> npt.NDArray[np.int64] | None: ...
    @property
    def top_logprobs(self) -> npt.NDArray[np.float32] | None: ...
    @property
    def raw_top_token_ids(self) -> npt.NDArray[np.int64] | None: ...
    @property
    def raw_top_logprobs(self) -> npt.NDArray[np.float32] | None: ...

class _Generator:
    def __init__(
        self, config: GenerationConfig, batch_size: int | None = None, *,
        token_strings: Sequence[str | bytes] | None = None, output_raw_logprobs: bool = False,
    ) -> None: ...
    def append_tokens(
        self, prompts: Sequence[Sequence[int]] | npt.NDArray[np.integer], *,
        sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None,
    ) -> None: ...
    def step(
        self, logits: Any, *, allowed_tokens: npt.NDArray[np.uint32] | npt.NDArray[np.int32] | None = None,
    ) -> StepResult: ...
    @property
    def needs_token_texts(self) -> bool: ...
    def set_token_strings(self, token_strings: Sequence[str | bytes]) -> None: ...
    def is_done(self) -> bool: ...
    @property
    def rows(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def num_beams(self) -> int: ...
    @property
    def step_count(self) -> int: ...
    @property
    def config(self) -> GenerationConfig: ...
    @property
    def next_tokens(self) -> npt.NDArray[np.int64]: ...
    @property
    def beam_indices(self) -> npt.NDArray[np.int64] | None: ...
    @property
    def sequences(self) -> list[npt.NDArray[np.int64]]: ...
    @property
    def finish_reasons(self) -> list[str | None]: ...
    @property
    def last_logits(self) -> npt.NDArray[np.float32] | None: ...
    @property
    def mirostat_mu(self) -> npt.NDArray[np.float32]: ...
    def _last_step(self) -> tuple[Any, ...]: ...
    def max_new_tokens(self, prompt_length: int) -> int: ...
    def _hypotheses(self) -> list[list[dict[str, Any]]]: ...
    def _stop_row(self, row: int) -> None: ...

class _ModelConfig:
    def __init__(
        self, *, architecture: str, vocab_size: int, context_length: int, hidden: int, layers: int, heads: int,
        kv_heads: int, head_dim: int, intermediate: int,
    ) -> None: ...
    @property
    def architecture(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def context_length(self) -> int: ...
    @property
    def hidden(self) -> int: ...
    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def intermediate(self) -> int: ...
    def validate(self) -> None: ...

class _GPT2Options:
    def __init__(
        self, *, layer_norm_epsilon: float = 1e-5, scale_attn_weights: bool = True,
        scale_attn_by_inverse_layer_idx: bool = False, exact_gelu: bool = False,
    ) -> None: ...
    @property
    def layer_norm_epsilon(self) -> float: ...
    @property
    def scale_attn_weights(self) -> bool: ...
    @property
    def scale_attn_by_inverse_layer_idx(self) -> bool: ...
    @property
    def exact_gelu(self) -> bool: ...

class _LlamaOptions:
    def __init__(self, *, inv_freq: npt.NDArray[np.float32], rms_norm_eps: float = 1e-6) -> None: ...
    @property
    def rms_norm_eps(self) -> float: ...
    @property
    def inv_freq(self) -> npt.NDArray[np.float32]: ...

_Tensor = npt.NDArray[np.float32] | tuple[str, npt.NDArray[np.uint8], tuple[int, ...], bool]

class _Model:
    @staticmethod
    def gpt2(config: _ModelConfig, options: _GPT2Options, arrays: dict[str, _Tensor], *,
             activations: str = "int8x2") -> _Model: ...
    @staticmethod
    def llama(config: _ModelConfig, options: _LlamaOptions, arrays: dict[str, _Tensor], *,
              activations: str = "int8x2") -> _Model: ...
    def forward(self, input_ids: Any) -> npt.NDArray[np.float32]:
        """Logits [rows, length, vocab]: a new array the caller owns (later calls never change it)."""
    @property
    def architecture(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def context_length(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def num_layers(self) -> int: ...
    @property
    def num_heads(self) -> int: ...
    @property
    def num_kv_heads(self) -> int: ...
    @property
    def weight_bytes(self) -> int: ...
    @property
    def activations(self) -> str: ...
    @activations.setter
    def activations(self, value: str) -> None: ...
    def kv_cache_bytes(self, rows: int, positions: int) -> int: ...

def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...

# Quantized-weight kernels (private; tests and benchmarks).
class _QuantActivations:
    def __init__(self, max_rows: int, cols: int) -> None: ...
    def quantize(self, x: npt.NDArray[np.float32]) -> None: ...

class _QuantMatrix:
    @property
    def rows(self) -> int: ...
    @property
    def cols(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def type(self) -> str: ...
    def matmul(self, x: npt.NDArray[np.float32], exact: bool = False, path: str | None = None,
               groups: tuple[int, int] | None = None) -> npt.NDArray[np.float32]: ...
    def matmul_quantized(self, acts: _QuantActivations, path: str | None = None) -> npt.NDArray[np.float32]: ...
    def dequantize_rows(self, ids: npt.NDArray[np.integer]) -> npt.NDArray[np.float32]: ...

def _quant_pack(raw: npt.NDArray[np.uint8], type: str, rows: int, cols: int) -> _QuantMatrix: ...
def _quant_cpu_path() -> str: ...
def _quant_supported_paths() -> list[str]: ...
def _quant_choose_path(requested: str | None, supported: Sequence[str]) -> str: ...


_PREFILL_CHUNK: int

class _ModelSlots:
    def __init__(self, model: _Model, slots: int, context: int) -> None: ...
    @property
    def slots(self) -> int: ...
    @property
    def context(self) -> int: ...
    @property
    def kv_cache_bytes(self) -> int: ...
    @property
    def logits(self) -> npt.NDArray[np.float32]: ...
    def forward(self, chunks: Sequence[tuple[int, npt.NDArray[np.int64] | Sequence[int]]]) -> None: ...
    def length(self, slot: int) -> int: ...
    def reset(self, slot: int) -> None: ...
    def copy_row(self, src: int, dst: int) -> None: ...
    def reorder(self, first: int, parents: Sequence[int]) -> None: ...
