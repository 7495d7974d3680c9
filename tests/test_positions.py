"""The document model: LSP line rule and position encodings, against the reference
in ``lsp_text.py`` (table tests for the given inputs, property tests beyond)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

import lsp_text as ref
from toolwire.lsp.buffers import BufferStore
from toolwire.workspace.positions import (LineIndex, PositionError, apply_change, changed_lines, minimal_edit,
                                         narrow_edits, units)

ENCODINGS = ("utf-8", "utf-16", "utf-32")

#: Pieces that stress the rules: multi-byte, outside the BMP, combining marks,
#: every line ending, and every character str.splitlines() wrongly splits at.
PIECES = ["a", "b", " ", "\t", "é", "e\u0301", "€", "😀", "👩\u200d💻", "\U00010348", "\n", "\r", "\r\n",
          "\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\ud800"]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join) | st.text(max_size=20)
encodings = st.sampled_from(ENCODINGS)


def same(f, g):
    """Both raise (the reference's NoSuchPlace ↔ PositionError) or both return the same value."""
    try:
        expected = f()
    except ref.NoSuchPlace:
        with pytest.raises(PositionError):
            g()
        return None
    assert g() == expected
    return expected


# ------------------------------------------------------------------ given inputs

def test_utf8_end_of_a_line_with_an_accent_counts_bytes():
    index = LineIndex("print('héllo')")
    assert index.end("utf-8") == (0, 15)
    assert index.end("utf-16") == (0, 14)
    assert index.end("utf-32") == (0, 14)


@pytest.mark.parametrize("odd", ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_only_cr_lf_and_crlf_end_a_line(odd):
    text = f"import os\n{odd}\ndef f():\n    return 1\n"
    for enc in ENCODINGS:
        assert apply_change(text, (3, 11), (3, 12), "2", enc) == f"import os\n{odd}\ndef f():\n    return 2\n"
    assert LineIndex(text).line_count == 5


@pytest.mark.parametrize(("text", "count"), [("", 1), ("a", 1), ("a\n", 2), ("a\r\nb", 2), ("a\rb\r", 3),
                                             ("\r\n\r\n", 3), ("\n\r", 3), ("a\u2028b\x85c", 1)])
def test_line_counts(text, count):
    assert LineIndex(text).line_count == count


@pytest.mark.parametrize(("enc", "units_"), [("utf-8", [1, 2, 3, 4]), ("utf-16", [1, 1, 1, 2]), ("utf-32", [1, 1, 1, 1])])
def test_units_per_encoding(enc, units_):
    assert [units(ch, enc) for ch in "aé€😀"] == units_


def test_a_position_inside_a_character_is_refused():
    index = LineIndex("x😀y")
    with pytest.raises(PositionError):
        index.offset_at((0, 2), "utf-16")  # between the halves of the surrogate pair
    for inside in (2, 3, 4):
        with pytest.raises(PositionError):
            index.offset_at((0, inside), "utf-8")
    assert index.offset_at((0, 3), "utf-16") == 2 and index.offset_at((0, 5), "utf-8") == 2


def test_past_the_end_clamps_to_the_line_end_before_its_line_ending():
    index = LineIndex("ab\r\ncd")
    assert index.offset_at((0, 99), "utf-16") == 2
    assert index.offset_at((7, 0), "utf-16") == 6
    with pytest.raises(PositionError):
        index.position_at(3, "utf-16")  # between \r and \n


@pytest.mark.parametrize(("old", "new"), [("a\r\nb", "a\nb"), ("ab\r\n", "ab\n"), ("x\r\n", "x\r\ny\r\n"),
                                          ("print('héllo')", "print('hello wörld')"), ("", "x"), ("x", "")])
def test_minimal_edit_examples(old, new):
    start, end, replacement = minimal_edit(old, new)
    assert old[:start] + replacement + old[end:] == new
    index = LineIndex(old)
    index.position_at(start, "utf-8"), index.position_at(end, "utf-8")  # both have a position


# ------------------------------------------------------------------ properties

@settings(max_examples=300, deadline=None)
@given(texts)
def test_lines_match_the_reference(text):
    index = LineIndex(text)
    assert [index.line_text(i) for i in range(index.line_count)] == [c for c, _ in ref.lines(text)]


@settings(max_examples=300, deadline=None)
@given(texts, encodings, st.integers(0, 12), st.integers(0, 40))
def test_offset_at_matches_the_reference(text, enc, line, character):
    same(lambda: ref.offset_at(text, line, character, enc), lambda: LineIndex(text).offset_at((line, character), enc))


@settings(max_examples=300, deadline=None)
@given(texts, encodings)
def test_every_offset_has_the_reference_position_and_maps_back(text, enc):
    index = LineIndex(text)
    for offset in range(len(text) + 1):
        pos = same(lambda: ref.position_at(text, offset, enc), lambda: index.position_at(offset, enc))
        if pos is not None:
            assert index.offset_at(pos, enc) == offset
    assert index.end(enc) == ref.end_of(text, enc)


@settings(max_examples=300, deadline=None)
@given(texts, texts, encodings, st.tuples(st.integers(0, 8), st.integers(0, 30)),
       st.tuples(st.integers(0, 8), st.integers(0, 30)))
def test_incremental_change_matches_the_reference(text, new, enc, start, end):
    same(lambda: ref.apply(text, start, end, new, enc), lambda: apply_change(text, start, end, new, enc))


@settings(max_examples=300, deadline=None)
@given(texts, texts, encodings)
def test_minimal_edit_as_a_range_rebuilds_the_new_text_in_the_reference_editor(old, new, enc):
    start, end, replacement = minimal_edit(old, new)
    index = LineIndex(old)
    assert ref.apply(old, index.position_at(start, enc), index.position_at(end, enc), replacement, enc) == new


def _partial(rng, text):
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(*rng[0]), end=types.Position(*rng[1])), text=text)


