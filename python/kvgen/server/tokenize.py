"""``/tokenize`` and ``/detokenize`` of ``kvgen serve``, in vLLM's shapes.

- ``POST /tokenize`` ``{"prompt": str, "add_special_tokens": true}`` or ``{"messages": [...],
  "tools": [...], "add_generation_prompt": true}`` (rendered exactly as /v1/chat/completions
  renders them) answers ``{"count", "max_model_len", "tokens", "token_strs"}`` (``token_strs``
  with ``"return_token_strs": true``, else null);
- ``POST /detokenize`` ``{"tokens": [...]}`` answers ``{"prompt": str}``;
- ``GET /tokenizer_info`` answers the tokenizer's special tokens, chat template and length
  (lm-eval's ``local-completions`` then tokenizes through the server: no tokenizer of its own).

The bodies are the pydantic models of kvgen.server.openapi; a body they refuse is a 400 that
names the field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from kvgen.server.openapi import DetokenizeRequest, TokenizeChatRequest, TokenizeCompletionRequest
from kvgen.server.protocol import ApiError


def _parsed(model: type[BaseModel], body: Any) -> Any:
    """``body`` as ``model``; ApiError naming the first field pydantic refuses."""
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as e:
        error = e.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        code = "unknown_field" if error["type"] == "extra_forbidden" else "invalid_value"
        raise ApiError(f"'{where}': {error['msg']}", param=where, code=code) from None


def _text_ok(name: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(f"'{name}': the text holds a lone surrogate; text must be valid Unicode", param=name,
                       code="invalid_value") from None


def _chat_ids(req: TokenizeChatRequest, model) -> list[int]:
    """The token ids that /v1/chat/completions would prefill for these messages and tools."""
    from kvgen.server.protocol import _messages, _supports_tools, _without_tool_syntax

    raw = [m.model_dump(exclude_none=True) for m in req.messages]
    for i, m in enumerate(raw):
        if isinstance(m.get("content"), str):
            _text_ok(f"messages[{i}].content", m["content"])
    messages = _messages(raw)
    tools = [t.model_dump(exclude_none=True) for t in req.tools or []]
    extra: dict[str, Any] = {}
    if _supports_tools(model.chat_template):
        if tools:
            extra["tools"] = tools
    else:
        messages = _without_tool_syntax(messages, tools)
    try:
        return model.encode_chat(messages, add_generation_prompt=req.add_generation_prompt, **extra)
    except ValueError as e:
        raise ApiError(f"'messages': {e}", param="messages", code="invalid_value") from None


def tokenize(body: Any, model) -> dict:
    """The answer to POST /tokenize."""
    chat = isinstance(body, dict) and "messages" in body
    req = _parsed(TokenizeChatRequest if chat else TokenizeCompletionRequest, body)
    if chat:
        ids = _chat_ids(req, model)
    else:
        _text_ok("prompt", req.prompt)
        ids = model.encode(req.prompt, add_special_tokens=req.add_special_tokens)
    strs = [model.decode([t]) for t in ids] if req.return_token_strs else None
    return {"count": len(ids), "max_model_len": model.context_length, "tokens": ids, "token_strs": strs}


def detokenize(body: Any, model) -> dict:
    """The answer to POST /detokenize."""
    req = _parsed(DetokenizeRequest, body)
    bad = next((i for i, t in enumerate(req.tokens) if not 0 <= t < model.vocab_size), None)
    if bad is not None:
        raise ApiError(f"'tokens[{bad}]': token id {req.tokens[bad]} is outside the vocabulary [0, "
                       f"{model.vocab_size})", param=f"tokens[{bad}]", code="invalid_value")
    return {"prompt": model.decode(req.tokens)}


def tokenizer_info(model) -> dict:
    """The answer to GET /tokenizer_info (vLLM's): the tokenizer's special tokens, chat template
    and the longest sequence."""
    eos = model.eos_token
    if eos is None and model.eos_token_id is not None:
        first = model.eos_token_id[0] if isinstance(model.eos_token_id, (list, tuple)) else model.eos_token_id
        eos = model.decode([first])
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": model.bos_token, "eos_token": eos,
            "pad_token": None, "chat_template": model.chat_template, "model_max_length": model.context_length}
