"""``/tokenize`` and ``/detokenize`` of ``kvgen serve``, in vLLM's shapes.

- ``POST /tokenize`` ``{"prompt": str, "add_special_tokens": true}`` or ``{"messages": [...],
  "tools": [...], "add_generation_prompt": true}`` (rendered exactly as /v1/chat/completions
  renders them) answers ``{"count", "max_model_len", "tokens", "token_strs"}`` (``token_strs``
  with ``"return_token_strs": true``, else null);
- ``POST /detokenize`` ``{"tokens": [...]}`` answers ``{"prompt": str}``;
- ``GET /tokenizer_info`` answers the tokenizer's special tokens, chat template and length
  (lm-eval's ``local-completions`` then tokenizes through the server: no tokenizer of its own).

The bodies are the pydantic models of kvgen.server.openapi; a body they refuse is a 400 that
names the field. A /tokenize request counts at most ``limit`` tokens (``kvgen serve
--max-tokenize-tokens``): a text longer than ``TOKENIZE_CHARS_PER_TOKEN`` characters per token
of it is refused before it is encoded (the tokenizer holds the GIL while it encodes), and one
that encodes to more tokens after.
"""

from __future__ import annotations

from typing import Any, Union

from pydantic import BaseModel, ValidationError

from kvgen.server.openapi import DetokenizeRequest, TokenizeChatRequest, TokenizeCompletionRequest
from kvgen.server.protocol import ApiError, _api_error, check_depth, check_text

#: A text longer than this many characters per token of the limit is refused unencoded.
TOKENIZE_CHARS_PER_TOKEN = 8

TokenizeRequest = Union[TokenizeCompletionRequest, TokenizeChatRequest]


def _parsed(model: type[BaseModel], body: Any) -> Any:
    """``body`` as ``model``; ApiError naming the first field pydantic refuses."""
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    check_depth(body)
    check_text(body)
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise _api_error(e) from None


def _too_many(chat: bool, count: int, limit: int) -> ApiError:
    return ApiError(f"/tokenize counts at most {limit} tokens per request (kvgen serve --max-tokenize-tokens): "
                    f"{'the chat prompt of the messages' if chat else 'the prompt'} has {count}",
                    param="messages" if chat else "prompt", code="request_too_large")


def text_size(req: TokenizeRequest) -> int:
    """The characters that the request asks to encode (the messages' strings, the tools' text)."""
    if isinstance(req, TokenizeCompletionRequest):
        return len(req.prompt)
    return len(req.model_dump_json(include={"messages", "tools"}))


def tokenize_request(body: Any, limit: int) -> TokenizeRequest:
    """The checked body of POST /tokenize: ApiError naming the field, or naming the limit when
    its text is longer than ``limit`` tokens could hold."""
    chat = isinstance(body, dict) and "messages" in body
    req = _parsed(TokenizeChatRequest if chat else TokenizeCompletionRequest, body)
    if chat:  # the messages' own checks first (tool-call arguments: JSON, nesting), as chat's
        from kvgen.server.protocol import _messages

        _messages([m.model_dump(exclude_none=True) for m in req.messages])
    size = text_size(req)
    if size > limit * TOKENIZE_CHARS_PER_TOKEN:
        raise ApiError(f"/tokenize counts at most {limit} tokens per request (kvgen serve --max-tokenize-tokens): "
                       f"{'the messages hold' if chat else 'the prompt holds'} {size} characters, more than "
                       f"{TOKENIZE_CHARS_PER_TOKEN} per token of the limit", param="messages" if chat else "prompt",
                       code="request_too_large")
    return req


def _chat_ids(req: TokenizeChatRequest, model, name: str) -> list[int]:
    """The token ids that /v1/chat/completions would prefill for these messages and tools."""
    from kvgen.server.protocol import (
        _messages,
        _supports_tools,
        _template_kwargs,
        _without_tool_syntax,
        need_chat_template,
        template_error,
    )

    need_chat_template(model, name)
    messages = _messages([m.model_dump(exclude_none=True) for m in req.messages])
    tools = [t.model_dump(exclude_none=True, by_alias=True) for t in req.tools or []]
    extra: dict[str, Any] = _template_kwargs(req)
    if _supports_tools(model.chat_template):
        if tools:
            extra["tools"] = tools
    else:
        messages = _without_tool_syntax(messages, tools)
    try:
        return model.encode_chat(messages, add_generation_prompt=req.add_generation_prompt, **extra)
    except ValueError as e:
        raise ApiError(f"'messages': {template_error(e, model, name)}", param="messages", code="invalid_value") \
            from None


def tokenize(req: Union[TokenizeRequest, dict], model, limit: int = 1 << 14, model_name: str = "kvgen") -> dict:
    """The answer to POST /tokenize (``req``: tokenize_request's, or a body it checks first;
    ``model_name``: the served name, the one errors give)."""
    if isinstance(req, dict):
        req = tokenize_request(req, limit)
    chat = isinstance(req, TokenizeChatRequest)
    ids = (_chat_ids(req, model, model_name) if chat
           else model.encode(req.prompt, add_special_tokens=req.add_special_tokens))
    if len(ids) > limit:
        raise _too_many(chat, len(ids), limit)
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
