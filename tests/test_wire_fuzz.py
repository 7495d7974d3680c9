"""Issue 11 §5: every client→server method fuzzed over stdio from the generated JSON
Schema (strategies in ``schema_strategies``): valid params and params broken field by field.

The server must stay up, answer every request, answer invalid params with -32602
naming the field, and never answer InternalError (-32603). Bounded: about
``FUZZ_EXAMPLES`` cases per method and kind (env ``TOOLWIRE_FUZZ_EXAMPLES``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schema_strategies import from_schema, is_valid

from toolwire.lsp import messages as M
from toolwire.lsp import protocol as P
from toolwire.lsp.schema import METHOD_MODELS, params_schema

FUZZ_EXAMPLES = int(os.environ.get("TOOLWIRE_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

#: Requests a client sends (notifications get no answer to check).
REQUESTS = sorted(m for m, (direction, kind) in P.METHODS.items() if direction == "client→server" and kind == "request")
#: Replaced in generated params so the examples reach real code paths (and never watch "/").
CLOSES = {P.SESSION_CLOSE, P.SESSION_DELETE}
#: Methods whose ``cwd`` is pointed at the workspace folder some of the time (a real folder's sessions).
WITH_CWD = {P.SESSION_NEW, P.SESSION_LOAD, P.SESSION_DELETE, P.SESSION_LIST}


class Server:
    def __init__(self, workspace: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--log-level", "ERROR"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.workspace = workspace
        self.request("initialize", {"capabilities": {}})
        self.session = self.request(P.SESSION_NEW, {"cwd": str(workspace)})["result"]["sessionId"]

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        while True:  # skip notifications (updates, showMessage) until our answer
            header = self.proc.stdout.readline()
            assert header.startswith(b"Content-Length: "), f"the server died or wrote junk: {header!r}"
            length = int(header.split(b":")[1])
            while self.proc.stdout.readline() not in (b"\r\n", b""):
                pass
            message = json.loads(self.proc.stdout.read(length))
            if message.get("id") == self.next_id and "method" not in message:
                return message
            if message.get("method") == P.SESSION_UPDATE:  # every update fits the schema's model
                M.SessionUpdateParams.model_validate(message["params"])
            if "method" in message and "id" in message:  # a request to us (permission): reject it
                M.RequestPermissionParams.model_validate(message["params"])
                reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "outcome": {"outcome": "cancelled"}}}).encode()
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(reply) + reply)
                self.proc.stdin.flush()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("fuzz-ws")
    (workspace / "a.txt").write_text("alpha\n")
    srv = Server(workspace)
    yield srv
    srv.close()


def grounded(method: str, params: Any, server: Server, use_real: bool) -> Any:
    """Point generated params at real things some of the time (a live session, the workspace)."""
    if not isinstance(params, dict):
        return params
    params = dict(params)
    if use_real and "sessionId" in params and method not in CLOSES:
        params["sessionId"] = server.session
    if method in WITH_CWD and isinstance(params.get("cwd"), str) and params["cwd"].startswith("/"):
        params["cwd"] = str(server.workspace) if use_real else "/nonexistent" + params["cwd"][:50]
    return params


def check_answer(method: str, answer: dict[str, Any]) -> None:
    error = answer.get("error")
    if error is None:
        result_model = METHOD_MODELS[method][1]
        assert result_model is not None
        result_model.model_validate(answer["result"])  # what the server sent fits the schema
        return
    assert error["code"] != -32603, f"{method}: InternalError: {error}"
    assert "traceback" not in json.dumps(error).lower()
    assert len(error["message"]) <= 1000
    if error["code"] == -32602:
        assert error["message"].startswith(f"{method}: "), error


@pytest.mark.parametrize("method", REQUESTS)
def test_valid_params_never_break_the_server(server, method):
    schema = params_schema(method)

    @SETTINGS
    @given(params=from_schema(schema), use_real=st.booleans())
    def run(params, use_real):
        check_answer(method, server.request(method, grounded(method, params, server, use_real)))

    run()
    assert "result" in server.request(P.TOOLS_LIST, {})  # still up


WRONG = [None, 12345, -1, 0, 10**9, 2**64, -2**63, 1.5, 1e308, True, "", "x" * 3000, "x" * 20000, [], [1, "a"], {},
         {"nested": {"deep": [None]}}]


def wrong_for(spec: dict[str, Any], defs: dict[str, Any]) -> list[Any]:
    """Values that do not fit ``spec`` (checked, so only real misfits are kept)."""
    return [value for value in WRONG if not is_valid(value, spec, defs)]


#: Methods whose params have fields that can be wrong (tools/list takes none).
WITH_PARAMS = [m for m in REQUESTS if params_schema(m)["$defs"][params_schema(m)["$ref"].split("/")[-1]].get("properties")]


@pytest.mark.parametrize("method", WITH_PARAMS)
def test_invalid_params_get_invalid_params_naming_the_field(server, method):
    schema = params_schema(method)
    target = schema["$defs"][schema["$ref"].split("/")[-1]]
    props: dict[str, Any] = target.get("properties", {})
    required = target.get("required", [])
    cases = [(name, value) for name, spec in props.items() for value in wrong_for(spec, schema["$defs"])]
    if not cases:
        cases = [(required[0], None)]

    @SETTINGS
    @given(base=from_schema(schema), case=st.sampled_from(cases), drop=st.booleans())
    def run(base, case, drop):
        name, value = case
        params = grounded(method, base, server, True)  # real session and folder: only the mutation is wrong
        if drop and name in required:
            params.pop(name, None)
        else:
            params[name] = value
        answer = server.request(method, params)
        error = answer.get("error")
        assert error is not None, f"{method} accepted {name}={value!r}: {answer}"
        assert error["code"] == -32602, f"{method} {name}={value!r}: {error}"
        assert error["message"].startswith(f"{method}: invalid params: ") and name in error["message"], error

    run()
    for params in (7, "x", [1, 2]):  # params that are not an object
        error = server.request(method, params).get("error")
        assert error is not None and error["code"] == -32602, (method, params, error)
    assert "result" in server.request(P.TOOLS_LIST, {})
