"""Issue 11 §2: reasoning that must go back, goes back.

Thinking models on the Chat Completions API (DeepSeek's reasoner, Kimi's thinking
models) stream ``reasoning_content`` and answer HTTP 400 when the next request's
assistant message holding tool calls lacks it; DeepSeek also refuses it on an
assistant message without tool calls. The local endpoint here enforces both rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from endpoint import FakeEndpoint, Reply, sse_events

pytestmark = pytest.mark.asyncio(loop_scope="module")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "r", "object": "chat.completion.chunk", "model": "thinker",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def thinking_call(reasoning: list[str], call_id: str, path: str) -> bytes:
    payloads = [chunk({"role": "assistant", "reasoning_content": ""})]
    payloads += [chunk({"reasoning_content": piece}) for piece in reasoning]
    payloads += [chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                        "function": {"name": "read_file", "arguments": ""}}]}),
                 chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"path": path})}}]}),
                 chunk({}, "tool_calls")]
    return b"".join(sse_events(payloads)) + b"data: [DONE]\n\n"


def thinking_text(reasoning: str, text: str) -> bytes:
    payloads = [chunk({"role": "assistant", "reasoning_content": reasoning}), chunk({"content": text}), chunk({}, "stop")]
    return b"".join(sse_events(payloads)) + b"data: [DONE]\n\n"


def deepseek_rule(body: dict[str, Any]) -> str | None:
    """The thinking-mode rule of DeepSeek/Kimi-style endpoints, as a 400 message."""
    for n, message in enumerate(body["messages"]):
        if message.get("role") != "assistant":
            continue
        if message.get("tool_calls") and not message.get("reasoning_content"):
            return f"Missing `reasoning_content` field in the assistant message at message index {n}"
        if not message.get("tool_calls") and "reasoning_content" in message:
            return f"`reasoning_content` is not allowed in the assistant message at message index {n}"
    return None


async def test_reasoning_content_goes_back_with_the_tool_call_message_only(client, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    replies = [
        Reply(200, thinking_call(["I should ", "read a.txt ", "first."], "call_a", "a.txt")),
        Reply(200, thinking_call(["Now b.txt."], "call_b", "b.txt")),
        Reply(200, thinking_text("Both read.", "a is alpha, b is beta.")),
        Reply(200, thinking_text("Easy.", "Yes.")),  # the second prompt
    ]
    with FakeEndpoint(replies, check=deepseek_rule) as endpoint:
        result = await client.call("toolwire/session/new", {
            "cwd": str(root), "model": "openai:thinker",
            "settings": {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}})
        sid = result["sessionId"]
        first = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "read both"})
        second = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "sure?"})
        bodies = list(endpoint.requests)
    assert first["stopReason"] == "end_turn", first
    assert second["stopReason"] == "end_turn", second
    assert len(bodies) == 4  # no 400: every request met the rule
    assistants = [m for m in bodies[3]["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == ["I should read a.txt first.", "Now b.txt.", None]
    assert [bool(m.get("tool_calls")) for m in assistants] == [True, True, False]
    # the reasoning was shown to the client as thought chunks, not as text
    thoughts = "".join(u["content"]["text"] for u in client.updates[sid] if u["sessionUpdate"] == "agent_thought_chunk")
    assert "read a.txt" in thoughts


async def test_the_endpoint_enforces_the_rule(client, tmp_path):
    """Without the reasoning the same endpoint refuses the follow-up: the rule is real."""
    assert deepseek_rule({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}]})
    assert deepseek_rule({"messages": [{"role": "assistant", "content": "hi", "reasoning_content": "r"}]})
    assert deepseek_rule({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "x"}],
                                        "reasoning_content": "r"}]}) is None
