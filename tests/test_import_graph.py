"""The tree is the architecture (issue 16 item 17): packages import one way, ``report`` and the bottom
layers (``runs``, ``stats``) never import a capability, and no two packages import each other."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "seatrial"
BASE = {"errors", "verdict", "jsonio", "__init__"}
#: What each layer may import besides itself and BASE (None: any package).
ALLOWED: dict[str, set[str] | None] = {
    "stats": set(),
    "runs": {"stats"},
    "report": {"runs", "stats"},
    "cli": None,
    "demo": None,
}


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def imports() -> dict[str, set[str]]:
    """package -> the seatrial packages its modules import (module level and inside functions)."""
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        pkg = _package(path)
        found = graph.setdefault(pkg, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "seatrial" and len(parts) > 1 and parts[1] != pkg:
                    found.add(parts[1])
    return graph


def test_bottom_layers_and_report_import_no_capability() -> None:
    graph = imports()
    for pkg, allowed in ALLOWED.items():
        if allowed is None or pkg not in graph:
            continue
        extra = graph[pkg] - allowed - BASE
        assert not extra, f"seatrial.{pkg} imports {sorted(extra)}"


def test_packages_form_no_cycle() -> None:
    graph = {k: v - BASE for k, v in imports().items() if k not in BASE}
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(pkg: str, path: list[str]) -> None:
        if seen.get(pkg) == 2:
            return
        assert seen.get(pkg) != 1, f"import cycle: {' -> '.join([*path, pkg])}"
        seen[pkg] = 1
        for dep in sorted(graph.get(pkg, ())):
            visit(dep, [*path, pkg])
        seen[pkg] = 2

    for pkg in sorted(graph):
        visit(pkg, [])


def test_the_one_result_model_and_run_folder() -> None:
    """One TrialResult, one RunFolder, one redact: no second definition anywhere."""
    defined: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in (
                "TrialResult", "RunFolder", "redact", "read_header", "write_run_folder"
            ):  # fmt: skip
                defined.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    assert defined == {
        "TrialResult": ["runs/result.py"],
        "RunFolder": ["runs/folder.py"],
        "redact": ["runs/redact.py"],
        "read_header": ["checkpoint/header.py"],
    }
