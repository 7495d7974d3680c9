"""MCP server configuration (protocol.md, "MCP server configuration"): the ``mcpServers``
setting and its refusals, ``.vscode/mcp.json`` (opt-in), variables, ``envFile``, ``${input:…}``,
order and duplicate names, and that no secret reaches a message. Real files in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolwire.mcp.config import (HttpServerConfig, ServerSpec, StdioServerConfig, parse_servers, register_secrets,
                                 resolve_servers)
from toolwire.redaction import REDACTED, Redactor
from toolwire.settings import Settings, parse_settings

SECRET = "s3cr3t-value-of-the-test"
HOME = "/home/tester"


def resolve(root: Path, configured=None, **kwargs):
    return resolve_servers(parse_servers(configured or {}), root=root, workspace_file=kwargs.pop("workspace_file", False),
                           home=HOME, env=kwargs.pop("env", {}), **kwargs)


def write_mcp_json(root: Path, text: str) -> None:
    (root / ".vscode").mkdir(exist_ok=True)
    (root / ".vscode" / "mcp.json").write_text(text)


# -- parsing and refusals ------------------------------------------------------


def test_entries_parse_in_order_and_type_may_be_left_out():
    servers = parse_servers({
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        "web": {"url": "http://127.0.0.1:3001/mcp", "headers": {"X-Key": SECRET}, "tools": ["echo"]},
        "git": {"type": "stdio", "command": "mcp-server-git", "envFile": ".env", "cwd": "sub"},
    })
    assert list(servers) == ["time", "web", "git"]
    assert isinstance(servers["time"], StdioServerConfig) and servers["time"].args == ["--local-timezone", "UTC"]
    assert isinstance(servers["web"], HttpServerConfig) and servers["web"].tools == ["echo"]
    assert servers["git"].env_file == ".env" and servers["git"].cwd == "sub"


@pytest.mark.parametrize(("entry", "said"), [
    ({"type": "sse", "url": "http://127.0.0.1/sse"}, "use \"type\": \"http\" (streamable HTTP)"),
    ({"type": "websocket", "url": "ws://x"}, "type must be 'stdio' or 'http'"),
    ({"args": ["x"]}, "needs a command (stdio) or a url (http)"),
    ({"command": ""}, "command: String should have at least 1 character"),
    ({"command": "x", "args": ["a", 1]}, "args.1: Input should be a valid string"),
    ({"command": "x", "evnFile": ".env"}, "unknown key 'evnFile' (did you mean 'envFile'?)"),
    ({"type": "http"}, "url is required"),
    ({"url": "file:///etc/passwd"}, "url must be an http:// or https:// URL with a host"),
    ("uvx x", "must be an object, not str"),
    ({"command": "x", "args": ["a\0b"]}, "args must not contain a NUL character"),
    ({"command": "x", "env": {"A=B": "1"}}, "env: a variable name must not be empty nor contain '='"),
    ({"command": "x", "env": {"A": "1\0"}}, "env.A must not contain a NUL character"),
    ({"url": "http://h/mcp", "headers": {"Bad Name": "v"}}, "headers: a header name must be letters"),
    ({"url": "http://h/mcp", "headers": {"X": "a\r\nInjected: 1"}}, "headers.X must be visible ASCII"),
])
def test_a_bad_entry_is_refused_saying_what_is_wrong(entry, said):
    with pytest.raises(ValueError) as exc:
        parse_servers({"srv": entry})
    assert said in str(exc.value) and "'srv'" in str(exc.value)


@pytest.mark.parametrize(("servers", "said"), [
    ({"": {"command": "x"}}, "a server name must not be empty"),
    ({"x" * 65: {"command": "x"}}, "is longer than 64 characters"),
    ({"a__b": {"command": "x"}}, "must not contain '__'"),
    ({"a._b": {"command": "x"}}, "as 'a__b'"),
    ({"trail_": {"command": "x"}}, "nor end with '_'"),
    ({"my server": {"command": "x"}, "my_server": {"command": "y"}}, "servers 'my server' and 'my_server'"),
])
def test_server_names_that_would_make_ambiguous_tool_names_are_refused(servers, said):
    with pytest.raises(ValueError, match=None) as exc:
        parse_servers(servers)
    assert said in str(exc.value)


def test_refusals_never_quote_env_header_or_url_secrets():
    raw = {"mcpServers": {
        "a": {"command": "x", "env": {"TOKEN": 12345678}, "bogus": SECRET},
        "b": {"type": "http", "url": f"ftp://user:{SECRET}@host/?token={SECRET}", "headers": {"Authorization": 7}},
        "c": {"type": "sse", "url": f"http://host/?key={SECRET}", "headers": {"X": SECRET}},
        "d": {"command": "x", "env": {"A": SECRET}, "args": [{"k": SECRET}]},
    }}
    settings, problems = parse_settings(raw)
    assert settings.mcp_servers == {} and len(problems) == 1
    text = problems[0]
    assert SECRET not in text and "12345678" not in text and "user" not in text
    assert "env.TOKEN: Input should be a valid string" in text and "headers.Authorization" in text


def test_settings_keep_the_servers_and_they_round_trip_through_a_merge():
    from toolwire.agent.host_settings import merge_settings

    settings, problems = parse_settings({"mcpServers": {"t": {"command": "x", "env": {"K": SECRET}}, "h": {"url": "https://h/mcp"}}})
    assert problems == [] and list(settings.mcp_servers) == ["t", "h"]
    merged, trouble = merge_settings(settings, {"mcpCallTimeout": 5})
    assert trouble == [] and merged.mcp_servers == settings.mcp_servers and merged.mcp_call_timeout == 5
    assert SECRET not in repr(settings)


def test_mcp_settings_defaults_and_bounds():
    default = Settings()
    assert (default.mcp_servers, default.mcp_workspace_servers, default.mcp_start_timeout, default.mcp_call_timeout,
            default.image_input) == ({}, False, 30, 60, "auto")
    ok, problems = parse_settings({"mcpStartTimeout": 600, "mcpCallTimeout": 3600, "imageInput": False,
                                   "mcpWorkspaceServers": True})
    assert problems == [] and ok.image_input is False and ok.mcp_workspace_servers is True
    _, problems = parse_settings({"mcpStartTimeout": 0, "mcpCallTimeout": 3601, "imageInput": 1,
                                  "mcpWorkspaceServers": "true", "mcpServers": []})
    assert sorted(p.split(":")[0] for p in problems) == ["setting imageInput", "setting mcpCallTimeout",
                                                         "setting mcpServers", "setting mcpStartTimeout",
                                                         "setting mcpWorkspaceServers"]
    assert any('imageInput: must be "auto", true or false (got 1)' in p for p in problems)


@pytest.mark.parametrize(("key", "ok"), [
    ("mcp__git", True), ("mcp__git__git_log", True), ("mcp__not_configured__any", True),
    ("mcp__", False), ("mcp__git__", False), ("mcp__a b", False), ("mcp____x", False),
])
def test_mcp_permission_keys_are_checked_for_shape_only(key, ok):
    _, problems = parse_settings({"permissions": {key: "auto"}})
    assert (problems == []) is ok, problems
    if not ok:
        assert "use mcp__<server> or mcp__<server>__<tool>" in problems[0]


# -- resolving ------------------------------------------------------------------


def test_variables_are_expanded_and_cwd_is_absolute(tmp_path):
    specs, warnings = resolve(tmp_path, {
        "s": {"command": "${userHome}/bin/srv", "args": ["--repo", "${workspaceFolder}", "--t=${env:TOK}", "${env:UNSET}"],
              "env": {"A": "${env:TOK}", "B": "${unknown}"}, "cwd": "sub"},
        "h": {"type": "http", "url": "http://127.0.0.1:${env:PORT}/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"}},
        "d": {"command": "x"},
    }, env={"TOK": SECRET, "PORT": "3001"})
    assert warnings == []
    s, h, d = specs
    assert s.config.command == f"{HOME}/bin/srv"
    assert s.config.args == ["--repo", str(tmp_path), f"--t={SECRET}", ""]
    assert s.config.env == {"A": SECRET, "B": "${unknown}"} and s.config.cwd == str(tmp_path / "sub")
    assert h.config.url == "http://127.0.0.1:3001/mcp" and h.config.headers == {"Authorization": f"Bearer {SECRET}"}
    assert d.config.cwd == str(tmp_path) and {x.origin for x in specs} == {"settings"}
    assert SECRET in s.secrets


def test_env_file_is_merged_and_env_wins(tmp_path):
    (tmp_path / ".env").write_text("# tokens\nexport TOKEN='from-file'\nPLAIN=a b # comment\nQUOTED=\"x\\ny\"\n"
                                   "KEPT=${env:TOK}\nnot a line\n\nOVER=file\n")
    specs, warnings = resolve(tmp_path, {"s": {"command": "x", "envFile": "${workspaceFolder}/.env",
                                               "env": {"OVER": "setting"}}}, env={"TOK": "t"})
    assert warnings == []
    assert specs[0].config.env == {"TOKEN": "from-file", "PLAIN": "a b", "QUOTED": "x\ny", "KEPT": "${env:TOK}",
                                   "OVER": "setting"}
    assert specs[0].config.env_file is None


def test_an_env_file_that_cannot_be_read_skips_its_server(tmp_path):
    specs, warnings = resolve(tmp_path, {"s": {"command": "x", "envFile": "missing.env"}, "t": {"command": "y"}})
    assert [s.name for s in specs] == ["t"]
    assert warnings == [f"MCP server 's' is not started: its envFile {str(tmp_path / 'missing.env')!r} "
                        "cannot be read: it does not exist"]


def test_a_url_not_http_once_expanded_is_refused_without_quoting_it(tmp_path):
    specs, warnings = resolve(tmp_path, {"h": {"url": "${env:URL}"}}, env={"URL": f"ftp://u:{SECRET}@h/"})
    assert specs == [] and len(warnings) == 1
    assert "url must be an http:// or https:// URL" in warnings[0] and SECRET not in warnings[0]


def test_expanded_values_meet_the_entries_rules_and_are_never_quoted(tmp_path):
    (tmp_path / ".env").write_bytes(b"A=x\0y\n")
    specs, warnings = resolve(tmp_path, {"e": {"command": "x", "envFile": ".env"},
                                         "h": {"url": "http://h/mcp", "headers": {"X": "${env:TOKEN}"}}},
                              env={"TOKEN": f"{SECRET}\r\nInjected: 1"})
    assert specs == [] and SECRET not in "".join(warnings)
    assert warnings == ["MCP server 'e' is not started: once expanded, env.A must not contain a NUL character",
                        "MCP server 'h' is not started: once expanded, headers.X must be visible ASCII characters, "
                        "spaces and tabs only"]


def test_entries_using_input_variables_are_skipped_with_one_warning(tmp_path):
    specs, warnings = resolve(tmp_path, {
        "a": {"command": "x", "env": {"KEY": "${input:api-key}"}},
        "b": {"command": "y"},
        "c": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
    })
    assert [s.name for s in specs] == ["b"]
    assert warnings == ["MCP servers 'a', 'c' are not started: ${input:…} variables are VS Code's own prompts, "
                        "which Toolwire cannot show; give the value in env or envFile, or as ${env:NAME}"]


def test_mcp_json_is_read_only_when_opted_in(tmp_path):
    write_mcp_json(tmp_path, '{"servers": {"w": {"command": "x"}}}')
    assert resolve(tmp_path) == ([], [])
    specs, warnings = resolve(tmp_path, workspace_file=True)
    assert warnings == [] and [(s.name, s.origin) for s in specs] == [("w", "workspace")]


def test_mcp_json_with_comments_inputs_and_vs_code_keys(tmp_path):
    write_mcp_json(tmp_path, """// servers of this repository
{
  "inputs": [{"type": "promptString", "id": "token", "password": true}],
  "servers": {
    /* a local one */
    "local": {"type": "stdio", "command": "node", "args": ["s.js", "http://x//y"], "dev": {"watch": "src/**"},},
    "remote": {"url": "https://h.example/mcp", "gallery": true, "version": "1.0.0"},
    "asks": {"url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
  },
}""")
    specs, warnings = resolve(tmp_path, workspace_file=True)
    assert [s.name for s in specs] == ["local", "remote"] and specs[0].config.args == ["s.js", "http://x//y"]
    assert len(warnings) == 1 and "MCP server 'asks' is not started" in warnings[0]


def test_a_bad_mcp_json_is_a_warning(tmp_path):
    write_mcp_json(tmp_path, '/* two\nlines */\n{"servers": {"w": {"command": "x"}')
    specs, warnings = resolve(tmp_path, {"s": {"command": "x"}}, workspace_file=True)
    assert [s.name for s in specs] == ["s"]
    assert warnings == [".vscode/mcp.json cannot be used: it is not valid JSON (line 3, column 35: Expecting ',' "
                        "delimiter); none of its servers is started"]
    write_mcp_json(tmp_path, '{"servers": ' + "[" * 100_000 + "]" * 100_000 + "}")  # 200 KB, too deep to parse
    specs, warnings = resolve(tmp_path, {"s": {"command": "x"}}, workspace_file=True)
    assert [s.name for s in specs] == ["s"]
    assert warnings == [".vscode/mcp.json cannot be used: it is nested too deeply to be read; none of its servers "
                        "is started"]


def test_a_bad_mcp_json_entry_leaves_the_others(tmp_path):
    write_mcp_json(tmp_path, json.dumps({"servers": {
        "bad": {"command": "x", "env": {"K": 1}, "secretish": SECRET}, "old": {"type": "sse", "url": "http://h/sse"},
        "good": {"command": "y"}}}))
    specs, warnings = resolve(tmp_path, workspace_file=True)
    assert [s.name for s in specs] == ["good"]
    assert len(warnings) == 2 and all(w.startswith(".vscode/mcp.json: server '") for w in warnings)
    assert not any(SECRET in w for w in warnings)


def test_mcp_json_that_is_a_fifo_is_not_read(tmp_path):
    import os

    (tmp_path / ".vscode").mkdir()
    os.mkfifo(tmp_path / ".vscode" / "mcp.json")
    specs, warnings = resolve(tmp_path, workspace_file=True)
    assert specs == [] and warnings == [".vscode/mcp.json cannot be used: it is not a file; none of its servers is started"]


def test_order_is_settings_then_workspace_then_extra_and_a_later_duplicate_is_skipped(tmp_path):
    write_mcp_json(tmp_path, json.dumps({"servers": {"shared": {"command": "ws"}, "ws": {"command": "ws"},
                                                     "my server": {"command": "ws"}}}))
    specs, warnings = resolve(tmp_path, {"shared": {"command": "settings"}, "my_server": {"command": "settings"}},
                              workspace_file=True,
                              extra={"ws": {"command": "acp"}, "acp": {"command": "acp", "args": [1]},
                                     "zed": {"command": "acp"}})
    assert [(s.name, s.origin, s.config.command) for s in specs] == [
        ("shared", "settings", "settings"), ("my_server", "settings", "settings"), ("ws", "workspace", "ws"),
        ("zed", "acp", "acp")]
    assert warnings == [
        "the editor's mcpServers: server 'acp': args.0: Input should be a valid string; that server is not started",
        "MCP server 'shared' of .vscode/mcp.json is not started: the mcpServers setting has a server of that name already",
        "MCP server 'my server' of .vscode/mcp.json is not started: its tools would have the names of 'my_server''s "
        "of the mcpServers setting (mcp__my_server__…)",
        "MCP server 'ws' of the editor's mcpServers is not started: .vscode/mcp.json has a server of that name already",
    ]


def test_the_key_is_stable_and_follows_the_expanded_config(tmp_path):
    config = {"s": {"command": "x", "args": ["${env:A}"]}}
    first = resolve(tmp_path, config, env={"A": "1"})[0][0]
    assert first.key == resolve(tmp_path, config, env={"A": "1"})[0][0].key
    assert first.key != resolve(tmp_path, config, env={"A": "2"})[0][0].key
    assert first.key != resolve(tmp_path / "other", config, env={"A": "1"})[0][0].key  # cwd differs
    renamed = resolve(tmp_path, {"t": config["s"]}, env={"A": "1"})[0][0]
    assert first.key != renamed.key


# -- secrets ----------------------------------------------------------------------


def test_register_secrets_redacts_env_header_url_and_expanded_values(tmp_path):
    (tmp_path / ".env").write_text("FILE_TOKEN=from-the-env-file\nSHORT=abc\n")
    specs, _ = resolve(tmp_path, {
        "s": {"command": "x", "args": ["--token", "${env:ARG}"], "env": {"API": "env-value-secret"}, "envFile": ".env"},
        "h": {"url": "https://user:url-password@h/mcp?token=tok", "headers": {"X-Api-Key": "header-secret-value"}},
    }, env={"ARG": "from-the-environment"})
    redactor = Redactor(env={})
    register_secrets(redactor, specs)
    text = redactor.redact("from-the-env-file env-value-secret header-secret-value url-password from-the-environment")
    assert text == " ".join([REDACTED] * 5)
    assert redactor.redact("SHORT=abc") == f"SHORT={REDACTED}"
    assert redactor.redact('{"X-Api-Key": "other"}') == f'{{"X-Api-Key": "{REDACTED}"}}'


def test_add_settings_registers_mcp_servers_secrets_whatever_a_server_is_named():
    redactor = Redactor(env={})
    redactor.add_settings({"mcpServers": {
        "env": {"command": "x", "env": {"TOKEN": "named-env-secret"}},
        "headers": {"url": "https://h/mcp?key=query-secret-1", "headers": {"Authorization": "Bearer bearer-secret"}},
        "apiKey": {"url": "https://u:userinfo-secret@h/mcp"},
    }})
    text = redactor.redact_content("named-env-secret query-secret-1 bearer-secret userinfo-secret")
    assert text == " ".join([REDACTED] * 4)


def test_a_spec_s_repr_shows_no_secret(tmp_path):
    specs, _ = resolve(tmp_path, {"s": {"command": "x", "env": {"K": SECRET}},
                                  "h": {"url": f"https://h/mcp?token={SECRET}", "headers": {"A": SECRET}}})
    assert all(isinstance(s, ServerSpec) for s in specs)
    assert SECRET not in repr(specs)
