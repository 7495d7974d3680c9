"""The glob rules of list_files and search_files (toolwire.workspace.globs): each rule of
issue 21 as the exact list of paths it matches, the refusals, and the engine forms."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcmatch import glob as wcglob

from toolwire.workspace.errors import ToolError
from toolwire.workspace.globs import MAX_ALTERNATIVES, compile_glob

TREE = [
    ".github/workflows/ci.yml",
    ".gitignore",
    "README.md",
    "a.py",
    "b.pyi",
    "docs/guide.md",
    "src/app.py",
    "src/pkg/__init__.py",
    "src/pkg/deep/mod.py",
    "src/pkg/t1.py",
    "src/pkg/t10.py",
    "tests/test_app.py",
]


def matches(pattern: str) -> list[str]:
    return list(compile_glob(pattern).filter(TREE))


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # *.py only directly under path
        ("*.py", ["a.py"]),
        # **/*.py at any depth, the top included
        ("**/*.py", ["a.py", "src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py",
                     "src/pkg/t10.py", "tests/test_app.py"]),
        # * never crosses /
        ("src/*.py", ["src/app.py"]),
        ("src/*", ["src/app.py"]),
        # ? is one character, never /
        ("src/pkg/t?.py", ["src/pkg/t1.py"]),
        ("src?app.py", []),
        # ** as a segment: any number of folders, none included
        ("src/**/*.py", ["src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py", "src/pkg/t10.py"]),
        ("src/**/mod.py", ["src/pkg/deep/mod.py"]),
        ("src/**", ["src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py", "src/pkg/t10.py"]),
        # ** inside a name is *
        ("src/pkg/t**.py", ["src/pkg/t1.py", "src/pkg/t10.py"]),
        # {a,b} alternates, at any place, nested too
        ("*.{py,pyi}", ["a.py", "b.pyi"]),
        ("{src,tests}/*.py", ["src/app.py", "tests/test_app.py"]),
        ("{docs/*.md,**/t{1,10}.py}", ["docs/guide.md", "src/pkg/t1.py", "src/pkg/t10.py"]),
        # character sets
        ("src/pkg/t[0-9].py", ["src/pkg/t1.py"]),
        ("[!a]*.py*", ["b.pyi"]),
        # names starting with a dot are matched by * and **
        ("**/*.yml", [".github/workflows/ci.yml"]),
        (".*", [".gitignore"]),
        ("*", [".gitignore", "README.md", "a.py", "b.pyi"]),
        # a trailing / means everything below; ./ and a leading / are dropped
        ("docs/", ["docs/guide.md"]),
        ("./src/*.py", ["src/app.py"]),
        ("/src/*.py", ["src/app.py"]),
        # a literal path is that file only, case-sensitive
        ("README.md", ["README.md"]),
        ("readme.md", []),
        ("src", []),
        # \ makes the next character literal
        (r"a\.py", ["a.py"]),
        (r"a\*.py", []),
    ],
)
def test_glob_matches_exactly(pattern: str, expected: list[str]) -> None:
    assert matches(pattern) == expected


def test_literal_wildcards_escaped() -> None:
    glob = compile_glob(r"notes/\[draft\]\*.md")
    assert glob.match("notes/[draft]*.md")
    assert not glob.match("notes/d.md")


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("src/[ab.py", "no closing ]"),
        ("*.{py", "unbalanced {"),
        ("*.py}", "unbalanced }"),
        ("{py}", "without a comma"),
        ("../*.py", "cannot hold .."),
        ("src/../x", "cannot hold .."),
        ("{" + ",".join(f"n{i}" for i in range(MAX_ALTERNATIVES + 1)) + "}", f"more than {MAX_ALTERNATIVES}"),
        ("a" * 1001, "over 1000 characters"),
        ("a\x00b", "NUL"),
    ],
)
def test_bad_glob_is_a_tool_error_saying_how(pattern: str, why: str) -> None:
    with pytest.raises(ToolError) as err:
        compile_glob(pattern)
    assert err.value.code == "invalid_glob"
    assert why in err.value.message
    assert "**/*.py" in err.value.message  # says how to write one


def test_forms_for_the_engines() -> None:
    glob = compile_glob("src/**/*.{py,pyi}")
    assert glob.alternatives == ("src/**/*.py", "src/**/*.pyi")
    assert glob.prefix == "src/"
    assert glob.max_depth is None
    assert glob.names == ("*.py", "*.pyi")
    assert glob.rg_args() == ["--type-add", "twglob:*.py", "--type-add", "twglob:*.pyi", "--type", "twglob"]
    assert glob.rg_globs() == ["--glob", "/src/**/*.py", "--glob", "/src/**/*.pyi"]
    assert glob.pathspecs() == [":(glob)src/**/*.py", ":(glob)src/**/*.pyi"]
    assert glob.pathspecs("sub/") == [":(glob)sub/src/**/*.py", ":(glob)sub/src/**/*.pyi"]
    top = compile_glob("*.py")
    assert top.max_depth == 1 and top.prefix == ""
    assert top.rg_args() == ["--max-depth", "1", "--type-add", "twglob:*.py", "--type", "twglob"]
    assert top.rg_globs() == ["--glob", "/*.py"]  # anchored: rg reads a bare *.py at any depth
    below = compile_glob("src/")
    assert below.names is None and below.rg_args() == []
    assert compile_glob("src/pkg/t**.py").names == ("t*.py",)  # rg refuses ** inside a name
    assert compile_glob("{a,b}/x.py").prefix == ""


def test_depth_counts_from_path_not_from_the_prefix() -> None:
    # rg runs in the tool's path, never in the prefix (an explicit path argument is walked even
    # when ignored): --max-depth counts every segment
    assert compile_glob("src/*.py").rg_args()[:2] == ["--max-depth", "2"]
    assert compile_glob("src/pkg/{a,bb/c}.py").max_depth == 4


_SEGMENTS = ["a", "b", "ab", "*", "?", "a*", "*b", "[ab]", "[!a]", "**", ".*", "a?b", "**", r"\*", "x"]
_NAMES = ["a", "b", "ab", "ba", ".a", "aab", "x", "*", "a.b", "abb"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4),
       st.lists(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=5), min_size=1, max_size=8))
def test_the_matcher_is_wcmatchs_translation(segments: list[str], paths: list[list[str]]) -> None:
    """Globs join wcmatch's translation of each segment (fast); the result matches exactly the
    paths wcmatch's translation of the whole pattern matches."""
    pattern = "/".join(segments)
    reference = re.compile("|".join(wcglob.translate(pattern, flags=wcglob.GLOBSTAR | wcglob.DOTGLOB
                                                     | wcglob.FORCEUNIX)[0]))
    glob = compile_glob(pattern)
    for parts in paths:
        path = "/".join(parts)
        assert glob.match(path) == bool(reference.match(path)), (pattern, path)


_ODD = ["a.py", ".py", "..py", "a/.py", "x.PY", "a.py/b", "a.pyc", "d/e/f.py", "a.py\n", "b\n.py", "a/..py",
        "pyy", ".p y", "a\udcff.py", "t.ts", "t.tsx", "t.tsx/x", "s.ts.bak", "n.d.ts"]


@pytest.mark.parametrize(("pattern", "suffixes"), [("**/*.py", (".py",)), ("**/*.{ts,tsx}", (".ts", ".tsx")),
                                                   ("*.py", None), ("**/a*.py", None), (r"**/*\*.py", None),
                                                   ("**/*", None), ("src/**/*.py", None), ("**/*.[ch]", None)])
def test_suffix_globs_filter_without_the_expression(pattern: str, suffixes: tuple[str, ...] | None) -> None:
    """``**/*<literal>`` globs filter a listing with ``str.endswith``: the same paths as the
    expression, a name ending in a newline included (it matches neither)."""
    glob = compile_glob(pattern)
    assert glob.suffixes == suffixes
    assert list(glob.filter(_ODD)) == [path for path in _ODD if glob.match(path)]
    assert not compile_glob("**/*.py").match("a.py\n") and not compile_glob("*.py").match("a.py\n")
