"""Per-step overhead of kvgen's Generator.step against Hugging Face's generation loop body.

What is measured
----------------
One step = what a generation loop does with the next-token logits ``[rows, vocab]`` of
every row once the model has produced them: process them, pick the tokens, apply the
stopping rules and update the loop's state. The model forward is not part of it: both
engines get the same logits from outside. Vocab 50,257 (GPT-2), three modes:

* ``greedy``: repetition penalty 1.1 (history = a 64-token prompt plus what was
  generated), argmax; batch 1 and 8.
* ``sampling``: repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95, draw;
  batch 1 and 8.
* ``beam``: 4 beams, length penalty 1.0, early_stopping False (HF's default), EOS set and
  chosen often enough that beams finish and the finished-hypothesis bookkeeping runs;
  batch 1 and 2 (rows 4 and 8); a 32-token prompt (the "beam search" figure of
  PROTOCOL.md). No logits processor (none is configured; HF's list is empty but called).

Engines, with the same logits arrays, the same prompts, the same thread count:

* ``kvgen``: ``Generator.step(logits)`` (reads the float32 logits in place), loop condition
  from the returned ``StepResult.done``. kvgen is single-threaded. It does a little more than
  HF's loop: it records the log-probability of every chosen token (for the result's scores
  and token_logprobs), which under greedy search is a pass of exp over the whole row that
  HF's greedy loop does not make (HF only computes scores with ``output_scores``).
* ``HF``: the body of transformers' own loops, on ``torch.from_numpy`` views of the same
  arrays, under ``torch.inference_mode()`` and ``torch.set_num_threads(--threads)`` (default 1).
  The processor list and the stopping criteria (MaxLength + EOS) are built by the
  ``GenerationMixin`` factories ``_get_logits_processor`` / ``_get_stopping_criteria`` of a
  tiny ``GPT2LMHeadModel`` (its weights are never used), exactly as ``generate()`` builds them.
  Greedy / sampling follow ``GenerationMixin._sample``: processors on ``input_ids``, argmax or
  ``softmax`` + ``multinomial``, the pad mask of finished rows, ``torch.cat`` of the new
  tokens onto ``input_ids``, ``unfinished & ~stopping_criteria(input_ids)``, ``StopCheck``.
  Beam search follows ``GenerationMixin._beam_search``: ``log_softmax``, processors on the
  log-probs, add the running beam scores, ``_get_top_k_continuations``, stopping criteria on
  the candidates, ``_get_running_beams_for_next_iteration``, ``_update_finished_beams``,
  ``_check_early_stop_heuristic``, ``_beam_search_has_unfinished_sequences``, called as
  methods of the tiny model, with the static-shaped state tensors ``_beam_search`` sets up
  (``running_sequences [batch, beams, max_length]`` etc.).
  Left out on the HF side: the copy of the logits out of the model output
  (``.to(copy=True)``), the model-kwargs update and, under beam search, the KV-cache
  reorder. kvgen only returns ``beam_indices`` (the caller reorders its own cache), so the
  reorder is left out on both sides.
* ``kvgen@8`` / ``HF@8``: the same configuration at vocab 8: almost no per-token work, so
  this is the fixed per-step cost (for kvgen mostly the Python -> pybind11 call, argument
  checks and the StepResult; for HF the Python and torch op dispatch).

Timing unit: an episode = a fresh generator (kvgen) or freshly set-up loop state (HF),
made outside the timed region, then steps until the engine says it is done: 256 new
tokens for greedy / sampling (the "decode" figure: 64-token prompt, 256 new tokens; EOS
never wins, so every episode runs to max_new_tokens), 128 new tokens or earlier when beam
search ends (its early-stop rule). Only the steps are timed; a round is a whole number of
episodes (calibrated to ~--round-s, at least one), and the figure of a round is its mean
time per step. Both engines take the same decisions on the same logits (checked below),
so they cover the same steps; the mean episode length is printed per engine.

Inputs (fixed seed): 16 logits arrays per configuration, ``standard_normal * 2.5`` float32,
cycled by step index (step n uses array n % 16). At vocab 50,257 each row has a pool of 24
"likely" tokens, 8 of which are boosted to ``uniform(12, 15)`` in each array, so the
repetition penalty (which lowers tokens already generated) changes greedy choices. EOS is
the last token id (50256, GPT-2's); for greedy / sampling its logit is -20 in every array
(EOS never ends the run, as the protocol asks); for beam search it is boosted like a
likely token in a quarter of the rows of every array, so EOS candidates enter the top
``2 * beams`` and finished hypotheses are stored, replaced and rejected. Prompts: uniform
over the vocabulary without EOS, 4 of each row's likely tokens in it. At vocab 8: plain
``standard_normal * 2.5``, EOS = 7 (-20 for greedy / sampling).

Protocol (PROTOCOL.md): an untimed sanity check first (greedy and beam search over 6 steps
of the same logits at 8 rows, vocab 50,257 and 8: the same tokens, the same running beams
and parents after every step, the same finished sequences and scores at the end; sampling:
every kvgen draw lies inside the set HF's processors keep for kvgen's own history); then
per configuration every engine is warmed up and calibrated, and the engines are interleaved
(kvgen HF kvgen@8 HF@8, ...) for ``--rounds`` rounds (default 7). Reported: median over
rounds, min-max spread, HF/kvgen of the medians, and kvgen@8 / kvgen (the share of kvgen's
step that is fixed cost).

Run (pinned, as the protocol asks):

    taskset -c 0,1 python benchmarks/bench_generator.py            # full, ~1-2 minutes
    taskset -c 0,1 python benchmarks/bench_generator.py --quick    # smoke run, < 30 s

Writes a table to stdout, ``benchmarks/results/bench_generator.json`` (``--out``) and a PNG
next to it when matplotlib is installed.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from torch import nn
from transformers.generation.utils import StopCheck

import kvgen

BENCHMARKS = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS.parent / "tests" / "support")]
from hf_reference import hf_generation_setup, tiny_model  # noqa: E402

import harness  # noqa: E402  (benchmarks/ and tests/ are not packages)
from engines import hf_engine  # noqa: E402

SEED = 0
VOCAB = 50257
TINY_VOCAB = 8
N_LOGITS = 16  # different logits arrays per configuration, cycled by step index
LOGIT_SCALE = 2.5
POOL = 24  # likely tokens per row
BOOSTED = 8  # of them boosted in each array
BOOST_RANGE = (12.0, 15.0)
POOL_IN_PROMPT = 4
EOS_OFF = -20.0  # EOS logit for greedy / sampling: never chosen
BEAM_EOS_FRACTION = 0.25  # rows per array where EOS is boosted under beam search
PAD = 0
MODES = {
    "greedy": {"params": {"do_sample": False, "repetition_penalty": 1.1},
               "batches": (1, 8), "prompt": 64, "new_tokens": 256},
    "sampling": {"params": {"do_sample": True, "temperature": 0.8, "top_k": 40, "top_p": 0.95,
                            "repetition_penalty": 1.1},
                 "batches": (1, 8), "prompt": 64, "new_tokens": 256},
    "beam": {"params": {"do_sample": False, "num_beams": 4, "length_penalty": 1.0, "early_stopping": False},
             "batches": (1, 2), "prompt": 32, "new_tokens": 128},
}
QUICK_NEW_TOKENS = 32
ROUND_S, QUICK_ROUND_S = 0.2, 0.03
SCORE_RTOL = 1e-4
DEFAULT_OUT = harness.RESULTS / "bench_generator.json"
KVGEN_THREADS = 1  # Generator.step runs on the calling thread


# ---- inputs --------------------------------------------------------------------------


def make_case(mode: str, batch: int, vocab: int) -> dict:
    """Seeded logits arrays [N_LOGITS][rows, vocab] float32 and prompts [batch][P] for a mode."""
    spec = MODES[mode]
    beams = spec["params"].get("num_beams", 1)
    rows, eos = batch * beams, vocab - 1
    rng = np.random.default_rng([SEED, list(MODES).index(mode), batch, vocab])
    arrays = (rng.standard_normal((N_LOGITS, rows, vocab)) * LOGIT_SCALE).astype(np.float32)
    prompts = rng.integers(0, eos, (batch, spec["prompt"]), dtype=np.int64)
    if vocab > 1000:
        pools = np.stack([rng.choice(eos, POOL, replace=False) for _ in range(batch)])  # per input
        for a in range(N_LOGITS):
            for r in range(rows):
                chosen = rng.choice(pools[r // beams], BOOSTED, replace=False)
                arrays[a, r, chosen] = rng.uniform(*BOOST_RANGE, BOOSTED)
        prompts[:, :POOL_IN_PROMPT] = pools[:, :POOL_IN_PROMPT]
    if beams > 1:
        if vocab > 1000:
            hit = rng.random((N_LOGITS, rows)) < BEAM_EOS_FRACTION
            arrays[:, :, eos][hit] = rng.uniform(*BOOST_RANGE, int(hit.sum()))
    else:
        arrays[:, :, eos] = EOS_OFF
    arrays = [np.ascontiguousarray(a) for a in arrays]
    return {"mode": mode, "batch": batch, "beams": beams, "rows": rows, "vocab": vocab, "eos": eos,
            "arrays": arrays, "tensors": [torch.from_numpy(a) for a in arrays], "prompts": prompts}


def kvgen_config(case: dict, new_tokens: int, **extra) -> kvgen.GenerationConfig:
    return kvgen.GenerationConfig(max_new_tokens=new_tokens, eos_token_id=case["eos"], pad_token_id=PAD,
                                  seed=SEED, **MODES[case["mode"]]["params"], **extra)


def hf_setup(case: dict, new_tokens: int, **extra):
    """(generation config, processors, stopping criteria) as generate() prepares them."""
    return hf_generation_setup(case["prompts"].shape[1], max_new_tokens=new_tokens, eos_token_id=case["eos"],
                               pad_token_id=PAD, **MODES[case["mode"]]["params"], **extra)


# ---- engines: start() sets up an episode (untimed) and returns step(n) -> done --------


class KvgenEngine:
    def __init__(self, case: dict, new_tokens: int, **extra):
        self.config = kvgen_config(case, new_tokens, **extra)
        self.prompts = case["prompts"].tolist()
        self.arrays = case["arrays"]
        self.selector = None
        self.lengths = []

    def start(self):
        g = kvgen.Generator(self.config)
        g.append_tokens(self.prompts)
        self.selector = g
        arrays = self.arrays
        return lambda n: g.step(arrays[n % N_LOGITS]).done

    def episode(self) -> None:
        run_episode(self.start())


class HFDecodeEngine:
    """The body of GenerationMixin._sample (greedy or sampling), after the forward."""

    def __init__(self, case: dict, new_tokens: int, **extra):
        config, self.processors, self.criteria = hf_setup(case, new_tokens, **extra)
        self.do_sample = config.do_sample
        self.pad = config._pad_token_tensor
        self.has_eos = any(hasattr(c, "eos_token_id") for c in self.criteria)
        self.prompts = torch.from_numpy(case["prompts"])
        self.tensors = case["tensors"]
        self.state = None
        self.lengths = []

    def start(self):
        processors, criteria, tensors = self.processors, self.criteria, self.tensors
        pad, has_eos = self.pad, self.has_eos
        stop_check = StopCheck()
        input_ids = self.prompts.clone()
        unfinished = torch.ones(input_ids.shape[0], dtype=torch.long)
        softmax, multinomial, argmax, cat = nn.functional.softmax, torch.multinomial, torch.argmax, torch.cat
        do_sample = self.do_sample

        def step(n: int) -> bool:
            nonlocal input_ids, unfinished
            next_token_scores = processors(input_ids, tensors[n % N_LOGITS])
            if do_sample:
                probs = softmax(next_token_scores, dim=-1)
                next_tokens = multinomial(probs, num_samples=1).squeeze(1)
            else:
                next_tokens = argmax(next_token_scores, dim=-1)
            if has_eos:
                next_tokens = next_tokens * unfinished + pad * (1 - unfinished)
            input_ids = cat([input_ids, next_tokens[:, None]], dim=-1)
            unfinished = unfinished & ~criteria(input_ids, None)
            return stop_check(unfinished, next_tokens, input_ids.shape[1])

        self.state = lambda: input_ids
        return step

    def episode(self) -> None:
        run_episode(self.start())


class HFBeamEngine:
    """The body of GenerationMixin._beam_search after the forward, on its own state tensors."""

    def __init__(self, case: dict, new_tokens: int, **extra):
        self.config, self.processors, self.criteria = hf_setup(case, new_tokens, **extra)
        self.batch, self.beams = case["batch"], case["beams"]
        self.prompts = torch.from_numpy(case["prompts"]).repeat_interleave(self.beams, dim=0)  # [batch*beams, P]
        self.tensors = case["tensors"]
        self.state = None
        self.lengths = []

    def start(self):
        model, cfg = tiny_model(), self.config
        processors, criteria, tensors = self.processors, self.criteria, self.tensors
        input_ids = self.prompts
        pad_token_id, eos_token_id = cfg._pad_token_tensor, cfg._eos_token_tensor
        do_sample, early_stopping, length_penalty = cfg.do_sample, cfg.early_stopping, cfg.length_penalty
        max_length, num_beams = cfg.max_length, cfg.num_beams
        batch_size_unflattened, cur_len = input_ids.shape[:2]
        batch_size = batch_size_unflattened // num_beams
        decoder_prompt_len = cur_len
        n_eos_tokens = eos_token_id.shape[0] if eos_token_id is not None else 0
        beams_to_keep = max(2, 1 + n_eos_tokens) * num_beams
        top_num_beam_mask = torch.cat((torch.ones((num_beams), dtype=torch.bool),
                                       torch.zeros((beams_to_keep - num_beams), dtype=torch.bool)), dim=0)
        output_fill_value = pad_token_id or eos_token_id[0] if eos_token_id is not None else -1
        running_sequences = torch.full((batch_size, num_beams, max_length), fill_value=output_fill_value,
                                       dtype=torch.int64)
        running_sequences[:, :, :cur_len] = model._unflatten_beam_dim(input_ids, batch_size, num_beams)
        sequences = running_sequences.detach().clone()
        running_beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float)
        running_beam_scores[:, 1:] = -1e9
        beam_scores = torch.full((batch_size, num_beams), fill_value=-1e9, dtype=torch.float)
        is_sent_finished = torch.zeros((batch_size, num_beams), dtype=torch.bool)
        is_early_stop_heuristic_unsatisfied = torch.ones((batch_size, 1), dtype=torch.bool)
        next_token_hits_stopping_criteria = torch.zeros((batch_size, num_beams), dtype=torch.bool)
        running_beam_indices = torch.full((batch_size, num_beams, max_length - cur_len), fill_value=-1,
                                          dtype=torch.int32)
        beam_indices = running_beam_indices.detach().clone()
        log_softmax = nn.functional.log_softmax

        def step(n: int) -> bool:
            nonlocal running_sequences, running_beam_scores, running_beam_indices, sequences, beam_scores
            nonlocal beam_indices, is_sent_finished, is_early_stop_heuristic_unsatisfied, cur_len
            nonlocal next_token_hits_stopping_criteria
            # a. (the forward's input; at the first step this equals input_ids)
            flat_running_sequences = model._flatten_beam_dim(running_sequences[:, :, :cur_len])
            logits = tensors[n % N_LOGITS]
            # b.
            log_probs = log_softmax(logits, dim=-1)
            log_probs = processors(flat_running_sequences, log_probs)
            log_probs = model._unflatten_beam_dim(log_probs, batch_size, num_beams)
            log_probs = log_probs + running_beam_scores[:, :, None]
            log_probs = torch.reshape(log_probs, (batch_size, -1))
            # c.
            topk_log_probs, topk_running_sequences, topk_running_beam_indices = model._get_top_k_continuations(
                accumulated_log_probs=log_probs, running_sequences=running_sequences,
                running_beam_indices=running_beam_indices, cur_len=cur_len, decoder_prompt_len=decoder_prompt_len,
                do_sample=do_sample, beams_to_keep=beams_to_keep, num_beams=num_beams, batch_size=batch_size)
            # d.
            next_token_hits_stopping_criteria = criteria(
                model._flatten_beam_dim(topk_running_sequences[:, :, : cur_len + 1]), None)
            next_token_hits_stopping_criteria = model._unflatten_beam_dim(
                next_token_hits_stopping_criteria, batch_size, beams_to_keep)
            # e.
            running_sequences, running_beam_scores, running_beam_indices = \
                model._get_running_beams_for_next_iteration(
                    topk_log_probs=topk_log_probs, topk_running_sequences=topk_running_sequences,
                    topk_running_beam_indices=topk_running_beam_indices,
                    next_token_hits_stopping_criteria=next_token_hits_stopping_criteria, num_beams=num_beams)
            # f.
            sequences, beam_scores, beam_indices, is_sent_finished = model._update_finished_beams(
                sequences=sequences, topk_running_sequences=topk_running_sequences, beam_scores=beam_scores,
                topk_log_probs=topk_log_probs, beam_indices=beam_indices,
                topk_running_beam_indices=topk_running_beam_indices,
                is_early_stop_heuristic_unsatisfied=is_early_stop_heuristic_unsatisfied,
                is_sent_finished=is_sent_finished, next_token_hits_stopping_criteria=next_token_hits_stopping_criteria,
                top_num_beam_mask=top_num_beam_mask, num_beams=num_beams, cur_len=cur_len,
                decoder_prompt_len=decoder_prompt_len, length_penalty=length_penalty, early_stopping=early_stopping)
            # g. (the KV-cache reorder is left out, see the module docstring)
            cur_len = cur_len + 1
            is_early_stop_heuristic_unsatisfied = model._check_early_stop_heuristic(
                is_early_stop_heuristic_unsatisfied=is_early_stop_heuristic_unsatisfied,
                running_beam_scores=running_beam_scores, beam_scores=beam_scores, is_sent_finished=is_sent_finished,
                cur_len=cur_len, max_length=max_length, decoder_prompt_len=decoder_prompt_len,
                early_stopping=early_stopping, length_penalty=length_penalty)
            this_peer_finished = not model._beam_search_has_unfinished_sequences(
                is_early_stop_heuristic_unsatisfied, is_sent_finished, next_token_hits_stopping_criteria,
                early_stopping)
            return not model._has_unfinished_sequences(this_peer_finished, False, device="cpu")

        def state() -> dict:
            return {"running_sequences": running_sequences, "running_beam_indices": running_beam_indices,
                    "sequences": sequences, "beam_scores": beam_scores, "beam_indices": beam_indices,
                    "cur_len": cur_len, "prompt_len": decoder_prompt_len}

        self.state = state
        return step

    def episode(self) -> None:
        run_episode(self.start())

    def final(self, num_return_sequences: int) -> list[list[tuple[list[int], float]]]:
        """Per input, the best num_return_sequences finished (generated tokens, score), best
        first: step 5 of _beam_search ("prepare outputs") without the padding."""
        s = self.state()
        out = []
        for b in range(self.batch):
            per = []
            for k in range(num_return_sequences):
                length = int((s["beam_indices"][b, k] != -1).sum())
                tokens = s["sequences"][b, k, s["prompt_len"]:s["prompt_len"] + length].tolist()
                per.append((tokens, float(s["beam_scores"][b, k])))
            out.append(per)
        return out


def make_engine(name: str, case: dict, new_tokens: int):
    if name == "kvgen":
        return KvgenEngine(case, new_tokens)
    return (HFBeamEngine if case["beams"] > 1 else HFDecodeEngine)(case, new_tokens)


class EmptyEngine:
    """The timing loop with a step that does nothing: the harness cost inside every figure."""

    def __init__(self, new_tokens: int):
        self.new_tokens = new_tokens
        self.lengths = []

    def start(self):
        last = self.new_tokens - 1
        return lambda n: n >= last

    def episode(self) -> None:
        run_episode(self.start())


# ---- timing --------------------------------------------------------------------------


def run_episode(step) -> int:
    n, done = 0, False
    while not done:
        done = step(n)
        n += 1
    return n


def episodes_per_round(engine, round_s: float) -> int:
    """Warm-up and calibration (harness.calls_per_round, one call = one episode)."""
    return harness.calls_per_round(engine.episode, round_s)


def time_episodes(engine, episodes: int) -> float:
    """Seconds per step over `episodes` whole episodes; setup outside the timed region."""
    total, steps = 0.0, 0
    perf_counter = time.perf_counter
    for _ in range(episodes):
        step = engine.start()
        n, done = 0, False
        start = perf_counter()
        while not done:
            done = step(n)
            n += 1
        total += perf_counter() - start
        steps += n
        engine.lengths.append(n)
    return total / steps


# ---- sanity --------------------------------------------------------------------------


def greedy_sanity(batch: int, vocab: int, steps: int) -> dict:
    case = make_case("greedy", batch, vocab)
    kv, hf = KvgenEngine(case, steps), HFDecodeEngine(case, steps)
    kv_step, hf_step = kv.start(), hf.start()
    where = f"sanity: greedy, batch {batch}, vocab {vocab}"
    penalty_changed, n, kv_done = 0, 0, False
    while not kv_done:
        kv_done, hf_done = kv_step(n), hf_step(n)
        kv_tokens, hf_tokens = kv.selector.next_tokens, hf.state()[:, -1].numpy()
        if not np.array_equal(kv_tokens, hf_tokens):
            raise RuntimeError(f"{where}, step {n}: kvgen chose {kv_tokens.tolist()}, HF chose {hf_tokens.tolist()}")
        if kv_done != hf_done:
            raise RuntimeError(f"{where}, step {n}: kvgen done={kv_done}, HF done={hf_done}")
        penalty_changed += int((case["arrays"][n % N_LOGITS].argmax(axis=1) != hf_tokens).sum())
        n += 1
    kv_seqs = [s[0].tolist() for s in kv.selector.result().sequences]
    hf_seqs = hf.state()[:, case["prompts"].shape[1]:].tolist()
    if kv_seqs != hf_seqs:
        raise RuntimeError(f"{where}: final sequences differ: kvgen {kv_seqs}, HF {hf_seqs}")
    return {"batch": batch, "vocab": vocab, "rows": case["rows"], "steps": n, "decisions": case["rows"] * n,
            "changed_by_penalty": penalty_changed}


def sampling_sanity(batch: int, vocab: int, steps: int) -> dict:
    """kvgen's draws must lie in the set HF's processors keep for kvgen's own history."""
    case = make_case("sampling", batch, vocab)
    kv = KvgenEngine(case, steps)
    _, processors, _ = hf_setup(case, steps)
    kv_step = kv.start()
    kept, n, done = [], 0, False
    while not done:
        history = torch.from_numpy(np.stack(kv.selector.sequences))
        mask = torch.isfinite(processors(history, case["tensors"][n % N_LOGITS].clone())).numpy()
        done = kv_step(n)
        tokens = kv.selector.next_tokens
        if not mask[np.arange(case["rows"]), tokens].all():
            raise RuntimeError(f"sanity: sampling, batch {batch}, vocab {vocab}, step {n}: kvgen drew "
                               f"{tokens.tolist()}, outside the tokens HF's processors keep")
        kept.append(mask.sum(axis=1).tolist())
        n += 1
    return {"batch": batch, "vocab": vocab, "rows": case["rows"], "steps": n, "hf_kept_mean": float(np.mean(kept))}


