"""Images an MCP tool returns reach the model as image parts of a user message right after the
tool messages of their response (or as a line, with imageInput false), in native and text
tool calling; they give way first when the history must shrink (toolwire.agent.conversation)."""

from __future__ import annotations

import base64
import json

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer

from mcp_inprocess import connected
from test_turn import ScriptedApprover, assert_invariants, make_session
from toolwire.agent.conversation import IMAGE_CHARS, IMAGES_DROPPED, Conversation, is_tool_images
from toolwire.agent.events import RecordingSink
from toolwire.agent.text_tools import render_call
from toolwire.agent.turn import Turn
from toolwire.mcp.tool import McpTool
from toolwire.tools.base import ImagePart

PNG = b"\x89PNG\r\n\x1a\n" + b"\1" * (34 * 1024 - 8)
URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def picture_server() -> MCPServer:
    server = MCPServer("pics")

    @server.tool()
    def chart(title: str) -> types.CallToolResult:
        """A chart."""
        return types.CallToolResult(content=[types.TextContent(text=f"chart {title}"),
                                             types.ImageContent(data=base64.b64encode(PNG).decode(),
                                                                mime_type="image/png")])

    @server.tool()
    def note(text: str) -> str:
        """Just text."""
        return text

    return server


async def run_turn(tmp_path, conn, **settings):
    tools = [McpTool(conn, conn.listed(name)) for name in ("chart", "note")]
    calls = [{"name": "mcp__pics__chart", "arguments": {"title": "one"}, "id": "c1"},
             {"name": "mcp__pics__note", "arguments": {"text": "plain"}, "id": "c2"},
             {"name": "mcp__pics__chart", "arguments": {"title": "two"}, "id": "c3"}]
    response = {"tool_calls": calls}
    if settings.get("tool_calling") == "text":  # the model writes its calls as blocks
        response = {"text": "\n".join(render_call(c["name"], json.dumps(c["arguments"])) for c in calls)}
    session = make_session(tmp_path, [response, {"text": "seen"}], tools, permissions={"mcp__pics": "auto"},
                           **settings)
    sink = RecordingSink()
    with anyio.fail_after(20):
        outcome = await Turn(session, sink, ScriptedApprover()).run("draw")
    assert outcome.stop_reason == "end_turn"
    assert_invariants(session, sink)
    return session


async def test_images_follow_the_tool_messages_of_their_response(tmp_path):
    async with connected(picture_server(), name="pics") as conn:
        session = await run_turn(tmp_path, conn)
    sent = session.model.requests[1].messages
    roles = [m["role"] for m in sent]
    assert roles[-5:] == ["assistant", "tool", "tool", "tool", "user"]
    assert sent[-4]["content"] == "chart one\n[image image/png, 34 KB: shown to you in the message after the tool results]"
    assert sent[-1]["content"] == [
        {"type": "text", "text": "Image from mcp__pics__chart (c1):"}, {"type": "image_url", "image_url": {"url": URL}},
        {"type": "text", "text": "Image from mcp__pics__chart (c3):"}, {"type": "image_url", "image_url": {"url": URL}},
    ]
    assert session.conversation.problems() == []
    shown = session.conversation.shown()[-2]  # the assistant's answer "seen" is last
    assert shown.get("toolImages") is True and "userText" not in shown


async def test_with_image_input_false_the_model_gets_the_line_only(tmp_path):
    async with connected(picture_server(), name="pics") as conn:
        session = await run_turn(tmp_path, conn, image_input=False)
    sent = session.model.requests[1].messages
    assert [m["role"] for m in sent][-4:] == ["assistant", "tool", "tool", "tool"]
    assert sent[-3]["content"] == "chart one\n[image image/png, 34 KB: not shown to the model]"


async def test_text_tool_calling_keeps_the_images_message_after_the_results(tmp_path):
    async with connected(picture_server(), name="pics") as conn:
        session = await run_turn(tmp_path, conn, tool_calling="text")
    sent = session.model.requests[1].messages
    assert sent[-2]["role"] == "user" and sent[-2]["content"].count("<tool_result") == 3
    assert sent[-1]["role"] == "user" and sent[-1]["content"][1] == {"type": "image_url", "image_url": {"url": URL}}


def test_older_images_give_way_first_and_count_as_a_fixed_size():
    image = ImagePart("image/png", base64.b64encode(PNG).decode(), len(PNG))
    conversation = Conversation("system")
    conversation.add_user("go")
    conversation.add_assistant("", [("c1", "mcp__pics__chart", "{}")])
    conversation.add_tool_result("c1", "chart")
    conversation.add_images([("mcp__pics__chart", "c1", [image])])
    assert is_tool_images(conversation.messages[-1])
    conversation.add_assistant("", [("c2", "mcp__pics__chart", "{}")])
    conversation.add_tool_result("c2", "chart")
    conversation.add_images([("mcp__pics__chart", "c2", [image])])
    size = conversation.size()
    assert IMAGE_CHARS * 2 < size < IMAGE_CHARS * 2 + 1000  # not the 46 000 characters of each data URL
    assert conversation.fit(size - 100) == 1
    assert conversation.messages[4]["content"] == [{"type": "text", "text": f"{IMAGES_DROPPED} mcp__pics__chart (c1)]"}]
    assert conversation.messages[-1]["content"][1]["type"] == "image_url"  # the latest response's stay
    assert conversation.problems() == [] and is_tool_images(conversation.messages[4])
