"""kun.tools depends on kun.contracts and kun.errors only: the loop depends
on the tools, never the other way round (STYLE: contracts <- domain <-
store, model, tools <- runtime)."""

from __future__ import annotations

import ast
from pathlib import Path

import kun.tools

ALLOWED = ("kun.contracts", "kun.errors", "kun.tools")


def imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_tools_import_only_contracts_and_errors() -> None:
    package = Path(kun.tools.__file__).parent
    for module in sorted(package.rglob("*.py")):
        for name in imported_modules(module.read_text()):
            if name == "kun" or name.startswith("kun."):
                assert name.startswith(ALLOWED), f"{module.relative_to(package)} imports {name}"
