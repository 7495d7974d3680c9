"""Server settings: one model, every field defaulted, camelCase on the wire.

Settings reach the server as LSP ``initializationOptions`` (and, per session, as
``toolwire/session/new`` params). Invalid settings are reported to the user and
replaced by defaults; the server still starts (:func:`parse_settings`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

PermissionMode = Literal["auto", "ask", "deny"]


class Settings(BaseModel):
    """Everything configurable, with its default."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    model: str = Field("replay", description="Model spec: replay, replay:SCRIPT or openai:MODEL.")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint for openai: models.")
    api_key: str | None = Field(None, repr=False, description="API key; default from TOOLWIRE_API_KEY or OPENAI_API_KEY.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_model_requests: int = Field(15, ge=1, le=200, description="Model requests per turn before the turn stops.")
    tool_timeout: float = Field(60.0, gt=0, description="Seconds a tool call may run.")
    git_timeout: float = Field(30.0, gt=0, description="Seconds a git subprocess may run.")
    max_parallel_tools: int = Field(4, ge=1, le=64, description="Tool calls running at once.")
    result_limit: int = Field(5000, ge=200, description="Characters of a tool result sent to the model.")
    context_window: int = Field(128_000, ge=1000, description="The model's context window, in tokens.")
    tool_calling: Literal["native", "text"] = Field(
        "native", description="native: the API's tool calls; text: calls and results written as plain text."
    )
    permissions: dict[str, PermissionMode] = Field(
        default_factory=dict, description="Per-tool override: tool name -> auto | ask | deny."
    )
    replay_log: str | None = Field(None, description="Replay models append every request to this file.")
    tool_call_log: str | None = Field(None, description="Opt-in JSONL log of tool calls.")


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Validate settings, falling back to defaults field by field.

    Args:
        raw: The options object from the client (any JSON value; None = defaults).

    Returns:
        The settings and a list of problems (one sentence per rejected field),
        empty when everything was valid.
    """
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"settings must be an object, got {type(raw).__name__}; using defaults"]
    try:
        return Settings.model_validate(raw), []
    except ValidationError as exc:
        bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
        problems = [
            f"setting {'.'.join(str(p) for p in err['loc'])}: {err['msg']}; using the default" for err in exc.errors()
        ]
        kept = {key: value for key, value in raw.items() if key not in bad}
        try:
            return Settings.model_validate(kept), problems
        except ValidationError:
            return Settings(), problems
