"""The look-around turn of issue 21's "Done when", shared by the front-end tests.

One replayed turn (``tests/data/look_around/script.jsonl``) in one workspace
(``workspace.json``): list the workspace folder, list ``**/*.py``, search ``TODO`` (a
recorded OpenAI stream: an open buffer's unsaved line is found, the ignored ``build/`` is
not searched, ``.env`` is named as not searched), search it again with ``ignored: true``,
read ``.env`` (kept from the model: asked about, naming the file), read ``sub/util.py`` (the
nested ``sub/AGENTS.md`` comes with it), edit it, answer. The LSP test
(test_e2e_look_around.py), the ACP test (test_acp_look_around.py), the endpoint test
(test_look_around_endpoint.py), the toolwire run test (test_cli_look_around.py) and the
panel test (client-vscode/test/panel-look-around.test.ts) play it and check what each
front-end shows; what the model reads where the editor's buffers are searched is pinned in
workspace.json (``model_reads``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "look_around"
SCRIPT = DATA / "script.jsonl"
WORKSPACE = json.loads((DATA / "workspace.json").read_text(encoding="utf-8"))

#: The call id the recorded stream (search-todo.sse) carries.
RECORDED_SEARCH = "call_4XzlGBLtUe9dy3GVNV4jhq7h"
#: Call ids in the order the script makes the calls.
CALLS = ["list", "glob", RECORDED_SEARCH, "ignored", "secret", "read", "edit"]
TOOLS = {"list": "list_files", "glob": "list_files", RECORDED_SEARCH: "search_files",
         "ignored": "search_files", "secret": "read_file", "read": "read_file", "edit": "edit_file"}
#: The secret in .env: it must never reach a model request, an update or a result.
SECRET = "sk-look-around-0000"
ROOT_RULE = WORKSPACE["committed"]["AGENTS.md"].rstrip("\n")
SUB_RULE = WORKSPACE["committed"]["sub/AGENTS.md"].rstrip("\n")
MARKUP_NAME = "<img src=x onerror=window.__pwned=2>.md"
UNSAVED = WORKSPACE["unsaved"]["src/greet.py"]

#: What the model reads for each call that runs (workspace.json's model_reads).
READS = WORKSPACE["model_reads"]
LISTED, GLOBBED, FOUND, FOUND_IGNORED = READS["list"], READS["glob"], READS[RECORDED_SEARCH], READS["ignored"]
NOT_SEARCHED = "not searched (modelExclude): .env — read_file asks the user"
READ_UTIL = READS["read"]
SUB_BLOCK = f"Instructions from sub/AGENTS.md (apply to files under sub/):\n{SUB_RULE}"
FINAL_TEXT = "Done: shout() now ends with an exclamation mark. The TODO in src/greet.py is still open."


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=root, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout


def make_workspace(root: Path) -> Path:
    """The workspace of workspace.json in ``root`` (created): a git repository with the
    committed files committed, the untracked ones written; the unsaved buffer is the
    front-end test's to open."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for group in ("committed", "untracked"):
        for rel, text in WORKSPACE[group].items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        if group == "committed":
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "the look-around workspace")
    return root


def tool_messages(body: dict[str, Any]) -> dict[str, str]:
    """The tool messages of a Chat Completions request body, by call id."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
