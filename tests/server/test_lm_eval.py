"""lm-evaluation-harness against ``kvgen serve``: its ``local-completions`` model (loglikelihood
through ``echo`` + ``logprobs``, tokenizing through the server's /tokenize and
/tokenizer_info) runs three small tasks shipped in tests/data/lm_eval (a multiple-choice
loglikelihood task, a rolling-perplexity task and a generate_until task with five stop
strings) and must agree with lm-eval's own ``hf`` backend on transformers' model of the same
file: accuracy equal, every choice's log-likelihood close, perplexity within 0.5%, the same
generations. Offline: the tasks read local JSON lines."""

from __future__ import annotations

import importlib
import json
import math
import os
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "data" / "lm_eval"

TASKS = {
    "kvgen_mc": {"output_type": "multiple_choice", "file": "multiple_choice.jsonl", "doc_to_text": "{{question}}",
                 "doc_to_choice": "{{choices}}", "doc_to_target": "{{answer}}",
                 "metric_list": [{"metric": "acc"}]},
    "kvgen_rolling": {"output_type": "loglikelihood_rolling", "file": "rolling.jsonl", "doc_to_text": "",
                      "doc_to_target": "{{text}}",
                      "metric_list": [{"metric": "word_perplexity"}, {"metric": "byte_perplexity"}]},
    "kvgen_generate": {"output_type": "generate_until", "file": "generate.jsonl", "doc_to_text": "{{question}}",
                       "doc_to_target": "{{answer}}", "metric_list": [{"metric": "exact_match"}],
                       "generation_kwargs": {"until": ["\n", ".", "Question:", "</s>", "<|im_end|>"],
                                             "max_gen_toks": 12, "do_sample": False}},
}


def _lm_eval():
    """lm_eval (the ``clients`` extra, installed in CI: a missing one fails there, skips elsewhere)."""
    if os.environ.get("CI"):
        return importlib.import_module("lm_eval")
    return pytest.importorskip("lm_eval")


@pytest.fixture(scope="module")
def task_manager(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm_eval")
    for name, spec in TASKS.items():
        spec = dict(spec)
        data = str(DATA / spec.pop("file"))
        task = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": data}},
                "test_split": "test", **spec}
        (root / f"{name}.yaml").write_text(json.dumps(task))  # JSON is YAML
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["HF_DATASETS_CACHE"] = str(root / "datasets")
    lm_eval = _lm_eval()
    from lm_eval.tasks import TaskManager

    del lm_eval
    return TaskManager(include_path=str(root))


def _evaluate(model, task_manager, **kwargs) -> dict:
    from lm_eval import simple_evaluate

    return simple_evaluate(model=model, tasks=list(TASKS), task_manager=task_manager, log_samples=True,
                           random_seed=0, numpy_random_seed=0, torch_random_seed=0, fewshot_random_seed=0,
                           **kwargs)


@pytest.fixture(scope="module")
def served_results(served, task_manager):
    return _evaluate("local-completions", task_manager, model_args={
        "model": "kvgen", "base_url": f"{served.url}/v1/completions", "tokenizer_backend": "remote",
        "num_concurrent": 1, "max_retries": 1, "max_length": 2048, "batch_size": 16})


@pytest.fixture(scope="module")
def hf_results(task_manager, smollm2_hf_model, smollm2_hf_tokenizer):
    _lm_eval()
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=smollm2_hf_model, tokenizer=smollm2_hf_tokenizer, batch_size=32, max_length=2048)
    return _evaluate(lm, task_manager)


def _samples(results: dict, task: str) -> list[dict]:
    return sorted(results["samples"][task], key=lambda s: s["doc_id"])


def test_multiple_choice_accuracy_and_log_likelihoods_equal_the_hf_backend(served_results, hf_results):
    served, hf = served_results["results"]["kvgen_mc"], hf_results["results"]["kvgen_mc"]
    assert served["acc,none"] == hf["acc,none"]
    assert hf["acc,none"] > 0.5  # the task is one the model mostly gets right: a broken score would show
    for mine, theirs in zip(_samples(served_results, "kvgen_mc"), _samples(hf_results, "kvgen_mc"), strict=True):
        mine_ll = [r[0][0] for r in mine["resps"]]
        theirs_ll = [r[0][0] for r in theirs["resps"]]
        assert mine_ll == pytest.approx(theirs_ll, abs=0.02), mine["doc"]
        assert max(range(4), key=mine_ll.__getitem__) == max(range(4), key=theirs_ll.__getitem__)


def test_rolling_perplexity_is_within_half_a_percent_of_the_hf_backend(served_results, hf_results):
    served, hf = served_results["results"]["kvgen_rolling"], hf_results["results"]["kvgen_rolling"]
    for metric in ("word_perplexity,none", "byte_perplexity,none"):
        assert math.isfinite(served[metric]) and served[metric] > 1.5, served  # not the 1.00 of empty log-probs
        assert served[metric] == pytest.approx(hf[metric], rel=0.005), metric


def test_generate_until_with_five_stop_strings_gives_the_hf_backend_s_generations(served_results, hf_results):
    mine = [s["filtered_resps"] for s in _samples(served_results, "kvgen_generate")]
    theirs = [s["filtered_resps"] for s in _samples(hf_results, "kvgen_generate")]
    assert mine == theirs
    assert any(r[0].strip() for r in mine)
    assert served_results["results"]["kvgen_generate"]["exact_match,none"] == \
        hf_results["results"]["kvgen_generate"]["exact_match,none"]
