"""After an undo or redo the model is told (issue 19): the session's next model request
carries a note after the user's text; ``rewind`` also drops the turn from the
conversation. The real server over stdio, the replay model's request log, real git."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import client, git, prompt, write_script  # noqa: F401 - client: the module's server fixture
from undo_helpers import redo, undo
from opening import user_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

AUTO = {name: "auto" for name in ("create_file", "edit_file", "multi_edit", "delete_file", "rename_file",
                                   "git_add", "git_restore", "git_commit", "git_branch")}


async def logged_session(client: Any, root: Path, script: Path, log: Path) -> str:  # noqa: F811
    result = await client.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                         "settings": {"permissions": AUTO, "replayLog": str(log)}})
    return result["sessionId"]


def requests(log: Path) -> list[list[dict[str, Any]]]:
    """The messages of every model request, in order."""
    return [json.loads(line)["messages"] for line in log.read_text().splitlines()]


def pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Every tool call must be followed by its result, in call order, and every result follow its call."""
    out, pending = [], []
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if not pending or pending.pop(0) != m["tool_call_id"]:
                out.append(f"{i}: result {m['tool_call_id']} without its call")
            continue
        if pending:
            out.append(f"{i}: calls {pending} without results")
            pending = []
        pending += [c["id"] for c in m.get("tool_calls") or []]
    return out + ([f"end: calls {pending} without results"] if pending else [])


async def test_the_next_request_says_what_the_undo_and_the_redo_put_back(client, repo, tmp_path):  # noqa: F811
    (repo / "a.py").write_text("x = 1\n")
    (repo / "b.py").write_text("y = 1\n")
    (repo / "my notes.txt").write_text("n\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}},
                        {"name": "edit_file", "arguments": {"path": "b.py", "old_string": "y = 1", "new_string": "y = 2"}},
                        {"name": "delete_file", "arguments": {"path": "my notes.txt"}}]},
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "turn", "paths": ["a.py", "b.py"]}}]},
        {"text": "done"},
        {"text": "second"},
        {"text": "third"},
        {"text": "fourth"},
    ])
    sid = await logged_session(client, repo, script, log)
    assert (await prompt(client, sid, "change them"))["stopReason"] == "end_turn"
    sha = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    done = await undo(client, sid)
    assert done["status"] == "undone", done
    await prompt(client, sid, "what now?")
    note = (f"what now?\n\n[Turn t1 was undone by the user: a.py, b.py, \"my notes.txt\" are back to their state "
            f"before it; commit {sha} was removed; the index entries of a.py, b.py are back to their state before it. "
            "Read files again before editing.]")
    assert requests(log)[-1][-1] == {"role": "user", "content": note}
    # the note travels once
    await prompt(client, sid, "and now?")
    assert requests(log)[-1][-1] == {"role": "user", "content": "and now?"}

    back = await redo(client, sid)
    assert back["status"] == "redone", back
    await prompt(client, sid, "again?")
    assert requests(log)[-1][-1] == {"role": "user", "content": (
        f"again?\n\n[Turn t1 was redone by the user: a.py, b.py, \"my notes.txt\" are again as the turn left them; "
        f"the index entries of a.py, b.py are again as the turn left them; commit {sha} is back on main. "
        "Read files again before editing.]")}


async def test_a_partial_undo_names_what_stayed_and_a_blocked_one_says_nothing(client, repo, tmp_path):  # noqa: F811
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "a", "new_string": "A"}},
                        {"name": "edit_file", "arguments": {"path": "b.txt", "old_string": "b", "new_string": "B"}}]},
        {"text": "done"},
        {"text": "second"},
        {"text": "third"},
    ])
    sid = await logged_session(client, repo, script, log)
    await prompt(client, sid, "go")
    (repo / "b.txt").write_text("B\nmine\n")
    assert (await undo(client, sid))["status"] == "blocked"
    await prompt(client, sid, "next")  # nothing changed: nothing to tell (the watcher may report b.txt)
    assert "was undone" not in requests(log)[-1][-1]["content"]
    assert (await undo(client, sid, partial=True))["status"] == "partial"
    await prompt(client, sid, "then")
    assert requests(log)[-1][-1]["content"].startswith(
        "then\n\n[Turn t1 was partly undone by the user: a.txt is back to its state before it; "
        "b.txt was not undone (changed since, or not recorded). Read files again before editing.]")