def beam_sanity(batch: int, vocab: int, steps: int) -> dict:
    """Same running beams and parents after every step; same finished hypotheses and scores
    (all num_beams of them, best first) at the end."""
    case = make_case("beam", batch, vocab)
    beams = case["beams"]
    kv = KvgenEngine(case, steps, num_return_sequences=beams)
    hf = HFBeamEngine(case, steps, num_return_sequences=beams)
    kv_step, hf_step = kv.start(), hf.start()
    where = f"sanity: beam, batch {batch} x {beams} beams, vocab {vocab}"
    n, kv_done = 0, False
    while not kv_done:
        kv_done, hf_done = kv_step(n), hf_step(n)
        if kv_done != hf_done:
            raise RuntimeError(f"{where}, step {n}: kvgen done={kv_done}, HF done={hf_done}")
        n += 1
        if kv_done:  # HF's running beams after the last step are leftovers (all scores -1e9)
            break
        s = hf.state()
        hf_running = flat(s["running_sequences"][:, :, :s["cur_len"]])
        kv_running = np.stack(kv.selector.sequences)
        if not np.array_equal(kv_running, hf_running):
            p = s["prompt_len"]
            raise RuntimeError(f"{where}, step {n - 1}: running beams differ (generated part):\n"
                               f"kvgen {kv_running[:, p:].tolist()}\nHF    {hf_running[:, p:].tolist()}")
        hf_parents = flat(s["running_beam_indices"][:, :, s["cur_len"] - 1 - s["prompt_len"]])
        kv_parents = kv.selector.beam_indices
        if not np.array_equal(kv_parents, hf_parents):
            raise RuntimeError(f"{where}, step {n - 1}: beam parents differ: kvgen {kv_parents.tolist()}, "
                               f"HF {hf_parents.tolist()}")
    result = kv.selector.result()
    hf_final = hf.final(beams)
    finished_by_eos = 0
    for b in range(batch):
        kv_seqs = [q.tolist() for q in result.sequences[b]]
        hf_seqs = [t for t, _ in hf_final[b]]
        if kv_seqs != hf_seqs:
            raise RuntimeError(f"{where}: finished sequences of input {b} differ (best first):\nkvgen {kv_seqs}\n"
                               f"HF    {hf_seqs}")
        kv_scores, hf_scores = np.array(result.scores[b]), np.array([x for _, x in hf_final[b]])
        if not np.allclose(kv_scores, hf_scores, rtol=SCORE_RTOL, atol=1e-5):
            raise RuntimeError(f"{where}: scores of input {b} differ: kvgen {kv_scores}, HF {hf_scores}")
        finished_by_eos += sum(r == "eos" for r in result.finish_reasons[b])
    return {"batch": batch, "vocab": vocab, "beams": beams, "steps": n, "max_new_tokens": steps,
            "returned": batch * beams, "finished_by_eos": finished_by_eos}


