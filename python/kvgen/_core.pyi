"""Type stubs of the compiled kvgen._core module (kept in step by tests/test_stubs.py)."""

from typing import Any, Literal, Mapping, Sequence, overload

import numpy as np
import numpy.typing as npt

_GENERATION_CONFIG_FIELDS: list[str]

class GenerationConfig:
    max_new_tokens: int | None
    max_length: int | None
    min_new_tokens: int | None
    min_length: int
    do_sample: bool
    temperature: float
    top_k: int
    top_p: float
    min_p: float | None
    typical_p: float
    epsilon_cutoff: float
    eta_cutoff: float
    repetition_penalty: float
    presence_penalty: float
    frequency_penalty: float
    no_repeat_ngram_size: int
    bad_words_ids: list[list[int]] | None
    suppress_tokens: list[int] | None
    begin_suppress_tokens: list[int] | None
    sequence_bias: dict[tuple[int, ...], float] | None
    logit_bias: dict[int, float] | None
    forced_bos_token_id: int | None
    forced_eos_token_id: int | list[int] | None
    remove_invalid_values: bool
    renormalize_logits: bool
    stop_sequences: list[list[int]] | None
    stop_strings: list[str] | None
    num_beams: int
    length_penalty: float
    early_stopping: bool | Literal["never"]
    num_return_sequences: int
    eos_token_id: int | list[int] | None
    pad_token_id: int | None
    bos_token_id: int | None
    seed: int | None
    def __init__(self, **kwargs: Any) -> None: ...
    def validate(self) -> None: ...
    @staticmethod
    def fields() -> list[str]: ...
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
    @overload
    def sample(
        self, logits: Any, input_ids: Any = None, *, step: int = 0, sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None,
        return_logprobs: Literal[False] = False,
    ) -> npt.NDArray[np.int64]: ...
    @overload
    def sample(
        self, logits: Any, input_ids: Any = None, *, step: int = 0, sequence_ids: Sequence[int] | npt.NDArray[np.integer] | None = None,
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
    @property
    def tokens(self) -> npt.NDArray[np.int64]: ...
    @property
    def beam_indices(self) -> npt.NDArray[np.int64] | None: ...
    @property
    def done(self) -> bool: ...

class _Generator:
    def __init__(
        self, config: GenerationConfig, batch_size: int | None = None, *,
        token_strings: Sequence[str | bytes] | None = None, output_raw_logprobs: bool = False,
    ) -> None: ...
    def append_tokens(self, prompts: Sequence[Sequence[int]] | npt.NDArray[np.integer]) -> None: ...
    def step(self, logits: Any) -> StepResult: ...
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
    def _hypotheses(self) -> list[list[dict[str, Any]]]: ...
