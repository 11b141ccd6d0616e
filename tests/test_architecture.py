"""The layout's dependency rules, executed: import-linter's contracts (pyproject.toml) and the event protocol."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

from hypotrack.protocol import Event

PACKAGE = Path(__file__).resolve().parents[1] / "hypotrack"


def test_import_contracts_hold():
    exe = shutil.which("lint-imports")
    assert exe, "import-linter is a test dependency (pip install -e '.[test]')"
    result = subprocess.run([exe], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_event_kind_has_a_runner_handler():
    from hypotrack.run.launching.workers import HANDLERS

    assert set(HANDLERS) == set(Event)


def _emitted_events() -> set[str]:
    """Event members named in `.emit(Event.X, ...)` calls anywhere in the package."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "emit" and node.args:
                first = node.args[0]
                assert isinstance(first, ast.Attribute) and getattr(first.value, "id", None) == "Event", (
                    f"{path}:{node.lineno}: events are sent as Event members, not {ast.unparse(first)}")
                found.add(first.attr)
    return found


def test_events_are_sent_only_as_protocol_members():
    sent = _emitted_events()
    assert sent <= set(Event.__members__)
    # the worker's life cycle and the GRPO arm's records are all on the wire
    assert {"STARTED", "FINISHED", "FAILED", "KILLED", "METRICS", "CONFIG", "WARNING", "PHASE"} <= sent


def test_an_unknown_event_is_refused_on_both_sides():
    import io

    import pytest

    from hypotrack.protocol import EventWriter, parse_event

    with pytest.raises(TypeError):
        EventWriter(io.StringIO()).emit("warning", message="a bare string is not an event")
    assert parse_event('{"event": "telepathy"}') is None
    assert parse_event('{"event": "warning", "message": "x"}')["event"] is Event.WARNING


def _import_circles(prefix: str) -> list[list[str]]:
    """Groups of modules under ``prefix`` that import each other in a circle (strongly connected components of
    grimp's import graph, imports inside functions included)."""
    import grimp

    graph = grimp.build_graph("hypotrack")
    modules = sorted(m for m in graph.modules if m.startswith(prefix))
    edges = {m: [d for d in graph.find_modules_directly_imported_by(m) if d in modules] for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in modules:
        if module not in index:
            visit(module)
    return circles


def test_the_runner_has_no_import_circle():
    """run/ is three rooms (planning, launching, recording) and the test's life that walks through them."""
    assert _import_circles("hypotrack.run.") == []
