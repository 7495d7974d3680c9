"""``toolwire run`` tells people what happened (issue 11 §4): failed turns, settings,
the approval prompt, usage errors. Real subprocesses, a real server, a local endpoint."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_script
from endpoint import FakeEndpoint, Reply, Stall, Truncated, chat_stream

TOOLWIRE = [sys.executable, "-m", "toolwire"]
ERROR_BODY = b'{"error": {"message": "boom", "type": "server_error"}}'


def run(*args: str, timeout: float = 90, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*TOOLWIRE, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


def run_openai(repo: Path, base_url: str, *flags: str, **settings) -> subprocess.CompletedProcess:
    settings = {"baseUrl": base_url, **settings}
    return run("run", "--workspace", str(repo), "--model", "openai:test-model", "--settings", json.dumps(settings),
               *flags, "hello")


@pytest.mark.parametrize("json_mode", [False, True], ids=["human", "json"])
def test_a_401_exits_3_and_says_which_key_to_set(repo, json_mode):
    with FakeEndpoint([Reply(401, b'{"error": {"message": "Incorrect API key provided"}}')]) as endpoint:
        done = run_openai(repo, endpoint.base_url, *(["--json"] if json_mode else []))
    assert done.returncode == 3, done.stderr
    assert "HTTP 401" in done.stderr and "TOOLWIRE_API_KEY" in done.stderr and "OPENAI_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr
    if json_mode:
        final = json.loads(done.stdout.splitlines()[-1])
        assert final["stopReason"] == "error" and "401" in final["message"]


def test_a_500_is_retried_per_the_setting_then_reported(repo):
    with FakeEndpoint([Reply(500, ERROR_BODY)] * 5) as endpoint:
        done = run_openai(repo, endpoint.base_url, modelRetries=1)
        assert len(endpoint.requests) == 2  # one try, one retry: the modelRetries setting
    assert done.returncode == 3
    assert "HTTP 500" in done.stderr and "after 1 retry" in done.stderr and "modelRetries" in done.stderr


def test_an_endpoint_that_is_not_listening_is_named(repo):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    done = run_openai(repo, f"http://127.0.0.1:{port}/v1", modelRetries=0)
    assert done.returncode == 3
    assert f"127.0.0.1:{port}" in done.stderr and "cannot reach" in done.stderr and "baseUrl" in done.stderr


def test_a_cut_stream_is_reported(repo):
    events = chat_stream({"text": "Hello there, this is a long answer"})[:2]
    with FakeEndpoint([Truncated(events)] * 3) as endpoint:
        done = run_openai(repo, endpoint.base_url, modelRetries=0)
    assert done.returncode == 3
    assert "the turn failed" in done.stderr and ("broke" in done.stderr or "cut" in done.stderr)


def test_a_stalled_stream_names_the_timeout_setting(repo):
    stall = Stall(chat_stream({"text": "Hello"})[:1])
    with FakeEndpoint([stall]) as endpoint:
        done = run_openai(repo, endpoint.base_url, modelRetries=0, readTimeout=1)
    assert done.returncode == 3
    assert "no data from the model endpoint" in done.stderr and "for 1 s" in done.stderr
    assert "readTimeout" in done.stderr


@pytest.mark.parametrize("settings, words", [
    ({"permisions": {"git_commit": "deny"}}, "unknown setting 'permisions' (did you mean 'permissions'?)"),
    ({"permissions": {"git_commit": "never"}}, "setting permissions.git_commit: Input should be 'auto', 'ask' or 'deny' (got 'never')"),
    ({"permissions": {"git_comit": "deny"}}, "unknown tool or group 'git_comit' (did you mean 'git_commit'?)"),
    ({"temperature": 9}, "setting temperature"),
    ({"readTimeout": 0}, "setting readTimeout"),
    # a baseUrl httpx cannot parse was an internal error at the first request; never echoed (secrets)
    ({"baseUrl": "http://user:s3cretpassword@127.0.0.1:notaport/v1"},
     "setting baseUrl: its port must be a number from 1 to 65535"),
    ({"baseUrl": "127.0.0.1:11434/v1?api-key=s3cretpassword"}, "setting baseUrl: must be an http:// or https:// URL"),
])
def test_invalid_settings_exit_2_and_nothing_runs(repo, tmp_path, settings, words):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "m", "paths": ["hello.txt"]}, "id": "g"}]}])
    (repo / "hello.txt").write_text("changed\n")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout
    done = run("run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes",
               "--settings", json.dumps(settings), "commit")
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "using the default" not in done.stderr and "s3cretpassword" not in done.stderr + done.stdout
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout == head


def test_session_new_refuses_invalid_settings(repo):
    """The same rules over the wire: InvalidParams naming the setting."""
    import asyncio

    from pygls.client import JsonRPCClient
    from pygls.exceptions import JsonRpcException

    from toolwire.rpc.protocol import make_converter

    async def go() -> tuple[int, str, list[str]]:
        client = JsonRPCClient(converter_factory=make_converter)
        shown: list[str] = []
        client.feature("window/showMessage")(lambda params: shown.append(params["message"]))
        await client.start_io(sys.executable, "-m", "toolwire", "serve", "--log-level", "ERROR")
        try:
            await client.protocol.send_request_async("initialize", {
                "capabilities": {}, "initializationOptions": {"model": "nope:x", "toolTimeout": -1}})
            try:
                await client.protocol.send_request_async(
                    "toolwire/session/new", {"cwd": str(repo), "settings": {"permissions": {"git_commit": "never"}}})
            except JsonRpcException as exc:
                return exc.code, exc.message, shown
            return 0, "", shown
        finally:
            client._server.kill()
            await client.stop()

    code, message, shown = asyncio.run(go())
    assert code == -32602
    assert message.startswith("toolwire/session/new: invalid params: settings: setting permissions.git_commit")
    # initialize reported the bad options (and the bad model) at once, through showMessage
    assert len(shown) == 1 and "setting toolTimeout" in shown[0] and "unknown model spec 'nope:x'" in shown[0]
    assert "using the default" not in shown[0]


def test_the_cli_prints_what_initialize_reports(repo, tmp_path):
    """The CLI's own checks stop bad --settings first; a bad model reported at initialize is printed too."""
    done = run("run", "--workspace", str(repo), "--model", "nope:x", "hi")
    assert done.returncode == 2 and "unknown model spec 'nope:x'" in done.stderr


