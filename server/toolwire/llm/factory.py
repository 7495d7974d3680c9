"""Model specs: ``replay``, ``replay:SCRIPT``, ``openai:MODEL``, ``openai-responses:MODEL``."""

from __future__ import annotations

from pathlib import Path

from toolwire.llm.base import Model
from toolwire.llm.replay import ReplayModel


#: The OpenAI SDK's wires: Chat Completions and the Responses API.
WIRES = ("openai", "openai-responses")


class ModelSpecError(ValueError):
    """The model spec is not one of the accepted forms."""


def make_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    replay_log: Path | None = None,
    cwd: Path | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 120.0,
) -> Model:
    """Build the model a spec names.

    Args:
        spec: ``replay`` (no script: answers with a short text), ``replay:PATH``
            (a replay script; relative to ``cwd``), ``openai:MODEL`` (any
            OpenAI-compatible endpoint at ``base_url``, Chat Completions) or
            ``openai-responses:MODEL`` (the Responses API there).
        base_url: Endpoint for ``openai:`` specs.
        api_key: Key for ``openai:`` specs (else read from the environment).
        replay_log: For ``replay`` specs, a file that receives every request.
        cwd: Folder that relative script paths are resolved against.
        connect_timeout: ``openai:`` specs: seconds to connect.
        read_timeout: ``openai:`` specs: seconds without data before a request fails.

    Raises:
        ModelSpecError: unknown prefix or empty model name.
        toolwire.llm.replay.ReplayScriptError: the script is unreadable or malformed.
    """
    kind, _, rest = spec.partition(":")
    if kind == "replay":
        if not rest:
            return ReplayModel(None, replay_log)
        path = Path(rest).expanduser()
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        return ReplayModel(path.resolve(), replay_log)
    if kind in WIRES:
        if not rest:
            raise ModelSpecError(f"{kind}: needs a model name, e.g. {kind}:gpt-4o-mini")
        if kind == "openai":
            from toolwire.llm.openai_model import OpenAIModel  # imported only when used
        else:
            from toolwire.llm.responses_model import ResponsesModel as OpenAIModel

        return OpenAIModel(rest, base_url=base_url, api_key=api_key, connect_timeout=connect_timeout,
                           read_timeout=read_timeout)
    raise ModelSpecError(f"unknown model spec {spec[:100]!r}: use replay, replay:SCRIPT, openai:MODEL or openai-responses:MODEL")


def check_model_spec(spec: str, *, cwd: Path | None = None) -> None:
    """Check a model spec without connecting anywhere (for ``initialize``).

    ``replay:SCRIPT`` scripts are read and parsed (relative to ``cwd``; a relative
    script with no ``cwd`` is left for ``session/new``); ``openai:MODEL`` needs a name.

    Raises:
        ModelSpecError: unknown prefix or empty model name.
        toolwire.llm.replay.ReplayScriptError: the script is unreadable or malformed.
    """
    kind, _, rest = spec.partition(":")
    if kind == "replay":
        if rest and (cwd is not None or Path(rest).expanduser().is_absolute()):
            make_model(spec, cwd=cwd)
        return
    if kind in WIRES:
        if not rest:
            raise ModelSpecError(f"{kind}: needs a model name, e.g. {kind}:gpt-4o-mini")
        return
    raise ModelSpecError(f"unknown model spec {spec[:100]!r}: use replay, replay:SCRIPT, openai:MODEL or openai-responses:MODEL")
