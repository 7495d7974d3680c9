"""Running git: argv only, no shell, no pager, no prompt, no editor, killable.

Every run is ``git --no-pager -c core.pager=cat -c core.editor=true
-c core.fsmonitor=false ... <args>`` with stdin closed, in its own session
(process group). On timeout or cancellation the whole group is stopped
(``os.killpg``: SIGTERM, so git removes its lock files, then SIGKILL), so hooks
and their children die with git, and the process is reaped before the exception
propagates.

Read-only runs also set ``core.hooksPath=/dev/null`` and
``GIT_OPTIONAL_LOCKS=0`` and take no repository-configured helper programs:
the diff/log/show callers pass ``--no-ext-diff --no-textconv``,
``GIT_EXTERNAL_DIFF`` is dropped from the environment, and every configured
filter driver (``filter.<driver>.clean/smudge/process``, which ``git status``
and ``git diff`` would run on changed files, per gitattributes(5) "filter") is
blanked with ``-c filter.<driver>.clean=`` and so on; an empty command means no
filter. Signature checks (``log.showSignature``, whose ``gpg.program`` the
repository could name), ssh, credential and askpass helpers are switched off. Diff output settings that change its shape (``diff.noprefix``,
``diff.mnemonicPrefix``, ``diff.relative``) are pinned to git's defaults.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio

from toolwire.workspace.errors import ToolError, clip_quote

__all__ = ["GitOutput", "git_argv", "git_env", "run_git", "blank_filters", "filter_settings", "count_processes", "MAX_OUTPUT_BYTES"]

MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024
"""stdout kept per run (bytes); the rest is drained and dropped (``truncated``)."""

TERM_GRACE: Final = 2.0
"""Seconds git gets after SIGTERM (to remove its lock files) before its group is killed."""

_COMMON: Final = (
    "--no-pager",
    "--literal-pathspecs",
    "-c", "core.pager=cat",
    "-c", "core.editor=true",
    "-c", "core.fsmonitor=false",
    "-c", "core.quotePath=false",
    "-c", "color.ui=false",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "advice.detachedHead=false",
)  # fmt: skip
_READ_ONLY: Final = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "diff.external=",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false",
    "-c", "log.showSignature=false",
    "-c", "gpg.program=false",
    "-c", "gpg.ssh.program=false",
    "-c", "gpg.x509.program=false",
    "-c", "core.sshCommand=false",
    "-c", "credential.helper=",
    "-c", "core.askPass=",
)  # fmt: skip
_FILTER_KEYS: Final = ("clean", "smudge", "process")
_DROPPED_ENV: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
)


_STARTED: ContextVar[list[int] | None] = ContextVar("toolwire_git_processes", default=None)


@contextmanager
def count_processes() -> Iterator[list[int]]:
    """Count the git processes started inside the block (and the tasks it starts).

    Yields:
        A one-item list whose item is the number of git processes started so
        far; read it after the block. Blocks nest: each counts its own starts
        and those of the blocks inside it.
    """
    outer = _STARTED.get()
    box = [0]
    token = _STARTED.set(box)
    try:
        yield box
    finally:
        _STARTED.reset(token)
        if outer is not None:
            outer[0] += box[0]


#: A single-quoted piece of git's error text long enough to be cut (git quotes its input so).
_LONG_QUOTE: Final = re.compile(r"'([^'\n]{120,})'")


@dataclass(frozen=True, slots=True)
class GitOutput:
    """What one git run produced.

    Attributes:
        argv: The full argv that ran.
        returncode: git's exit status.
        stdout: Raw output (at most :data:`MAX_OUTPUT_BYTES`).
        stderr: Raw error output (at most 64 KiB).
        truncated: stdout was longer than the cap.
        root: The folder git ran in (the workspace); :attr:`error` names paths under
            it relative to it.
    """

    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    truncated: bool = False
    root: str = ""

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def error(self) -> str:
        """stderr decoded and stripped, paths under :attr:`root` made relative to it
        (git names files by absolute path in some messages, e.g. "Unable to create
        '/…/ws/.git/refs/heads/x.lock'"; error messages never carry the workspace's
        absolute path)."""
        text = self.stderr.decode("utf-8", "replace").strip()
        if self.root:
            for root in sorted({self.root, os.path.realpath(self.root)}, key=len, reverse=True):
                text = text.replace(root + "/", "").replace(root, ".")
        # git quotes what it was given ('pathspec', 'ref') in single quotes: a long one is cut
        return _LONG_QUOTE.sub(lambda m: f"'{clip_quote(m.group(1))}'", text)


def git_argv(args: Sequence[str], *, read_only: bool, config: Sequence[str] = (),
             literal_pathspecs: bool = True) -> list[str]:
    """The full argv for ``git <args>``.

    Args:
        args: The subcommand and its arguments.
        read_only: Add the read-only settings (no hooks, no external diff).
        config: Extra ``key=value`` settings passed as ``-c``.
        literal_pathspecs: Pass ``--literal-pathspecs`` (off only for commands
            that refuse it, such as ``check-ignore``, which takes plain names).
    """
    argv = ["git", *(o for o in _COMMON if literal_pathspecs or o != "--literal-pathspecs")]
    if read_only:
        argv += _READ_ONLY
    for item in config:
        argv += ["-c", item]
    return argv + list(args)


def git_env(*, read_only: bool) -> dict[str, str]:
    """The environment of a git run: the server's, minus redirections, plus no prompts."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_EDITOR="true", GIT_PAGER="cat", LC_ALL="C", GIT_SEQUENCE_EDITOR="true")
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """Stop git and everything in its process group, and reap git (shielded).

    SIGTERM first: git's signal handler removes the lock files it holds
    (``index.lock`` during a commit's hooks), which SIGKILL would leave behind,
    locking the repository. After :data:`TERM_GRACE` seconds, or as soon as git
    is gone, SIGKILL takes whatever is left of the group (hooks ignoring TERM).
    """
    _signal_group(proc.pid, signal.SIGTERM)
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(TERM_GRACE):
            await proc.wait()
        _signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()


