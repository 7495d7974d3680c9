"""The problems an edit introduced and fixed, compared by moved range (toolwire.agent.problems, pure)."""

from __future__ import annotations

from toolwire.agent.problems import (
    Comparison,
    LineMap,
    Problem,
    compare,
    diagnostics_data,
    not_checked_text,
    problems_text,
)


def diag(line: int, char: int, message: str, *, severity: int = 1, code: object = 2304, source: str = "ts",
         end: tuple[int, int] | None = None) -> dict:
    end_line, end_char = end if end is not None else (line, char + 3)
    return {"range": {"start": {"line": line, "character": char}, "end": {"line": end_line, "character": end_char}},
            "severity": severity, "code": code, "source": source, "message": message}


BEFORE = "a\nb\nc\nd\ne\nf\ng\n"


def test_new_problem_on_the_changed_line_is_named_with_its_place() -> None:
    after_text = BEFORE.replace("c\n", "c(\n")
    result = compare([], [diag(2, 1, "')' expected.", code=1005)], LineMap(BEFORE, after_text), "src/a.ts")
    assert result.new == [Problem("src/a.ts", 3, 2, "error", "ts", 1005, "')' expected.")]
    assert result.resolved == 0
    assert problems_text(result) == "1 new problem:\nsrc/a.ts:3:2: error (ts 1005): ')' expected."


def test_a_problem_already_there_is_not_repeated_and_one_gone_is_counted() -> None:
    after_text = BEFORE.replace("c\n", "C\n")
    kept = diag(5, 0, "Cannot find name 'f'.")
    gone = diag(2, 0, "Cannot find name 'c'.")
    result = compare([kept, gone], [kept], LineMap(BEFORE, after_text), "a.ts")
    assert result.new == []
    assert result.resolved == 1
    assert problems_text(result) == "no new problems; 1 problem fixed"


def test_an_edit_above_a_problem_moves_it_and_it_is_not_new() -> None:
    after_text = "x\ny\n" + BEFORE  # two lines inserted at the top: line 5 (0-based) moves to 7
    old = diag(5, 0, "Cannot find name 'f'.")
    moved = diag(7, 0, "Cannot find name 'f'.")
    result = compare([old], [moved], LineMap(BEFORE, after_text), "a.ts")
    assert result == Comparison([], 0)


def test_a_problem_that_did_not_move_with_its_line_is_a_different_one() -> None:
    # the same message on the line above the changed one (next to it) after lines were inserted
    after_text = BEFORE.replace("c\n", "c\nnew1\nnew2\n")
    old = diag(4, 0, "Cannot find name 'e'.")  # line e moves from 4 to 6
    stays = diag(6, 0, "Cannot find name 'e'.")
    appeared = diag(3, 0, "Cannot find name 'new1'.")
    result = compare([old], [stays, appeared], LineMap(BEFORE, after_text), "a.ts")
    assert [p.message for p in result.new] == ["Cannot find name 'new1'."]
    assert result.resolved == 0


def test_a_problem_on_a_replaced_line_that_remains_there_is_not_new() -> None:
    after_text = BEFORE.replace("c\n", "cc\n")
    old = diag(2, 0, "Unused 'c'.", severity=2, code="no-unused", source="eslint")
    still = diag(2, 1, "Unused 'c'.", severity=2, code="no-unused", source="eslint")
    result = compare([old], [still], LineMap(BEFORE, after_text), "a.ts")
    assert result == Comparison([], 0)


def test_severity_code_and_message_each_make_a_problem_different() -> None:
    after_text = BEFORE.replace("c\n", "cc\n")
    old = diag(2, 0, "m")
    for changed in (diag(2, 0, "m", severity=2), diag(2, 0, "m", code=9), diag(2, 0, "other")):
        result = compare([old], [changed], LineMap(BEFORE, after_text), "a.ts")
        assert len(result.new) == 1 and result.resolved == 1, changed


def test_new_problems_far_from_the_edit_are_not_named() -> None:
    after_text = BEFORE.replace("a\n", "aa\n")
    result = compare([], [diag(6, 0, "far away")], LineMap(BEFORE, after_text), "a.ts")
    assert result.new == []


def test_next_to_a_deletion_counts() -> None:
    after_text = BEFORE.replace("c\nd\n", "")  # lines 2-3 removed: e is now line 2
    result = compare([], [diag(2, 0, "next to it"), diag(1, 0, "before it")], LineMap(BEFORE, after_text), "a.ts")
    assert sorted(p.message for p in result.new) == ["before it", "next to it"]


def test_a_problem_that_moved_elsewhere_is_neither_new_nor_fixed() -> None:
    after_text = "c\n" + BEFORE.replace("c\n", "")  # line c moved to the top
    old = diag(2, 0, "bad c")
    result = compare([old], [diag(0, 0, "bad c")], LineMap(BEFORE, after_text), "a.ts")
    assert result == Comparison([], 0)


def test_errors_first_bounded_text_and_data() -> None:
    after_text = BEFORE.replace("c\n", "c\n" + "z\n" * 14)
    found = [diag(3 + n, 0, f"w{n}", severity=2) for n in range(12)] + [diag(10, 0, "boom")]
    result = compare([], found, LineMap(BEFORE, after_text), "a.ts")
    text = problems_text(result)
    assert text.splitlines()[0] == "13 new problems:"
    assert text.splitlines()[1] == "a.ts:11:1: error (ts 2304): boom"
    assert text.splitlines()[-1] == "... and 3 more"
    assert len(text.splitlines()) == 12
    data = diagnostics_data(result, final=False)
    assert data["checked"] is True and data["final"] is False and data["resolved"] == 0
    assert data["new"][0] == {"path": "a.ts", "line": 11, "column": 1, "severity": "error", "source": "ts",
                              "code": 2304, "message": "boom"}


def test_crlf_lines_and_columns_through_the_converter() -> None:
    before = "a\r\nb\r\n"
    after = "a\r\nb(\r\n"
    result = compare([], [diag(1, 4, "x")], LineMap(before, after), "a.ts", column=lambda line, ch: ch // 2 + 1)
    assert (result.new[0].line, result.new[0].column) == (2, 3)


def test_not_final_and_not_checked_texts() -> None:
    assert "problems may not be final" in problems_text(Comparison(), final=False)
    assert not_checked_text("src/b.ts") == "problems not checked: src/b.ts is not open in the editor"


def test_messages_of_an_excluded_file_are_not_shown() -> None:
    after_text = BEFORE.replace("c\n", "c(\n")
    result = compare([], [diag(2, 0, "secret=hunter2")], LineMap(BEFORE, after_text), ".env", hide_messages=".env")
    assert "hunter2" not in problems_text(result)


def test_the_moved_problem_is_the_old_one_and_the_one_on_the_inserted_line_is_new() -> None:
    after_text = BEFORE.replace("c\n", "c\nx\n")  # x inserted at line 3 (0-based); d moves from 3 to 4
    old = diag(3, 0, "Cannot find name.")
    result = compare([old], [diag(3, 0, "Cannot find name."), diag(4, 0, "Cannot find name.")],
                     LineMap(BEFORE, after_text), "a.ts")
    assert [(p.line, p.message) for p in result.new] == [(4, "Cannot find name.")]  # x's line, 1-based
    assert result.resolved == 0
