"""Agent frameworks against ``kvgen serve`` (Chat Completions): pydantic-ai's and openai-agents'
agents complete a tool round trip at the protocol level — the model's call, the tool run with
arguments that validate against its schema, the tool's result sent back, and a final answer.

The 135M model's own tool choices are weak, so each test forces the call on the first turn
(``tool_choice="required"``) and lets the second turn answer in text; how is said per test."""

from __future__ import annotations

import asyncio
import importlib
import json
import os

import httpx
import jsonschema
import pytest

QUESTION = "What is the weather in Paris, in Celsius?"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
          "required": ["city", "unit"]}
RESULT = "21 degrees"


def _import(name: str):
    """A module of the ``test`` extra (a missing one fails in CI, skips elsewhere)."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


def _recording_client(served, bodies: list):
    """An AsyncOpenAI client pointed at the server that keeps each request body it sends."""
    import openai

    async def record(request: httpx.Request) -> None:
        bodies.append(json.loads(request.content or b"{}"))

    return openai.AsyncOpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0, timeout=120,
                              http_client=httpx.AsyncClient(event_hooks={"request": [record]}, timeout=120))


def _check_round_trip(bodies: list, ran: list, answer: object) -> None:
    """The tool ran once with valid arguments, its result went back to the server with the call's
    id, and the agent's final answer is the server's text reply."""
    assert len(ran) == 1
    jsonschema.validate(ran[0], SCHEMA)
    assert len(bodies) == 2 and bodies[0]["tool_choice"] == "required"
    (call,) = [c for m in bodies[1]["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert call["function"]["name"] == "get_weather" and json.loads(call["function"]["arguments"]) == ran[0]
    (reply,) = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert reply["tool_call_id"] == call["id"] and RESULT in reply["content"]
    assert isinstance(answer, str) and answer.strip()


def test_pydantic_ai_round_trip(served):
    """pydantic-ai's Agent over OpenAIChatModel. Forced: model settings given as a function of the
    run step, ``tool_choice="required"`` on step 1 and ``"none"`` afterwards (a static
    "required" is refused by pydantic-ai for a text output), with ``parallel_tool_calls=False``."""
    _import("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings

    bodies: list = []
    ran: list = []
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=_recording_client(served, bodies)))
    agent = Agent(model, model_settings=lambda ctx: ModelSettings(
        max_tokens=100, temperature=0, parallel_tool_calls=False,
        tool_choice="required" if ctx.run_step == 1 else "none"))

    @agent.tool_plain
    def get_weather(city: str, unit: str) -> str:
        """The weather in a city, in unit C or F."""
        ran.append({"city": city, "unit": unit})
        return RESULT

    async def run():
        async with model.client:  # closed in the run's own event loop (no unclosed socket)
            return await agent.run(QUESTION)

    result = asyncio.run(run())
    _check_round_trip(bodies, ran, result.output)
    assert result.output == result.all_messages()[-1].parts[0].content


def test_openai_agents_round_trip(served):
    """openai-agents' Agent over OpenAIChatCompletionsModel. Forced: ``ModelSettings(tool_choice=
    "required")`` on the first turn; ``reset_tool_choice=True`` drops the forcing after the tool
    ran and the tool's ``is_enabled`` hides it once it has run, so the second turn, offered no
    tools, answers in text (left to "auto", the small model calls the tool again)."""
    agents = _import("agents")
    agents.set_tracing_disabled(True)
    bodies: list = []
    ran: list = []

    @agents.function_tool(is_enabled=lambda ctx, agent: not ran)
    def get_weather(city: str, unit: str) -> str:
        """The weather in a city, in unit C or F."""
        ran.append({"city": city, "unit": unit})
        return RESULT

    client = _recording_client(served, bodies)
    model = agents.OpenAIChatCompletionsModel(model="m", openai_client=client)
    agent = agents.Agent(name="weather", instructions="Answer with the tool's result.", model=model,
                         tools=[get_weather], reset_tool_choice=True,
                         model_settings=agents.ModelSettings(tool_choice="required", max_tokens=100,
                                                             temperature=0, parallel_tool_calls=False))
    async def run():
        async with client:  # closed in the run's own event loop (no unclosed socket)
            return await agents.Runner.run(agent, QUESTION, max_turns=2)

    result = asyncio.run(run())
    _check_round_trip(bodies, ran, result.final_output)
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["get_weather"]
    assert "tool_choice" not in bodies[1] and not bodies[1].get("tools")
