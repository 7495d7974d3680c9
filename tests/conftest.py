"""Shared fixtures: a real ``toolwire serve`` over stdio (pytest-lsp), temporary git
workspaces, replay scripts. Area-specific fixtures live in the modules that use them."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from toolwire.lsp.messages import RequestPermissionParams

DATA = Path(__file__).parent / "data"

# Every illegal status transition, in this process or in any server it starts, is
# appended here; the autouse fixture below fails the test that caused one.
_ILLEGAL = Path(tempfile.mkdtemp(prefix="toolwire-tests-")) / "illegal-transitions.log"
os.environ["TOOLWIRE_ILLEGAL_TRANSITIONS_LOG"] = str(_ILLEGAL)
# Checkpoints (undo) of every server the tests start go here, never to the user's state folder.
os.environ["TOOLWIRE_STATE_DIR"] = str(_ILLEGAL.parent / "state")


@pytest.fixture(autouse=True)
def no_illegal_transitions():
    """Fail any test during which an illegal status transition happened anywhere."""
    before = _ILLEGAL.read_text() if _ILLEGAL.exists() else ""
    yield
    after = _ILLEGAL.read_text() if _ILLEGAL.exists() else ""
    assert after == before, f"illegal status transitions: {after[len(before):]}"


class ToolwireTestClient(LanguageClient):
    """A pytest-lsp client that keeps custom payloads as plain dicts, records every
    ``toolwire/session/update`` per session, and answers permission requests per
    session with a scripted answer.

    ``updates`` holds each update as a client sees it after applying it: a
    ``tool_call`` update's ``toolCall`` is the call's full state rebuilt by
    :class:`toolwire.headless.mirror.CallMirror` from the update form (argument pieces,
    fields only when changed). ``raw_updates`` holds the params exactly as sent.
    """

    def __init__(self) -> None:
        from toolwire.rpc.protocol import make_converter

        super().__init__(converter_factory=make_converter)
        self.updates: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.raw_updates: dict[str, list[dict[str, Any]]] = defaultdict(list)  # whole params objects, as sent
        self.mirrors: dict[str, Any] = {}
        self.permission_requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.answers: dict[str, list[dict[str, Any]] | dict[str, Any]] = {}
        self.waiters: list[tuple[Any, asyncio.Event]] = []
        self.before_permission: Any = None  # called with the params before answering
        self.permission_hold: asyncio.Event | None = None  # when set, answers wait for it
        self.permission_asked = asyncio.Event()  # set whenever a permission request arrives

    def on_update(self, params: dict[str, Any]) -> None:
        from toolwire.headless.mirror import CallMirror

        sid = params["sessionId"]
        update = params["update"]
        if update.get("sessionUpdate") == "tool_call":
            mirror = self.mirrors.setdefault(sid, CallMirror())
            full = mirror.apply(update["toolCall"], params.get("streamId"))
            assert not mirror.gaps, f"a piece of argument text was missed: {update}"
            if full is not None:
                update = {**update, "toolCall": full}
        self.updates[sid].append(update)
        self.raw_updates[sid].append(params)
        seen = {**params, "update": update}  # waiters see the update as applied
        for predicate, event in list(self.waiters):
            if predicate(seen):
                event.set()

    async def wait_for(self, predicate, timeout: float = 20.0) -> None:
        """Wait until an update params object (its update as applied) satisfies ``predicate``."""
        event = asyncio.Event()
        self.waiters.append((predicate, event))
        try:
            await asyncio.wait_for(event.wait(), timeout)
        finally:
            self.waiters.remove((predicate, event))

    def on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        # Every request fits the wire model the client's types are generated from (the subject by its kind).
        RequestPermissionParams.model_validate(params)
        sid = params["sessionId"]
        self.permission_requests[sid].append(params)
        if self.before_permission is not None:
            self.before_permission(params)
        answer = self.answers.get(sid, {"optionId": "allow_once"})
        if isinstance(answer, list):
            answer = answer.pop(0) if answer else {"optionId": "allow_once"}
        if answer.get("outcome") == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", **answer}}

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        return await self.protocol.send_request_async(method, params)

    def tool_calls(self, session_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every tool_call snapshot of the session, grouped by call id, in arrival order."""
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for update in self.updates[session_id]:
            if update["sessionUpdate"] == "tool_call":
                call = update["toolCall"]
                out[call["toolCallId"] or f"#{call['index']}"].append(call)
        return out

    def statuses(self, session_id: str) -> dict[str, list[str]]:
        """Per call id, the distinct statuses in arrival order."""
        out: dict[str, list[str]] = {}
        for cid, snaps in self.tool_calls(session_id).items():
            seq: list[str] = []
            for snap in snaps:
                if not seq or seq[-1] != snap["status"]:
                    seq.append(snap["status"])
            out[cid] = seq
        return out


def make_client(cls: type[ToolwireTestClient] = ToolwireTestClient) -> ToolwireTestClient:
    """A test client of class ``cls`` with the toolwire handlers registered."""
    client = cls()
    register_lsp_features(client)
    client.feature("toolwire/session/update")(lambda params: client.on_update(params))
    @client.feature("toolwire/session/requestPermission")
    async def answer(params):
        client.permission_asked.set()
        if client.permission_hold is not None:
            await client.permission_hold.wait()
        return client.on_permission(params)

    return client


def server_fixture(name: str, factory: Any, capabilities: types.ClientCapabilities | None = None) -> Any:
    """A module-scoped fixture ``name``: a real ``toolwire serve`` over stdio, driven by a
    client from ``factory``, initialized with ``capabilities`` and shut down after the module."""

    @pytest_lsp.fixture(
        name=name,
        scope="module",
        config=ClientServerConfig(
            server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
            client_factory=factory,
        ),
    )
    async def fixture(lsp_client: ToolwireTestClient):
        await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities or types.ClientCapabilities()))
        yield
        await lsp_client.shutdown_session()

    return fixture


client = server_fixture("client", make_client)


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (identity set, no prompts) and return stdout."""
    return subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one committed file, ``hello.txt``."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "hello.txt").write_text("hello\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write each file (a path relative to ``root``: its text), making its folders."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def write_script(path: Path, lines: list[dict[str, Any]]) -> Path:
    """Write a replay script (one JSON object per line) and return its path."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


async def new_session(client: ToolwireTestClient, root: Path, script: Path, **settings: Any) -> str:
    params: dict[str, Any] = {"cwd": str(root), "model": f"replay:{script}"}
    if settings:
        params["settings"] = settings
    result = await client.call("toolwire/session/new", params)
    return result["sessionId"]


TERMINAL = {"done", "errored", "canceled"}


async def prompt(client: ToolwireTestClient, session_id: str, text: str = "go") -> dict[str, Any]:
    """Run one turn; every tool call of the session must be terminal when it answers."""
    result = await client.call(
        "toolwire/session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )
    finals = {cid: snaps[-1]["status"] for cid, snaps in client.tool_calls(session_id).items()}
    assert set(finals.values()) <= TERMINAL, f"calls left open after the turn: {finals}"
    return result
