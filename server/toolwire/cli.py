"""The ``toolwire`` command: ``serve``, ``run``, ``acp``, ``demo``, ``merge``, ``undo``.

In ``serve`` mode stdout is the JSON-RPC channel: nothing else is ever written
to it; logs go to stderr or ``--log-file``. Every log handler, the last words of an
uncaught exception and what ``run`` and ``acp`` print are redacted
(:mod:`toolwire.redaction`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path


def _setup_logging(level: str, log_file: str | None, command: str = "") -> bool:
    """Send the root logger to ``log_file`` (appended to) or stderr.

    Returns:
        False, after printing one line saying why on stderr, when ``log_file``
        cannot be opened for writing (a missing folder, a folder, no permission).
    """
    try:
        handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    except OSError as exc:
        print(f"toolwire {command}: cannot write the log file {log_file}: {exc.strerror or exc}", file=sys.stderr)
        return False
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    from toolwire.redaction import shared

    shared().install()  # every record, pygls' and the libraries' included, at every level
    shared().install_excepthook()
    logging.captureWarnings(True)  # a library's warning goes through the handler too, not straight to stderr
    if level.upper() != "DEBUG":
        logging.getLogger("pygls").setLevel(logging.WARNING)
    return True


def _serve(args: argparse.Namespace) -> int:
    if args.tcp and args.socket:
        print("toolwire serve: --tcp and --socket cannot be used together", file=sys.stderr)
        return 2
    if args.idle_exit is not None and not args.socket:
        print("toolwire serve: --idle-exit applies only with --socket", file=sys.stderr)
        return 2
    if args.idle_exit is not None and not 0 < args.idle_exit <= 86400:
        print("toolwire serve: --idle-exit takes seconds between 0 and 86400", file=sys.stderr)
        return 2
    if args.tcp:
        from toolwire.rpc.transport import parse_address

        try:
            host, port = parse_address(args.tcp)
        except ValueError as exc:
            print(f"toolwire serve: {exc}", file=sys.stderr)
            return 2
    if not _setup_logging(args.log_level, args.log_file, "serve"):
        return 2
    from toolwire.lsp.main import server

    if args.socket:
        from toolwire.lsp.persist import DEFAULT_IDLE_EXIT, serve_socket
        from toolwire.rpc.transport import ListenError

        try:
            serve_socket(server, Path(args.socket).absolute(),
                         args.idle_exit if args.idle_exit is not None else DEFAULT_IDLE_EXIT,
                         detach_stdio=bool(args.log_file))
        except ListenError as exc:
            print(f"toolwire serve: {exc}", file=sys.stderr)
            return 2
    elif args.tcp:
        from toolwire.rpc.transport import ListenError, serve_tcp

        try:
            serve_tcp(server, host, port)
        except ListenError as exc:
            print(f"toolwire serve: {exc}", file=sys.stderr)
            return 2
    else:
        from toolwire.rpc.transport import serve_stdio

        serve_stdio(server)
    # LSP: ``exit`` after ``shutdown`` exits 0, without it 1; a client that just
    # closes the stream leaves 0.
    return server.protocol.exit_code or 0


def _run(args: argparse.Namespace) -> int:
    _setup_logging(args.log_level, None)
    from toolwire.headless.client import RunOptions, run_turn

    workspace = Path(args.workspace)
    if not workspace.is_dir():
        print(f"toolwire run: --workspace {workspace} is not a folder", file=sys.stderr)
        return 2
    if args.server_log:
        try:  # the server appends to it; checked here so a bad path is one line, not a dead server
            with open(args.server_log, "a"):
                pass
        except OSError as exc:
            print(f"toolwire run: cannot write --server-log {args.server_log}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    if args.approve == "ask" and not sys.stdin.isatty():
        print("toolwire run: --approve ask needs a terminal on stdin to ask on; use --approve yes or --approve no",
              file=sys.stderr)
        return 2
    approve = args.approve or ("ask" if sys.stdin.isatty() else "no")
    settings = _settings_json("run", args.settings)
    if settings is None:
        return 2
    from toolwire.redaction import shared
    from toolwire.settings import parse_settings

    shared().add_settings(settings)
    _, problems = parse_settings(settings)
    if problems:
        for problem in problems:
            print(shared().redact(f"toolwire run: invalid --settings: {problem}"), file=sys.stderr)
        return 2
    model = _model_spec(args.model)
    options = RunOptions(
        workspace=workspace,
        model=model,
        settings=settings,
        prompt=args.prompt,
        approve=approve,
        json=args.json,
        continues=args.continue_,
        server_args=["--log-level", args.log_level] + (["--log-file", args.server_log] if args.server_log else []),
    )
    return asyncio.run(run_turn(options))


def _count(text: str) -> int:
    """A count from 0 to 100 (``--continue``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 100, not {text!r}")
    return value


def _settings_json(command: str, text: str | None) -> dict | None:
    """``--settings`` as a JSON object ({} when absent), or None after printing why it is not one."""
    try:
        value = json.loads(text) if text else {}
    except ValueError as exc:
        print(f"toolwire {command}: --settings is not JSON: {exc}", file=sys.stderr)
        return None
    if not isinstance(value, dict):
        print(f"toolwire {command}: --settings must be a JSON object", file=sys.stderr)
        return None
    return value


def _model_spec(spec: str) -> str:
    """The model spec with a relative ``replay:SCRIPT`` made absolute (relative to where the user typed it)."""
    kind, sep, script = spec.partition(":")
    if kind == "replay" and sep and not Path(script).expanduser().is_absolute():
        return f"replay:{Path(script).expanduser().resolve()}"
    return spec


def _acp(args: argparse.Namespace) -> int:
    if not _setup_logging(args.log_level, args.log_file, "acp"):
        return 2
    from toolwire.redaction import shared
    from toolwire.settings import parse_settings

    raw = _settings_json("acp", args.settings)
    if raw is None:
        return 2
    shared().add_settings(raw)
    if args.model:
        raw = {**raw, "model": _model_spec(args.model)}
    settings, problems = parse_settings(raw)
    if problems:
        for problem in problems:
            print(shared().redact(f"toolwire acp: invalid --settings: {problem}"), file=sys.stderr)
        return 2
    from toolwire.acp.main import run

    return run(settings)


def _demo(args: argparse.Namespace) -> int:
    _setup_logging("WARNING", None)
    from toolwire.demo import run_demo

    return run_demo(keep=args.keep)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``toolwire`` command.

    Args:
        command: The subcommand about to be parsed, when known: the ``merge``
            arguments (whose ``--format`` choices import every stream format) are
            then added only for ``merge`` (and the ``undo`` ones only for ``undo``),
            so ``serve`` starts without them.
    """
    parser = argparse.ArgumentParser(prog="toolwire", description="Toolwire: the language-server backend of an AI coding assistant.")
    from toolwire import __version__

    parser.add_argument("--version", action="version", version=f"toolwire {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (LSP over stdio, or TCP)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--socket", metavar="PATH",
                       help="listen on a Unix socket; sessions outlive a client, which may reconnect")
    serve.add_argument("--idle-exit", metavar="SECONDS", type=float,
                       help="with --socket: exit after this long with no client and no running turn (default 60)")
    serve.add_argument("--log-file", help="write logs to this file instead of stderr")
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.set_defaults(func=_serve)

    run = sub.add_parser("run", help="run one prompt headless against a fresh server")
    run.add_argument("--workspace", required=True, help="the workspace folder")
    run.add_argument("--model", default="replay", help="replay, replay:SCRIPT, openai:MODEL or openai-responses:MODEL")
    run.add_argument("--approve", choices=["yes", "no", "ask"], help="answer permission requests (default: ask on a terminal, else no)")
    run.add_argument("--json", action="store_true", help="print every update as one JSON line, then the stop reason")
    run.add_argument("--settings", metavar="JSON", help='server settings as a JSON object, e.g. \'{"replayLog": "req.jsonl"}\'')
    run.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    run.add_argument("--server-log", help="the server's log file")
    run.add_argument("--continue", dest="continue_", metavar="N", type=_count, default=0,
                     help="when the turn stops at the model-request cap (maxModelRequests), continue it on the "
                          "same history up to N times (default 0)")
    run.add_argument("prompt", help="the prompt")
    run.set_defaults(func=_run)

    acp = sub.add_parser("acp", help="run as an Agent Client Protocol agent over stdio (Zed, JetBrains, Neovim)")
    acp.add_argument("--model", help="replay, replay:SCRIPT, openai:MODEL or openai-responses:MODEL (default: the settings' model)")
    acp.add_argument("--settings", metavar="JSON", help="settings as a JSON object (protocol.md's settings table)")
    acp.add_argument("--log-file", help="write logs to this file instead of stderr")
    acp.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    acp.set_defaults(func=_acp)

    demo = sub.add_parser("demo", help="run the bundled demo on a fresh temporary git repository")
    demo.add_argument("--keep", action="store_true", help="keep the temporary repository and print its path")
    demo.set_defaults(func=_demo)

    merge = sub.add_parser("merge", help="merge a recorded provider stream and print its tool calls")
    if command in (None, "merge"):
        from toolwire import merge_cli  # pure: no server, no openai

        merge_cli.configure(merge)
        merge.set_defaults(func=merge_cli.run)

    undo = sub.add_parser("undo", help="undo (or redo) a turn from its saved checkpoint, without a server")
    if command in (None, "undo"):
        from toolwire import undo_cli  # imports the agent only when it runs

        undo_cli.configure(undo)
        undo.set_defaults(func=undo_cli.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``toolwire`` console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    return int(args.func(args) or 0)
