"""The base system prompt: every tool it names exists, and it names only the tools offered."""

from __future__ import annotations

import itertools
import re

from toolwire.agent.session import SYSTEM_PROMPT as REEXPORTED
from toolwire.agent.system_prompt import PROMPT_TOOLS, SYSTEM_PROMPT, base_prompt, offered_names
from toolwire.tools import default_registry
from toolwire.tools.base import Registry

#: A word that looks like a tool name (``read_file``, ``git_status``).
TOOL_WORD = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


def named_tools(text: str) -> set[str]:
    return set(TOOL_WORD.findall(text))


def test_every_tool_the_prompt_can_name_exists() -> None:
    from toolwire.tools import every_tool

    known = {tool.name for tool in every_tool()}
    missing = [name for name in PROMPT_TOOLS if name not in known]
    assert missing == []
    assert named_tools(SYSTEM_PROMPT) == set(PROMPT_TOOLS)
    assert REEXPORTED == SYSTEM_PROMPT


def test_the_prompt_of_the_default_registry_names_only_its_tools() -> None:
    registry = default_registry()
    text = base_prompt(registry.names())
    assert named_tools(text) and named_tools(text) <= set(registry.names())


def test_a_prompt_never_names_a_tool_not_offered() -> None:
    for size in range(len(PROMPT_TOOLS) + 1):
        for subset in itertools.combinations(PROMPT_TOOLS, size):
            text = base_prompt(subset)
            assert named_tools(text) == set(subset), subset


def test_the_discipline_is_there_whatever_the_tools() -> None:
    for text in (base_prompt([]), SYSTEM_PROMPT):
        assert "relative to the workspace root" in text
        assert "Look before you edit" in text
        assert "small, exact edits" in text
        assert "returns its error as the call's result" in text
        assert "Nothing is committed unless the user asks" in text
        assert "no shell" in text
    assert len(SYSTEM_PROMPT.split()) < 280  # short (the plan's line included)


def test_the_prompt_is_stable_and_ignores_order() -> None:
    assert base_prompt(["git_diff", "read_file"]) == base_prompt(["read_file", "git_diff", "read_file"])


def test_offered_names_reads_request_definitions() -> None:
    registry = default_registry()
    assert offered_names(registry.definitions()) == registry.names()


def test_a_session_prompt_names_only_its_registry(tmp_path) -> None:
    from toolwire.agent.permissions import PermissionPolicy
    from toolwire.agent.session import Session
    from toolwire.settings import Settings
    from toolwire.tools.files import ReadFile

    session = Session(root=tmp_path, model=None, registry=Registry([ReadFile()]),  # type: ignore[arg-type]
                      policy=PermissionPolicy(), settings=Settings())
    system = session.conversation.messages[0]
    assert system["role"] == "system" and named_tools(system["content"]) == {"read_file"}
    # the tools offered change (settings, maxTools): the next turn's prompt follows
    session.registry = default_registry()
    session.compose_prompt()
    system = session.conversation.messages[0]
    assert system["content"] == base_prompt(session.registry.names())
    session.registry = Registry([])
    session.compose_prompt()
    assert named_tools(session.conversation.messages[0]["content"]) == set()


def _properties(schema: dict, defs: dict) -> set[str]:
    """Every property name of a JSON Schema, nested ones and ``$defs`` included."""
    names = set(schema.get("properties", {}))
    for sub in [*schema.get("properties", {}).values(), *defs.values()]:
        if isinstance(sub, dict):
            names |= set(sub.get("properties", {}))
    return names


def _enum_values(schema: object) -> set[str]:
    """Every string value an ``enum`` of a JSON Schema allows, at any depth."""
    if isinstance(schema, dict):
        own = {v for v in schema.get("enum", []) if isinstance(v, str)}
        return own.union(*(_enum_values(v) for v in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_enum_values(v) for v in schema))
    return set()


def test_tool_descriptions_name_only_tools_and_arguments_that_exist() -> None:
    """A description written for the model points at real tools (``use multi_edit``), at
    arguments (``old_string``) and at their values (``in_progress``); a rename of any would
    leave it lying."""
    registry = default_registry()
    allowed = set(registry.names())
    for definition in registry.definitions():
        schema = definition["function"]["parameters"]
        allowed |= _properties(schema, schema.get("$defs", {})) | _enum_values(schema)
    for definition in registry.definitions():
        function = definition["function"]
        stray = named_tools(function["description"]) - allowed
        assert stray == set(), (function["name"], stray)


def test_tool_descriptions_say_when_to_use_them() -> None:
    for definition in default_registry().definitions():
        text = definition["function"]["description"]
        assert len(text) < 700, definition["function"]["name"]
        assert any(w in text for w in ("Use it", "use it", "Only when", "only when", "instead")), \
            definition["function"]["name"]
