"""The layering rules ARCHITECTURE.md states, read from the source's imports (AST, nothing run):
no module imports another module's private name; the references import no fast stage; there
are no import circles; the tie-break list is one object everywhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cybpe
from support import REPO_DIR

PACKAGE = Path(cybpe.__file__).resolve().parent
#: The .pyx sources exist in a checkout (a wheel ships none).
PYX = sorted((REPO_DIR / "cybpe").rglob("*.pyx")) if (REPO_DIR / "cybpe").is_dir() else []


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import in ``path``, at any depth (lazy imports too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path) -> list[str]:
    out = [f"{path}:{line}: from {module} import {name}"
           for line, module, names in _imports(path) for name in names if _private(name)]
    return out


def test_no_module_imports_a_private_name_of_another():
    bad = [hit for path in _sources() for hit in private_imports(path)]
    pattern = re.compile(r"^\s*from\s+([\w.]+)\s+(?:c?import)\s+(.+)$")
    for path in PYX:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = pattern.match(line)
            if m:
                names = [part.split(" as ")[0].strip(" ()") for part in m.group(2).split("#")[0].split(",")]
                bad += [f"{path}:{n}: from {m.group(1)} import {name}" for name in names if _private(name)]
    assert bad == []


def test_the_rule_catches_a_private_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from cybpe.report.variants import _fmt\n")
    assert private_imports(planted) == [f"{planted}:2: from cybpe.report.variants import _fmt"]


#: What the pure-Python references may import from cybpe: the ground floor and each other.
REFERENCE_MAY_IMPORT = ("cybpe.errors", "cybpe.tie_breaks", "cybpe.reference")


def test_the_references_import_no_fast_stage():
    references = sorted((PACKAGE / "reference").glob("*.py"))
    assert len(references) >= 4
    bad = [f"{path.name}:{line}: {module}" for path in references for line, module, _ in _imports(path)
           if (module == "cybpe" or module.startswith("cybpe."))
           and not any(module == ok or module.startswith(ok + ".") for ok in REFERENCE_MAY_IMPORT)]
    assert bad == []


def _graph() -> dict[str, set[str]]:
    """Module -> the cybpe modules it imports at module level (what runs on import)."""
    modules = {_module(p): p for p in _sources()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            # a package is initialised before its modules: an edge to an enclosing package is none
            edges |= {t for t in targets if t in modules and t != name and not name.startswith(t + ".")}
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_import_circles():
    assert _cycle(_graph()) == []
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]  # the check can fail


def test_one_tie_break_list():
    from cybpe import tie_breaks
    from cybpe.reference import trainer as reference
    from cybpe.training import trainer

    assert trainer.TIE_BREAKS is tie_breaks.TIE_BREAKS is reference.TIE_BREAKS
