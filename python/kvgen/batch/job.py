"""A batch job over files: read the requests, skip those the output already answers, run the
rest (here, or on Ray: kvgen.ray), append each result line as it comes, show progress and
a summary. What ``kvgen batch`` runs."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, TextIO

from kvgen.batch.files import ResultWriter, completed_ids


@dataclass
class JobSummary:
    """What a job did: requests answered (of them, errors), skipped (already in the output),
    completion tokens, seconds; ``interrupted`` when it was stopped before the end."""

    total: int
    skipped: int
    answered: int = 0
    errors: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    first_errors: list[str] = field(default_factory=list)

    def line(self, output: str) -> str:
        rate = self.completion_tokens / self.seconds if self.seconds > 0 else 0.0
        text = (f"kvgen batch: {self.answered} requests answered ({self.errors} errors), {self.skipped} already in "
                f"{output}, {self.completion_tokens} completion tokens in {self.seconds:.1f} s ({rate:.1f} tok/s)")
        left = self.total - self.skipped - self.answered
        if self.interrupted:
            text += f"; interrupted with {left} left: run the same command to resume"
        return text


def run_job(requests: list[dict], output: os.PathLike | str,
            runner: Callable[[Iterable[dict]], Iterator[dict]], *, progress: bool = True,
            log: TextIO = sys.stderr) -> JobSummary:
    """Runs ``requests`` (Batch API lines, custom_ids unique) with ``runner`` (requests -> result
    lines), appending each result to ``output`` and flushing it; requests whose custom_id the
    output already holds are skipped. KeyboardInterrupt is re-raised after the summary."""
    done = completed_ids(output)
    todo = [r for r in requests if r["custom_id"] not in done]
    summary = JobSummary(total=len(requests), skipped=len(requests) - len(todo))
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), unit="req", file=log, dynamic_ncols=True)
    start = time.perf_counter()
    results = runner(todo) if todo else iter(())
    try:
        with ResultWriter(output) as writer:
            for line in results:
                writer.write(line)
                summary.answered += 1
                if line.get("error") is not None:
                    summary.errors += 1
                    if len(summary.first_errors) < 3:
                        summary.first_errors.append(f"{line['custom_id']}: {line['error']['message']}")
                else:
                    usage = line["response"]["body"].get("usage") or {}
                    summary.completion_tokens += usage.get("completion_tokens", 0)
                if bar is not None:
                    seconds = time.perf_counter() - start
                    bar.set_postfix_str(f"{summary.completion_tokens / max(seconds, 1e-9):.1f} tok/s", refresh=False)
                    bar.update(1)
    except KeyboardInterrupt:
        summary.interrupted = True
        raise
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
        if bar is not None:
            bar.close()
        summary.seconds = time.perf_counter() - start
        print(summary.line(str(output)), file=log, flush=True)
        for message in summary.first_errors:
            print(f"  error: {message}", file=log, flush=True)
    return summary
