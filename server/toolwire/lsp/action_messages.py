"""Wire models of the ``toolwire.runAction`` command (``workspace/executeCommand``): its
argument (what to do, where: an LSP range) and its result. Method names and the shared
``Wire`` base are in :mod:`toolwire.lsp.protocol`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from toolwire.lsp.protocol import Wire


class PositionModel(Wire):
    """An LSP position (zero-based line, character in the negotiated encoding)."""

    line: int = Field(ge=0)
    character: int = Field(ge=0)


class RangeModel(Wire):
    """An LSP range."""

    start: PositionModel
    end: PositionModel


class RunActionArgs(Wire):
    """The one argument of the ``toolwire.runAction`` command (``workspace/executeCommand``).

    ``kind`` says what to do; ``uri`` and ``range`` (in the negotiated position
    encoding) where; ``text`` overrides the text read from the range; ``diagnostic``
    is the LSP diagnostic a fix is about; ``instruction`` is the user's request for
    ``edit``; ``sessionId`` runs the turn in that session instead of a new one;
    ``allowExcluded``: the user allowed sending the text of a file kept from the model
    (``modelExclude``) with this action (without it such a file is refused).
    """

    kind: Literal["edit", "explain", "fix"]
    uri: str = Field(min_length=1)
    range: RangeModel
    text: str | None = None
    diagnostic: dict[str, Any] | None = None
    instruction: str | None = None
    session_id: str | None = None
    allow_excluded: bool = False


class RunActionResult(Wire):
    """``toolwire.runAction`` result, sent as soon as the turn is started."""

    session_id: str
    turn_id: str
