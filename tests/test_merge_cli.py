"""``toolwire merge FILE [--format F] [--json]`` (server/toolwire/merge_cli.py)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolwire import merge_cli

CORPUS = Path(__file__).parent / "data" / "corpus"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = merge_cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["openai__chat-parallel-two-tools.sse", "anthropic__tool-use-truncated-max-tokens.sse",
                                  "bedrock__nova2-lite-converse-stream-server-tool-then-tooluse.eventstream"])  # fmt: skip
def test_json_output_has_exactly_the_listed_keys(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(CORPUS / name), "--json"], capsys)
    assert code == 0 and err == ""
    result = json.loads(out)
    assert out.count("\n") == 1
    assert set(result) == {"calls", "finishReasons", "text"}
    assert result["finishReasons"] == EXPECTED[name]["finish"]
    for call, want in zip(result["calls"], EXPECTED[name]["calls"], strict=True):
        assert set(call) == {"id", "name", "arguments", "argumentsText", "status", "error"}
        assert (call["name"], call["arguments"]) == (want["name"], want["arguments"])
        assert call["status"] == ("errored" if want["arguments"] is None else "generated")
        if call["error"] is not None:
            assert set(call["error"]) == {"code", "message", "retryable"}


def test_details_adds_the_extra_keys(capsys: pytest.CaptureFixture[str]) -> None:
    name = "anthropic__server-tool-then-client-tool-interleaved-text.sse"
    code, out, _ = run([str(CORPUS / name), "--json", "--details"], capsys)
    result = json.loads(out)
    assert code == 0 and {"format", "reasoning", "usage", "errors", "anomalies"} <= set(result)
    assert result["format"] == "anthropic"
    assert [c["kind"] for c in result["calls"]] == ["server_tool_use", "function"]


def test_errored_calls_still_exit_zero_and_summary_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(CORPUS / "anthropic__tool-use-truncated-max-tokens.sse")], capsys)
    assert code == 0
    assert "make_file" in out and "errored" in out and "truncated" in out and "finish: max_tokens" in out


def test_summary_marks_provider_run_calls(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(CORPUS / "anthropic__thinking-then-mcp-tool-use.sse")], capsys)
    assert code == 0 and "run by the provider" in out and "reasoning:" in out


def test_explicit_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(CORPUS / "cohere__v2-tool-call-start-delta-end-parallel.jsonl"), "--format", "cohere", "--json"], capsys)
    assert code == 0 and [c["name"] for c in json.loads(out)["calls"]] == ["weather", "cityAttractions"]


def test_unreadable_file_and_unknown_format_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(tmp_path / "missing.sse")], capsys)
    assert (code, out) == (2, "") and "cannot read" in err
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    code, out, err = run([str(junk), "--json"], capsys)
    assert (code, out) == (2, "") and "no payload" in err and "--format" in err


def test_bad_format_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        merge_cli.main(["x", "--format", "nope"])
    assert exc.value.code == 2


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    body = (CORPUS / "mistral__no-index-no-type-finish-same-chunk.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(body)))
    code, out, _ = run(["-", "--json"], capsys)
    assert code == 0 and json.loads(out)["calls"][0]["id"] == "gSIMJiOkT"


def test_module_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.merge_cli", str(CORPUS / "gemini__2.0-flash-functioncall-whole-finish-stop.sse"), "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["calls"][0]["arguments"] == {"country": "France"}
