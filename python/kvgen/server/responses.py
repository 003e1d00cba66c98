"""The response shapes of ``kvgen serve``: one HTTP request's completion (its engine requests
and choices, Completion), each returned sequence (Choice), and OpenAI's response bodies and
server-sent events (Responder)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Optional

from kvgen.generation.detokenize import IncrementalText, StopStringFilter
from kvgen.generation.engine import Engine, Request, StepUpdate
from kvgen.generation.prompt_scores import TokenScore
from kvgen.generation.request_setup import set_up_request
from kvgen.server.metrics import Metrics, RequestTimer
from kvgen.server.protocol import ApiError, GenerationRequest

_FINISH = {"eos": "stop", "stop": "stop", "length": "length", "cancelled": "stop"}

#: Log-probabilities are sent no lower than this (vLLM's floor): a token that top-k, top-p or
#: min-p removed has log-probability -inf, which JSON cannot hold.
LOGPROB_FLOOR = -9999.0


def _floor(logprob: float) -> float:
    return logprob if logprob >= LOGPROB_FLOOR else LOGPROB_FLOOR  # also NaN


#: The longest prompt whose log-probs a request may ask for (each position's top alternatives
#: are held until the response is written).
MAX_SCORED_PROMPT = 1024


def _floored(scores: list[TokenScore]) -> list[tuple]:
    """A prompt's token scores (kvgen.generation.prompt_scores) with their log-probs floored."""
    return [(token, None if lp is None else _floor(lp), [(t, _floor(alp)) for t, alp in top], rank)
            for token, lp, top, rank in scores]


def scoring_of(req: GenerationRequest) -> Optional[int]:
    """The alternatives per prompt position a request's prompt scoring asks for (prompt_logprobs,
    or echo with logprobs: top_logprobs); None when it scores no prompt."""
    if req.prompt_logprobs is None and not (req.echo and req.logprobs):
        return None
    return max(req.prompt_logprobs or 0, req.top_logprobs if req.echo else 0)


