"""modelExclude matching (workspace/model_exclude.py): gitignore-style globs, the defaults, the
engines' forms of the same rule (ripgrep --iglob, git pathspecs), and the setting's validation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolwire.agent.session import Session
from toolwire.settings import Settings, parse_settings
from toolwire.tools.base import ToolContext
from toolwire.workspace.model_exclude import DEFAULT_PATTERNS, ModelExclude, excluded_of

DEFAULT = ModelExclude()


@pytest.mark.parametrize("path, pattern", [
    (".env", ".env"),
    (".env.local", ".env.*"),
    (".env.production", ".env.*"),
    ("server.pem", "*.pem"),
    ("tls.key", "*.key"),
    ("id_rsa", "id_rsa*"),
    ("id_rsa.pub", "id_rsa*"),
    (".npmrc", ".npmrc"),
    (".netrc", ".netrc"),
    # nested: a pattern without a slash matches the name at any depth
    ("config/.env", ".env"),
    ("keys/server.pem", "*.pem"),
    ("a/b/c/.env.test", ".env.*"),
    ("home/user/.ssh/id_rsa", "id_rsa*"),
    ("pkg/.npmrc", ".npmrc"),
    # case is ignored
    ("keys/Server.PEM", "*.pem"),
    (".ENV", ".env"),
    # a folder that matches excludes what is below it
    (".env/inner.txt", ".env"),
    ("certs.key/readme", "*.key"),
])
def test_each_default_pattern_excludes_its_files_at_any_depth(path, pattern):
    assert DEFAULT.match(path) == pattern


@pytest.mark.parametrize("path", [
    ".envrc",  # .env.* needs a dot after .env; .env needs the whole name
    "env", ".env_example", "config/.envrc", "dotenv.py",
    "server.pem.txt", "keys/server.pem.bak", "pem", "key.txt", "monkey",
    "my_id_rsa", "src/id.rs", ".npmrc.md", "netrc", "README.md", "src/app.py",
])
def test_lookalikes_are_not_excluded(path):
    assert DEFAULT.match(path) is None


def test_the_default_patterns_are_the_issue_s_list():
    assert DEFAULT_PATTERNS == (".env", ".env.*", "*.pem", "*.key", "id_rsa*", ".npmrc", ".netrc")
    assert Settings().model_exclude == list(DEFAULT_PATTERNS)
    assert ToolContext(root=Path("/")).model_exclude == DEFAULT


def test_anchored_folder_only_and_glob_forms():
    rules = ModelExclude(["config/*.env", "/top.key", "secrets/", "**/private/**", "{a,b}.txt"])
    assert rules.match("config/prod.env") == "config/*.env"
    assert rules.match("x/config/prod.env") is None  # a slash anchors the pattern at the root
    assert rules.match("config/sub/prod.env") is None  # * never crosses /
    assert rules.match("top.key") == "/top.key"
    assert rules.match("sub/top.key") is None
    assert rules.match("secrets") is None  # a file named secrets: the pattern is for folders
    assert rules.match("secrets", is_dir=True) == "secrets/"
    assert rules.match("app/secrets/db/prod.json") == "secrets/"
    assert rules.match("x/private/y/z.txt") == "**/private/**"
    assert rules.match("b.txt") == "{a,b}.txt" and rules.match("c.txt") is None
    assert rules.match("./config/prod.env") == "config/*.env"  # spellings of the same path
    assert rules.match("config\\prod.env") == "config/*.env"
    assert excluded_of(rules, ["b.txt", "c.txt", "top.key"]) == [("b.txt", "{a,b}.txt"), ("top.key", "/top.key")]


def test_an_empty_list_excludes_nothing():
    none = ModelExclude([])
    assert not none and none.match(".env") is None and none.match("keys/server.pem") is None
    assert none.rg_globs() == [] and none.git_pathspecs() == []


@pytest.mark.parametrize("patterns, says", [
    (["!.env.example"], "setting modelExclude: '!.env.example' negates: patterns only exclude"),
    ([""], "setting modelExclude: a pattern must not be empty"),
    (["  "], "setting modelExclude: a pattern must not be empty"),
    (["../outside/*.key"], "setting modelExclude: '../outside/*.key' has a '.' or '..' folder"),
    (["/"], "setting modelExclude: '/' names the whole workspace"),
    (["{" + "a," * 200 + "b}{" + "c," * 200 + "d}"], "…' is not a valid glob (Pattern limit exceeded"),
    ([".env", 3], "setting modelExclude.1: Input should be a valid string (got 3)"),
    (".env", "setting modelExclude: Input should be a valid list (got '.env')"),
])
def test_a_bad_pattern_is_a_settings_error(patterns, says):
    settings, problems = parse_settings({"modelExclude": patterns, "maxModelRequests": 3})
    assert len(problems) == 1 and problems[0].startswith("setting modelExclude") and says in problems[0], problems
    assert settings.model_exclude == list(DEFAULT_PATTERNS)  # refused: the default stays
    assert settings.max_model_requests == 3  # the valid entries apply
    with pytest.raises(ValueError):
        ModelExclude(patterns if isinstance(patterns, list) and all(isinstance(p, str) for p in patterns)
                     else ["!x"])


def test_the_setting_reaches_the_tools_context(tmp_path):
    from toolwire.agent.permissions import PermissionPolicy
    from toolwire.llm.replay import ReplayModel
    from toolwire.tools import default_registry

    settings, problems = parse_settings({"modelExclude": ["*.secret"]})
    assert problems == []
    script = tmp_path / "script.jsonl"
    script.write_text("")
    session = Session(root=tmp_path, model=ReplayModel(script), registry=default_registry(),
                      policy=PermissionPolicy(), settings=settings)
    ctx = session.tool_context()
    assert ctx.model_exclude.patterns == ("*.secret",)
    assert ctx.model_exclude.match("a/b.secret") == "*.secret" and ctx.model_exclude.match(".env") is None
    session.settings = parse_settings({"modelExclude": []})[0]  # settings changed between turns
    assert not session.tool_context().model_exclude


TREE = [".env", ".envrc", ".env.local", "config/.env", "config/a.env", "x/config/a.env", "keys/server.pem",
        "keys/S.PEM", "id_rsa.pub", "secrets/db/p.json", "ok.txt", ".npmrc", "sub/.netrc", "k.key/inner.txt"]
PATTERNS = [*DEFAULT_PATTERNS, "config/*.env", "secrets/"]
KEPT = [".envrc", "ok.txt", "x/config/a.env"]


def _tree(root: Path) -> None:
    for rel in TREE:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("needle\n")


def test_python_matching_keeps_the_same_files_as_the_engines(tmp_path):
    rules = ModelExclude(PATTERNS)
    assert sorted(rel for rel in TREE if rules.match(rel) is None) == KEPT


def test_git_pathspecs_leave_out_the_same_files(tmp_path):
    _tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    specs = ModelExclude(PATTERNS).git_pathspecs()
    listed = subprocess.run(["git", "-C", str(tmp_path), "ls-files", "--", ".", *specs], check=True,
                            capture_output=True, text=True).stdout.split()
    assert sorted(listed) == KEPT
    grep = subprocess.run(["git", "-C", str(tmp_path), "grep", "-l", "needle", "--", ".", *specs], check=True,
                          capture_output=True, text=True).stdout.split()
    assert sorted(grep) == KEPT
    untracked = subprocess.run(["git", "-C", str(tmp_path), "grep", "--no-index", "-l", "needle", "--", ".", *specs],
                               check=True, capture_output=True, text=True).stdout.split()
    assert sorted(untracked) == KEPT


def _rg() -> str:
    found = Path(sys.executable).parent / "rg"
    return str(found) if found.exists() else shutil.which("rg") or pytest.fail("no rg: install ripgrep==14.1.0")


def test_ripgrep_globs_leave_out_the_same_files(tmp_path):
    _tree(tmp_path)
    args = ModelExclude(PATTERNS).rg_globs()
    out = subprocess.run([_rg(), "--hidden", "--no-ignore", "-l", "needle", *args, "."], cwd=tmp_path,
                         check=True, capture_output=True, text=True).stdout.split()
    assert sorted(p.removeprefix("./") for p in out) == KEPT
    below = subprocess.run([_rg(), "--hidden", "--no-ignore", "-l", "needle", *args, "config", "x"], cwd=tmp_path,
                           check=True, capture_output=True, text=True).stdout.split()
    assert below == ["x/config/a.env"]  # an anchored pattern still applies below the search root


async def test_the_tools_refuse_an_excluded_file_they_were_not_allowed(tmp_path):
    """Defence in depth: whatever path led to it, read_file and edit_file refuse an excluded file
    unless the call's context allows it (the scheduler sets that after the user's yes)."""
    from toolwire.tools.edit import EditFile, EditFileArgs
    from toolwire.tools.files import ReadFile, ReadFileArgs
    from toolwire.workspace.errors import ToolError
    from toolwire.workspace.paths import resolve_path

    root = tmp_path.resolve()
    (root / "keys").mkdir()
    (root / "keys" / "server.pem").write_text("KEY MATERIAL\n")
    (root / "link.txt").symlink_to("keys/server.pem")
    ctx = ToolContext(root=root)
    for path in ("keys/server.pem", "link.txt", "KEYS/../keys/server.pem"):
        with pytest.raises(ToolError) as info:
            await ReadFile().run(ReadFileArgs(path=path), ctx)
        assert info.value.code == "excluded" and "(pattern '*.pem')" in info.value.message
        assert "KEY MATERIAL" not in info.value.message
    with pytest.raises(ToolError) as info:
        await EditFile().plan(EditFileArgs(path="keys/server.pem", old_string="nope", new_string="x"), ctx)
    assert info.value.code == "excluded"  # not no_match: that would tell what the file holds
    ctx.allowed_excluded = frozenset({resolve_path(root, "keys/server.pem").resolved})
    assert (await ReadFile().run(ReadFileArgs(path="link.txt"), ctx)).content == "KEY MATERIAL\n"
    assert (await ReadFile().run(ReadFileArgs(path="keys/server.pem"), ctx)).content == "KEY MATERIAL\n"


@pytest.mark.parametrize("path, shown", [("config/.env", "config/.env"), ("notes.txt", "notes.txt"),
                                         ("config/../config/.env", "config/.env")])
async def test_search_files_scoped_to_an_excluded_file_searches_nothing(tmp_path, path, shown):
    """An engine given a file by name searches it whatever its exclusion globs say (rg does):
    a search whose path is an excluded file, or a link to one, runs no engine and names it."""
    from toolwire.tools import default_registry
    from toolwire.tools.base import validate_arguments

    root = tmp_path.resolve()
    (root / "config").mkdir()
    (root / "config" / ".env").write_text("TOKEN=hunter2secret\n")
    (root / "notes.txt").symlink_to("config/.env")
    tool = default_registry().get("search_files")
    result = await tool.run(validate_arguments(tool, {"query": "hunter2", "path": path}), ToolContext(root=root))
    assert "hunter2secret" not in result.content
    assert result.content == f"[]\n\nnot searched (modelExclude): {shown} — read_file asks the user"
    assert result.data["excluded"] == [{"path": shown, "pattern": ".env"}] and result.data["engine"] == "none"


@pytest.mark.parametrize("untracked", [False, True])
def test_git_listing_pathspecs_name_every_excluded_file(tmp_path, untracked):
    """The one-per-pattern wildcard pathspecs that name the excluded files for search_files
    under git (``*<body>*``, ``*`` crossing ``/``) list a superset of them, tracked or not; the
    names are then tested with ``match``, which keeps exactly the excluded ones."""
    _tree(tmp_path)
    (tmp_path / "config" / "a.env.bak").write_text("needle\n")  # listed by the superset, not excluded
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if not untracked:
        subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    rules = ModelExclude(PATTERNS)
    specs = rules.git_listing_pathspecs()
    assert len(specs) == len(PATTERNS) and all(spec.startswith(":(icase)") for spec in specs)
    listed = subprocess.run(["git", "-C", str(tmp_path), "ls-files", "-z", "--cached", "--others", "--", *specs],
                            check=True, capture_output=True, text=True).stdout.split("\0")[:-1]
    assert "config/a.env.bak" in listed
    assert sorted(rel for rel in listed if rules.match(rel) is not None) == sorted(set(TREE) - set(KEPT))
    braces = ModelExclude(["*.{pem,key}"]).git_listing_pathspecs()  # not git's syntax: the glob pairs
    assert braces == [s.replace("exclude,", "", 1) for s in ModelExclude(["*.{pem,key}"]).git_pathspecs()]


def test_a_brace_pattern_is_left_out_by_git_grep_too(tmp_path):
    """``*.{pem,key}``: git's pathspecs have no braces; each alternative is a pathspec pair
    (git grep searched a.pem and b.key and showed their lines)."""
    for name in ("a.pem", "k/b.KEY", "c.txt", "d.pem/inner.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("needle\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    specs = ModelExclude(["*.{pem,key}"]).git_pathspecs()
    for mode in (["--untracked"], ["--no-index"], []):
        if not mode:
            subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
        grep = subprocess.run(["git", "-C", str(tmp_path), "grep", *mode, "-l", "needle", "--", ".", *specs],
                              check=True, capture_output=True, text=True).stdout.split()
        assert grep == ["c.txt"], mode
