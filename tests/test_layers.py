"""Dependencies point one way: {lsp, acp} → agent → {llm, streaming, tools} → workspace (docs/design.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "server" / "toolwire"

#: For each layer, the packages (and foreign libraries) it must not import.
FORBIDDEN = {
    "streaming": {"toolwire.agent", "toolwire.lsp", "toolwire.llm", "toolwire.tools", "toolwire.workspace",
                  "anyio", "asyncio", "subprocess", "pygls", "lsprotocol", "openai"},
    "workspace": {"toolwire.agent", "toolwire.lsp", "toolwire.llm", "toolwire.tools", "pygls", "lsprotocol", "openai"},
    "tools": {"toolwire.agent", "toolwire.lsp", "toolwire.llm", "pygls", "lsprotocol", "openai"},
    "llm": {"toolwire.agent", "toolwire.lsp", "toolwire.tools", "pygls", "lsprotocol"},
    "agent": {"toolwire.lsp", "toolwire.acp", "pygls", "lsprotocol", "openai", "acp"},
    "lsp": {"toolwire.acp", "acp"},
    "acp": {"toolwire.lsp", "pygls", "lsprotocol", "openai"},
}


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_one_way(layer):
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer]):
                if not (layer == "llm" and path.name == "openai_model.py" and name == "openai"):
                    bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, bad


def test_only_the_openai_model_imports_openai():
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if any(n == "openai" or n.startswith("openai.") for n in imports(p)))
    assert users == ["llm/openai_model.py"]


def test_only_the_lsp_package_imports_pygls():
    users = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
             if any(n.split(".")[0] in ("pygls", "lsprotocol") for n in imports(p))}
    assert users == {"lsp"}


def test_only_the_acp_package_imports_the_acp_sdk():
    users = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
             if any(n == "acp" or n.startswith("acp.") for n in imports(p))}
    assert users == {"acp"}


def test_the_front_ends_share_the_core():
    """Both front-ends run turns on the same core classes (the layering proof of issue 14)."""
    for front in ("lsp", "acp"):
        names = set().union(*(imports(p) for p in (PACKAGE / front).rglob("*.py")))
        assert "toolwire.agent.turn" in names and "toolwire.agent.session" in names, front


def test_the_redactor_is_a_leaf_every_layer_may_use():
    """``toolwire/redaction.py`` is the one redaction of the LSP and ACP front-ends, the
    CLI and the llm layer (issue 19): it imports only the standard library (and its
    list of secret names), so any layer may import it without an arrow pointing up."""
    import sys

    for module in ("redaction.py", "secret_names.py"):
        names = imports(PACKAGE / module) - {"toolwire.secret_names"}
        assert names and all(n.split(".")[0] in sys.stdlib_module_names for n in names), (module, names)
