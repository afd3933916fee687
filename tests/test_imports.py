"""Every import of the project's own modules resolves, including those inside functions that only a
GPU run reaches (a relative import left behind by a module split fails there, not here, otherwise)."""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mdcore", "reference", "strategies", "harness", "research")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path):
    """(line, module, names) of each `from ... import ...` of a project module in the file."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] in PACKAGES:
                yield node.lineno, module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    yield node.lineno, a.name, []


FILES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_project_imports_resolve(path):
    missing = []
    for line, module, names in _imports(path):
        if importlib.util.find_spec(module) is None:
            missing.append(f"line {line}: no module {module}")
            continue
        mod = importlib.import_module(module)
        for n in names:
            if n != "*" and not hasattr(mod, n) and importlib.util.find_spec(f"{module}.{n}") is None:
                missing.append(f"line {line}: {module} has no {n}")
    assert not missing, "; ".join(missing)
