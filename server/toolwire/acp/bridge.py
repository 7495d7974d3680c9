"""Adapters from the agent's interfaces to an ACP client.

* :class:`AcpSink` — agent events → ``session/update`` notifications, in order,
  sent by one task per session (the agent's sink must not block).
* :class:`AcpApprover` — permission requests → ``session/request_permission``.
* :class:`AcpDocuments` — each of the client's ``fs`` capabilities on its own: with
  ``fs.readTextFile`` the files tools read and edit come from ``fs/read_text_file``
  (the client's buffer, unsaved edits included); with ``fs.writeTextFile`` edits go
  back through ``fs/write_text_file``; either way only after checking that the text
  that was read is still there (Toolwire's stale-file rule for open buffers).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ContextManager

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    FileEditToolCallContent,
    PlanEntry,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate as AcpToolCallUpdate,
    UsageUpdate as AcpUsageUpdate,
)

from toolwire.acp import mapping
from toolwire.agent.host import Preview, PreviewError, Session
from toolwire.acp.commands import capped_text
from toolwire.agent.events import (AgentEvent, CallSnapshot, MessageChunk, PermissionAnswer, PlanUpdate, SessionInfo,
                                   SessionWarning, ToolCallChanged, TurnUpdate, UsageUpdate, offered)
from toolwire.workspace.documents import OpenDocument
from toolwire.workspace.errors import ToolError
from toolwire.workspace.fs import atomic_write
from toolwire.workspace.names import display_text
from toolwire.workspace.shown_paths import CallPath, call_path, sendable, subject_file
from toolwire.workspace.text import BOM, encode_text

log = logging.getLogger(__name__)

#: Files larger than this are never routed through the client (the disk path
#: applies its own limits and errors).
CLIENT_FILE_LIMIT = 2 * 1024 * 1024


class SentCall:
    """What the ACP client has been told about one tool call (the fields last sent), and
    the call's path arguments as resolved for it."""

    __slots__ = ("started", "sent", "_root", "_paths")

    def __init__(self, root: Path) -> None:
        self.started = False
        self.sent: dict[str, Any] = {}
        self._root = root
        self._paths: dict[str, CallPath] = {}

    def resolve(self, written: str) -> CallPath:
        """A path argument of this call resolved as the tools do, once per call (the
        entry it names is the same for the call's whole life: a deleted or renamed
        file keeps its title and location)."""
        found = self._paths.get(written)
        if found is None:
            found = self._paths[written] = call_path(self._root, written)
        return found


