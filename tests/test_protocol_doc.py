"""protocol.md documents exactly what the protocol models and settings define."""

from __future__ import annotations

from pathlib import Path

from toolwire.lsp.protocol import METHODS
from toolwire.settings import Settings

DOC = (Path(__file__).parent.parent / "protocol.md").read_text()


def test_every_method_is_documented_with_its_direction_and_kind():
    for method, (direction, kind) in METHODS.items():
        assert f"`{method}`" in DOC, method
        row = next(line for line in DOC.splitlines() if line.startswith(f"| {direction} | `{method}`"))
        assert kind.split(",")[0] in row


def test_every_setting_is_documented():
    for name, field in Settings.model_fields.items():
        assert f"`{field.alias or name}`" in DOC, name


def test_every_status_and_cancel_reason_is_documented():
    from toolwire.streaming.state import CancelReason, Status

    for status in Status:
        assert f"`{status.value}`" in DOC
    for reason in CancelReason:
        assert f"`{reason.value}`" in DOC