def error_of(error: BaseException) -> ApiError:
    """The ApiError that answers a request whose generation failed with ``error``: a 400 for
    what the request asked (ValueError: an invalid or unsatisfiable constraint), else a 500
    with a short message (the traceback goes to the server's log)."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, ValueError):
        return ApiError(str(error)[:2000], code="invalid_value")
    import traceback

    traceback.print_exception(type(error), error, error.__traceback__)
    return ApiError(f"the generation failed: {type(error).__name__}", status=500, kind="server_error",
                    code="internal_error")


@dataclass
class Choice:
    """One returned sequence: row `row` of engine request `request`, and its text so far."""

    index: int
    request: int
    row: int
    text: IncrementalText
    stops: Optional[StopStringFilter]  # None without stop strings
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tops: list[list[tuple[int, float]]] = field(default_factory=list)  # per token: its top-n (id, logprob)
    emitted: str = ""
    finish_reason: Optional[str] = None

    def add(self, token: Optional[int], logprob: Optional[float], top: Optional[list[tuple[int, float]]],
            reason: Optional[str]) -> str:
        """Takes one step of this row; the text it releases."""
        if self.finish_reason is not None:
            return ""
        if token is not None:
            self.tokens.append(token)
            if logprob is not None:
                self.logprobs.append(_floor(logprob))
                self.tops.append([(t, _floor(lp)) for t, lp in top] if top else [])
        if reason is not None:
            self.finish_reason = _FINISH[reason]
        return self._release(self.text.update(self.tokens, final=reason is not None))

    def _release(self, piece: str) -> str:
        """OpenAI leaves the stop string out: text that may begin one is held back, and the
        text ends where one starts."""
        out = piece
        if self.stops is not None:
            out = self.stops.feed(piece)
            if self.stops.stopped:
                self.finish_reason = "stop"
            elif self.finish_reason is not None:
                out += self.stops.flush()
        self.emitted += out
        return out


class Completion:
    """One HTTP request's completion: its engine requests, its choices, the steps they report."""

    def __init__(self, server: "Responder", req: GenerationRequest,
                 loop: Optional[asyncio.AbstractEventLoop] = None, arrival: Optional[float] = None):
        """``loop``: the event loop that reads the steps (default: the running one), so that a
        worker thread can build the Completion (it compiles the constraint); ``arrival``: when
        the request came (time.perf_counter(), for the metrics; default now)."""
        self.server, self.req = server, req
        self.error_status: Optional[int] = None  # the HTTP status of the error a stream ended with
        self.updates: asyncio.Queue = asyncio.Queue()
        self.timed_out = False
        loop = loop or asyncio.get_running_loop()
        model = server.model
        # the model's EOS ids and end of turn, the constraint compiled once for every engine request
        assistant = None
        if server.speculation and req.config.prompt_lookup_num_tokens is None:  # --speculative-ngram / -mtp
            for name, value in server.speculation.items():
                if name == "assistant_model":
                    assistant = value
                else:
                    setattr(req.config, name, value)
        try:
            self.setup = set_up_request(model, req.config, end_of_turn=server.end_of_turn is not None,
                                        assistant_model=assistant)
        except ValueError as e:
            raise ApiError(str(e), code="invalid_value") from None
        self.config = self.setup.config
        self.choices: list[Choice] = []
        self.requests: list[Request] = []
        # prompt scoring (prompt_logprobs, echo with logprobs): the alternatives per position; the
        # prompt's first engine request scores it as it is prefilled (kvgen.generation.prompt_scores)
        self.score_top = scoring_of(req)
        if self.score_top is not None:
            longest = max(len(p) for p in req.prompts)
            if longest > MAX_SCORED_PROMPT:
                raise ApiError(f"prompt log-probs are computed for prompts of at most {MAX_SCORED_PROMPT} tokens, "
                               f"got {longest}", param="prompt", code="invalid_value")
        self.scoring: list[Request] = []  # per prompt, the engine request that scores it
        self._prompt_scores: Optional[list[list[tuple]]] = None
        # one engine request per prompt (its n rows); greedy n > 1 repeats the prompt instead
        per_request = req.n if req.config.do_sample else 1
        for prompt in req.prompts:
            scored = self.score_top is None
            for _ in range(req.n // per_request):
                # max_tokens 0: the prompt alone, its choices end at once (a scoring request updates none)
                i = len(self.requests) if req.generate else -1
                keeps_special = req.reasoning is not None and req.reasoning.keeps_special_tokens
                for k in range(per_request):
                    text = IncrementalText(server.decode_special if keeps_special else server.decode)
                    stops = StopStringFilter(req.stops) if req.stops else None
                    self.choices.append(Choice(len(self.choices), i, k, text, stops))
                    if not req.generate:
                        self.choices[-1].finish_reason = "length"
                if req.generate:
                    self._submit(prompt, loop, score=not scored)
                    scored = True
            if not scored:  # max_tokens 0: a request that only scores the prompt
                self._submit(prompt, loop, score=True, generate=False)
        self.prompt_tokens = sum(len(p) for p in req.prompts)
        self.timer = RequestTimer(server.metrics, len(self.requests), self.prompt_tokens)
        if arrival is not None:
            self.timer.arrival = arrival

    def finish_metrics(self) -> None:
        """Counts this request in the server's metrics (once: answered, failed or abandoned)."""
        reason = self.choices[0].finish_reason if self.choices else None
        self.timer.finish(reason, sum(len(c.tokens) for c in self.choices), failed=self.error_status is not None)

    def _submit(self, prompt: list[int], loop: asyncio.AbstractEventLoop, score: bool, generate: bool = True) -> None:
        """Submits an engine request of ``prompt`` (``score``: it scores the prompt too)."""
        i = len(self.requests)

        def post(update: StepUpdate) -> None:
            loop.call_soon_threadsafe(self.updates.put_nowait, (i, update))

        try:
            request = self.server.engine.submit(prompt, self.setup, logprobs=self.req.logprobs, on_update=post,
                                                score_prompt=self.score_top if score else None, generate=generate)
        except ValueError as e:
            self.cancel()
            raise ApiError(str(e), code="invalid_value") from None
        except RuntimeError as e:  # the engine is closed: the server is shutting down
            self.cancel()
            raise ApiError(str(e), status=503, kind="server_error", code="shutting_down") from None
        self.requests.append(request)
        if score:
            self.scoring.append(request)

    def score_prompts(self, top: Optional[int] = None) -> None:
        """Waits until every prompt is scored (its engine request's prefill: scoring runs in the
        engine, interleaved with the other requests; ``top`` is the Completion's own, see
        ``scoring_of``). A request cancelled before leaves its prompt's scores empty."""
        for r in self.scoring:
            try:
                r.wait_scores()
            except Exception as e:  # noqa: BLE001 - the request failed: answered as its steps would be
                raise error_of(e) from None

    @property
    def prompt_scores(self) -> list[list[tuple]]:
        """Per prompt, its tokens' (token, log-prob, top alternatives, rank), log-probs floored
        (kvgen.generation.prompt_scores); empty for a prompt not scored (yet)."""
        if self._prompt_scores is None:
            scores = [r.prompt_scores for r in self.scoring]
            out = [_floored(per[0]) if per is not None else [] for per in scores]
            if all(per is not None for per in scores):
                self._prompt_scores = out  # complete: kept
            return out
        return self._prompt_scores

    def cancel(self) -> None:
        """Cancels every engine request of this generation (their slots free at the next step)."""
        for r in self.requests:
            r.cancel()

    async def steps(self) -> AsyncIterator[list[tuple[Choice, str]]]:
        """Yields, per engine step of any of the requests, the (choice, new text) of its rows."""
        running = len(self.requests)
        while running:
            i, update = await self.updates.get()
            if update.error is not None:
                self.cancel()
                self.timer.step(i, 0, True)
                raise error_of(update.error)
            self.timer.step(i, sum(t is not None for t in update.tokens), update.done)
            out = []
            for choice in (c for c in self.choices if c.request == i):
                k = choice.row
                logprob = update.logprobs[k] if update.logprobs else None
                top = update.top_logprobs[k] if update.top_logprobs else None
                piece = choice.add(update.tokens[k], logprob, top, update.finish_reasons[k])
                out.append((choice, piece))
            if all(c.finish_reason is not None for c in self.choices if c.request == i) and not update.done:
                self.requests[i].cancel()  # every row stopped at a stop string the tokens did not end on
            if update.done:
                running -= 1
            yield out
        if self.timed_out:
            raise ApiError("the request ran past the server's --request-timeout", status=504, kind="server_error",
                           code="timeout")

    def usage(self) -> dict:
        """OpenAI's usage: prompt, completion and total tokens."""
        completion = sum(len(c.tokens) for c in self.choices)
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": completion,
                 "total_tokens": self.prompt_tokens + completion}
        # speculative decoding (kvgen's extra field): draft tokens verified and accepted
        drafted = sum(int(r.selector.drafted_tokens.sum()) for r in self.requests)
        if drafted:
            accepted = sum(int(r.selector.accepted_tokens.sum()) for r in self.requests)
            usage["speculative"] = {"drafted_tokens": drafted, "accepted_tokens": accepted,
                                    "acceptance_rate": accepted / drafted}
        return usage


