"""``toolwire/models/list`` against endpoints that misbehave, over stdio against the real server: one
that never answers (bounded by connectTimeout, other requests answered meanwhile), garbage, a list
without ``data``, 10^5 models, ids with control/bidi characters or the API key itself, a 401 whose body
echoes the key. The answer fits the schema and never holds the key; the server keeps running."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from toolwire.lsp.protocol import ModelsListResult

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "sk-hostile-models-7f3a9c"
EVIL_IDS = ["ok-model", KEY, f"prefix-{KEY}", "bad\nid", "tab\tid", "x\u202eevil", "zero\u200bwidth", "", "a" * 201, 5,
            None, "fine.model-2"]


class Hostile:
    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.release = threading.Event()
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                mode = self.path.split("/")[1]
                if mode == "hang":
                    hostile.arrived.set()
                    hostile.release.wait(60)
                    return
                if mode == "garbage":
                    self.send(200, b"not json {")
                elif mode == "nodata":
                    self.send(200, b'{"object": "list"}')
                elif mode == "many":
                    self.send(200, json.dumps({"object": "list", "data": [
                        {"id": f"m-{i:06d}", "object": "model"} for i in range(100_000)]}).encode())
                elif mode == "evil":
                    self.send(200, json.dumps({"object": "list", "data": [
                        {"id": i, "object": "model"} for i in EVIL_IDS] + ["junk", {"no": "id"}]}).encode())
                else:  # leak: a 401 that quotes the key
                    self.send(401, json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}",
                                                         "code": "invalid_api_key"}}).encode())

            def send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{mode}/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hostile():
    endpoint = Hostile()
    yield endpoint
    endpoint.close()


async def listed(client, repo, url: str, **settings) -> dict:
    new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": "openai:mine",
                                                      "settings": {"baseUrl": url, "apiKey": KEY, **settings}})
    answer = await client.call("toolwire/models/list", {"sessionId": new["sessionId"]})
    ModelsListResult.model_validate(answer)
    assert KEY not in json.dumps(answer)
    return answer


CONFIGURED = [{"spec": "openai:mine", "name": "mine", "source": "configured"},
              {"spec": "replay", "name": "Offline demo", "source": "builtin"}]


async def test_an_endpoint_that_never_answers_is_bounded_and_blocks_nothing(client, repo, hostile):
    pending = asyncio.ensure_future(listed(client, repo, hostile.url("hang"), connectTimeout=0.5))
    await asyncio.to_thread(hostile.arrived.wait, 30)
    assert not pending.done()
    assert "tools" in await client.call("toolwire/tools/list", {})  # answered while the GET hangs
    assert (await pending)["models"] == CONFIGURED


@pytest.mark.parametrize("mode", ["garbage", "nodata", "leak"])
async def test_garbage_or_a_refusal_quoting_the_key_is_no_list(client, repo, hostile, mode):
    assert (await listed(client, repo, hostile.url(mode)))["models"] == CONFIGURED


async def test_a_huge_list_is_cut_and_odd_ids_are_left_out(client, repo, hostile):
    many = (await listed(client, repo, hostile.url("many")))["models"]
    assert len(many) == 500 + 2 and many[0]["spec"] == "openai:m-000000" and many[-1]["spec"] == "replay"
    evil = (await listed(client, repo, hostile.url("evil")))["models"]
    assert [m["name"] for m in evil if m["source"] == "endpoint"] == ["fine.model-2", "ok-model"]
    assert "tools" in await client.call("toolwire/tools/list", {})
