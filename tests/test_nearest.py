"""The nearest-match hint of a no_match edit (issue 25): the line, a short excerpt, escaped."""

from __future__ import annotations

import pytest

from toolwire.tools.editing import Replacement, plan_edit
from toolwire.tools.nearest import EXCERPT_LIMIT, nearest_line
from toolwire.workspace.errors import ToolError


def no_match(text: str, old: str) -> ToolError:
    with pytest.raises(ToolError) as info:
        plan_edit(text, [Replacement(old, "new")], label="a.py")
    assert info.value.code == "no_match"
    return info.value


def test_the_line_of_the_longest_start_or_end_of_the_old_lines():
    text = "a = 1\n\nclass Loader:\n    def load(self, path):\n        return path\n"
    assert nearest_line(text, "    def load(self, name):\n        return name") == (4, "def load(self, path):")
    assert nearest_line(text, "xx_return path") == (5, "return path")  # by its end


def test_crlf_files_count_lines_as_the_editor_does():
    text = "one\r\ntwo\r\nthree = compute(1)\r\n"
    err = no_match(text, "three = compute(2)")
    assert err.data == {"nearest": {"line": 3, "text": "three = compute(1)"}}
    assert "nearest match: line 3: three = compute(1) (read the file again around line 3" in err.message


def test_no_hint_when_nothing_comes_close():
    err = no_match("alpha\nbeta\n", "zzzz qqqq")
    assert err.data is None and "nearest" not in err.message


def test_a_long_line_is_cut_and_controls_are_escaped():
    line = "value = '" + "x" * 200 + "'"
    near = nearest_line(f"start\n{line}\n", "value = 'y'")
    assert near is not None and near[0] == 2 and near[1] == line[:EXCERPT_LIMIT] + "…"
    assert nearest_line("title = 'a\u202eb\x1b[2J'\n", "title = 'c'") == (1, "title = 'a\\u202eb\\x1b[2J'")


def test_a_multi_edit_names_the_failing_edit():
    with pytest.raises(ToolError) as info:
        plan_edit("import os\ndef f(x):\n", [Replacement("import os", "import sys"), Replacement("def f(y):", "z")],
                  label="a.py")
    assert info.value.message.startswith("edit 2 of 2: old_string was not found in a.py; nearest match: line 2: def f(x):")
    assert info.value.data == {"nearest": {"line": 2, "text": "def f(x):"}, "edit": 2}
