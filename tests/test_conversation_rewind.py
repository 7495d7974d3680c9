"""Conversation.drop_turn (undoTurn's rewind): a turn's messages go, every other turn's
stay, and no call is ever left without its result, through repair too."""

from __future__ import annotations

from toolwire.agent.conversation import MISSING_RESULT, Conversation


def test_drop_turn_removes_only_that_turns_messages_and_keeps_pairs_whole():
    c = Conversation("system")
    c.start_turn("t1")
    c.add_user("first")
    c.add_assistant("", [("a", "read_file", '{"path": "x"}'), ("b", "read_file", "{")])
    c.add_tool_result("b", "out of order")  # repair puts results in call order and fills the missing one
    c.start_turn("t2")
    c.add_user("second")
    c.add_assistant("", [("c", "git_status", "{}")])
    c.add_tool_result("c", "clean")
    c.add_assistant("done", [])
    assert c.repair()  # a's result was missing, b's arguments were not an object
    assert [m.get("content") for m in c.messages if m["role"] == "tool"] == [MISSING_RESULT, "out of order", "clean"]
    c.start_turn("t3")
    c.add_user("third")
    assert c.drop_turn("t1") == 4  # its user message, the assistant message, both results (one added by repair)
    assert [m["role"] for m in c.messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert [m.get("content") for m in c.messages if m["role"] == "user"] == ["second", "third"]
    assert c.problems() == []
    assert c.drop_turn("t1") == 0  # nothing left of it
    assert c.drop_turn("t2") == 4 and [m["role"] for m in c.messages] == ["system", "user"]
