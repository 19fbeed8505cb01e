"""The package tree is the pipeline: every module imports only from its own stage, the
stages before it, and the shared leaves (core, kinds, record); no two modules import each
other in a loop. Anyone can run it: .venv/bin/pytest tests/test_layout.py"""
import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PKG = Path(__file__).resolve().parents[1] / "workflow" / "numaplace"
# in the order data flows; a module may import from its own rank and any lower one
STAGES = ["core", "kinds", "record", "machine", "plan", "builds", "run", "judge", "tables", "figures",
          "report", "cluster", "cli", "__main__"]


def _module(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _stage(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path):
    """numaplace modules imported by the file (at any depth: lazy imports count too)."""
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "numaplace":
            if node.level:
                raise AssertionError(f"{path}: relative import; the package imports by full name")
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if _is_module(full) else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "numaplace"}
    return out


def _is_module(name):
    p = PKG.parent.joinpath(*name.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def graph():
    return {_module(p): _imports(p) for p in sorted(PKG.rglob("*.py"))}


def test_every_module_lives_in_a_stage_folder():
    loose = [m for m in graph() if m.count(".") == 1 and _stage(m) not in ("cli", "__main__")
             and not (PKG / _stage(m)).is_dir()]
    assert not loose, f"modules outside a stage folder: {loose}"


def test_imports_follow_the_flow():
    bad = []
    for mod, imported in graph().items():
        if _stage(mod) == "__init__":
            continue
        rank = STAGES.index(_stage(mod))
        for target in imported:
            if target == "numaplace" or _stage(target) == "__init__":
                continue                       # ConfigError, __version__: the package's own leaf
            if STAGES.index(_stage(target)) > rank:
                bad.append(f"{mod} -> {target}")
    assert not bad, "imports against the flow: " + "; ".join(sorted(bad))


def test_no_import_circles():
    full = graph()
    g = {m: {t for t in ts if t in full} for m, ts in full.items()}
    seen, stack, circles = set(), [], []

    def visit(m):                              # depth first: an edge back into the path is a circle
        seen.add(m)
        stack.append(m)
        for t in sorted(g[m]):
            if t in stack:
                circles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in seen:
                visit(t)
        stack.pop()

    for m in sorted(g):
        if m not in seen:
            visit(m)
    assert not circles, "import circles: " + "; ".join(circles)
