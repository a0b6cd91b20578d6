"""The tree is the architecture (issue 16 item 17, issue 26 item 6): packages import one way, ``report``
and the bottom layers (``runs``, ``stats``) never import a capability, no two packages import each other,
and no two modules do either, counting imports inside functions (lazy ones) but not those made only for
the type checker (``if TYPE_CHECKING:``)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "seatrial"
BASE = {"errors", "jsonio", "childenv", "lazy", "__init__"}
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
    """One TrialResult, one RunFolder, one redact, one Finding, one TensorEntry, one translation of bad
    settings: no second definition anywhere."""
    defined: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in (
                "TrialResult", "RunFolder", "redact", "read_header", "write_run_folder", "Finding", "TensorEntry",
                "config_errors",
            ):  # fmt: skip
                defined.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    assert defined == {
        "TrialResult": ["runs/result.py"],
        "RunFolder": ["runs/folder.py"],
        "redact": ["runs/redact.py"],
        "read_header": ["checkpoint/header.py"],
        "Finding": ["runs/findings.py"],
        "TensorEntry": ["checkpoint/header.py"],
        "config_errors": ["errors.py"],
    }


def _module_name(path: Path) -> str:
    parts = ("seatrial", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _typing_only(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:`` (imports the interpreter never runs)."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }


def module_imports() -> dict[str, set[str]]:
    """module -> the seatrial modules it imports at run time. ``from pkg import name`` is the module
    ``pkg.name`` where that is a module (a compiled one too, by its C source), else ``pkg``."""
    paths = {_module_name(p): p for p in SRC.rglob("*.py")}
    modules = set(paths) | {_module_name(p.with_suffix(".py")) for p in SRC.rglob("*.c")}

    def resolve(name: str) -> str:
        while name not in modules and "." in name:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _typing_only(tree)
        found = graph.setdefault(mod, set())
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {resolve(a.name) for a in node.names}
        found &= modules
        found.discard(mod)
    return graph


def test_modules_form_no_cycle_lazy_imports_included() -> None:
    graph = module_imports()
    seen: dict[str, int] = {}

    def visit(mod: str, path: list[str]) -> None:
        if seen.get(mod) == 2:
            return
        assert seen.get(mod) != 1, f"import cycle: {' -> '.join([*path, mod])}"
        seen[mod] = 1
        for dep in sorted(graph.get(mod, ())):
            visit(dep, [*path, mod])
        seen[mod] = 2

    for mod in sorted(graph):
        visit(mod, [])
