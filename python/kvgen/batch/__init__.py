"""Offline batch jobs: OpenAI Batch API files through kvgen's engine (``kvgen batch``).

``run(requests, model)`` runs Batch API request lines (``{"custom_id", "method", "url",
"body"}``) with continuous batching and yields one Batch API result line per request, the
body that ``kvgen serve`` would answer (see ``runner``). ``files`` reads and writes the files
(plain prompts too) and resumes a job from its output; ``job`` runs a file with progress and a
summary. The same job on a Ray cluster: kvgen.ray.
"""

try:
    from kvgen.batch.files import BatchFileError, prompt_requests, read_requests
    from kvgen.batch.job import JobSummary, run_job
    from kvgen.batch.runner import run
except ModuleNotFoundError as e:  # the batch extra's pydantic (request validation) is missing
    if e.name != "pydantic":
        raise
    raise ModuleNotFoundError(
        f"kvgen batch needs pydantic: pip install 'kvgen[batch]' ({e})", name=e.name
    ) from None

__all__ = ["BatchFileError", "JobSummary", "prompt_requests", "read_requests", "run", "run_job"]