async def _drain(stream: asyncio.StreamReader, cap: int, sink: list[bytes]) -> bool:
    """Read ``stream`` to EOF keeping at most ``cap`` bytes; True when some were dropped."""
    kept = 0
    truncated = False
    while chunk := await stream.read(65536):
        room = cap - kept
        if len(chunk) > room:
            truncated = True
        if room > 0:
            sink.append(chunk[:room])
            kept += min(len(chunk), room)
    return truncated


async def run_git(
    root: Path,
    args: Sequence[str],
    *,
    read_only: bool,
    timeout: float,
    config: Sequence[str] = (),
    check: bool = True,
    literal_pathspecs: bool = True,
    filters: Sequence[str] | None = None,
) -> GitOutput:
    """Run ``git <args>`` in ``root`` and wait for it.

    Args:
        root: Working folder (the workspace root).
        args: Subcommand and arguments; revisions already validated, paths
            after ``--``.
        read_only: The command changes nothing (see the module docstring).
        timeout: Seconds before the process group is killed.
        config: Extra ``-c key=value`` settings.
        check: Raise on a non-zero exit status.
        literal_pathspecs: See :func:`git_argv`.
        filters: For a read-only run, the ``-c`` settings that switch off the
            repository's filter drivers (:func:`blank_filters`), when the caller
            already knows them (``()`` for commands that run no filter); None
            asks git for them first, which costs one more git process.

    Raises:
        ToolError: ``timeout`` when it ran too long; ``git_missing`` when git
            is not installed; ``git_failed`` (data: ``argv``, ``stderr``,
            ``returncode``) on a non-zero exit when ``check``.
        Cancellation: re-raised after the process group is killed and reaped.
    """
    if read_only:
        config = [*(await blank_filters(root, timeout) if filters is None else filters), *config]
    argv = git_argv(args, read_only=read_only, config=config, literal_pathspecs=literal_pathspecs)
    try:
        # Shielded: a cancel while asyncio connects the pipes would kill git alone
        # (not its hooks); once ``proc`` exists, the handler below kills the group.
        with anyio.CancelScope(shield=True):
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=root,
                env=git_env(read_only=read_only),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
    except FileNotFoundError:
        raise ToolError("git_missing", "git is not installed or not on PATH") from None
    counter = _STARTED.get()
    if counter is not None:
        counter[0] += 1
    out: list[bytes] = []
    err: list[bytes] = []
    truncated = False
    try:
        with anyio.fail_after(timeout):
            assert proc.stdout is not None and proc.stderr is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, proc.stderr, 65536, err)
                truncated = await _drain(proc.stdout, MAX_OUTPUT_BYTES, out)
            returncode = await proc.wait()
    except TimeoutError:
        await _stop_group(proc)
        raise ToolError("timeout", f"git {args[0] if args else ''} did not finish within {timeout:g} s and was stopped") from None
    except BaseException:
        await _stop_group(proc)
        raise
    result = GitOutput(argv, returncode, b"".join(out), b"".join(err), truncated, str(root))
    if check and returncode != 0:
        raise ToolError(
            "git_failed",
            f"git {args[0] if args else ''} failed: {result.error or f'exit status {returncode}'}",
            {"argv": argv, "stderr": result.error, "returncode": returncode},
        )
    return result


async def blank_filters(root: Path, timeout: float) -> list[str]:
    """``key=`` settings that switch off every filter driver git is configured with
    (one ``git config`` process, which runs no filter itself)."""
    listed = await run_git(
        root, ["config", "-z", "--name-only", "--get-regexp", r"^filter\."],
        read_only=True, timeout=timeout, check=False, filters=(),
    )
    # ``-z``: each key ends with NUL. A subsection (the driver's name) may hold any
    # character but LF and NUL, U+2028, U+0085, \x1c and \r included, which
    # ``str.splitlines`` would cut.
    return filter_settings([os.fsdecode(key) for key in listed.stdout.split(b"\x00") if key])


def filter_settings(keys: Sequence[str]) -> list[str]:
    """The ``key=`` settings that switch off the filter drivers named in config ``keys``.

    Driver names may contain dots (``filter.a.b.clean``): the name is
    everything between the first and last dot. Other keys are ignored.
    """
    drivers = set()
    for line in keys:
        section, _, rest = line.partition(".")
        name, _, key = rest.rpartition(".")
        if section.lower() == "filter" and name:
            drivers.add(name)
    out = []
    for name in sorted(drivers):
        out += [f"filter.{name}.{key}=" for key in _FILTER_KEYS]
        out.append(f"filter.{name}.required=false")
    return out
