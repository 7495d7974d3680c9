"""Every recorded provider stream of tests/data/corpus merges to its expected calls.

The streams are real recordings from public repositories (see
tests/data/corpus/SOURCES.md); ``expected.json`` was computed by an independent
reference merger. Per file: call names, ids (where the provider gave one),
parsed arguments, exact argument text (where the wire carries text), kinds,
statuses and finish reasons, with the format detected automatically and also
given explicitly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolwire.streaming.formats.registry import FORMATS, detect_format
from toolwire.streaming.framing import frames_from_bytes
from toolwire.streaming.merge import merge_bytes
from toolwire.streaming.state import Status

CORPUS = Path(__file__).parent / "data" / "corpus"
EXPECTED: dict[str, dict] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))

#: File-name prefix -> the format the stream must be detected as.
FORMAT_OF_PREFIX = {
    "anthropic": "anthropic",
    "vertex-anthropic": "anthropic",
    "azure-responses": "openai-responses",
    "bedrock-mantle-responses": "openai-responses",
    "deepseek-responses": "openai-responses",
    "openai-responses": "openai-responses",
    "cohere": "cohere",
    "gemini": "gemini",
    "vertex": "gemini",
}
#: Provider kinds that the provider runs itself (kept apart from client calls).
PROVIDER_KINDS = {"server_tool_use", "mcp_tool_use"}


def expected_format(name: str) -> str:
    prefix = name.split("__", 1)[0]
    if prefix == "bedrock":
        return "bedrock-invoke" if "invoke" in name else "bedrock-converse"
    return FORMAT_OF_PREFIX.get(prefix, "openai-chat")


def detected_format(body: bytes) -> str | None:
    for frame in frames_from_bytes(body):
        found = detect_format(frame.payload, frame.event)
        if found:
            return found
    return None


def test_every_data_file_has_an_expectation_and_a_source() -> None:
    files = {p.name for p in CORPUS.iterdir() if p.name not in {"expected.json", "SOURCES.md", ".gitattributes"}}
    assert files == set(EXPECTED)
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for name in files:
        assert f"`{name}`" in sources, f"{name} has no source line"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_format_is_detected(name: str) -> None:
    body = (CORPUS / name).read_bytes()
    assert detected_format(body) == expected_format(name)


def check(name: str, fmt: str | None) -> None:
    expected = EXPECTED[name]
    merger = merge_bytes((CORPUS / name).read_bytes(), fmt)
    calls = merger.calls
    assert [c.name for c in calls] == [c["name"] for c in expected["calls"]]
    for call, want in zip(calls, expected["calls"]):
        label = f"{name} call {call.index}"
        if want.get("id"):
            assert call.id == want["id"], label
        else:
            assert call.id, f"{label}: a stable id must be generated"
        if "arguments_text" in want:
            assert call.arguments_text == want["arguments_text"], label
        want_kind = want.get("kind")
        assert call.kind == (want_kind if want_kind in PROVIDER_KINDS else "function"), label
        if want["arguments"] is None:
            assert call.status is Status.ERRORED, label
            assert call.error is not None and call.error.code == "truncated", label
            assert call.arguments is None
        else:
            assert call.status is Status.GENERATED, f"{label}: {call.error}"
            assert call.arguments == want["arguments"], label
            assert json.loads(merger.arguments_for_model(call)) == want["arguments"], label
    assert merger.finish_reasons == expected["finish"]
    if "error_event" in expected:
        error = expected["error_event"]["error"]
        assert [(e.message, e.code) for e in merger.errors] == [(error["message"], error["code"])]
    else:
        assert merger.errors == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stream_merges_to_expected_calls(name: str) -> None:
    check(name, None)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_explicit_format_gives_the_same_result(name: str) -> None:
    check(name, expected_format(name))


def test_every_format_is_covered_by_the_corpus_or_its_own_tests() -> None:
    covered = {expected_format(name) for name in EXPECTED}
    assert set(FORMATS) - covered == {"vercel-ui"}  # no public recording; see tests/test_formats_vercel.py


def test_truncated_anthropic_call_says_what_where_and_shows_the_end() -> None:
    merger = merge_bytes((CORPUS / "anthropic__tool-use-truncated-max-tokens.sse").read_bytes())
    (call,) = merger.calls
    message = call.error.message
    assert "make_file" in message and "toolu_01EKqbqmZrGRXy18eN7m9kvY" in message
    assert "max_tokens" in message
    assert "Unterminated string" in message
    assert "Filing taxes" in message
    assert call.error.retryable is True
    # The raw text is kept byte for byte, never repaired.
    want = EXPECTED["anthropic__tool-use-truncated-max-tokens.sse"]["calls"][0]["arguments_text"]
    assert call.arguments_text == want


def test_groq_error_event_is_recorded_without_calls() -> None:
    merger = merge_bytes((CORPUS / "groq__gpt-oss-tool-use-failed-error-event.sse").read_bytes())
    assert merger.calls == []
    assert merger.errors[0].code == "tool_use_failed"
    assert merger.reasoning.endswith(" do that.")


def test_text_and_reasoning_are_kept_around_calls() -> None:
    merger = merge_bytes((CORPUS / "anthropic__server-tool-then-client-tool-interleaved-text.sse").read_bytes())
    assert merger.text and [c.name for c in merger.calls] == ["tool_search_tool_bm25", "get_exchange_rate"]
    merger = merge_bytes((CORPUS / "openai-responses__gpt55-commentary-text-then-call.sse").read_bytes())
    assert any(ch in merger.text for ch in "\u201c\u201d\u2018\u2019")  # non-ASCII survives framing
    merger = merge_bytes((CORPUS / "zai__glm-4.7-flash-reasoning-text-two-whole-calls.sse").read_bytes())
    assert merger.reasoning and merger.text


def test_generated_gemini_ids_are_stable_and_distinct() -> None:
    name = "gemini__2.5-flash-two-functioncalls-one-event.sse"
    first = [c.id for c in merge_bytes((CORPUS / name).read_bytes()).calls]
    again = [c.id for c in merge_bytes((CORPUS / name).read_bytes()).calls]
    assert first == again and len(set(first)) == 2
