"""Typed tool-call events (issue 20): the agent emits an immutable snapshot of a call and
what changed; ``lsp/`` encodes it to the update form, ``acp/`` maps the snapshot as it is.

The wire rules themselves are tested in test_wire_updates.py; here: the event carries no
wire form, never copies the argument text while the call streams, hands the whole text
over once it stopped, and neither front-end rebuilds a call from the other's deltas."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from acp.schema import ToolCallProgress, ToolCallStart

from toolwire.acp.bridge import AcpSink
from toolwire.agent.events import ArgumentsPiece, CallChange, CallSnapshot, ToolCallChanged, call_changed
from toolwire.lsp.call_wire import brief_form, snapshot_form, update_form
from toolwire.streaming.changes import snapshot
from toolwire.streaming.delta import ToolCallDelta, ToolCallEnd
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import Status

PACKAGE = Path(__file__).parent.parent / "server" / "toolwire"
TEXT = json.dumps({"path": "a.txt", "content": "é\"\\x" * 300 + "\U0001f600"}, ensure_ascii=False)


def stream(text: str = TEXT, piece: int = 5, name: str = "create_file") -> tuple[StreamMerger, list[ToolCallChanged]]:
    merger = StreamMerger()
    events = [call_changed(merger.apply(ToolCallDelta(0, id="c1", name=name)))]
    for i in range(0, len(text), piece):
        events.append(call_changed(merger.apply(ToolCallDelta(0, arguments=text[i:i + piece]))))
    merger.apply(ToolCallEnd(0))
    events.append(call_changed(merger.calls[0]))
    return merger, events


def test_an_event_is_frozen_and_holds_no_text_while_the_call_streams():
    merger, events = stream()
    first = events[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.call = CallSnapshot()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.call.status = Status.DONE  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.change.piece = None  # type: ignore[misc]
    streaming = [e for e in events if e.call.status is Status.GENERATING]
    assert len(streaming) == len(events) - 1
    assert all(e.call.text is None for e in streaming)  # no copy of the text per event
    assert [e.call.size for e in streaming] == sorted(e.call.size for e in streaming)
    # the pieces, offsets included, are the text; the last one comes with the status change
    rebuilt = ""
    for event in events:
        piece = event.change.piece
        if piece is not None:
            assert piece.offset == len(rebuilt)
            rebuilt += piece.text
    assert rebuilt == TEXT == events[-1].call.text
    assert events[-1].call.status is Status.GENERATED and events[-1].change.arguments_changed
    assert events[-1].call.arguments == json.loads(TEXT)


def test_after_generating_every_event_shares_the_one_text_and_says_nothing_changed():
    merger, events = stream()
    call = merger.calls[0]
    call.transition(Status.CALLING)
    calling = call_changed(call)
    assert calling.call.text is events[-1].call.text  # joined once, never copied again
    assert calling.change == CallChange()  # status and rev only
    assert (calling.call.status, calling.call.rev) == (Status.CALLING, events[-1].call.rev + 1)
    assert update_form(calling) == brief_form(calling)  # no argument field on the wire either


def test_a_lone_surrogate_piece_is_replaced_and_the_whole_text_corrects_it():
    text = '{"path": "a.txt", "content": "\ud83d\ude00"}'  # UTF-16 halves, as a provider may send them
    merger = StreamMerger()
    events = [call_changed(merger.apply(ToolCallDelta(0, id="c1", name="create_file")))]
    for part in (text[:30], text[30:31], text[31:]):  # the pair split between two deltas
        events.append(call_changed(merger.apply(ToolCallDelta(0, arguments=part))))
    merger.apply(ToolCallEnd(0))
    final = call_changed(merger.calls[0])
    pieces = [e.change.piece for e in events if e.change.piece is not None]
    assert "".join(p.text for p in pieces) == text.replace("\ud83d", "\ufffd").replace("\ude00", "\ufffd")
    joined = '{"path": "a.txt", "content": "\U0001f600"}'
    assert final.change.text == final.call.text == joined and final.change.piece is None
    assert update_form(final)["argumentsText"] == joined


def test_the_lsp_encoding_writes_the_change_and_the_snapshot_writes_everything():
    merger, events = stream()
    for event in events:
        update = update_form(event)
        piece = event.change.piece
        assert update.get("argumentsDelta") == (None if piece is None else {"offset": piece.offset, "text": piece.text})
        assert ("partialArguments" in update) is event.change.preview_changed
        assert brief_form(event) == brief_form(update)
    assert any(e.change.preview_changed for e in events)
    assert snapshot_form(snapshot(merger.calls[0])) == merger.calls[0].to_wire()


def test_a_full_snapshot_leaves_the_report_stream_as_it_was():
    merger = StreamMerger()
    call = merger.apply(ToolCallDelta(0, id="c1", name="create_file", arguments=TEXT[:40]))
    whole = snapshot(call)
    assert whole.text == TEXT[:40]  # a full snapshot holds the text even while generating
    first = call_changed(call)
    assert first.change.piece == ArgumentsPiece(0, TEXT[:40])  # the snapshot did not count as reported


def test_acp_maps_the_snapshot_as_it_is(tmp_path: Path):
    """ACP gets a start when the call has an id and a name, then only the fields that
    differ from what it was sent: streaming pieces change nothing ACP shows."""
    (tmp_path / "a.txt").write_text("old\n")
    sink = AcpSink(conn=None, session_id="s1", root=tmp_path)
    _merger, events = stream()
    sent = [update for event in events for update in sink.translate(event)]
    start, *rest = sent
    assert isinstance(start, ToolCallStart) and start.tool_call_id == "c1"
    assert (start.title, start.kind, start.status) == ("create_file", "edit", "pending")
    assert all(isinstance(u, ToolCallProgress) for u in rest)
    shown = start.model_dump()
    for update in rest:  # a progress carries only what changed
        shown.update({k: v for k, v in update.model_dump().items() if v is not None})
    assert shown["title"] == "create_file a.txt" and shown["raw_input"] == json.loads(TEXT)
    assert shown["locations"] == [{"path": str(tmp_path / "a.txt"), "line": None, "field_meta": None}]
    assert len(sent) <= 4  # not one update per argument piece (there were hundreds)


def test_no_acp_module_reads_the_lsp_wire_form():
    """ACP maps the typed snapshot; the LSP update form's fields appear nowhere in acp/."""
    fields = ("argumentsDelta", "argumentsText", "partialArguments", "update_form", "call_wire")
    found = [(p.name, f) for p in sorted((PACKAGE / "acp").glob("*.py")) for f in fields if f in p.read_text()]
    assert found == []


def test_a_snapshot_with_defaults_is_an_unknown_call():
    blank = CallSnapshot()
    assert (blank.id, blank.name, blank.status, blank.text, blank.arguments) == ("", "", Status.GENERATING, None, None)
