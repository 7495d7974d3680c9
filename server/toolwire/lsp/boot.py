"""The server's light start: what must exist before ``initialize`` is answered.

``toolwire serve`` runs :mod:`toolwire.lsp.main`, which imports this module, not
:mod:`toolwire.lsp.server`: it holds the
server class and instance, the ``initialize`` handler and the two features that
shape the capabilities of the ``initialize`` answer (code actions and the
``toolwire.runAction`` command), and imports nothing beyond pygls, lsprotocol and
a few small modules of ours. The rest (the ``toolwire/`` handlers, the agent, the
tools, pydantic's wire and settings models) is imported by
:meth:`ToolwireServer.after_initialize`, which the protocol runs right after the
``initialize`` answer is written and before any later message is handled
(:class:`toolwire.rpc.protocol.RpcProtocol`). So a client sees the same server,
only its ``initialize`` answer comes about as early as a bare pygls server's
(issue 12; ``bench/server.py`` measures it), and what the rest costs to import is
paid while the client handles that answer.

``initializationOptions`` are validated in ``after_initialize`` too: refused
entries are reported with one ``window/showMessage`` (type Error) right after the
``initialize`` answer, before anything else the server sends.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from toolwire import __version__
from toolwire.lsp.buffers import BufferStore, DocumentSyncMixin, negotiated_encoding
from toolwire.lsp.persist import ClientLink
from toolwire.redaction import shared as shared_redactor
from toolwire.rpc.errors import CLIENT_MISTAKES, answer_parse_error, clip
from toolwire.rpc.protocol import RpcProtocol, make_converter

if TYPE_CHECKING:
    from toolwire.agent.host import SessionHost
    from toolwire.tools.editor_intel import DiagnosticsFeed


class Handlers(Protocol):
    """What :mod:`toolwire.lsp.server` gives the light server once it is loaded."""

    def load(self, ls: "ToolwireServer") -> None: ...

    def finish_initialize(self, ls: "ToolwireServer", params: types.InitializeParams | None) -> None: ...

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]: ...

    async def run_action(self, ls: "ToolwireServer", *arguments: Any) -> dict[str, Any]: ...

log = logging.getLogger("toolwire.lsp.server")

#: The command every code action carries (:mod:`toolwire.lsp.actions` runs it).
RUN_ACTION = "toolwire.runAction"
#: Code action kinds offered (declared in the server's capabilities).
CODE_ACTION_KINDS = (types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite,
                     types.CodeActionKind.Empty)


class ToolwireProtocol(DocumentSyncMixin, RpcProtocol):
    """The LSP front-end's protocol object (one per connection): the JSON-RPC and
    LSP message rules of :class:`toolwire.rpc.protocol.RpcProtocol`, with our own
    document sync (:class:`toolwire.lsp.buffers.DocumentSyncMixin`)."""


class ToolwireServer(LanguageServer):
    """The Toolwire language server: the LSP front-end of :class:`toolwire.agent.host.SessionHost`.

    Attributes:
        host: The sessions (set by :meth:`after_initialize`, with the settings of
            ``initializationOptions``): where a session lives.
        pending_permissions: Per session id, the ``toolwire/session/requestPermission``
            params still waiting for the client's answer, by request id.
        redactor: The process's redactor (:func:`toolwire.redaction.shared`): keeps every
            secret the server is given out of logs and of every message it sends
            (a filter on every log handler; :meth:`ToolwireProtocol._send_data`).
        progress_cancels: Per work-done progress token, what its cancel does.
        permission_fallback: The client does not know ``toolwire/session/requestPermission``;
            approvals are asked with ``window/showMessageRequest``.
        buffers: The editor's open documents (our own document sync, see
            :mod:`toolwire.lsp.buffers`), in the negotiated position encoding.
        link: Whether a client is connected (clients come and go over ``--socket``,
            see :mod:`toolwire.lsp.persist`).
        editor_feed: The files whose problems the client reported changed
            (``toolwire/editor/diagnosticsChanged``, :mod:`toolwire.lsp.editor_link`; set with the host).
    """

    host: "SessionHost"
    editor_feed: "DiagnosticsFeed"

    def __init__(self, loader: Callable[[], Handlers] | None = None) -> None:
        super().__init__(
            "toolwire",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=ToolwireProtocol,
            converter_factory=make_converter,
        )
        self.buffers = BufferStore(lambda: negotiated_encoding(self))
        self.pending_permissions: dict[str, dict[str, dict[str, Any]]] = {}
        self.redactor = shared_redactor()
        self.redactor.install()  # logging is set up before the server is built (cli.py)
        self.progress_cancels: dict[str, Any] = {}
        self.permission_fallback = False
        self.link = ClientLink()
        self.initialize_params: types.InitializeParams | None = None
        self.loader = loader
        self.handlers: Handlers | None = None

    def after_initialize(self) -> None:
        """After each connection's ``initialize`` answer (see the module docstring): the
        first time, load the handlers (and the session host), reap child processes on the
        event loop (:func:`use_pidfd_child_watcher`) and move what was loaded out of
        the garbage collector's way (``gc.freeze``); every time, apply that
        ``initialize``'s ``initializationOptions``."""
        if self.handlers is None:
            if self.loader is None:
                raise RuntimeError("no handlers to load: serve toolwire.lsp.main.server")
            handlers = self.handlers = self.loader()  # registers every other feature
            use_pidfd_child_watcher()
            handlers.load(self)
            # Everything loaded so far lives as long as the process: the collector's
            # full passes need not walk it again (each would visit every class, function
            # and schema of pygls, lsprotocol, pydantic and ours; a fed stream of
            # 256-chunk requests ran ~15 % slower with them).
            gc.freeze()
        self.handlers.finish_initialize(self, self.initialize_params)

    def spawn(self, coro: Any) -> asyncio.Task:
        """Run ``coro`` as a task nobody awaits (code actions, progress), owned by the session
        host (:meth:`toolwire.agent.host.SessionHost.spawn`: kept until done, errors logged)."""
        return self.host.spawn(coro)

    def reset_editor_state(self) -> None:
        """A new client connected (``--socket``): what the server knew of the previous
        editor (open buffers, work-done progress, the approval fallback) is dropped;
        the new client sends its own."""
        self.buffers = BufferStore(lambda: negotiated_encoding(self))
        self.progress_cancels.clear()
        self.permission_fallback = False

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Answer a body that is not JSON with -32700; log everything else as one line (no pop-ups)."""
        if answer_parse_error(self.protocol, error):
            log.warning("a message was not valid JSON: %s", clip(str(error), 200))
            return
        if isinstance(error, JsonRpcException) and error.code in CLIENT_MISTAKES:
            return  # already logged as one line where it was answered
        log.error("server error (%s): %s", getattr(source, "__name__", source), clip(str(error), 300))


def use_pidfd_child_watcher() -> bool:
    """Reap the server's child processes (git) through pidfds on the running event loop.

    Python 3.11's asyncio waits for each child process in a thread of its own
    (``ThreadedChildWatcher``): on a loaded 2-core machine that thread's start and
    hand-over cost 2–4 ms per git run (issue 12, ``bench/server.py`` git figure).
    ``PidfdChildWatcher`` (Linux 5.3+) waits on the event loop instead; Python 3.12
    uses it by default, so nothing is done there. Call it from the server's event
    loop, which lives as long as the process (the watcher is bound to it).

    Returns:
        True when installed; False on Python 3.12+, or when pidfds are unavailable
        (not Linux, an old kernel, a sandbox refusing ``pidfd_open``).
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    watcher = asyncio.PidfdChildWatcher()
    watcher.attach_loop(asyncio.get_running_loop())
    asyncio.set_child_watcher(watcher)
    return True


server = ToolwireServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: ToolwireServer, params: types.InitializeParams) -> None:
    """``initialize``: keep the params for :meth:`ToolwireServer.after_initialize`, which
    validates ``initializationOptions`` once the answer is written."""
    ls.redactor.install()
    ls.redactor.add_settings(params.initialization_options)  # valid or not: refused values are echoed
    ls.initialize_params = params


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=list(CODE_ACTION_KINDS), resolve_provider=False))
def code_action(ls: ToolwireServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """``textDocument/codeAction``: Edit selection / Explain / Fix '<diagnostic>' (see protocol.md)."""
    assert ls.handlers is not None  # loaded once ``initialize`` was answered
    return ls.handlers.code_actions(params)


@server.command(RUN_ACTION)
async def run_action(ls: ToolwireServer, *arguments: Any) -> dict[str, Any]:
    """``workspace/executeCommand`` ``toolwire.runAction`` → ``{sessionId, turnId}``; the turn runs on."""
    assert ls.handlers is not None  # loaded once ``initialize`` was answered
    return await ls.handlers.run_action(ls, *arguments)
