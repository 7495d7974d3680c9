"""The user's own text of a model-request message: the workspace overview the first
request of a session carries in front of it (:mod:`toolwire.agent.overview`) cut off."""

from __future__ import annotations

from toolwire.agent.overview import HEADER


def user_text(content: str) -> str:
    """``content`` without a leading overview block (names in it are quoted where they
    hold line breaks, so its first ``]`` + blank line is its end)."""
    if not content.startswith(HEADER):
        return content
    end = content.index("]\n\n")
    return content[end + 3:]