@settings(max_examples=200, deadline=None)
@given(texts, encodings, st.lists(st.tuples(st.tuples(st.integers(0, 6), st.integers(0, 20)),
                                            st.tuples(st.integers(0, 6), st.integers(0, 20)), texts), max_size=6))
def test_a_buffer_follows_a_stream_of_incremental_changes_like_the_reference_editor(text, enc, edits):
    store = BufferStore(lambda: enc)
    store.open("file:///w/a.txt", text, 1)
    expected = text
    in_sync = True
    for version, (start, end, new) in enumerate(edits, 2):
        try:
            expected = ref.apply(expected, start, end, new, enc)
        except ref.NoSuchPlace:
            in_sync = False
        store.change("file:///w/a.txt", version, [_partial((start, end), new)])
        buf = store.get("file:///w/a.txt")
        assert (buf.out_of_sync is None) == in_sync
        if not in_sync:
            break
        assert buf.text == expected and buf.version == version
    # a whole-document change puts an out-of-sync buffer back in sync
    store.change("file:///w/a.txt", 99, [types.TextDocumentContentChangeWholeDocument(text="fresh\u2028\n")])
    buf = store.get("file:///w/a.txt")
    assert buf.out_of_sync is None and buf.text == "fresh\u2028\n"


@settings(max_examples=200, deadline=None)
@given(texts, encodings, st.integers(0, 40), st.integers(0, 40))
def test_store_ranges_round_trip(text, enc, a, b):
    store = BufferStore(lambda: enc)
    store.open("file:///w/b.txt", text, 1)
    a, b = min(a, len(text)), min(b, len(text))
    a, b = min(a, b), max(a, b)
    try:
        rng = store.range_of(text, a, b)
    except PositionError:
        assert "\r\n" in text  # only an offset inside a CRLF has no position
        return
    assert store.offsets("file:///w/b.txt", rng) == (a, b)


@pytest.mark.parametrize(("enc", "end"), [("utf-8", 17), ("utf-16", 15), ("utf-32", 14)])
def test_text_in_range_of_a_code_action_selection_follows_the_line_rule(enc, end):
    store = BufferStore(lambda: enc)
    store.open("file:///w/a.py", "import os\n\u2028\f\ndef f():\n    return '😀'\n", 1)
    rng = types.Range(start=types.Position(3, 4), end=types.Position(3, end))
    assert store.text_in_range("file:///w/a.py", rng) == "return '😀'"
    assert store.range_of(store.get("file:///w/a.py").text, 26, 36) == rng


@pytest.mark.parametrize(("negotiated", "used"), [(types.PositionEncodingKind.Utf8, "utf-8"), ("utf-32", "utf-32"),
                                                  (types.PositionEncodingKind.Utf16, "utf-16"), (None, "utf-16"),
                                                  ("latin-1", "utf-16")])
def test_the_store_reads_the_negotiated_encoding_as_enum_or_string(negotiated, used):
    assert BufferStore(lambda: negotiated).encoding == used


# ------------------------------------------------------------------ narrowest edits (plain changes)

def test_narrow_edits_leave_the_lines_between_two_changes_out():
    old = "a = 1\nkeep\nkeep too\nb = 2\n"
    new = "a = 10\nkeep\nkeep too\nb = 20\n"
    assert narrow_edits(old, new) == [(5, 5, "0"), (25, 25, "0")]
    assert minimal_edit(old, new) == (5, 25, "0\nkeep\nkeep too\nb = 20")  # the single range would span them
    assert changed_lines(new, "a = 10\nkeep mine\nkeep too\nb = 20\n") == [(2, 2)]
    assert changed_lines("x\ny\n", "x\n") == [(2, 2)]  # a missing line is named where it is missing
    assert narrow_edits(old, old) == [] and changed_lines(old, old) == []


@pytest.mark.parametrize(("old", "new", "edits"), [
    ("a\nb\n", "a\nb\nc\n", [(3, 3, "\nc")]),          # appending a line: at the end of the last line
    ("a\nb\n", "a\n", [(1, 3, "")]),                    # deleting the last line
    ("a\r\nb\r\n", "a\r\nb\r\nc\r\n", [(4, 4, "\r\nc")]),
    ("x\n", "x\ny", [(2, 2, "y")]),                      # no final line ending after: cannot move
])
def test_narrow_edits_keep_off_the_empty_line_after_a_final_line_ending(old, new, edits):
    assert narrow_edits(old, new) == edits


@settings(max_examples=400, deadline=None)
@given(texts, texts, texts)
def test_narrow_edits_rebuild_the_new_text_with_ranges_that_have_positions(head, old_mid, new_mid):
    old, new = head + old_mid + head, head + new_mid + head
    edits = narrow_edits(old, new)
    out, last = old, -1
    for start, end, replacement in edits:
        assert last < start <= end or (last == -1 and 0 <= start <= end)  # sorted, apart
        last = end
        for offset in (start, end):  # never inside a \r\n: every bound has a position
            LineIndex(old).position_at(offset, "utf-16")
    for start, end, replacement in reversed(edits):
        out = out[:start] + replacement + out[end:]
    assert out == new
    assert (changed_lines(old, new) == []) == (old == new)
