"""Invalid params are described in plain words over a real server: a field that takes
one of several shapes (``prompt``: a string or a list of text blocks) says what it
accepts, never pydantic's internal member names (``prompt.list[TextBlock].0.type``)."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from conftest import new_session, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

ACCEPTED = ('prompt: expected a list of content blocks ({"type": "text", "text": "…"}, {"type": "resource", '
            '"resource": {"uri", "text"}}, {"type": "resource_link", "uri", "name"}) or a string')


@pytest.mark.parametrize("bad, detail", [
    ([{"type": "txt", "text": "a"}], "prompt.0: type: Input should be 'text', 'resource', 'resource_link'"),
    ([{"text": "a"}], "prompt.0: type: Field required"),
    ([{"type": "text"}], "prompt.0.text.text: Field required"),
    ([5], "prompt.0: Input should be an object"),
    (5, None),
    ({"text": "a"}, None),
    (None, None),
])
async def test_a_bad_prompt_says_what_is_accepted(client, repo, tmp_path, bad, detail):
    sid = await new_session(client, repo, write_script(tmp_path / "s.jsonl", [{"text": "hi"}]))
    with pytest.raises(JsonRpcInvalidParams) as info:
        await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": bad})
    message = str(info.value)
    assert ACCEPTED in message, message
    if detail:
        assert detail in message, message
    for internal in ("list[", "prompt.str", "Textblock", "TextBlock", "Value error", "instance of", "tagged-union", "discriminator"):
        assert internal not in message, (internal, message)


async def test_an_empty_prompt_and_a_missing_field_stay_plain(client, repo, tmp_path):
    sid = await new_session(client, repo, write_script(tmp_path / "s.jsonl", [{"text": "hi"}]))
    with pytest.raises(JsonRpcInvalidParams, match=r"prompt: the prompt is empty$"):
        await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "  "})
    with pytest.raises(JsonRpcInvalidParams, match=r"sessionId: Field required"):
        await client.call("toolwire/session/prompt", {"prompt": "x"})