def test_version_and_usage_errors(repo, tmp_path):
    from toolwire import __version__

    done = run("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"toolwire {__version__}"
    ask = run("run", "--workspace", str(repo), "--approve", "ask", "hi")
    assert ask.returncode == 2 and "--approve ask needs a terminal" in ask.stderr


# ------------------------------------------------------------ the approval prompt


class Terminal:
    """``toolwire run`` with a pseudo-terminal on stdin (so it asks), stderr read as it comes."""

    def __init__(self, repo: Path, script: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "go"],
            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        os.close(slave)
        self.err = b""

    def wait_for(self, text: str, timeout: float = 60, count: int = 1) -> str:
        """Read stderr until ``text`` appeared ``count`` times (select on the pipe: no sleeping)."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stderr.fileno()
        while self.err.count(text.encode()) < count:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never came: {self.err.decode()}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, f"stderr closed before {text!r}: {self.err.decode()}"
                self.err += chunk
        return self.err.decode()

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.master)


COMMIT = [{"tool_calls": [{"name": "git_commit", "arguments": {"message": "fix it; don't $(touch x)", "paths": ["hello.txt"]},
                           "id": "g1"}]}, {"text": "Done."}]


def test_ctrl_c_at_the_prompt_exits_130_at_once_and_nothing_runs(repo, tmp_path):
    (repo / "hello.txt").write_text("changed\n")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout
    term = Terminal(repo, write_script(tmp_path / "s.jsonl", COMMIT))
    try:
        term.wait_for("[y]es / [a]lways / [N]o (default: no): ")
        os.killpg(term.proc.pid, signal.SIGINT)
        assert term.proc.wait(timeout=10) == 130
        _, rest = term.proc.communicate()
        assert b"Traceback" not in term.err + rest and b"has no attribute" not in term.err + rest
    finally:
        term.close()
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout == head


def test_the_prompt_shows_the_users_git_command_and_asks_again_on_a_bad_answer(repo, tmp_path):
    (repo / "hello.txt").write_text("changed\n")
    term = Terminal(repo, write_script(tmp_path / "s.jsonl", COMMIT))
    try:
        text = term.wait_for("(default: no): ")
        # the command git will run, quoted for a shell, without the hardening flags
        assert "\ngit commit -m 'fix it; don'\\''t $(touch x)' -- hello.txt\nhello.txt +1 -1\n1 file, +1 -1\n" in text, text
        assert "core.pager" not in text and "--no-pager" not in text
        term.type("maybe\n")
        term.wait_for("Please answer y (allow once), a (allow always) or n (reject); not 'maybe'.\n"
                      "\nAllow git_commit? \ngit commit")  # asked again
        term.wait_for("[y]es / [a]lways / [N]o (default: no): ", count=2)
        term.type("n\n")
        out, rest = term.proc.communicate(timeout=60)
        assert term.proc.returncode == 0
        assert b"[approval] git_commit g1 rejected" in out and b"[canceled] git_commit g1" in out
    finally:
        term.close()


# ------------------------------------------------------------------ toolwire merge

OPENAI_STREAM = Path(__file__).parent / "data" / "corpus" / "openai__chat-single-call-nyc.sse"


@pytest.mark.parametrize("flags, words", [
    (["--format", "anthropic"], "the payloads are openai-chat, not anthropic (--format anthropic)"),
    (["--format", "gemini", "--json"], "the payloads are openai-chat, not gemini"),
    (["--details"], "--details only applies with --json"),
])
def test_merge_refuses_a_format_that_contradicts_the_stream_and_details_without_json(flags, words):
    done = run("merge", str(OPENAI_STREAM), *flags)
    assert done.returncode == 2 and words in done.stderr and done.stdout == ""


def test_merge_with_the_right_format_or_an_alias_still_works():
    for flags in ([], ["--format", "openai-chat"], ["--format", "openai"]):
        done = run("merge", str(OPENAI_STREAM), "--json", *flags)
        assert done.returncode == 0 and len(json.loads(done.stdout)["calls"]) == 1


@pytest.mark.parametrize("body, words", [
    (b"", "the file is empty"),
    (b"\n \n", "the file is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "the file is binary"),
    ("données".encode("latin-1") * 20, "not UTF-8 text"),
])
def test_merge_says_what_is_wrong_with_an_empty_or_binary_file(tmp_path, body, words):
    path = tmp_path / "stream.bin"
    path.write_bytes(body)
    done = run("merge", str(path))
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


def test_merge_with_a_format_no_payload_matches_is_refused(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"hello": 1}\n{"world": 2}\n')
    done = run("merge", str(path), "--format", "anthropic")
    assert done.returncode == 2 and "no payload is a anthropic event" in done.stderr


def test_a_question_withdrawn_because_the_stream_broke_ends_the_prompt_cleanly(tmp_path):
    """The server withdraws the open question ($/cancelRequest): no traceback, exit 3 (stopReason error)."""
    from test_e2e_stream_break import ANTHROPIC_EDIT, sse

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (tmp_path / "edit.sse").write_text(sse(ANTHROPIC_EDIT))
    script = write_script(tmp_path / "s.jsonl", [{"stream": "edit.sse", "cut_after": 7, "delay": 0.05}])
    term = Terminal(root, script)
    try:
        term.wait_for("(the server withdrew the question)")
        assert term.proc.wait(timeout=60) == 3
        out, rest = term.proc.communicate()
        err = (term.err + rest).decode()
        assert "Traceback" not in err and "has no attribute" not in err
        assert "the turn failed: the connection dropped mid-stream" in err and "dropped mid-response: try again" in err
        assert b"[errored] edit_file toolu_edit a.txt" in out
    finally:
        term.close()
    assert (root / "a.txt").read_text() == "one\n"