def flat(t: torch.Tensor) -> np.ndarray:
    return tiny_model()._flatten_beam_dim(t).numpy().astype(np.int64)


SANITY = {"greedy": greedy_sanity, "sampling": sampling_sanity, "beam": beam_sanity}


def sanity_check(quick: bool) -> dict:
    """Every timed configuration (mode, batch, vocab 50,257 and 8), one whole episode each."""
    report = {mode: [] for mode in MODES}
    with torch.inference_mode():
        for mode, spec in MODES.items():
            steps = QUICK_NEW_TOKENS if quick else spec["new_tokens"]
            for batch in spec["batches"]:
                for vocab in (VOCAB, TINY_VOCAB):
                    report[mode].append(SANITY[mode](batch, vocab, steps))
    g = [r for r in report["greedy"] if r["vocab"] == VOCAB]
    print("sanity: greedy: kvgen chose HF's tokens at every step of every timed configuration "
          f"(vocab {VOCAB} and {TINY_VOCAB}; the penalty changed "
          + ", ".join(f"{r['changed_by_penalty']} of {r['decisions']}" for r in g)
          + f" argmax decisions at batch {', '.join(str(r['batch']) for r in g)}, vocab {VOCAB})")
    print("sanity: beam: the same running beams and parents after every step, the same finished sequences "
          "and scores (all beams, best first) at the end; steps / finished by EOS: "
          + "; ".join(f"batch {r['batch']} vocab {r['vocab']}: {r['steps']} of {r['max_new_tokens']} steps, "
                      f"{r['finished_by_eos']} of {r['returned']} by EOS" for r in report["beam"]))
    print("sanity: sampling: every kvgen draw lies inside the set HF's processors keep for kvgen's history "
          "(mean kept per row: "
          + ", ".join(f"{r['hf_kept_mean']:.1f} at batch {r['batch']} vocab {r['vocab']}" for r in report["sampling"])
          + ")")
    return report


