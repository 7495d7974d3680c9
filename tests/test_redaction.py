"""The redactor (toolwire.redaction): what is a secret, where it is replaced, and how.

Values of 8+ characters are replaced wherever they occur; shorter ones only in their
structural place (URL user info, the query value, the header value, KEY=value).
"""

from __future__ import annotations

import base64
import json
import logging

import pytest

from toolwire.redaction import REDACTED, Redactor, redact_url, shared

LONG_PASSWORD = "s3cretpassword"
URL = f"http://user:{LONG_PASSWORD}@127.0.0.1:8765/v1?api-key=AKEY-0123456789&token=TOK-0123456789&model=gpt"


def fresh() -> Redactor:
    return Redactor(env={})


def test_a_url_s_user_info_and_key_values_are_replaced_and_its_host_port_and_plain_values_kept():
    r = fresh()
    r.add_url(URL)
    text = r.redact(f"cannot reach the model endpoint {URL}: ConnectError: All connection attempts failed")
    assert text == ("cannot reach the model endpoint http://***@127.0.0.1:8765/v1?api-key=***&token=***&model=gpt: "
                    "ConnectError: All connection attempts failed")


def test_long_url_secrets_are_replaced_wherever_they_occur():
    r = fresh()
    r.add_url(URL)
    basic = base64.b64encode(f"user:{LONG_PASSWORD}".encode()).decode()
    text = r.redact(f"echo: {LONG_PASSWORD} / AKEY-0123456789 / TOK-0123456789 / Basic {basic}")
    assert text == "echo: *** / *** / *** / Basic ***"


@pytest.mark.parametrize("name", [
    "key", "api-key", "api_key", "apikey", "API-KEY", "token", "access_token", "refresh_token", "id_token",
    "sig", "signature", "password", "passwd", "secret", "client_secret", "auth", "code", "X-Amz-Signature",
    "X-Amz-Credential", "X-Amz-Security-Token", "subscription-key", "x-goog-api-key", "my_custom_token",
])
def test_every_key_like_query_value_is_masked_even_short_and_unregistered(name):
    assert redact_url(f"https://h.example:443/p?{name}=ab&x=1#f") == f"https://h.example:443/p?{name}=***&x=1#f"


def test_a_raw_at_sign_in_a_password_and_a_fragment_token_are_masked():
    r = fresh()
    url = "postgres://admin:p@ss@db.example:5432/app"
    r.add_url(url)
    assert r.redact(f"connect {url} failed") == "connect postgres://***@db.example:5432/app failed"
    assert redact_url("https://app.example/cb#access_token=ab.cd&state=1") == (
        "https://app.example/cb#access_token=***&state=1")
    assert redact_url("mail me at a@b.example, see http://host/x@y") == "mail me at a@b.example, see http://host/x@y"


@pytest.mark.parametrize("name", ["model", "api-version", "limit", "q", "keyboard"])
def test_ordinary_query_values_stay(name):
    assert redact_url(f"https://h/p?{name}=gpt-4o-mini") == f"https://h/p?{name}=gpt-4o-mini"


def test_short_secrets_are_masked_only_in_their_structural_place():
    r = fresh()
    r.add_url("http://bob:pw1@host:99/v1?key=k1")
    r.add_header("X-Api-Key", "hk1")
    r.add_env("GH_TOKEN", "ev1")
    r.add("sk-1")  # an API key of 4 characters
    prose = "pw1 bob k1 hk1 ev1 sk-1 are ordinary words here"
    assert r.redact(prose) == prose
    assert r.redact("see http://bob:pw1@host:99/v1?key=k1") == "see http://***@host:99/v1?key=***"
    assert r.redact("X-Api-Key: hk1\n{'x-api-key': 'hk1'} {\"X-Api-Key\": \"hk1\"}") == (
        "X-Api-Key: ***\n{'x-api-key': '***'} {\"X-Api-Key\": \"***\"}")
    assert r.redact("GH_TOKEN=ev1 {'GH_TOKEN': 'ev1'} {\"GH_TOKEN\": \"ev1\"}") == (
        "GH_TOKEN=*** {'GH_TOKEN': '***'} {\"GH_TOKEN\": \"***\"}")
    assert r.redact("Authorization: Bearer sk-1 {'apiKey': 'sk-1'}") == "Authorization: Bearer *** {'apiKey': '***'}"


def test_long_header_and_env_values_are_replaced_anywhere_and_a_scheme_word_stays():
    r = fresh()
    r.add_header("Authorization", "Bearer ghp_0123456789abcdef")
    r.add_env("SERVICE_PASSWORD", "hunter2hunter2")
    text = r.redact("token ghp_0123456789abcdef; password hunter2hunter2; Authorization: Bearer ghp_0123456789abcdef")
    assert text == "token ***; password ***; Authorization: Bearer ***"


def test_an_env_name_is_case_sensitive_and_a_header_name_is_not():
    r = fresh()
    r.add_env("DEBUG", "1")
    r.add_header("X-Token", "t")
    assert r.redact("DEBUG=1 debug=1 x-token: t") == "DEBUG=*** debug=1 x-token: ***"


def test_json_escaped_and_percent_decoded_forms_are_replaced():
    r = fresh()
    r.add('sk-"quoted"\\back')
    r.add_url("http://u:p%40ss%2Fw0rd!@h/v1")
    escaped = json.dumps('sk-"quoted"\\back')[1:-1]
    assert r.redact(f"raw {escaped} and p@ss/w0rd! and p%40ss%2Fw0rd!") == "raw *** and *** and ***"