async def test_rewind_drops_the_turn_from_the_conversation_and_keeps_pairs_valid(client, repo, tmp_path):  # noqa: F811
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "x.txt", "content": "x\n"}, "id": "c1"},
                        {"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "bye"},
                         "id": "e1"}]},
        {"text": "made x.txt"},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r2"}]},
        {"text": "it says bye"},
        {"text": "ok"},
    ])
    sid = await logged_session(client, repo, script, log)
    await prompt(client, sid, "make x")
    await prompt(client, sid, "read hello")
    assert (repo / "x.txt").exists()
    done = await undo(client, sid, turnId="t1", rewind=True)
    assert done["status"] == "undone" and done["message"].endswith(
        "The turn was removed from the conversation the model sees."), done
    assert not (repo / "x.txt").exists() and (repo / "hello.txt").read_text() == "hello\n"
    await prompt(client, sid, "third")
    messages = requests(log)[-1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert messages[1] == {"role": "user", "content": "read hello"}
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["r2"] and messages[3]["tool_call_id"] == "r2"
    assert pairing_problems(messages) == []
    text = json.dumps(messages)
    assert "make x" not in text and "made x.txt" not in text and "Let me look." not in text
    assert not any(i in text for i in ('"r1"', '"c1"', '"e1"'))
    # the message that carried the overview is gone: this one carries a fresh one
    assert messages[-1]["content"].startswith("[Workspace overview") and user_text(messages[-1]["content"]) == (
        "third\n\n[Turn t1 was undone by the user and removed from this conversation: hello.txt, x.txt are back to "
        "their state before it. Read files again before editing.]")
    snap = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert "make x" not in json.dumps(snap["messages"])


async def test_a_blocked_undo_rewinds_nothing(client, repo, tmp_path):  # noqa: F811
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "x.txt", "content": "x\n"}, "id": "c1"}]},
        {"text": "made"},
        {"text": "ok"},
    ])
    sid = await logged_session(client, repo, script, log)
    await prompt(client, sid, "make x")
    (repo / "x.txt").write_text("mine\n")
    blocked = await undo(client, sid, rewind=True)
    assert blocked["status"] == "blocked" and "removed from the conversation" not in blocked["message"], blocked
    await prompt(client, sid, "next")
    roles = [m["role"] for m in requests(log)[-1]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert user_text(requests(log)[-1][1]["content"]) == "make x"


async def test_names_in_the_note_are_in_display_form_once(client, repo, tmp_path):  # noqa: F811
    """A name git quotes (U+202E, a tab) is given in that form, not quoted a second time
    (the note read "\\"inv\\\\342\\\\200\\\\256fdp.exe\\"", a name no file has)."""
    bidi, tab = "inv\u202efdp.exe", "tab\tname.txt"
    (repo / bidi).write_text("one\n")
    (repo / tab).write_text("t\n")
    (repo / 'say "hi".txt').write_text("q\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": bidi, "old_string": "one", "new_string": "two"}},
                        {"name": "delete_file", "arguments": {"path": tab}},
                        {"name": "delete_file", "arguments": {"path": 'say "hi".txt'}}]},
        {"text": "done"},
        {"text": "next"},
    ])
    sid = await logged_session(client, repo, script, log)
    await prompt(client, sid, "go")
    assert (await undo(client, sid))["status"] == "undone"
    await prompt(client, sid, "then")
    assert requests(log)[-1][-1]["content"] == (
        'then\n\n[Turn t1 was undone by the user: "inv\\342\\200\\256fdp.exe", "say \\"hi\\".txt", "tab\\tname.txt" '
        "are back to their state before it. Read files again before editing.]")


