"""What the model and the card get of an MCP ``tools/call`` answer (toolwire.mcp.results):
every content block, structuredContent, isError, images, and the bounds of both; then a
registry server's real answers."""

from __future__ import annotations

import base64
import json

import anyio
import mcp_types as types

from mcp_servers import everything_stdio
from test_mcp_runtime import NET, spec, started
from toolwire.mcp.results import CARD_TEXT_LIMIT, MAX_CARD_IMAGE_BYTES, MAX_IMAGE_BYTES, to_result
from toolwire.mcp.tool import McpTool
from toolwire.tools.base import ToolContext

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * (34 * 1024 - 8)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def answer(*blocks: types.ContentBlock, structured=None, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(blocks), structured_content=structured, is_error=error)


def test_every_kind_of_block_in_order_for_the_model_and_the_card():
    result = to_result(answer(
        types.TextContent(text="first"),
        types.ResourceLink(uri="file:///r/report.pdf", name="report.pdf", mime_type="application/pdf", size=12 * 1024,
                           description="The report"),
        types.EmbeddedResource(resource=types.TextResourceContents(uri="memo://1", mime_type="text/plain", text="memo")),
        types.EmbeddedResource(resource=types.BlobResourceContents(uri="memo://2", blob=b64(b"\1" * 3000))),
        types.AudioContent(data=b64(b"\0" * 2048), mime_type="audio/wav"),
    ), limit=5000, show_images=True)
    assert result.ok and result.images == ()
    assert result.content.split("\n") == [
        "first",
        '[resource link "report.pdf" file:///r/report.pdf, application/pdf, 12 KB: The report]',
        "[resource memo://1, text/plain]",
        "memo",
        "[resource memo://2, 3 KB of binary data: not shown to the model]",
        "[audio audio/wav, 2 KB: not given to the model]",
    ]
    assert result.data == {"isError": False, "content": [
        {"type": "text", "text": "first"},
        {"type": "resource_link", "uri": "file:///r/report.pdf", "name": "report.pdf", "mimeType": "application/pdf",
         "size": 12 * 1024, "description": "The report"},
        {"type": "resource", "uri": "memo://1", "mimeType": "text/plain", "text": "memo"},
        {"type": "resource", "uri": "memo://2", "size": 3000, "note": "binary data, not shown here"},
        {"type": "audio", "mimeType": "audio/wav", "size": 2048, "note": "audio is not played here"},
    ]}