class AcpSink:
    """Sends one session's agent events to the client as ``session/update``.

    :meth:`emit` only queues; :meth:`run` (one task per session) sends in order.
    Each tool-call event's snapshot is mapped as it is (argument pieces are not
    forwarded): a call is announced once its id and name are known (``tool_call``),
    then updated (``tool_call_update``) with the fields that differ from what was
    sent (status, title, locations, final arguments), and once more with its outcome.

    Args:
        conn: The agent-side connection (``session_update``).
        session_id: The ACP session id.
        root: The workspace folder (locations are absolute paths).
        read_only: Whether the MCP tool of a name is one its server marks ``readOnlyHint``
            (its calls' kind is then ``read``, :func:`toolwire.acp.mapping.tool_kind`).
    """

    def __init__(self, conn: Any, session_id: str, root: Path,
                 read_only: Callable[[str], bool] = lambda name: False) -> None:
        self._conn = conn
        self._session_id = session_id
        self._root = root
        self.read_only = read_only
        self._queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        self.calls: dict[str, SentCall] = {}

    def emit(self, event: AgentEvent) -> None:
        """Queue one event (never blocks)."""
        self._queue.put_nowait(event)

    async def flush(self) -> None:
        """Wait until every queued event has been sent."""
        await self._queue.join()

    async def run(self) -> None:
        """Send queued events forever (cancel the task to stop). A failed send is logged."""
        while True:
            event = await self._queue.get()
            try:
                for update in self.translate(event):
                    await self._conn.session_update(session_id=self._session_id, update=update)
            except Exception as exc:  # the client went away or refused one update
                log.warning("session/update failed: %s", exc)
            finally:
                self._queue.task_done()

    def translate(self, event: AgentEvent) -> list[Any]:
        """The ACP session updates for one agent event (possibly none)."""
        if isinstance(event, MessageChunk):  # shown as text: controls and bidi characters escaped
            block = TextContentBlock(type="text", text=display_text(event.text, keep="\n\t"))
            if event.channel == "reasoning":
                return [AgentThoughtChunk(session_update="agent_thought_chunk", content=block)]
            return [AgentMessageChunk(session_update="agent_message_chunk", content=block)]
        if isinstance(event, ToolCallChanged):
            return self._tool_call(event.call)
        if isinstance(event, PlanUpdate):  # the whole plan each time, as ACP's plan update is
            return [AgentPlanUpdate(session_update="plan", entries=[
                PlanEntry(content=display_text(entry.content), status=entry.status, priority=entry.priority)
                for entry in event.entries])]
        if isinstance(event, SessionInfo):  # ACP has no field for it: Toolwire's own _meta key
            return [SessionInfoUpdate(session_update="session_info_update", field_meta={"toolwire": {
                "instructions": [rules.to_wire() for rules in event.instructions]}})]
        if isinstance(event, TurnUpdate) and event.state == "ended" and event.stop_reason == "repeated_tool_failure":
            text = f"\n\n[Stopped: {event.message}]" if event.message else "\n\n[Stopped: a tool kept failing]"
            return [AgentMessageChunk(session_update="agent_message_chunk",
                                      content=TextContentBlock(type="text", text=display_text(text, keep="\n\t")))]
        if isinstance(event, TurnUpdate) and event.state == "ended" and event.stop_reason == "max_turn_requests":
            return [AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(
                type="text", text=display_text(f"\n\n[Stopped: {capped_text(event.message)}]", keep="\n\t")))]
        if isinstance(event, UsageUpdate) and event.context_used is not None and event.context_size is not None:
            return [AcpUsageUpdate(session_update="usage_update", used=event.context_used, size=event.context_size)]
        if isinstance(event, SessionWarning):
            warning = {"code": event.code, "message": event.message, "names": list(event.names)}
            return [AgentMessageChunk(session_update="agent_message_chunk", field_meta={"toolwire": {"warning": warning}},
                                      content=TextContentBlock(type="text", text=display_text(
                                          f"[Warning: {event.message}]\n\n", keep="\n\t")))]
        return []

    def _tool_call(self, call: CallSnapshot) -> list[Any]:
        call_id = call.id
        if not call_id or not call.name:  # the provider sends the id late: announce the call once it has one
            return []
        view = self.calls.setdefault(call_id, SentCall(self._root))
        status = mapping.STATUS.get(call.status.value, "pending")
        fields: dict[str, Any] = {
            "title": mapping.title(call, view.resolve),
            "kind": mapping.tool_kind(call, self.read_only),
            "status": status,
            "locations": mapping.locations(call, view.resolve, mapping.result_diff(call)),
        }
        if call.arguments is not None:
            fields["raw_input"] = call.arguments
        if call.status.value in ("done", "errored", "canceled"):
            fields["content"], fields["raw_output"] = mapping.outcome(call, view.resolve)
        changed = {key: value for key, value in fields.items() if view.sent.get(key) != value}
        view.sent.update(changed)
        if not view.started:
            view.started = True
            return [ToolCallStart(session_update="tool_call", tool_call_id=call_id, **fields)]
        if not changed:
            return []
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, **changed)]