# ---- benchmark -----------------------------------------------------------------------

ENGINES = ("kvgen", "HF", "kvgen@8", "HF@8")


def bench_config(mode: str, batch: int, new_tokens: int, rounds: int, round_s: float) -> dict:
    cases = {VOCAB: make_case(mode, batch, VOCAB), TINY_VOCAB: make_case(mode, batch, TINY_VOCAB)}
    engines = {}
    for name in ENGINES:
        base, _, tiny = name.partition("@")
        engines[name] = make_engine(base, cases[TINY_VOCAB if tiny else VOCAB], new_tokens)
    stats, episodes = harness.compare(engines, rounds, round_s, calibrate=episodes_per_round, run=time_episodes)
    lengths = {name: statistics.mean(e.lengths) for name, e in engines.items()}
    return {
        "mode": mode, "batch": batch, "rows": cases[VOCAB]["rows"], "vocab": VOCAB, "tiny_vocab": TINY_VOCAB,
        "params": MODES[mode]["params"], "prompt": MODES[mode]["prompt"], "max_new_tokens": new_tokens,
        "eos_token_id": cases[VOCAB]["eos"], "episodes_per_round": episodes, "mean_episode_steps": lengths,
        "engines": stats,
        "ratios": {**harness.ratios(stats, "kvgen", ["HF"]), **harness.ratios(stats, "kvgen@8", ["HF@8"]),
                   **harness.ratios(stats, "kvgen", ["kvgen@8"])},
    }


