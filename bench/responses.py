"""Benchmark: one multi-step turn on the Responses API wire vs the Chat Completions wire, side by side.

A turn of ``STEPS`` model responses: each streams some text, then one ``edit_file`` call
whose arguments (``ARGS_BYTES`` of JSON) arrive in ``DELTA_BYTES`` pieces; each result is
``RESULT_BYTES`` of text, so the history grows step by step. Per wire, two costs:

* ``merge_s``: every step's SSE body (bytes, built before the clock starts) through
  Toolwire's SSE decoder, the wire's normalizer (``openai-chat`` / ``openai-responses``,
  the latter with reasoning and output items, ``sequence_number`` and ``obfuscation`` as the
  recorded gpt-5 streams carry) and the one merger, then ``finish()``;
* ``request_s``: every step's request body built from the history as it stands
  (``OpenAIModel._body`` / ``ResponsesModel._body``: for Responses the history → ``input``
  conversion, reasoning items with their encrypted content) and serialised with ``json.dumps``
  (what the SDK sends), and the assistant message and result added to the history.

Figures are the best of ``RUNS``. Target (issue 27): Responses within 1.2x of Chat Completions
per turn (``ratio`` = responses / chat of merge + request).

Usage::

    python bench/responses.py            # 20 steps
    python bench/responses.py --quick    # 3 steps, one run: a smoke run
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from typing import Any

from toolwire.agent.conversation import Conversation
from toolwire.llm.base import ModelRequest
from toolwire.llm.openai_model import OpenAIModel
from toolwire.llm.responses_model import ResponsesModel
from toolwire.streaming.decoding import PayloadDecoder
from toolwire.streaming.framing import SSEDecoder, decode_data
from toolwire.streaming.merger import StreamMerger

DELTA_BYTES = 16
ARGS_BYTES = 4000
RESULT_BYTES = 4000
TEXT = "I will change the function so that it handles the empty case, then run the tests again. "
TOOLS = [{"type": "function", "function": {"name": "edit_file", "description": "Edit a file.", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "old_string": {"type": "string"},
                                     "new_string": {"type": "string"}}, "required": ["path"]}}}]


def arguments(step: int) -> str:
    body = ("def f(x):\n    return x  # é ✓\n" * (ARGS_BYTES // 30))[:ARGS_BYTES]
    return json.dumps({"path": f"src/m{step}.py", "old_string": "pass", "new_string": body})


def pieces(text: str) -> list[str]:
    return [text[i:i + DELTA_BYTES] for i in range(0, len(text), DELTA_BYTES)]


def sse(payloads: list[dict[str, Any]], named: bool) -> bytes:
    out = []
    for p in payloads:
        head = f"event: {p['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(p, ensure_ascii=False)}\n\n")
    return "".join(out).encode()


def chat_body(step: int) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1758034836, "model": "gpt-5",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "obfuscation": "tWyV55lwoZZb30"}
    payloads = [chunk({"role": "assistant", "content": ""})]
    payloads += [chunk({"content": p}) for p in pieces(TEXT)]
    payloads.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{step}", "type": "function",
                                           "function": {"name": "edit_file", "arguments": ""}}]}))
    payloads += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces(arguments(step))]
    payloads.append(chunk({}, "tool_calls"))
    return sse(payloads, False) + b"data: [DONE]\n\n"


def responses_body(step: int) -> bytes:
    seq = iter(range(100_000))
    rs, msg, fc = f"rs_{step}", f"msg_{step}", f"fc_{step}"
    enc = "gAAAAABoyXusnBzv6TRLFFsi09D2XC4A5Jod6AOAtsnxA4Vdp6sHIAr4B0UwlKwAdOwh" * 20
    args = arguments(step)

    def ev(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(seq), **fields}
    reasoning = {"id": rs, "type": "reasoning", "summary": [], "encrypted_content": enc}
    message = {"id": msg, "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": TEXT}]}
    call = {"id": fc, "type": "function_call", "status": "completed", "arguments": args, "call_id": f"call_{step}",
            "name": "edit_file"}
    payloads = [ev("response.created", response={"id": f"resp_{step}", "status": "in_progress", "output": []}),
                ev("response.output_item.added", output_index=0, item={**reasoning, "encrypted_content": enc}),
                ev("response.output_item.done", output_index=0, item=reasoning),
                ev("response.output_item.added", output_index=1, item={**message, "content": [], "status": "in_progress"})]
    payloads += [ev("response.output_text.delta", item_id=msg, output_index=1, content_index=0, delta=p, logprobs=[],
                    obfuscation="RvoJ43TaUvnCS8e") for p in pieces(TEXT)]
    payloads.append(ev("response.output_item.done", output_index=1, item=message))
    payloads.append(ev("response.output_item.added", output_index=2, item={**call, "arguments": "", "status": "in_progress"}))
    payloads += [ev("response.function_call_arguments.delta", item_id=fc, output_index=2, delta=p,
                    obfuscation="tWyV55lwoZZb30") for p in pieces(args)]
    payloads.append(ev("response.function_call_arguments.done", item_id=fc, output_index=2, arguments=args))
    payloads.append(ev("response.output_item.done", output_index=2, item=call))
    payloads.append(ev("response.completed", response={"id": f"resp_{step}", "status": "completed",
                                                       "output": [reasoning, message, call],
                                                       "usage": {"input_tokens": 53, "output_tokens": 469}}))
    return sse(payloads, True)


def merge(body: bytes, fmt: str) -> StreamMerger:
    decoder = SSEDecoder()
    normalizer = PayloadDecoder(fmt)
    merger = StreamMerger(explicit_ends=fmt == "openai-responses")
    for event, text in decoder.feed(body):
        for canonical in normalizer.feed_frame(decode_data(event, text)):
            merger.apply(canonical)
    for event, text in decoder.close():
        for canonical in normalizer.feed_frame(decode_data(event, text)):
            merger.apply(canonical)
    merger.finish()
    return merger


def turn(model: Any, bodies: list[bytes], fmt: str) -> tuple[float, float]:
    conversation = Conversation("You are Toolwire, a coding assistant. " * 40)
    conversation.add_user("Fix the empty case in every module.")
    merge_s = request_s = 0.0
    for step, body in enumerate(bodies):
        start = time.perf_counter()
        request = ModelRequest(messages=[dict(m) for m in conversation.messages], tools=TOOLS)
        sent = json.dumps(model._body(request, set()))
        request_s += time.perf_counter() - start
        assert sent
        start = time.perf_counter()
        merger = merge(body, fmt)
        merge_s += time.perf_counter() - start
        call = merger.calls[0]
        assert json.loads(merger.arguments_for_model(call)) == json.loads(arguments(step))
        conversation.add_assistant(merger.text, [(call.id, call.name, merger.arguments_for_model(call))],
                                   items=merger.output_items)
        conversation.add_tool_result(call.id, "x" * RESULT_BYTES)
    return merge_s, request_s


def best(model: Any, bodies: list[bytes], fmt: str, runs: int) -> tuple[float, float]:
    figures = []
    for _ in range(runs):
        gc.collect()
        figures.append(turn(model, bodies, fmt))
    return min(f[0] for f in figures), min(f[1] for f in figures)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    steps, runs = (3, 1) if opts.quick else (20, 7)
    chat = OpenAIModel("gpt-5", base_url="http://127.0.0.1:9/v1", api_key="bench")
    responses = ResponsesModel("gpt-5", base_url="http://127.0.0.1:9/v1", api_key="bench")
    chat_bodies = [chat_body(s) for s in range(steps)]
    responses_bodies = [responses_body(s) for s in range(steps)]
    c_merge, c_request = best(chat, chat_bodies, "openai-chat", runs)
    r_merge, r_request = best(responses, responses_bodies, "openai-responses", runs)
    ratio = (r_merge + r_request) / (c_merge + c_request)
    print(json.dumps({"steps": steps, "chat_merge_s": round(c_merge, 5), "chat_request_s": round(c_request, 5),
                      "responses_merge_s": round(r_merge, 5), "responses_request_s": round(r_request, 5),
                      "chat_body_bytes": sum(map(len, chat_bodies)),
                      "responses_body_bytes": sum(map(len, responses_bodies)),
                      "ratio": round(ratio, 3), "within_1_2x": ratio <= 1.2}))
    return 0 if opts.quick or ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
