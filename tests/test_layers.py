"""Dependencies point one way: {lsp, acp} → agent → {llm, streaming, tools} → workspace, with
the JSON-RPC plumbing (rpc) under lsp and the headless client (headless) beside it (docs/architecture.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "server" / "toolwire"

#: For each layer, the packages (and foreign libraries) it must not import.
#: The JSON-RPC packages: the front-end for editors, its plumbing and the headless client.
JSON_RPC = {"toolwire.lsp", "toolwire.rpc", "toolwire.headless"}

FORBIDDEN = {
    "streaming": {"toolwire.agent", "toolwire.llm", "toolwire.tools", "toolwire.workspace", *JSON_RPC,
                  "anyio", "asyncio", "subprocess", "pygls", "lsprotocol", "openai"},
    "workspace": {"toolwire.agent", "toolwire.llm", "toolwire.tools", *JSON_RPC, "pygls", "lsprotocol", "openai"},
    "tools": {"toolwire.agent", "toolwire.llm", *JSON_RPC, "pygls", "lsprotocol", "openai"},
    "llm": {"toolwire.agent", "toolwire.tools", *JSON_RPC, "pygls", "lsprotocol"},
    "agent": {"toolwire.acp", *JSON_RPC, "pygls", "lsprotocol", "openai", "acp"},
    "lsp": {"toolwire.acp", "toolwire.headless", "acp"},
    "acp": {*JSON_RPC, "pygls", "lsprotocol", "openai"},
    "rpc": {"toolwire.agent", "toolwire.lsp", "toolwire.acp", "toolwire.headless", "openai", "acp"},
    "headless": {"toolwire.agent", "toolwire.acp", "openai", "acp"},
    "mcp": {"toolwire.agent", "toolwire.llm", "toolwire.acp", "toolwire.streaming", *JSON_RPC,
            "pygls", "lsprotocol", "openai", "acp"},
}

#: The only modules of the LSP front-end the headless client may import: the wire models.
HEADLESS_MAY_USE = {"toolwire.lsp", "toolwire.lsp.protocol", "toolwire.lsp.messages"}


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


def test_only_the_json_rpc_packages_import_pygls():
    users = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
             if any(n.split(".")[0] in ("pygls", "lsprotocol") for n in imports(p))}
    assert users == {"lsp", "rpc", "headless"}


def test_the_headless_client_uses_only_the_wire_models_of_lsp():
    """``toolwire run`` is a peer of the server, not a part of it: of ``toolwire.lsp`` it
    imports only the wire models (``from toolwire.lsp import protocol`` counts as
    ``toolwire.lsp.protocol``)."""
    bad = []
    for path in sorted((PACKAGE / "headless").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] if node.module != "toolwire.lsp" else [f"toolwire.lsp.{a.name}" for a in node.names]
            else:
                continue
            bad += [f"{path.relative_to(PACKAGE)} imports {n}" for n in names
                    if (n == "toolwire.lsp" or n.startswith("toolwire.lsp.")) and n not in HEADLESS_MAY_USE]
    assert not bad, bad


def test_only_the_mcp_package_imports_the_mcp_sdk():
    users = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
             if any(n.split(".")[0] in ("mcp", "mcp_types") for n in imports(p))}
    assert users == {"mcp"}


def test_only_the_acp_package_imports_the_acp_sdk():
    users = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
             if any(n == "acp" or n.startswith("acp.") for n in imports(p))}
    assert users == {"acp"}


#: What a front-end may import of the agent (issue 20): the session host (with the types
#: its calls return and raise) and the events it emits, and the one prompt-block model (issue 26:
#: what a prompt's blocks are, what the model reads of them; no session state). Everything else about
#: a session (turns, cancels, watchers, settings, undo, client-fed streams) is the host's.
FRONT_END_MAY_IMPORT = {"toolwire.agent.host", "toolwire.agent.events", "toolwire.agent.prompt_blocks"}


@pytest.mark.parametrize("front", ["lsp", "acp"])
def test_the_front_ends_hold_no_session_logic(front):
    """Modules under lsp/ and acp/ import from ``toolwire.agent`` only the host and the events."""
    bad = []
    for path in sorted((PACKAGE / front).rglob("*.py")):
        for name in imports(path):
            if (name == "toolwire.agent" or name.startswith("toolwire.agent.")) and name not in FRONT_END_MAY_IMPORT:
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, bad


def test_the_front_ends_share_the_host():
    """Both front-ends serve their sessions through the same host (the layering proof of issues 14 and 20)."""
    for front in ("lsp", "acp"):
        names = set().union(*(imports(p) for p in (PACKAGE / front).rglob("*.py")))
        assert "toolwire.agent.host" in names, front


def test_the_redactor_is_a_leaf_every_layer_may_use():
    """``toolwire/redaction.py`` is the one redaction of the LSP and ACP front-ends, the
    CLI and the llm layer (issue 19): it imports only the standard library (and its
    list of secret names), so any layer may import it without an arrow pointing up."""
    import sys

    for module in ("redaction.py", "secret_names.py"):
        names = imports(PACKAGE / module) - {"toolwire.secret_names"}
        assert names and all(n.split(".")[0] in sys.stdlib_module_names for n in names), (module, names)


#: Import cycles of ``server/toolwire`` still being removed: none is left (issue 20 removed
#: them all); the set may only shrink. Each entry is one strongly connected component of the graph.
KNOWN_CYCLES: set[frozenset[str]] = set()


def module_graph(package: Path) -> dict[str, set[str]]:
    """Module name → the package's modules it imports, by every ``import`` and ``from … import``
    anywhere in it (``TYPE_CHECKING`` blocks and function bodies too), relative imports
    resolved; ``from pkg import mod`` is also an edge to ``pkg.mod`` when that module exists."""
    def name(path: Path) -> str:
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    paths = {name(p): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        graph[module] = {t for t in targets if t in paths and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def one_cycle(graph: dict[str, set[str]], component: frozenset[str]) -> str:
    """``a -> b -> … -> a``: a shortest import path from the component's first module back to it."""
    start = min(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        step = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    path = [start, node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return " -> ".join(reversed(path))
                if nxt not in came_from:
                    came_from[nxt] = node
                    step.append(nxt)
        frontier = step
    raise AssertionError(f"not a cycle: {sorted(component)}")


def cycle_problems(graph: dict[str, set[str]], known: set[frozenset[str]]) -> list[str]:
    found = cycles(graph)
    problems = [f"import cycle of {len(c)} modules {sorted(c)}: {one_cycle(graph, c)}" for c in found if c not in known]
    problems += [f"KNOWN_CYCLES entry is no longer a cycle (remove it, or replace it by what is left): {sorted(c)}"
                 for c in known if c not in found]
    return problems


def test_the_import_graph_of_the_server_has_no_cycle():
    """No import cycle in ``server/toolwire`` beyond :data:`KNOWN_CYCLES`, and every entry there is still one."""
    problems = cycle_problems(module_graph(PACKAGE), KNOWN_CYCLES)
    assert not problems, "\n".join(problems)


def test_the_cycle_check_sees_every_kind_of_import(tmp_path):
    """Each way a module can import another closes a cycle the check reports; a removed one is reported stale."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",  # from a package import a module
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.c import C\n",  # relative, TYPE_CHECKING
        "sub/__init__.py": "from . import d\n",  # relative from a package's __init__
        "sub/c.py": "def f():\n    import pkg.a\n",  # inside a function
        "sub/d.py": "from ..e import x\n",
        "e.py": "import pkg.sub\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = module_graph(pkg)
    assert graph["pkg.a"] == {"pkg", "pkg.b"} and graph["pkg.b"] == {"pkg.sub.c"} and graph["pkg.sub.c"] == {"pkg.a"}
    assert graph["pkg.sub"] == {"pkg.sub.d"} and graph["pkg.sub.d"] == {"pkg.e"} and graph["pkg.e"] == {"pkg.sub"}
    abc, sub = frozenset({"pkg.a", "pkg.b", "pkg.sub.c"}), frozenset({"pkg.sub", "pkg.sub.d", "pkg.e"})
    assert sorted(cycles(graph), key=sorted) == [abc, sub]
    assert one_cycle(graph, abc) == "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a"
    assert cycle_problems(graph, {abc, sub}) == []
    assert cycle_problems(graph, {abc}) == [
        "import cycle of 3 modules ['pkg.e', 'pkg.sub', 'pkg.sub.d']: pkg.e -> pkg.sub -> pkg.sub.d -> pkg.e"]
    (pkg / "sub/c.py").write_text("")
    assert cycle_problems(module_graph(pkg), {abc, sub}) == [
        "KNOWN_CYCLES entry is no longer a cycle (remove it, or replace it by what is left): "
        "['pkg.a', 'pkg.b', 'pkg.sub.c']"]


#: The modules that may name the server class (``toolwire.lsp.boot.ToolwireServer``): the
#: handlers and what starts them. The rest of lsp/ takes a narrow Protocol of what it uses
#: (bridge.UpdateChannel, progress.ProgressChannel, documents.Editor, persist.LinkedServer, …).
KNOWS_THE_SERVER = {"toolwire.cli", "toolwire.lsp.main", "toolwire.lsp.server", "toolwire.lsp.actions"}


def test_only_the_handlers_take_the_whole_server():
    """No module outside :data:`KNOWS_THE_SERVER` imports ``lsp/boot.py``, ``lsp/server.py`` or
    ``lsp/main.py`` (TYPE_CHECKING and function-level imports counted), so none can take the
    whole server object as a parameter."""
    server_modules = {"toolwire.lsp.boot", "toolwire.lsp.server", "toolwire.lsp.main"}
    graph = module_graph(PACKAGE)
    users = {module for module, deps in graph.items() if deps & server_modules}
    assert users == KNOWS_THE_SERVER, sorted(users ^ KNOWS_THE_SERVER)
