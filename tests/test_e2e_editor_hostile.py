"""The editor's intelligence against a hostile or sloppy client over stdio: URIs Python cannot turn into a path (protocol.md "The editor's intelligence")."""

from __future__ import annotations

import pytest

from test_e2e_editor_intel import full, run_one, workspace_files  # noqa: F401  (fixtures)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def loc(uri: str, line: int = 0, character: int = 0) -> dict:
    return {"uri": uri, "range": {"start": {"line": line, "character": character},
                                  "end": {"line": line, "character": character}}}


async def test_a_uri_holding_a_nul_names_no_local_file(full, repo, tmp_path):
    workspace_files(repo)
    uri = (repo / "src").as_uri() + "/a%00b.ts"
    full.answers["diagnostics"] = lambda params: {"items": [
        {"uri": uri, "diagnostics": [{"range": loc(uri)["range"], "severity": 1, "message": "bad"}]}]}
    final = await run_one(full, repo, tmp_path, "get_diagnostics", {})
    assert final["status"] == "done", final
    assert final["result"]["content"].splitlines()[-1] == f"outside the workspace: {uri}:1:1: error: bad"


async def test_a_location_in_a_fifo_is_named_without_reading_it(full, repo, tmp_path):
    """A fifo would block the server on its read (and /dev/zero never end): only regular
    files are read for a location's line; the place is still named."""
    import os

    workspace_files(repo)
    os.mkfifo(repo / "src" / "pipe.ts")
    pipe_uri = (repo / "src" / "pipe.ts").as_uri()
    full.answers["definition"] = lambda params: {"locations": [loc(pipe_uri, 0, 0), loc("file:///dev/zero", 0, 0)]}
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "src/app.ts", "line": 1, "symbol": "greet", "find": "definition"})
    assert final["status"] == "done", final
    places = final["result"]["data"]["locations"]
    assert [p["path"] for p in places][0] == "src/pipe.ts", places
    assert all(not p.get("text") for p in places), places