def _no_reasoning(choice: Choice, piece: str, final: bool) -> tuple[str, str]:
    return "", piece


def _reasoning_splits(gen: Completion):
    """``split(choice, piece, final)`` -> (reasoning, content) of each choice's text as it grows
    (kvgen.server.reasoning.ReasoningSplitter), or all content when the reply has no reasoning."""
    if gen.req.reasoning is None:
        return _no_reasoning
    from kvgen.server.reasoning import ReasoningSplitter

    splitters = {c.index: ReasoningSplitter(gen.req.reasoning) for c in gen.choices}

    def split(choice: Choice, piece: str, final: bool) -> tuple[str, str]:
        return splitters[choice.index].feed(piece, final)

    return split


def _legacy_delta(delta: dict) -> dict:
    """A tool-call delta in the legacy ``function_call`` shape (the first call's name, then its
    arguments in pieces); content deltas as they are."""
    calls = delta.get("tool_calls")
    if not calls:
        return delta
    function = calls[0].get("function") or {}
    return {"function_call": {k: function[k] for k in ("name", "arguments") if k in function}}


class Responder:
    """Writes OpenAI's response bodies and server-sent events for the served model."""

    def __init__(self, model, engine: Engine, name: str, metrics: Optional[Metrics] = None,
                 speculation: Optional[dict] = None, reasoning_parser: str = "auto"):
        from kvgen.server.reasoning import parser_for

        self.model, self.engine, self.name, self.metrics = model, engine, name, metrics
        #: GenerationConfig fields of speculative decoding for requests that set none (--speculative-ngram)
        self.speculation = speculation or {}
        #: the reasoning parser of chat replies (kvgen.server.reasoning; None: none), --reasoning-parser
        self.reasoning_parser = parser_for(reasoning_parser, model.chat_template)
        self.end_of_turn = model.end_of_turn_token_id if model.chat_template else None
        self.created = int(time.time())

    def decode(self, tokens) -> str:
        """The text of generated tokens, special tokens (EOS, end of turn) left out."""
        return self.model.decode(tokens, skip_special_tokens=True)

    def decode_special(self, tokens) -> str:
        """The text of generated tokens with their special tokens (a harmony reply's markers)."""
        return self.model.decode(tokens, skip_special_tokens=False)

    def token_text(self, token: int) -> str:
        """The text of one token, as log-probs report it."""
        return self.model.decode([token])

    # ---- /v1/completions ----

    def completion_logprobs(self, gen: Completion, choice: Choice, start: int = 0, text_start: int = 0) -> dict:
        """OpenAI's completions logprobs of the choice's tokens from ``start`` on, whose text
        begins at offset ``text_start``; top_logprobs (with ``logprobs`` > 0) holds the
        alternatives and, as OpenAI's, the chosen token too."""
        tokens = [self.token_text(t) for t in choice.tokens[start:]]
        offsets, at = [], text_start
        for t in tokens:
            offsets.append(at)
            at += len(t)
        top = None
        if gen.req.top_logprobs:
            top = [{**{self.token_text(i): lp for i, lp in alternatives}, text: lp}
                   for text, lp, alternatives in zip(tokens, choice.logprobs[start:], choice.tops[start:])]
        return {"tokens": tokens, "token_logprobs": choice.logprobs[start:], "top_logprobs": top,
                "text_offset": offsets}

    def completion_body(self, gen: Completion, cid: str) -> dict:
        """The /v1/completions response of a finished generation."""
        choices = []
        for c in gen.choices:
            text = (self._prompt_text(gen, c) if gen.req.echo else "") + c.emitted
            logprobs = None
            if gen.req.logprobs:
                logprobs = self.completion_logprobs(gen, c, text_start=len(text) - len(c.emitted))
                if gen.req.echo:
                    logprobs = self._echo_logprobs(gen, c, logprobs)
            choice = {"index": c.index, "text": text, "logprobs": logprobs, "finish_reason": c.finish_reason}
            if gen.req.prompt_logprobs is not None:
                choice["prompt_logprobs"] = self.vllm_prompt_logprobs(gen.prompt_scores[c.index // gen.req.n])
            choices.append(choice)
        return {"id": cid, "object": "text_completion", "created": int(time.time()), "model": self.name,
                "choices": choices, "usage": gen.usage()}

    def _echo_logprobs(self, gen: Completion, choice: Choice, generated: dict) -> dict:
        """OpenAI's echo logprobs: the prompt's tokens (the first one's log-prob null) before the
        generated ones'; text offsets from the start of the echoed text."""
        scores = gen.prompt_scores[choice.index // gen.req.n]
        tokens = [self.token_text(t) for t, *_ in scores]
        offsets, at = [], 0
        for t in tokens:
            offsets.append(at)
            at += len(t)
        top = None
        if gen.req.top_logprobs:
            top = [None] + [{**{self.token_text(i): lp for i, lp in alternatives}, text: lp}
                            for text, (_, lp, alternatives, _) in zip(tokens[1:], scores[1:])]
            top += generated["top_logprobs"]
        return {"tokens": tokens + generated["tokens"],
                "token_logprobs": [lp for _, lp, *_ in scores] + generated["token_logprobs"],
                "top_logprobs": top, "text_offset": offsets + generated["text_offset"]}

    def vllm_prompt_logprobs(self, scores: list[tuple]) -> list[Optional[dict]]:
        """vLLM's prompt_logprobs: per prompt token, null for the first, else {token id:
        {logprob, rank, decoded_token}} for the token and the top alternatives."""
        out: list[Optional[dict]] = [None]
        for token, lp, alternatives, rank in scores[1:]:
            entry = {str(t): {"logprob": alp, "rank": k + 1, "decoded_token": self.token_text(t)}
                     for k, (t, alp) in enumerate(alternatives)}
            entry[str(token)] = {"logprob": lp, "rank": rank, "decoded_token": self.token_text(token)}
            out.append(entry)
        return out

    def _prompt_text(self, gen: Completion, choice: Choice) -> str:
        return self.model.decode(gen.req.prompts[choice.index // gen.req.n])

    # ---- /v1/chat/completions ----

    def _token_logprob(self, token: int, logprob: float) -> dict:
        text = self.token_text(token)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode())}

    def chat_logprobs(self, choice: Choice, start: int = 0) -> dict:
        """OpenAI's chat logprobs of the choice's tokens from ``start`` on."""
        content = []
        for t, lp, alternatives in zip(choice.tokens[start:], choice.logprobs[start:], choice.tops[start:]):
            top = [self._token_logprob(i, alp) for i, alp in alternatives]
            content.append({**self._token_logprob(t, lp), "top_logprobs": top})
        return {"content": content}

    def chat_message(self, gen: Completion, choice: Choice) -> tuple[dict, Optional[str]]:
        """The assistant message of a finished choice and its finish_reason: with tools, the
        calls in its text become ``tool_calls`` (finish_reason "tool_calls"; "length" for a
        reply cut by max_tokens, its last call's arguments cut too, as OpenAI returns it), or
        the legacy ``function_call`` (finish_reason "function_call") when the request gave
        ``functions``."""
        text, reasoning = choice.emitted, {}
        if gen.req.reasoning is not None:  # the reasoning apart (kvgen.server.reasoning)
            from kvgen.server.reasoning import split_reasoning

            thought, text = split_reasoning(text, gen.req.reasoning)
            if thought is not None:
                reasoning = {"reasoning_content": thought}
        if gen.req.tools:
            from kvgen.server.tools import parse_tool_calls

            cut = choice.finish_reason == "length"
            content, calls = parse_tool_calls(text, {t["function"]["name"] for t in gen.req.tools},
                                              truncated=cut, parallel=gen.req.parallel_tool_calls)
            if calls and gen.req.legacy_functions:
                return ({"role": "assistant", "content": content, **reasoning, "function_call": calls[0]["function"]},
                        "length" if cut else "function_call")
            if calls:
                return ({"role": "assistant", "content": content, **reasoning, "tool_calls": calls},
                        "length" if cut else "tool_calls")
            return {"role": "assistant", "content": content, **reasoning}, choice.finish_reason
        return {"role": "assistant", "content": text, **reasoning}, choice.finish_reason

    def chat_body(self, gen: Completion, cid: str) -> dict:
        """The /v1/chat/completions response of a finished generation."""
        choices = []
        for c in gen.choices:
            message, reason = self.chat_message(gen, c)
            choices.append({"index": c.index, "message": message,
                            "logprobs": self.chat_logprobs(c) if gen.req.logprobs else None, "finish_reason": reason})
        body = {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": self.name,
                "choices": choices, "usage": gen.usage()}
        if gen.req.prompt_logprobs is not None:
            body["prompt_logprobs"] = self.vllm_prompt_logprobs(gen.prompt_scores[0])
        return body

    # ---- streaming ----

    async def _tool_stream(self, gen: Completion, chunk, split) -> AsyncIterator[str]:
        """The events of a streamed reply with tools (after the role chunks): content and tool
        calls as they are generated (kvgen.server.tools.ToolCallStream: a call's id and name,
        then its arguments in pieces), each choice's finish chunk, usage, [DONE]. A chunk
        carries the log-probs of the tokens since the last one."""
        from kvgen.server.tools import ToolCallStream

        names = {t["function"]["name"] for t in gen.req.tools}
        parsers = {c.index: ToolCallStream(names, parallel=gen.req.parallel_tool_calls) for c in gen.choices}
        shaped = _legacy_delta if gen.req.legacy_functions else (lambda delta: delta)

        def finish(c: Choice) -> Optional[str]:
            if c.finish_reason == "length" or not parsers[c.index].calls:
                return c.finish_reason
            return "function_call" if gen.req.legacy_functions else "tool_calls"
        sent_tokens = {c.index: 0 for c in gen.choices}
        finished: set[int] = set()

        def logprobs_of(c: Choice) -> Optional[dict]:
            if not gen.req.logprobs or len(c.tokens) == sent_tokens[c.index]:
                return None
            out = self.chat_logprobs(c, sent_tokens[c.index])
            sent_tokens[c.index] = len(c.tokens)
            return out

        async for step in gen.steps():
            for c, piece in step:
                if c.index in finished:
                    continue
                ended = c.finish_reason is not None
                thought, piece = split(c, piece, ended)
                if thought:
                    yield chunk([{"index": c.index, "delta": {"reasoning_content": thought}, "logprobs": None,
                                  "finish_reason": None}])
                for delta in parsers[c.index].feed(piece, final=ended, truncated=c.finish_reason == "length"):
                    yield chunk([{"index": c.index, "delta": shaped(delta), "logprobs": logprobs_of(c),
                                  "finish_reason": None}])
                if ended:
                    finished.add(c.index)
                    yield chunk([{"index": c.index, "delta": {}, "logprobs": logprobs_of(c),
                                  "finish_reason": finish(c)}])
        for c in gen.choices:  # max_tokens 0 or a choice without steps: nothing more comes
            if c.index not in finished:
                thought, rest = split(c, "", True)
                if thought:
                    yield chunk([{"index": c.index, "delta": {"reasoning_content": thought}, "logprobs": None,
                                  "finish_reason": None}])
                for delta in parsers[c.index].feed(rest, final=True, truncated=c.finish_reason == "length"):
                    yield chunk([{"index": c.index, "delta": shaped(delta), "logprobs": logprobs_of(c),
                                  "finish_reason": None}])
                yield chunk([{"index": c.index, "delta": {}, "logprobs": None, "finish_reason": finish(c)}])
        if gen.req.include_usage:
            yield chunk([], gen.usage())
        yield "data: [DONE]\n\n"

    async def stream(self, gen: Completion, cid: str, chat: bool) -> AsyncIterator[str]:
        """The server-sent events of a streamed generation, ending with [DONE]."""
        created = int(time.time())
        kind = "chat.completion.chunk" if chat else "text_completion"
        finished: set[int] = set()  # the choices whose finish_reason is sent

        def chunk(choices: list, usage: Optional[dict] = None) -> str:
            body: dict[str, Any] = {"id": cid, "object": kind, "created": created, "model": self.name,
                                    "choices": choices}
            if gen.req.include_usage:
                body["usage"] = usage
            return f"data: {json.dumps(body)}\n\n"

        try:
            # OpenAI's shape: one choice per chunk; a choice's text pieces, then a chunk with an
            # empty delta (text "") that carries its finish_reason
            if chat:
                for c in gen.choices:
                    yield chunk([{"index": c.index, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                  "finish_reason": None}])
            split = _reasoning_splits(gen) if chat else _no_reasoning
            if chat and gen.req.tools:
                async for event in self._tool_stream(gen, chunk, split):
                    yield event
                return
            sent_tokens = {c.index: 0 for c in gen.choices}
            sent_text = {c.index: 0 for c in gen.choices}
            async for step in gen.steps():
                for c, piece in step:
                    thought, piece = split(c, piece, c.finish_reason is not None)
                    if thought:
                        yield chunk([{"index": c.index, "delta": {"reasoning_content": thought}, "logprobs": None,
                                      "finish_reason": None}])
                    start = sent_tokens[c.index]
                    if piece or (c.finish_reason is not None and len(c.tokens) > start):
                        sent_tokens[c.index] = len(c.tokens)
                        logprobs = None
                        if gen.req.logprobs:
                            logprobs = (self.chat_logprobs(c, start) if chat else
                                        self.completion_logprobs(gen, c, start, sent_text[c.index]))
                        sent_text[c.index] += len(piece)
                        if piece or logprobs is not None:
                            text = {"delta": {"content": piece}} if chat else {"text": piece}
                            yield chunk([{"index": c.index, **text, "logprobs": logprobs, "finish_reason": None}])
                    if c.finish_reason is not None and c.index not in finished:
                        finished.add(c.index)
                        end = {"delta": {}} if chat else {"text": ""}
                        yield chunk([{"index": c.index, **end, "logprobs": None, "finish_reason": c.finish_reason}])
            if gen.req.include_usage:
                yield chunk([], gen.usage())
            yield "data: [DONE]\n\n"
        except ApiError as e:  # the headers are sent: the error is an event (vLLM's and OpenAI's shape)
            gen.error_status = e.status
            if self.metrics is not None:
                self.metrics.failure.labels(status=str(e.status)).inc()
            yield f"data: {json.dumps(e.body())}\n\n"
            yield "data: [DONE]\n\n"
        finally:  # also when the client went away: its rows are freed at the next step
            gen.cancel()
