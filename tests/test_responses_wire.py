"""Issue 27: the Responses API wire (``openai-responses:MODEL``), end to end over the real protocol.

The openai SDK talks to :mod:`responses_endpoint` on 127.0.0.1, which streams recorded Responses
streams and answers HTTP 400 to a request breaking the API's rules (one output per call by
call_id, reasoning carried with its encrypted content, instructions, no unknown fields). The same
multi-step turns run on Chat Completions (:mod:`endpoint`) and must end with the same statuses
and files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from endpoint import FakeEndpoint, Stall, Truncated, chat_stream
from responses_endpoint import CORPUS, ResponsesEndpoint, ResponsesRules, corpus_body

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT = 30.0

#: One multi-step turn: read, edit (approved), edit (rejected), then the answer.
STEPS: list[dict[str, Any]] = [
    {"text": "Reading.", "calls": [("read_file", {"path": "a.txt"})]},
    {"calls": [("edit_file", {"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"})]},
    {"calls": [("edit_file", {"path": "b.txt", "old_string": "beta", "new_string": "BETA"})]},
    {"text": "Done: a.txt edited, b.txt left."},
]


def responses_replies(rules: ResponsesRules, steps: list[dict[str, Any]], **kw: Any) -> list[Any]:
    return [rules.reply(s.get("calls", []), s.get("text", ""), summary=s.get("summary", ""), **kw) for s in steps]


def chat_replies(steps: list[dict[str, Any]]) -> list[Any]:
    from endpoint import Reply

    out = []
    for n, step in enumerate(steps, 1):
        line: dict[str, Any] = {"text": step.get("text", "")} if step.get("text") else {}
        if step.get("calls"):
            line["tool_calls"] = [{"name": name, "arguments": args, "id": f"call_{n}_{i}"}
                                  for i, (name, args) in enumerate(step["calls"])]
        out.append(Reply(200, b"".join(chat_stream(line, n))))
    return out


def workspace(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    return root


async def open_session(client, root: Path, spec: str, endpoint: FakeEndpoint, **settings: Any) -> str:
    result = await client.call("toolwire/session/new", {
        "cwd": str(root), "model": spec,
        "settings": {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0, **settings}})
    return result["sessionId"]


async def prompt(client, sid: str, text: str = "go") -> dict[str, Any]:
    return await asyncio.wait_for(client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": text}), WAIT)


async def tool_call_seen(client, sid: str) -> None:
    """Until a tool_call update of ``sid`` arrived (already or still to come)."""
    event = asyncio.Event()
    waiter = (lambda p: p["sessionId"] == sid and p["update"].get("sessionUpdate") == "tool_call", event)
    client.waiters.append(waiter)  # registered before looking at what already came: nothing slips between
    try:
        if not any(u["sessionUpdate"] == "tool_call" for u in client.updates[sid]):
            await asyncio.wait_for(event.wait(), WAIT)
    finally:
        client.waiters.remove(waiter)


def status_runs(client, sid: str) -> list[tuple[str, list[str]]]:
    """(tool name, statuses) per call, in call order."""
    out = []
    for snaps in client.tool_calls(sid).values():
        out.append((snaps[-1]["name"], client.statuses(sid)[snaps[-1]["toolCallId"]]))
    return out


async def run_steps(client, tmp_path: Path, wire: str, steps=STEPS, answers=None, undo: bool = False,
                    **settings: Any):
    root = workspace(tmp_path, wire)
    if wire == "responses":
        rules = ResponsesRules()
        endpoint: FakeEndpoint = ResponsesEndpoint(rules, responses_replies(rules, steps))
        spec = "openai-responses:gpt-5"
    else:
        endpoint = FakeEndpoint(chat_replies(steps))
        spec = "openai:gpt-5"
    with endpoint:
        sid = await open_session(client, root, spec, endpoint, **settings)
        client.answers[sid] = list(answers or [{"optionId": "allow_once"}, {"optionId": "reject", "reason": "no"}])
        result = await prompt(client, sid)
        bodies = list(endpoint.requests)
    files = {p.name: p.read_text() for p in sorted(root.iterdir()) if p.is_file()}
    if undo:
        undone = await client.call("toolwire/session/undoTurn", {"sessionId": sid})
        files = {"undo": undone["status"], **{p.name: p.read_text() for p in sorted(root.iterdir()) if p.is_file()}}
    return result, status_runs(client, sid), files, bodies, sid


async def test_a_multi_step_turn_on_both_wires_ends_the_same(client, tmp_path):
    on_responses = await run_steps(client, tmp_path, "responses")
    on_chat = await run_steps(client, tmp_path, "chat")
    result, statuses, files, bodies, _ = on_responses
    assert result["stopReason"] == "end_turn", result
    assert len(bodies) == 4  # no request was refused: each met the API's rules
    assert files == {"a.txt": "ALPHA\n", "b.txt": "beta\n"}
    assert [s[-1] for _, s in statuses] == ["done", "done", "canceled"]
    assert (result["stopReason"], statuses, files) == (on_chat[0]["stopReason"], on_chat[1], on_chat[2])
    # usage from each response.completed (the recorded stream's), summed over the 4 requests
    usage = ResponsesRules().template_usage()
    assert result["usage"] == {"inputTokens": 4 * usage["input_tokens"], "outputTokens": 4 * usage["output_tokens"],
                               "reasoningTokens": 4 * usage["output_tokens_details"]["reasoning_tokens"],
                               "cachedTokens": 4 * usage["input_tokens_details"]["cached_tokens"]}
    last = bodies[-1]
    assert last["store"] is False and last["include"] == ["reasoning.encrypted_content"]
    assert "Toolwire" in last["instructions"] or last["instructions"]
    kinds = [i.get("type", i.get("role")) for i in last["input"]]
    # reasoning before the calls it led to, one output per call, in order
    assert kinds[:1] == ["user"]
    assert kinds.count("function_call") == 3 == kinds.count("function_call_output")
    assert [i["encrypted_content"] for i in last["input"] if i.get("type") == "reasoning"] == ["enc-1", "enc-2", "enc-3"]
    assert all("messages" not in b and "output_items" not in json.dumps(b) for b in bodies)


async def test_store_true_sends_reasoning_by_id(client, tmp_path):
    result, _, _, bodies, _ = await run_steps(client, tmp_path, "responses", steps=STEPS[:2] + STEPS[3:],
                                             answers=[{"optionId": "allow_once"}], store=True)
    assert result["stopReason"] == "end_turn", result
    last = bodies[-1]
    assert last["store"] is True and "include" not in last
    refs = [i for i in last["input"] if i.get("type") == "item_reference"]
    assert [r["id"] for r in refs] == ["rs_1", "rs_2"]  # messages go as their text, calls as calls


async def test_reasoning_summaries_stream_as_reasoning_and_the_settings_are_sent(client, tmp_path):
    steps = [{"calls": [("read_file", {"path": "a.txt"})], "summary": "I will read a.txt first."},
             {"text": "It says alpha."}]
    result, _, _, bodies, sid = await run_steps(client, tmp_path, "responses", steps=steps,
                                               reasoningEffort="high", reasoningSummary="auto")
    assert result["stopReason"] == "end_turn", result
    assert bodies[0]["reasoning"] == {"effort": "high", "summary": "auto"}
    thoughts = "".join(u["content"]["text"] for u in client.updates[sid] if u["sessionUpdate"] == "agent_thought_chunk")
    assert "read a.txt first" in thoughts
    reasoning = [i for i in bodies[1]["input"] if i.get("type") == "reasoning"]
    assert reasoning[0]["summary"] == [{"type": "summary_text", "text": "I will read a.txt first."}]


@pytest.mark.parametrize("field", ["reasoning", "include", "store", "temperature"])
async def test_a_strict_endpoint_refusing_a_field_is_retried_without_it_and_remembered(client, tmp_path, field):
    root = workspace(tmp_path, f"strict-{field}")
    rules = ResponsesRules(refuses=(field,))
    with ResponsesEndpoint(rules, [rules.reply([], "ok"), rules.reply([], "again")]) as endpoint:
        sid = await open_session(client, root, f"openai-responses:strict-{field}", endpoint, reasoningEffort="low")
        result = await prompt(client, sid)
        later = await prompt(client, sid, "more")
        bodies = list(endpoint.requests)
    assert result["stopReason"] == "end_turn" == later["stopReason"], result
    assert field in bodies[0] and len(bodies) == 3
    assert field not in bodies[1] and field not in bodies[2]  # remembered: left out from the start


async def test_ends_incomplete_failed_and_cut(client, tmp_path):
    root = workspace(tmp_path, "ends")
    rules = ResponsesRules()
    events = rules.step([("read_file", {"path": "a.txt"})], "about to read", end="cut")
    open_call = next(i for i, e in enumerate(events) if b"function_call_arguments.done" in e)
    replies = [rules.reply([], "partial", end="incomplete"),
               rules.reply([], "", end="failed"),
               Truncated(events[:open_call])]  # cut while the call is open
    with ResponsesEndpoint(rules, replies) as endpoint:
        sid = await open_session(client, root, "openai-responses:gpt-5", endpoint)
        incomplete = await prompt(client, sid)
        failed = await prompt(client, sid)
        cut = await prompt(client, sid)
    assert incomplete["stopReason"] == "max_tokens", incomplete
    assert failed["stopReason"] == "error", failed
    assert cut["stopReason"] == "error", cut
    statuses = [s for _, s in status_runs(client, sid)]
    assert statuses[-1][-1] == "errored"  # the cut call was not run (protocol.md: a cut stream)


async def test_cancel_mid_call_then_the_next_request_is_valid(client, tmp_path):
    root = workspace(tmp_path, "cancel")
    rules = ResponsesRules()
    events = rules.step([("read_file", {"path": "a.txt"})], "Reading.")
    header = next(i for i, e in enumerate(events) if b"function_call_arguments.delta" in e)
    stall = Stall(events[:header + 1], tail=events[header + 1:])
    with ResponsesEndpoint(rules, [stall, rules.reply([], "fine")]) as endpoint:
        sid = await open_session(client, root, "openai-responses:gpt-5", endpoint)
        turn = asyncio.ensure_future(client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"}))
        assert await asyncio.to_thread(stall.sent.wait, WAIT)
        await tool_call_seen(client, sid)
        client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
        assert (await asyncio.wait_for(turn, WAIT))["stopReason"] == "cancelled"
        again = await prompt(client, sid, "again")
        bodies = list(endpoint.requests)
    assert again["stopReason"] == "end_turn", again  # the follow-up met the rules
    assert bodies[-1]["input"][0]["role"] == "user"


async def test_the_rules_are_real():
    """Without the reasoning or an output, the endpoint refuses: each rule is enforced."""
    rules = ResponsesRules()
    rules.step([("read_file", {"path": "a.txt"})])
    call = {"type": "function_call", "id": "fc_1_0", "call_id": "call_1_0", "name": "read_file", "arguments": "{}"}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc-1"}
    output = {"type": "function_call_output", "call_id": "call_1_0", "output": "alpha"}
    user = {"role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ok = {"model": "m", "instructions": "x", "store": False, "input": [user, reasoning, call, output]}
    assert rules.problem(ok) is None
    assert "required 'reasoning'" in rules.problem({**ok, "input": [user, call, output]})[0]
    no_enc = {k: v for k, v in reasoning.items() if k != "encrypted_content"}
    assert "not persisted" in rules.problem({**ok, "input": [user, no_enc, call, output]})[0]
    assert "No tool output" in rules.problem({**ok, "input": [user, reasoning, call]})[0]
    assert "No tool call" in rules.problem({**ok, "input": [user, reasoning, call, output, output]})[0]
    assert "instructions" in rules.problem({k: v for k, v in ok.items() if k != "instructions"})[0]
    assert "Unknown parameter" in rules.problem({**ok, "messages": []})[0]


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("openai-responses__*.sse")))
async def test_recorded_streams_merge_to_the_expected_calls_through_the_model(name):
    """Each recorded Responses stream, byte for byte, through the SDK, the normalizer and the merger."""
    from toolwire.llm.base import ModelRequest
    from toolwire.llm.responses_model import ResponsesModel
    from toolwire.streaming.decoding import PayloadDecoder
    from toolwire.streaming.merger import StreamMerger

    from endpoint import Reply

    expected = json.loads((CORPUS / "expected.json").read_text())[name]
    with FakeEndpoint([Reply(200, corpus_body(name))]) as endpoint:
        model = ResponsesModel("gpt-5", base_url=endpoint.base_url, api_key="k")
        decoder = PayloadDecoder(model.format)
        merger = StreamMerger(explicit_ends=True)
        async for frame in model.stream(ModelRequest(messages=[{"role": "system", "content": "s"},
                                                               {"role": "user", "content": "go"}])):
            for event in decoder.feed_frame(frame):
                merger.apply(event)
        for event in decoder.close():
            merger.apply(event)
        merger.finish()
        await model.aclose()
    calls = [c for c in merger.calls if c.kind == "function"]
    assert [(c.name, c.arguments) for c in calls] == [(c["name"], c["arguments"]) for c in expected["calls"]]
    assert merger.finish_reasons == expected["finish"]
    assert any(i.get("type") == "function_call" for i in merger.output_items)
    assert endpoint.paths[0].endswith("/responses")


async def test_text_mode_works_on_the_responses_wire(client, tmp_path):
    """toolCalling "text": no tools sent, the call read out of the message text, its result a user message."""
    from toolwire.agent.text_tools import render_call

    steps = [{"text": "Reading.\n" + render_call("read_file", json.dumps({"path": "a.txt"}))},
             {"text": "a.txt says alpha."}]
    result, statuses, _, bodies, _ = await run_steps(client, tmp_path, "responses", steps=steps, toolCalling="text")
    assert result["stopReason"] == "end_turn", result
    assert [(name, s[-1]) for name, s in statuses] == [("read_file", "done")]
    assert all("tools" not in b for b in bodies)
    second = bodies[1]["input"]
    assert not any(i.get("type", "").startswith("function_call") for i in second)
    assert "alpha" in json.dumps(second[-1])  # the result, as text
    assert not any(i.get("type") == "reasoning" for i in second)  # text mode: plain text, as on Chat Completions


async def test_a_failed_response_names_the_provider_message(client, tmp_path):
    root = workspace(tmp_path, "failed")
    rules = ResponsesRules()
    with ResponsesEndpoint(rules, [rules.reply([], "", end="failed")]) as endpoint:
        sid = await open_session(client, root, "openai-responses:gpt-5", endpoint)
        failed = await prompt(client, sid)
    assert failed["stopReason"] == "error"
    assert "The model failed." in json.dumps(client.updates[sid])


async def test_a_provider_side_search_is_shown_never_run_and_sent_back_as_it_came(client, tmp_path):
    root = workspace(tmp_path, "search")
    rules = ResponsesRules()
    replies = [rules.reply([("read_file", {"path": "a.txt"})], "Searched.", web_search="toolwire docs"),
               rules.reply([], "Done.")]
    with ResponsesEndpoint(rules, replies) as endpoint:
        sid = await open_session(client, root, "openai-responses:gpt-5", endpoint)
        result = await prompt(client, sid)
        bodies = list(endpoint.requests)
    assert result["stopReason"] == "end_turn", result
    calls = {snaps[-1]["name"]: snaps[-1] for snaps in client.tool_calls(sid).values()}
    assert calls["web_search"]["kind"] == "web_search_call" and calls["web_search"]["status"] == "done"
    assert client.permission_requests[sid] == []  # never asked about
    assert calls["read_file"]["status"] == "done"
    second = bodies[1]["input"]
    search = [i for i in second if i.get("type") == "web_search_call"]
    assert search == [{"id": "ws_1", "type": "web_search_call", "status": "completed",
                       "action": {"type": "search", "query": "toolwire docs"}}]
    outputs = [i["call_id"] for i in second if i.get("type") == "function_call_output"]
    assert outputs == [i["call_id"] for i in second if i.get("type") == "function_call"]  # none for the search


async def test_no_key_for_openai_itself_is_no_api_key_and_nothing_is_sent(monkeypatch):
    from toolwire.llm.base import ModelError, ModelRequest
    from toolwire.llm.responses_model import ResponsesModel

    for name in ("TOOLWIRE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    model = ResponsesModel("gpt-5", base_url="https://api.openai.com/v1")
    with pytest.raises(ModelError) as caught:
        async for _ in model.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
            pass
    await model.aclose()
    assert caught.value.code == "no_api_key"
    assert model.model_id == "openai-responses:gpt-5"


def _cut_replies(wire: str) -> tuple[list[Any], Any]:
    """A response cut while its read_file call is still open (no end, no terminal event), then an answer."""
    call = ("read_file", {"path": "a.txt"})
    if wire == "responses":
        rules = ResponsesRules()
        events = rules.step([call], "Reading.", end="cut")
        open_call = next(i for i, e in enumerate(events) if b"function_call_arguments.done" in e)
        return [Truncated(events[:open_call - 1]), rules.reply([], "ok")], rules
    events = chat_stream({"text": "Reading.", "tool_calls": [{"name": call[0], "arguments": call[1], "id": "c1"}]}, 1)
    return [Truncated(events[:-3]), chat_replies([{"text": "ok"}])[0]], None


@pytest.mark.parametrize("scenario", ["cut", "cancel"])
async def test_cut_and_cancel_end_the_same_on_both_wires(client, tmp_path, scenario):
    seen = {}
    for wire in ("responses", "chat"):
        root = workspace(tmp_path, f"{scenario}-{wire}")
        if scenario == "cut":
            replies, rules = _cut_replies(wire)
        else:
            rules = ResponsesRules() if wire == "responses" else None
            events = (rules.step([("read_file", {"path": "a.txt"})], "Reading.") if rules else
                      chat_stream({"text": "Reading.", "tool_calls": [
                          {"name": "read_file", "arguments": {"path": "a.txt"}, "id": "c1"}]}, 1))
            header = next(i for i, e in enumerate(events) if b"read_file" in e)
            stall = Stall(events[:header + 1], tail=events[header + 1:])
            replies = [stall, rules.reply([], "ok") if rules else chat_replies([{"text": "ok"}])[0]]
        endpoint = ResponsesEndpoint(rules, replies) if rules else FakeEndpoint(replies)
        spec = "openai-responses:gpt-5" if rules else "openai:gpt-5"
        with endpoint:
            sid = await open_session(client, root, spec, endpoint)
            turn = asyncio.ensure_future(client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"}))
            if scenario == "cancel":
                assert await asyncio.to_thread(stall.sent.wait, WAIT)
                await tool_call_seen(client, sid)
                client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
            first = await asyncio.wait_for(turn, WAIT)
            again = await prompt(client, sid, "again")
        assert again["stopReason"] == "end_turn", again  # the follow-up request met the rules
        seen[wire] = (first["stopReason"], status_runs(client, sid), (root / "a.txt").read_text())
    assert seen["responses"] == seen["chat"], seen
    assert seen["chat"][0] == ("error" if scenario == "cut" else "cancelled")


async def test_a_saved_history_keeps_the_items_and_sends_them_back():
    """The provider's items survive a session's save and load (to_record/from_record) and are
    sent back; snapshots and Chat Completions never carry them."""
    from toolwire.agent.conversation import Conversation
    from toolwire.llm.openai_model import OpenAIModel
    from toolwire.llm.base import ModelRequest
    from toolwire.llm.responses_input import to_input

    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc-1"}
    call_item = {"id": "fc_1", "type": "function_call", "call_id": "provider_id", "name": "read_file",
                 "arguments": "{}", "status": "completed"}
    history = Conversation("system prompt")
    history.add_user("go")
    history.add_assistant("", [("call_1_0", "read_file", '{"path": "a.txt"}')], items=[reasoning, call_item])
    history.add_tool_result("call_1_0", "alpha")
    loaded = Conversation.from_record(json.loads(json.dumps(history.to_record())))
    instructions, items = to_input(loaded.messages, store=False)
    assert instructions == "system prompt"
    assert items[1] == reasoning
    assert items[2] == {"type": "function_call", "call_id": "call_1_0", "name": "read_file",
                        "arguments": '{"path": "a.txt"}', "id": "fc_1"}  # Toolwire's call id, as the output's
    assert items[3] == {"type": "function_call_output", "call_id": "call_1_0", "output": "alpha"}
    assert ResponsesRules().problem({"model": "m", "instructions": instructions, "store": False, "input": items}) is None
    assert all("output_items" not in m for m in loaded.shown())
    chat = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert "output_items" not in json.dumps(chat._body(ModelRequest(messages=loaded.messages), set()))
    await chat.aclose()


async def test_reasoning_without_encrypted_content_is_left_out_with_its_calls_unlinked():
    """An endpoint that ignored include (no encrypted_content): the item cannot go back with store
    false, so it is left out and its calls go without the item ids that would require it."""
    from toolwire.llm.responses_input import to_input

    rules = ResponsesRules()
    rules.step([("read_file", {"path": "a.txt"})])
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "output_items": [
                    {"id": "rs_1", "type": "reasoning", "summary": []},
                    {"id": "fc_1_0", "type": "function_call", "call_id": "x", "name": "read_file", "arguments": "{}"}],
                 "tool_calls": [{"id": "call_1_0", "type": "function",
                                 "function": {"name": "read_file", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1_0", "content": "alpha"}]
    instructions, items = to_input(messages, store=False)
    assert [i.get("type", i.get("role")) for i in items] == ["user", "function_call", "function_call_output"]
    assert "id" not in items[1]
    assert rules.problem({"model": "m", "instructions": instructions, "store": False, "input": items}) is None


async def test_arguments_only_in_done_are_taken_from_there(client, tmp_path):
    root = workspace(tmp_path, "done-only")
    rules = ResponsesRules()
    edit = ("edit_file", {"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"})
    with ResponsesEndpoint(rules, [rules.reply([edit], deltas=False), rules.reply([], "ok")]) as endpoint:
        sid = await open_session(client, root, "openai-responses:gpt-5", endpoint)
        client.answers[sid] = [{"optionId": "allow_once"}]
        result = await prompt(client, sid)
    assert result["stopReason"] == "end_turn", result
    assert (root / "a.txt").read_text() == "ALPHA\n"
    assert [s[-1] for _, s in status_runs(client, sid)] == ["done"]


async def test_undo_after_a_responses_turn_as_after_a_chat_one(client, tmp_path):
    on_responses = await run_steps(client, tmp_path, "responses", undo=True)
    on_chat = await run_steps(client, tmp_path, "chat", undo=True)
    assert on_responses[2] == {"undo": "undone", "a.txt": "alpha\n", "b.txt": "beta\n"} == on_chat[2]