def loop_overhead(new_tokens: int, rounds: int, round_s: float) -> dict:
    stats, _ = harness.compare({"empty": EmptyEngine(new_tokens)}, rounds, round_s,
                               calibrate=episodes_per_round, run=time_episodes)
    return stats["empty"]


# ---- report --------------------------------------------------------------------------

def episode_steps(r: dict) -> str:
    steps = r["mean_episode_steps"]
    return f"{steps['kvgen']:.0f}/{steps['kvgen@8']:.0f}"


def spread(engine: str, title: str, width: int) -> harness.Column:
    return harness.Column(title, width, lambda r: harness.us(r["engines"][engine]))


def ratio(key: str, title: str, width: int, percent: bool = False) -> harness.Column:
    if percent:
        return harness.Column(title, width, lambda r: f"{100 * r['ratios'][key]:.0f}%")
    return harness.Column(title, width, lambda r: f"{r['ratios'][key]:.1f}")


TABLE = harness.Table(
    [harness.Column("mode", 9, lambda r: r["mode"], left=True), harness.Column("batch", 5, lambda r: str(r["batch"])),
     harness.Column("rows", 4, lambda r: str(r["rows"])),
     harness.Column("steps", 9, episode_steps)],
    [spread("kvgen", "kvgen us/step [min-max]", 26)], [spread("HF", "HF us/step [min-max]", 28)],
    [ratio("HF/kvgen", "HF/kv", 6)], [spread("kvgen@8", "kvgen@8 us", 20)], [spread("HF@8", "HF@8 us", 22)],
    [ratio("HF@8/kvgen@8", "HF8/kv8", 7), ratio("kvgen@8/kvgen", "kv8/kv", 6, percent=True)],
)


