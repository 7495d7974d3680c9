"""Seeded random turns through the replay model, then undo: every file's exact bytes and
mode, the folders, HEAD, branches and the index come back; redo gives the turn's result again."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import client, git  # noqa: F401  (client: the module's server)
from undo_helpers import calls_script, redo, run_turn, state, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "ζeta", "eta", "theta"]


def seed_repo(root: Path, rng: random.Random) -> dict[str, str]:
    """A repository with text (LF, CRLF with BOM), binary, executable and nested files,
    some committed, some modified, one staged; returns the text files' contents (no BOM)."""
    texts: dict[str, str] = {}
    for i in range(6):
        name = rng.choice(["", "src/", "src/deep/", "docs/"]) + f"f{i}.txt"
        lines = [f"{rng.choice(WORDS)} line {j} of f{i}" for j in range(rng.randint(2, 6))]
        crlf = i % 3 == 0
        text = ("\r\n" if crlf else "\n").join(lines) + ("\r\n" if crlf else "\n")
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((b"\xef\xbb\xbf" if crlf else b"") + text.encode())
        if i == 2:
            os.chmod(path, 0o755)
        texts[name] = text
    (root / "blob.bin").write_bytes(bytes(rng.randrange(256) for _ in range(300)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "seed")
    name = sorted(texts)[0]
    texts[name] = texts[name].replace("line 0", "line zero")
    (root / name).write_bytes(((root / name).read_bytes()).replace(b"line 0", b"line zero"))  # unstaged
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    texts["staged.txt"] = "staged\n"
    return texts


def random_calls(rng: random.Random, texts: dict[str, str], count: int) -> list[tuple[str, dict[str, Any]]]:
    """Plausible calls a model could make, following a simple model of the files (some may fail)."""
    files = dict(texts)
    others = {"blob.bin"}
    calls: list[tuple[str, dict[str, Any]]] = []
    made = 0
    while len(calls) < count:
        kind = rng.choice(["create", "edit", "edit", "multi", "delete", "rename", "overwrite", "add", "unstage",
                           "restore", "commit", "branch"])
        names = sorted(files)
        if kind == "create":
            made += 1
            path = rng.choice(["", "src/", "new/", "new/sub/"]) + f"made{made}.txt"
            content = "\n".join(rng.sample(WORDS, 3)) + "\n"
            calls.append(("create_file", {"path": path, "content": content}))
            files[path] = content
        elif kind in ("edit", "multi", "overwrite") and names:
            path = rng.choice(names)
            lines = [line for line in files[path].replace("\r\n", "\n").split("\n") if line and files[path].count(line) == 1]
            if kind == "overwrite":
                content = f"rewritten by the turn {rng.random()}\n"
                calls.append(("create_file", {"path": path, "content": content, "overwrite": True}))
                files[path] = content
            elif kind == "edit" and lines:
                old = rng.choice(lines)
                calls.append(("edit_file", {"path": path, "old_string": old, "new_string": old.upper() + " (edited)"}))
                files[path] = files[path].replace(old, old.upper() + " (edited)")
            elif len(lines) >= 2:
                a, b = rng.sample(lines, 2)
                calls.append(("multi_edit", {"path": path, "edits": [
                    {"old_string": a, "new_string": f"{a} one"}, {"old_string": b, "new_string": f"{b} two"}]}))
                files[path] = files[path].replace(a, f"{a} one").replace(b, f"{b} two")
        elif kind == "delete" and names:
            path = rng.choice(names + sorted(others))
            calls.append(("delete_file", {"path": path}))
            files.pop(path, None)
            others.discard(path)
        elif kind == "rename" and names:
            path = rng.choice(names)
            made += 1
            target = rng.choice(["", "moved/", "src/"]) + f"renamed{made}.txt"
            calls.append(("rename_file", {"path": path, "new_path": target}))
            files[target] = files.pop(path)
        elif kind == "add":
            calls.append(("git_add", {"paths": rng.choice([["."], rng.sample(names, min(2, len(names)))])}))
        elif kind == "unstage" and ("git_restore", {"paths": ["staged.txt"], "staged": True}) not in calls:
            calls.append(("git_restore", {"paths": ["staged.txt"], "staged": True}))
        elif kind == "restore" and names:
            calls.append(("git_restore", {"paths": [rng.choice(names)]}))
        elif kind == "commit":
            calls.append(("git_commit", {"message": f"turn commit {len(calls)}"}
                          | ({"paths": rng.sample(names, min(2, len(names)))} if rng.random() < 0.5 and names else {})))
        elif kind == "branch":
            made += 1
            calls.append(("git_branch", {"action": "create", "name": f"topic-{made}"}))
    return calls


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("UNDO_SEEDS", "1 2 3 4 5").split()])
async def test_random_turn_then_undo_restores_everything_exactly(client, tmp_path, seed):
    rng = random.Random(seed)
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    texts = seed_repo(root, rng)
    before = state(root)
    calls = random_calls(rng, texts, 14)
    script = calls_script(tmp_path / "s.jsonl", calls, per_response=rng.randint(1, 3))
    sid, result = await run_turn(client, root, script)
    finals = [snaps[-1]["status"] for snaps in client.tool_calls(sid).values()]
    assert finals.count("done") >= len(calls) // 2, (calls, finals)  # the turn really did things
    after = state(root)
    assert after != before

    done = await undo(client, sid)
    assert done["status"] == "undone", (seed, done)
    now = state(root)
    assert {k: v for k, v in now["tree"].items() if before["tree"].get(k) != v} == {}, (calls, done)
    assert now == before

    back = await redo(client, sid)
    assert back["status"] == "redone", (seed, back)
    assert state(root) == after

    assert (await undo(client, sid))["status"] == "undone"
    assert state(root) == before
    assert (await undo(client, sid, turnId="t1"))["status"] == "nothing_to_do"