class AcpApprover:
    """Asks the ACP client through ``session/request_permission``.

    The call has been announced before the request is sent (the sink is flushed
    first). ``allow_once``/``allow_always``/``reject`` map to Toolwire's answers;
    a ``cancelled`` outcome, an error answer or an unknown option is a cancellation
    (treated as a rejection, as in the LSP front-end).
    """

    def __init__(self, conn: Any, session: Session, sink: AcpSink,
                 preview: Callable[[str], Awaitable[Preview]],
                 withdrawable: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> None:
        self._conn = conn
        self._withdrawable = withdrawable
        self._session = session
        self._sink = sink
        self._preview = preview
        self._root = session.root

    async def request_permission(self, call: CallSnapshot, subject: dict[str, Any]) -> PermissionAnswer:
        """Ask and wait; cancellation of the caller abandons the request.

        An edit's content is a ``diff`` of the whole file (the dry run of
        :func:`toolwire.agent.preview.preview_call`, the code behind the approval
        diff) plus the exact unified diff the approval is about.
        """
        await self._sink.flush()
        view = self._sink.calls.get(call.id) or SentCall(self._root)
        content = mapping.subject_content(subject, self._root)
        if subject.get("kind") == "edit":
            try:
                preview = await self._preview(call.id)
            except PreviewError as exc:
                log.info("no whole-file diff for the permission request: %s", exc)
            else:
                file = subject_file(self._root, preview.path)
                created = preview.before == "" and "--- /dev/null" in (subject.get("diff") or "")
                if file is not None:  # a name that is not UTF-8 has no diff block (no JSON path names it)
                    whole = FileEditToolCallContent(type="diff", path=str(file),
                                                    old_text=None if created else preview.before,
                                                    new_text=preview.after)
                    content = [whole] + [c for c in content if getattr(c, "type", None) != "diff"]
        content = mapping.with_warning(subject, content)
        tool_call = AcpToolCallUpdate(
            tool_call_id=call.id,
            title=mapping.title(call, view.resolve),
            kind=mapping.tool_kind(call, self._sink.read_only),
            status="pending",
            content=content,
            locations=mapping.locations(call, view.resolve, subject.get("diff")),
            raw_input=call.arguments,
        )
        try:
            with self._withdrawable():
                response = await self._conn.request_permission(
                    session_id=self._session.id, tool_call=tool_call,
                    options=mapping.permission_options(subject, offered(subject)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("session/request_permission failed: %s", exc)
            if getattr(exc, "code", None) == -32601:  # the client answers no permission request
                return PermissionAnswer("unavailable")
            return PermissionAnswer("cancelled")
        outcome = getattr(response, "outcome", None)
        if isinstance(outcome, AllowedOutcome):
            option = outcome.option_id
            if option in ("allow_once", "allow_always", "reject"):
                return PermissionAnswer(option)  # type: ignore[arg-type]
            log.warning("unknown permission option %r: treated as cancelled", option)
        return PermissionAnswer("cancelled")


class AcpDocuments:
    """Files read or written through the ACP client (``fs/read_text_file`` /
    ``fs/write_text_file``), each capability used on its own.

    Tools read files synchronously, so the scheduler calls :meth:`prepare` with a
    call's paths before it plans (the approval diff) and before it runs; the text
    fetched then is what the tool reads. :meth:`replace` writes back only if that
    text is still there:

    * read and write: the client's text is read, checked and replaced through the client;
    * read only: the client's text is read and checked through the client, the new text
      written on disk (atomically, the file's BOM kept);
    * write only: the text is read and checked on disk, the new text written through the
      client (so an editor shows it at once);
    * neither: every file is read and written on disk (nothing is fetched).

    Args:
        conn: The agent-side connection.
        session_id: The ACP session id.
        read: The client declared ``fs.readTextFile``.
        write: The client declared ``fs.writeTextFile``.
        withdrawable: Wraps the reads of :meth:`prepare` (a cancelled one is withdrawn:
            :meth:`toolwire.acp.cancel_requests.RequestTracker.withdrawable`).
    """

    def __init__(self, conn: Any, session_id: str, read: bool, write: bool,
                 withdrawable: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> None:
        self._conn = conn
        self._withdrawable = withdrawable
        self._session_id = session_id
        self.read = read
        self.write = write
        self._docs: dict[Path, OpenDocument] = {}
        self._versions = itertools.count(1)

    @property
    def enabled(self) -> bool:
        """Whether any file goes through the client."""
        return self.read or self.write

    def bind(self, session_id: str) -> None:
        """Name the session the requests are for (known once the core session exists)."""
        self._session_id = session_id

    async def prepare(self, paths: list[Path]) -> None:
        """Fetch the text of each path (absolute, resolved) a call touches: the client's
        (``fs/read_text_file``) when it reads, else the disk's when it writes.

        Folders, binary files, files over :data:`CLIENT_FILE_LIMIT` and names that
        are not UTF-8 (no JSON string names them) stay on the disk path; a path the
        client cannot read (missing) is forgotten, and so is, for a client that only
        writes, a file missing on disk, not UTF-8 or starting with a BOM.
        """
        if not self.enabled:
            return
        for path in paths:
            if sendable(path) is None or path.is_dir() or not _client_readable(path):
                self._docs.pop(path, None)
                continue
            text = await self._fetch(path)
            if text is None:
                self._docs.pop(path, None)
                continue
            known = self._docs.get(path)
            if known is None or known.text != text:
                self._docs[path] = OpenDocument(path=path, text=text, version=next(self._versions))

    async def _fetch(self, path: Path) -> str | None:
        """The text of ``path`` as this client's route reads it, None when there is none."""
        if not self.read:
            return _disk_text(path)
        try:
            with self._withdrawable():
                response = await self._conn.read_text_file(session_id=self._session_id, path=str(path))
        except Exception as exc:  # missing file, or the client refused
            log.info("fs/read_text_file %s: %s", path, exc)
            return None
        return response.content

    def get(self, path: Path) -> OpenDocument | None:
        """The text of ``path`` as last fetched, or None (read from disk)."""
        return self._docs.get(path)

    def open_documents(self) -> list[OpenDocument]:
        """Every file fetched (the client's texts; the disk's for a client that only writes)."""
        return list(self._docs.values())

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        """Write ``new_text`` if ``doc.text`` is still there (see the class for which route).

        Returns:
            False when the text changed since it was read (stale); True when written.

        Raises:
            ToolError: ``editor_refused`` when the client answers the read or the
                write with an error (a refusal is not a stale buffer); the disk
                write's own errors (``read_only``, ``io_error``).
        """
        if not self.enabled:
            return False
        step = "read"
        try:
            if self.read:
                current = (await self._conn.read_text_file(session_id=self._session_id, path=str(doc.path))).content
            else:
                current = _disk_text(doc.path)
            if current != doc.text:
                return False
            step = "write"
            if self.write:
                await asyncio.shield(self._conn.write_text_file(
                    session_id=self._session_id, path=str(doc.path), content=new_text))
            else:
                _write_disk(doc.path, new_text)
        except (asyncio.CancelledError, ToolError):
            raise
        except Exception as exc:
            log.warning("fs/%s_text_file %s failed: %s", step, doc.path, exc)
            raise ToolError("editor_refused", f"the client refused to {step} {doc.path.name} "
                            f"(fs/{step}_text_file: {exc}); nothing was written") from None
        self._docs[doc.path] = OpenDocument(path=doc.path, text=new_text, version=next(self._versions))
        return True


def _disk_text(path: Path) -> str | None:
    """The file's UTF-8 text on disk, None when it is missing, unreadable, not UTF-8 or starts
    with a BOM (a client writing text would drop it: such a file is written on disk)."""
    try:
        data = path.read_bytes()
        if data.startswith(BOM):
            return None
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _write_disk(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` atomically, keeping its BOM (a client that reads but cannot write)."""
    try:
        bom = path.read_bytes()[:len(BOM)] == BOM
    except OSError:
        bom = False
    atomic_write(path, encode_text(text, bom=bom), label=path.name)


def _client_readable(path: Path) -> bool:
    """True unless the file on disk is binary or too large for the client route."""
    try:
        size = path.stat().st_size
    except OSError:
        return True  # missing on disk: the client may still hold an unsaved buffer
    if size > CLIENT_FILE_LIMIT:
        return False
    try:
        with path.open("rb") as handle:
            return b"\0" not in handle.read(8192)
    except OSError:
        return False