def episode_notes(results: list[dict]) -> list[str]:
    """Configurations where kvgen and HF ran episodes of different mean lengths (they take
    the same decisions, so this would be a difference in when the search ends)."""
    notes = []
    for r in results:
        steps = r["mean_episode_steps"]
        for a, b in (("kvgen", "HF"), ("kvgen@8", "HF@8")):
            if abs(steps[a] - steps[b]) > 1e-9:
                notes.append(f"note: {r['mode']} batch {r['batch']}: mean episode length {a} {steps[a]:.2f} steps, "
                             f"{b} {steps[b]:.2f}")
    return notes


def plot(results: list[dict], plt):
    labels = [f"{r['mode']}\nbatch {r['batch']} ({r['rows']} rows)" for r in results]
    x = np.arange(len(results))
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
    for ax, (kv, hf, vocab) in zip(axes, (("kvgen", "HF", VOCAB), ("kvgen@8", "HF@8", TINY_VOCAB))):
        for offset, name, color in ((-0.2, kv, "tab:blue"), (0.2, hf, "tab:orange")):
            med = np.array([r["engines"][name]["median_us"] for r in results])
            lo = med - np.array([r["engines"][name]["min_us"] for r in results])
            hi = np.array([r["engines"][name]["max_us"] for r in results]) - med
            ax.bar(x + offset, med, 0.4, yerr=[lo, hi], capsize=3, color=color, label=name.split("@")[0])
        for i, r in enumerate(results):
            ratio = r["engines"][hf]["median_us"] / r["engines"][kv]["median_us"]
            ax.annotate(f"{ratio:.1f}x", (x[i], r["engines"][hf]["median_us"]), ha="center", va="bottom",
                        xytext=(0, 3), textcoords="offset points", fontsize=8)
        ax.set(yscale="log", ylabel="us per step", title=f"vocab {vocab:,}")
        ax.set_xticks(x, labels, fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Generator.step vs HF loop body per step (median of interleaved rounds, bars min-max; "
                 "labels HF/kvgen; lower is better)", fontsize=10)
    return fig


# ---- main ----------------------------------------------------------------------------


def main() -> None:
    parser = harness.cli(__doc__, DEFAULT_OUT, KVGEN_THREADS,
                         f"torch threads ({KVGEN_THREADS} is kvgen's thread count)",
                         f"{QUICK_NEW_TOKENS}-token episodes, 5 short rounds", round_s=(ROUND_S, QUICK_ROUND_S))
    args = harness.parse_args(parser)
    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)  # HF's multinomial draws
    # hf_reference's tiny model keeps GPT-2's special-token ids (outside its 64-token vocab:
    # only its GenerationMixin methods run); transformers warns about that on every set-up.
    transformers.logging.set_verbosity_error()
    env = harness.begin(hf_engine.versions(),
                        {"kvgen": KVGEN_THREADS, "torch": args.threads}, {"kvgen": "single-threaded Generator"})
    sanity = sanity_check(args.quick)

    print(f"\n{args.rounds} interleaved rounds of whole episodes (~{args.round_s:g} s per engine); times: median "
          f"[min-max] of the per-step mean of each round, in microseconds; "
          f"steps: mean steps per episode at vocab {VOCAB}/{TINY_VOCAB}; "
          f"@8: the same at vocab {TINY_VOCAB} (fixed per-step cost); kv8/kv: kvgen@8 / kvgen\n")
    plan = [(mode, batch, QUICK_NEW_TOKENS if args.quick else spec["new_tokens"], args.rounds, args.round_s)
            for mode, spec in MODES.items() for batch in spec["batches"]]
    with torch.inference_mode():
        results = harness.run_rows(TABLE, plan, bench_config)
    empty = loop_overhead(QUICK_NEW_TOKENS if args.quick else MODES["greedy"]["new_tokens"], args.rounds,
                          args.round_s)
    print(f"\ntiming loop alone (a step that does nothing): {empty['median_us'] * 1e3:.0f} ns per step "
          f"[{empty['min_us'] * 1e3:.0f}-{empty['max_us'] * 1e3:.0f}], inside every figure above")
    notes = episode_notes(results)
    for line in notes:
        print(line)
    slower = [r for r in results if r["ratios"]["HF/kvgen"] < 1.0 or r["ratios"]["HF@8/kvgen@8"] < 1.0]
    for r in slower:
        print(f"note: kvgen slower than HF in {r['mode']} batch {r['batch']} "
              f"(HF/kvgen {r['ratios']['HF/kvgen']:.2f}, at vocab {TINY_VOCAB} {r['ratios']['HF@8/kvgen@8']:.2f})")

    settings = harness.settings(
        args, seed=SEED, vocab=VOCAB, tiny_vocab=TINY_VOCAB, logits_arrays=N_LOGITS,
        logits={"scale": LOGIT_SCALE, "pool_per_row": POOL, "boosted_per_array": BOOSTED, "boost_range": BOOST_RANGE,
                "pool_in_prompt": POOL_IN_PROMPT, "eos_off": EOS_OFF, "beam_eos_fraction": BEAM_EOS_FRACTION},
        modes={m: {k: v for k, v in s.items()} for m, s in MODES.items()},
        left_out=["model forward", "HF logits copy out of the model output", "KV-cache reorder"])
    report = {"environment": env, "settings": settings, "sanity": sanity, "results": results,
              "timing_loop_us": empty, "notes": notes}
    harness.write_outputs(report, args.out, lambda plt: plot(results, plt))


if __name__ == "__main__":
    main()