async def test_rewinding_the_turn_that_carried_a_note_tells_it_again(client, repo, tmp_path):  # noqa: F811
    """t1 is undone; t2's user message carries that note; t2 is then undone with rewind,
    which drops that message: the next request must still say t1 was undone (t1 is
    still in the conversation, saying x.txt was created), then what the rewind did."""
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "x.txt", "content": "x\n"}, "id": "c1"}]},
        {"text": "made x"},
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "y.txt", "content": "y\n"}, "id": "c2"}]},
        {"text": "made y"},
        {"text": "three"},
        {"text": "four"},
    ])
    sid = await logged_session(client, repo, script, log)
    await prompt(client, sid, "make x")
    assert (await undo(client, sid))["status"] == "undone"
    await prompt(client, sid, "make y")
    t1_note = "\n\n[Turn t1 was undone by the user: x.txt is back to its state before it. Read files again before editing.]"
    assert requests(log)[-1][1 + 4]["content"] == "make y" + t1_note  # after t1's four messages
    assert (await undo(client, sid, rewind=True))["status"] == "undone"
    await prompt(client, sid, "next")
    messages = requests(log)[-1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert user_text(messages[1]["content"]) == "make x" and pairing_problems(messages) == []
    assert messages[-1]["content"] == "next" + t1_note + (
        "\n\n[Turn t2 was undone by the user and removed from this conversation: y.txt is back to its state "
        "before it. Read files again before editing.]")
    await prompt(client, sid, "again")  # told once
    assert requests(log)[-1][-1]["content"] == "again"


async def test_rewind_of_a_turn_with_parallel_rejected_denied_and_failed_calls(client, repo, tmp_path):  # noqa: F811
    """t1 answers with four calls at once: one runs, one is rejected, one denied by the
    policy, one fails; t2 reads. Rewinding t1 leaves t2's call with exactly its result."""
    log = tmp_path / "requests.jsonl"
    (repo / "a.txt").write_text("a\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"text": "first", "tool_calls": [
            {"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "a", "new_string": "A"}, "id": "p1"},
            {"name": "create_file", "arguments": {"path": "n.txt", "content": "n\n"}, "id": "p2"},
            {"name": "delete_file", "arguments": {"path": "hello.txt"}, "id": "p3"},
            {"name": "read_file", "arguments": {"path": "nope.txt"}, "id": "p4"}]},
        {"text": "t1 done"},
        {"text": "t2", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "q1"}]},
        {"text": "t2 done"},
        {"text": "t3"},
    ])
    settings = {"permissions": {"edit_file": "auto", "create_file": "ask", "delete_file": "deny"}, "replayLog": str(log)}
    sid = (await client.call("toolwire/session/new", {"cwd": str(repo), "model": f"replay:{script}",
                                                      "settings": settings}))["sessionId"]
    client.answers[sid] = [{"optionId": "reject", "reason": "no"}]
    await prompt(client, sid, "one")
    assert {cid: s[-1] for cid, s in client.statuses(sid).items()} == {
        "p1": "done", "p2": "canceled", "p3": "canceled", "p4": "errored"}
    await prompt(client, sid, "two")
    done = await undo(client, sid, turnId="t1", rewind=True)
    assert done["status"] == "undone" and done["message"].endswith("the model sees."), done
    await prompt(client, sid, "three")
    messages = requests(log)[-1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["q1"] and messages[3] == {
        "role": "tool", "tool_call_id": "q1", "content": "A\n"}
    assert pairing_problems(messages) == [] and not any(p in json.dumps(messages) for p in ('"p1"', '"p2"', '"p3"', '"p4"'))