def test_structured_content_is_added_as_json_only_when_no_text_carries_it():
    carried = to_result(answer(types.TextContent(text='{"a": 1}'), structured={"a": 1}), limit=None, show_images=True)
    assert carried.content == '{"a": 1}' and carried.data["structuredContent"] == {"a": 1}
    wrapped = to_result(answer(types.TextContent(text="hihi"), structured={"result": "hihi"}), limit=None,
                        show_images=True)  # MCPServer's wrapping of a value that is not an object
    assert wrapped.content == "hihi"
    alone = to_result(answer(structured={"rows": [1, 2], "name": "é"}), limit=None, show_images=True)
    assert alone.content == '{"rows": [1, 2], "name": "é"}'
    other = to_result(answer(types.TextContent(text="2 rows"), structured={"rows": [1, 2]}), limit=None,
                      show_images=True)
    assert other.content == '2 rows\n{"rows": [1, 2]}'
    big = {"rows": ["x" * 100] * (CARD_TEXT_LIMIT // 100)}
    assert "structuredContent" not in to_result(answer(structured=big), limit=None, show_images=True).data


def test_is_error_is_a_failed_result_with_the_servers_text_and_nothing_raises():
    result = to_result(answer(types.TextContent(text="no such city: Atlantis"), error=True), limit=5000,
                       show_images=True)
    assert not result.ok and result.error_code == "mcp_tool_error"
    assert result.content == "Error (mcp_tool_error): no such city: Atlantis"
    assert result.data["isError"] is True and result.data["content"][0]["text"] == "no such city: Atlantis"
    silent = to_result(answer(error=True), limit=5000, show_images=True)
    assert silent.content == "Error (mcp_tool_error): the tool reported an error and gave no message"
    assert to_result(answer(), limit=5000, show_images=True).content == "The tool returned no content."


def test_an_image_goes_to_the_model_as_a_part_or_as_a_line_and_always_to_the_card():
    block = types.ImageContent(data=b64(PNG), mime_type="image/png")
    shown = to_result(answer(types.TextContent(text="a chart"), block), limit=5000, show_images=True)
    assert shown.content == "a chart\n[image image/png, 34 KB: shown to you in the message after the tool results]"
    assert [(i.mime_type, i.size, i.data) for i in shown.images] == [("image/png", len(PNG), b64(PNG))]
    hidden = to_result(answer(block), limit=5000, show_images=False)
    assert hidden.content == "[image image/png, 34 KB: not shown to the model]" and hidden.images == ()
    for result in (shown, hidden):
        card = result.data["content"][-1]
        assert card == {"type": "image", "mimeType": "image/png", "size": len(PNG), "data": b64(PNG)}


def test_images_the_model_cannot_take_are_named_never_sent():
    svg = types.ImageContent(data=b64(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), mime_type="image/svg+xml")
    liar = types.ImageContent(data=b64(b"not a png at all"), mime_type="image/png")
    broken = types.ImageContent(data="@@not base64@@", mime_type="image/png")
    huge = types.ImageContent(data=b64(b"\x89PNG\r\n\x1a\n" + b"\0" * MAX_IMAGE_BYTES), mime_type="image/png")
    result = to_result(answer(svg, liar, broken, huge), limit=5000, show_images=True)
    assert result.images == ()
    assert result.content.split("\n") == [
        "[image image/svg+xml, 41 bytes: not shown to the model (it is not a PNG, JPEG, GIF or WebP image)]",
        "[image image/png, 16 bytes: not shown to the model (it is not a PNG, JPEG, GIF or WebP image)]",
        "[image image/png: not shown to the model (its data is not valid base64)]",
        "[image image/png, 4.0 MB: not shown to the model (larger than 4.0 MB)]",
    ]
    cards = result.data["content"]
    assert "data" in cards[0] and "data" in cards[1]  # the card shows what it can; the client keeps image/* only
    assert cards[2]["note"] == "not shown: its data is not valid base64" and "data" not in cards[2]
    assert cards[3]["note"] == "not shown: larger than 4.0 MB" and "data" not in cards[3]


def test_a_jpeg_declared_as_png_goes_as_what_it_is():
    jpeg = b"\xff\xd8\xff\xe0" + b"\0" * 100
    result = to_result(answer(types.ImageContent(data=b64(jpeg), mime_type="image/png")), limit=5000,
                       show_images=True)
    assert result.images[0].mime_type == "image/jpeg" and result.data["content"][0]["mimeType"] == "image/jpeg"


def test_the_card_carries_images_up_to_its_budget_then_notes():
    raw = b"\x89PNG\r\n\x1a\n" + b"\0" * (MAX_IMAGE_BYTES - 8)
    count = MAX_CARD_IMAGE_BYTES // len(raw) + 1
    result = to_result(answer(*[types.ImageContent(data=b64(raw), mime_type="image/png")] * count), limit=None,
                       show_images=True)
    cards = result.data["content"]
    assert all("data" in c for c in cards[:-1]) and "data" not in cards[-1]
    assert cards[-1]["note"] == "not shown: the result's images are more than 8.0 MB"
    assert len(result.images) == count  # the model's own bound is the provider's per image


def test_long_text_is_cut_with_the_marker_for_the_model_and_bounded_in_the_card():
    text = "x" * (CARD_TEXT_LIMIT * 2)
    result = to_result(answer(types.TextContent(text=text)), limit=1000, show_images=True)
    assert len(result.content) <= 1000 and f"the full result is {len(text)} characters" in result.content
    card_text = result.data["content"][0]["text"]
    assert len(card_text) <= CARD_TEXT_LIMIT and f"the full result is {len(text)} characters" in card_text
    json.dumps(result.data)  # the card's data goes on the wire as it is


async def test_a_registry_servers_answers_map_as_they_come(tmp_path):
    """server-everything (npm, over stdio): a real image, structuredContent its text carries,
    resource links and an embedded resource."""
    connection = await started(spec(tmp_path, "everything", everything_stdio()))
    try:
        listed = {tool.name: tool for tool in connection.tools}
        ctx = ToolContext(root=tmp_path, extra={"result_limit": 5000})

        async def run(name: str, arguments: dict):
            tool = McpTool(connection, listed[name])
            with anyio.fail_after(NET):
                return await tool.run(tool.validate(arguments), ctx)

        image = await run("get-tiny-image", {})
        assert "[image image/png, 4 KB: shown to you in the message after the tool results]" in image.content
        assert [(part.mime_type, part.size) for part in image.images] == [("image/png", 4033)]
        assert base64.b64decode(image.data["content"][1]["data"]).startswith(b"\x89PNG")
        weather = await run("get-structured-content", {"location": "New York"})
        assert json.loads(weather.content) == weather.data["structuredContent"]  # carried by its text: once
        links = await run("get-resource-links", {"count": 2})
        assert '[resource link "Text Resource 2" demo://resource/dynamic/text/2, text/plain: ' in links.content
        embedded = await run("get-resource-reference", {})
        assert "[resource demo://resource/dynamic/text/1, text/plain]\nResource 1: " in embedded.content
    finally:
        await connection.stop()
