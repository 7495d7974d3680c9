"""``toolwire demo``: the main job end to end on a bundled sample project.

Copies ``project/`` into a fresh temporary git repository, runs ``script.jsonl``
(read a file, edit it, show the diff, commit) through a real ``toolwire serve``
with every permission request approved, then prints the commit and its diff.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
PROMPT = "Fix the greeting in greet.py (it should read 'Hello, NAME!'), show me the diff, and commit it."


def _git(repo: Path, *args: str) -> str:
    env_args = ["-c", "user.name=Toolwire Demo", "-c", "user.email=demo@toolwire.invalid", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", *env_args, *args], cwd=repo, check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    return done.stdout


def run_demo(keep: bool = False) -> int:
    """Run the demo; returns the exit code of the headless run (0 on success)."""
    import asyncio

    from toolwire.headless.client import RunOptions, run_turn

    tmp = Path(tempfile.mkdtemp(prefix="toolwire-demo-"))
    repo = tmp / "greet"
    try:
        shutil.copytree(HERE / "project", repo)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "config", "user.name", "Toolwire Demo")
        _git(repo, "config", "user.email", "demo@toolwire.invalid")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "Initial commit")
        print(f"demo workspace: {repo}\nprompt: {PROMPT}\n")
        options = RunOptions(workspace=repo, model=f"replay:{HERE / 'script.jsonl'}", prompt=PROMPT, approve="yes",
                             server_args=["--log-level", "WARNING"])
        code = asyncio.run(run_turn(options))
        print("\n=== git log ===")
        print(_git(repo, "log", "--oneline", "-n", "3"), end="")
        print("\n=== last commit ===")
        print(_git(repo, "show", "--stat", "--patch", "--format=commit %H%nAuthor: %an%n%n    %s%n", "HEAD"), end="")
        head = _git(repo, "log", "-1", "--format=%s").strip()
        if code == 0 and head == "Initial commit":
            print("demo: the edit was not committed", file=sys.stderr)
            return 1
        return code
    finally:
        if keep:
            print(f"\n(kept {repo})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
