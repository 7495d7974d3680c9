"""toolwire.workspace.hunks: splitting an edit's diff and applying a subset of its hunks."""

from __future__ import annotations

import itertools
import random

import pytest

from toolwire.workspace.hunks import apply_hunks, parse_hunks, split_hunks
from toolwire.workspace.text import unified_diff


def _bodies(diff: str) -> list[str]:
    return [h.diff for h in parse_hunks(diff)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("seed", range(30))
def test_each_subset_writes_exactly_its_hunks(seed, newline):
    rng = random.Random(seed)
    lines = [f"line {i}" for i in range(rng.randint(0, 40))]
    new = list(lines)
    for _ in range(rng.randint(1, 5)):
        op, at = rng.choice("ida"), rng.randint(0, len(new))
        if op == "i" or not new:
            new.insert(at, f"new {rng.random():.4f}")
        elif op == "d" and at < len(new):
            del new[at]
        elif at < len(new):
            new[at] = new[at].upper() + "!"
    end_old, end_new = rng.choice(["", newline]), rng.choice(["", newline])
    old_text = newline.join(lines) + (end_old if lines else "")
    new_text = newline.join(new) + (end_new if new else "")
    diff = unified_diff(old_text, new_text, "f.txt")
    hunks = parse_hunks(diff)
    assert "".join(f"{h.header}\n{h.diff}" for h in hunks) == diff.split("\n", 2)[2] if diff else hunks == []
    for r in range(len(hunks) + 1):
        for subset in itertools.combinations(range(len(hunks)), r):
            out = apply_hunks(old_text, new_text, diff, set(subset))
            if not subset:
                assert out == old_text
            elif len(subset) == len(hunks):
                assert out == new_text
            # every line of the result comes from one side; the hunks kept are the ones written
            written = unified_diff(old_text, out, "f.txt")
            kept = [hunks[i].diff for i in subset]
            assert "".join(_bodies(written)) == "".join(kept) or _changed(written) == _changed_of(kept)


def _changed(diff: str) -> list[str]:
    return [line for h in parse_hunks(diff) for line in h.diff.splitlines() if line[:1] in "+-"]


def _changed_of(bodies: list[str]) -> list[str]:
    return [line for body in bodies for line in body.splitlines() if line[:1] in "+-"]


def test_split_hunks_wire_form():
    diff = unified_diff("a\nb\nc\n", "a\nB\nc\n", "x.py")
    assert split_hunks(diff) == [{"index": 0, "header": "@@ -1,3 +1,3 @@", "diff": " a\n-b\n+B\n c\n"}]
    assert split_hunks("") == [] and split_hunks("rename from a\nrename to b\n") == []
