"""kvgen.Generator, generate() and stream(): the public face of generation.

``Generator(config)`` is the step generator (kvgen.generation.step) over logits the caller
computes; ``Generator(model, config)`` with a built-in ``kvgen.Model`` is a ModelGenerator
(kvgen.generation.model_generator). generate() and stream() run the loop with a ``model_fn``.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence, overload

from kvgen._core import GenerationConfig, StepResult
from kvgen._model import Model
from kvgen.generation.model_generator import ConfigLike, ModelGenerator
from kvgen.generation.results import GenerationResult
from kvgen.generation.step import ModelFn, TokenSelector


class Generator(TokenSelector):
    """Generation over logits computed elsewhere, one step at a time; or with a built-in model.

    ``Generator(model, config)`` with a ``kvgen.Model`` returns a ModelGenerator (type
    checkers see that through the overloads of ``__new__``): ``generate(prompts)``,
    ``stream(prompt)`` and ``chat(messages)`` run one request of the engine (see there).

    ``Generator(config, batch_size=None, *, tokenizer=None, token_strings=None, output_raw_logprobs=False)``.
    Call ``append_tokens(prompts)`` once, then ``step(logits)`` with the next-token logits
    of every row (``rows = batch * num_beams`` under beam search, ``batch *
    num_return_sequences`` otherwise) until ``is_done()``; feed ``next_tokens`` to your
    model and, under beam search, reorder its cache with ``beam_indices`` first.
    ``result()`` gives the sequences. ``token_strings`` (the text or bytes of every token
    id) is needed for ``config.stop_strings`` and DRY's ``dry_sequence_breakers``. ``tokenizer``
    (a ``tokenizers.Tokenizer``, a transformers fast tokenizer or a ``kvgen.Model``) is needed
    for a constraint (``config.json_schema``, ``regex``, ``grammar`` or ``choices``): each row's
    allowed tokens are computed by llguidance, the next step's in the background while you
    compute logits.

    Sampling draws are keyed by (seed, sequence id, step): ``append_tokens(prompts,
    sequence_ids=[...])`` gives each prompt an id (default: its position 0, 1, 2, ...),
    and a prompt with the same seed and id draws the same tokens in any batch. Row k of a
    prompt with id i draws with key ``i * rows_per_prompt + k``, so the rows of one prompt
    differ; two prompts with the same id draw alike.

    ``last_logits`` is the last step's processed logits [rows, vocab] (log-probs under beam
    search): a NumPy view over the generator's own buffer, no copy, overwritten by the next step
    (a step that raises may leave it partly written), None before the first step.

    Speculative decoding: ``verify(logits, drafts, draft_lengths)`` checks up to k draft
    tokens per row against your model's logits at k + 1 positions [rows, k + 1, vocab] and
    appends what each row keeps (greedy: token for token plain greedy's; sampling: the
    rejection rule, exactly plain sampling's distribution; not under beam search). It returns
    a ``VerifyResult``: per row ``accepted``, ``rollback`` (KV positions to drop), ``emitted``
    and the next ``tokens``. See TokenSelector.verify.

    The state readers (``sequences``, ``next_tokens``, ``last_logits``, ``result()``, ...)
    take the lock that ``step()`` holds, so other threads may read while one steps.
    """

    # Two uses, told apart by the first argument; the overloads let type checkers see which
    # class each call returns (a ModelGenerator is not a Generator: it has no step API).
    @overload
    def __new__(cls, config: GenerationConfig, batch_size: Optional[int] = None, *, tokenizer: Any = None,
                token_strings: Optional[Sequence[str | bytes]] = None,
                output_raw_logprobs: bool = False) -> Generator: ...
    @overload
    def __new__(cls, model: Model, config: ConfigLike = None, *,  # type: ignore[misc]
                output_raw_logprobs: bool = False, skip_special_tokens: bool = True,
                include_stop_str_in_output: bool = True, assistant_model: Optional[Model] = None) -> ModelGenerator: ...

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if (args and isinstance(args[0], Model)) or isinstance(kwargs.get("model"), Model):
            return ModelGenerator(*args, **kwargs)
        return super().__new__(cls, *args, **kwargs)


def stream(
    model_fn: ModelFn,
    prompts: Sequence[Sequence[int]],
    config: GenerationConfig,
    *,
    sequence_ids: Optional[Sequence[int]] = None,
    **generator_options: Any,
) -> Iterator[StepResult]:
    """Runs the loop and yields each step's StepResult, for streaming tokens.

    To read the final result as well, make the Generator yourself and iterate
    ``generator.stream(model_fn, prompts)``, then call ``generator.result()``.
    """
    yield from Generator(config, **generator_options).stream(model_fn, prompts, sequence_ids)


def generate(
    model_fn: ModelFn,
    prompts: Sequence[Sequence[int]],
    config: GenerationConfig,
    *,
    strip_prompt: bool = True,
    sequence_ids: Optional[Sequence[int]] = None,
    **generator_options: Any,
) -> GenerationResult:
    """Generates from ``prompts`` with logits from ``model_fn`` (see ModelFn); returns the
    result. ``sequence_ids``: one per prompt, keys its random draws (see Generator)."""
    generator = Generator(config, **generator_options)
    for _ in generator.stream(model_fn, prompts, sequence_ids):
        pass
    return generator.result(strip_prompt=strip_prompt)