def test_the_inherited_environment_is_never_redacted_wholesale():
    env = {"HOME": "/home/someone-long", "PATH": "/usr/local/bin:/usr/bin", "OPENAI_API_KEY": "sk-env-0123456789",
           "OPENAI_BASE_URL": "https://gw:gatewaypassword1@gw.example/v1", "SOME_TOKEN": "not-read-by-toolwire",
           "HTTPS_PROXY": "http://me:proxypassword2@proxy.example:3128"}
    r = Redactor(env=env)
    text = r.redact("home /home/someone-long path /usr/local/bin:/usr/bin key sk-env-0123456789 pw gatewaypassword1 "
                    "proxy proxypassword2 other not-read-by-toolwire")
    assert text == ("home /home/someone-long path /usr/local/bin:/usr/bin key *** pw *** proxy *** "
                    "other not-read-by-toolwire")


def test_content_a_client_shows_keeps_quoted_fields_and_bearer_words_a_log_masks():
    """``password = "hunter2"`` in a file or the model's text is content: a message
    shows it (the panel, a diff to approve); a log record or an error masks it."""
    r = fresh()
    r.add_url(URL)
    text = f'config: password = "hunter2", token: "abc", Authorization: Bearer xyz; url {URL}'
    shown = 'config: password = "hunter2", token: "abc", Authorization: Bearer xyz; url http://***@127.0.0.1:8765/v1?'
    assert r.redact_content(text).startswith(shown)
    assert r.redact_data({"text": text})["text"].startswith(shown)
    assert r.redact(text).startswith('config: password = "***", token: "***", Authorization: Bearer ***; url http://***@')


def test_redact_data_walks_strings_and_keeps_the_named_fields_exact():
    r = fresh()
    r.add("sk-long-secret-1")
    data = {"message": "HTTP 401: sk-long-secret-1", "list": ["sk-long-secret-1", 5, None],
            "sk-long-secret-1": True, "argumentsDelta": {"text": "sk-long-secret-1"}}
    out = r.redact_data(data, keep={"argumentsDelta"})
    assert out == {"message": "HTTP 401: ***", "list": ["***", 5, None], "sk-long-secret-1": True,
                   "argumentsDelta": {"text": "sk-long-secret-1"}}
    assert data["message"] == "HTTP 401: sk-long-secret-1"  # a copy, the original is untouched


def test_settings_register_api_keys_urls_headers_and_env_at_any_depth():
    r = fresh()
    r.add_settings({"apiKey": "sk-settings-0123", "baseUrl": "http://a:b@h/v1?sig=abcdefgh9",
                    "mcpServers": {"x": {"url": "https://h2/mcp?token=mcptoken99", "headers": {"X-Key": "hv"},
                                         "env": {"API_TOKEN": "ev"}}}})
    assert r.redact("sk-settings-0123 abcdefgh9 mcptoken99") == "*** *** ***"
    assert r.redact("X-Key: hv\nAPI_TOKEN=ev") == "X-Key: ***\nAPI_TOKEN=***"


def test_log_records_at_every_level_are_rewritten_args_and_tracebacks_included():
    r = fresh()
    r.add_url(URL)
    record = logging.LogRecord("pygls.protocol", logging.DEBUG, __file__, 1, "Sending data: %s", (URL,), None)
    try:
        raise ValueError(f"bad {LONG_PASSWORD}")
    except ValueError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    assert r.filter(record) is True
    formatted = logging.Formatter("%(message)s").format(record)
    assert LONG_PASSWORD not in formatted and "AKEY-0123456789" not in formatted
    assert "http://***@127.0.0.1:8765/v1?api-key=***" in formatted and "ValueError: bad ***" in formatted


def test_the_shared_redactor_is_one_object():
    assert shared() is shared()
    assert isinstance(shared(), Redactor) and REDACTED == "***"


def test_cli_logging_redacts_warnings_and_the_last_words_of_an_uncaught_exception(tmp_path):
    """What bypasses log records (a library's warnings.warn, the interpreter's traceback
    on stderr) is redacted too once the command set up its logging."""
    import subprocess
    import sys

    log = tmp_path / "cli.log"
    code = (f"import warnings; from toolwire import cli; cli._setup_logging('INFO', {str(log)!r}); "
            f"warnings.warn('retrying {URL}'); raise RuntimeError('failed: {URL}')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "RuntimeError: failed: http://***@127.0.0.1:8765/v1?api-key=***" in done.stderr
    assert "retrying http://***@127.0.0.1:8765/v1?api-key=***&token=***" in log.read_text()
    for text in (done.stderr, log.read_text()):
        assert LONG_PASSWORD not in text and "AKEY-0123456789" not in text


def _ts_strings(source: str, name: str) -> set[str]:
    """The string literals of the TypeScript constant ``name`` (a Set or an array)."""
    import re
    body = re.search(rf"const {name} = (?:new Set\(\[)?\[?(.*?)\]", source, re.S)
    assert body, f"{name} not found in client-vscode/src/redact.ts"
    return set(re.findall(r'"([^"]*)"', body.group(1)))


def test_the_client_names_the_same_secrets_as_the_server():
    """The VS Code client redacts its own output channel with a copy of the name lists
    (it runs before the server starts); the copy must not drift from secret_names.py."""
    from pathlib import Path

    from toolwire import secret_names
    source = (Path(__file__).parent.parent / "client-vscode" / "src" / "redact.ts").read_text()
    assert _ts_strings(source, "KEY_NAMES") == set(secret_names.KEY_NAMES)
    assert _ts_strings(source, "KEY_SUFFIXES") == set(secret_names.KEY_SUFFIXES)
    assert _ts_strings(source, "FIELD_NAMES") <= set(secret_names.FIELD_NAMES)
