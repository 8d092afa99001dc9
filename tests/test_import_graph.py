"""The house stays drawable: the layers of SPEC §2, and the surfaces above
``kun.app``, checked over every module of ``kun/`` by reading its source.

Every import counts, wherever it is written: at the top, inside a function
(the CLI imports lazily to start fast, which must not hide a dependency) and
under ``if TYPE_CHECKING:``. Each offence is printed as
``module:line imports X``.

The rules:

- **Surfaces speak only** :mod:`kun.app`: no module of ``kun/cli/`` or
  ``kun/chat/`` imports ``kun.store``, ``kun.runtime`` or ``kun.domain``, except
  the pure display helpers of :data:`DISPLAY_HELPERS`.
- **The composition root is the top**: only ``kun/__main__.py`` imports
  :mod:`kun.entry`; ``kun.cli`` never imports ``kun.chat``; ``kun.chat``
  never imports the group (``kun.cli.main``). Nothing below the surfaces
  imports them.
- **The HTTP adapter stands alone**: ``kun.client`` imports neither the
  server, the runtime nor the store (but the log's codec), so a program
  that only talks to ``kun serve`` does not load the engine.
- **Contracts and domain are pure** (SPEC §2): ``kun.contracts`` imports only
  itself; ``kun.domain`` only itself, ``kun.contracts`` and ``kun.errors``;
  neither imports a module that does IO, reads the clock or draws random
  numbers (:data:`IMPURE`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

KUN = Path(__file__).resolve().parent.parent / "kun"

SURFACES = ("kun.cli", "kun.chat")
BELOW_SURFACES = ("kun.store", "kun.runtime", "kun.domain")
DISPLAY_HELPERS = frozenset(
    {
        "kun.domain.shown",  # makes untrusted text safe to print (control bytes drawn inert)
        "kun.domain.transcript",  # draws a thread's transcript from its events: replay's text
        "kun.domain.usage_report",  # draws the usage table from usage snapshots: kun usage
        "kun.domain.choices",  # numbers a question's options and reads a typed reply
        "kun.domain.turnref",  # names a turn as replay numbers it (fork --at-turn, rewind)
    }
)
"""Pure functions of contract values that draw text (or read what a person
typed): the same drawing whichever adapter brought the values, so the
surfaces may call them directly rather than through a round trip."""

IMPURE = frozenset(
    {
        "anyio", "asyncio", "click", "datetime", "fcntl", "glob", "http", "httpx", "io",
        "logging", "multiprocessing", "os", "pathlib", "prompt_toolkit", "random", "rich",
        "secrets", "select", "selectors", "shutil", "signal", "socket", "sqlite3", "ssl",
        "starlette", "subprocess", "sys", "tempfile", "threading", "time", "urllib",
        "uuid", "uvicorn",
    }
)  # fmt: skip
"""Top-level packages that touch files, sockets, processes, the terminal,
the clock or randomness: none of them belongs in ``kun.contracts`` or
``kun.domain``."""

CLIENT_MAY_USE = frozenset({"kun.store.codec"})
"""What the HTTP adapter takes from the layers it stands in for: the log's
codec, to decode the events a stream carries as the log writes them."""


@dataclass(frozen=True)
class Import:
    module: str
    line: int
    imported: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = path.relative_to(KUN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    base = KUN.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, module: str | None = None) -> Iterator[Import]:
    """Every import in ``path`` (the source of ``module``, by default the
    one its place under ``kun/`` names), at any depth, as absolute dotted
    names (``from kun.domain import shown`` imports ``kun.domain.shown``)."""
    module = module or module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                dotted = f"{base}.{alias.name}"
                yield Import(module, node.lineno, dotted if _is_module(dotted) else base)


def all_imports() -> list[Import]:
    found = {i for path in KUN.rglob("*.py") for i in imports_of(path)}
    return sorted(found, key=lambda i: (i.module, i.line, i.imported))


def _within(name: str, *packages: str) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def surface_offences(imports: list[Import]) -> list[Import]:
    return [
        found
        for found in imports
        if _within(found.module, *SURFACES)
        and _within(found.imported, *BELOW_SURFACES)
        and not _within(found.imported, *DISPLAY_HELPERS)
    ]


def layer_offences(imports: list[Import]) -> list[Import]:
    offences = []
    for found in imports:
        module, imported = found.module, found.imported
        top = imported.split(".")[0]
        if _within(imported, "kun.entry") and module != "kun.__main__":
            offences.append(found)
        elif _within(module, "kun.cli") and _within(imported, "kun.chat"):
            offences.append(found)
        elif _within(module, "kun.chat") and _within(imported, "kun.cli.main"):
            offences.append(found)
        elif not _within(module, *SURFACES, "kun.entry", "kun.__main__") and _within(
            imported, *SURFACES
        ):
            offences.append(found)
        elif (
            _within(module, "kun.contracts")
            and top == "kun"
            and not _within(imported, "kun.contracts")
        ):
            offences.append(found)
        elif (
            _within(module, "kun.domain")
            and top == "kun"
            and not _within(imported, "kun.contracts", "kun.domain", "kun.errors")
        ):
            offences.append(found)
        elif _within(module, "kun.contracts", "kun.domain") and top in IMPURE:
            offences.append(found)
        elif (
            _within(module, "kun.client")
            and _within(imported, "kun.server", "kun.runtime", "kun.store")
            and imported not in CLIENT_MAY_USE
        ):
            offences.append(found)
    return offences


def _report(title: str, offences: list[Import]) -> str:
    return "\n".join([title, *(f"  {found}" for found in offences)])


def test_surfaces_speak_only_to_kun_app() -> None:
    offences = surface_offences(all_imports())
    assert not offences, _report(
        "kun/cli and kun/chat reach past kun.app (use the Kun protocol, or a display helper):",
        offences,
    )


def test_the_layers_of_spec_section_2() -> None:
    offences = layer_offences(all_imports())
    assert not offences, _report("imports against the layers (SPEC §2):", offences)


def test_every_kind_of_import_is_seen(tmp_path: Path) -> None:
    """Imports inside functions, under TYPE_CHECKING and relative ones are
    all found, with their lines, and a submodule named in ``from`` counts
    as that submodule."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from kun.store.paths import log_path\n"
        "def f() -> None:\n"
        "    import kun.runtime.service\n"
        "    from kun.domain import shown, reduce\n"
        "    from ..domain import state\n"
        "    from . import options\n"
    )
    module = "kun.cli.probe"
    found = [str(i) for i in imports_of(probe, module) if i.imported.startswith("kun")]
    offences = [str(i) for i in surface_offences(list(imports_of(probe, module)))]
    assert found == [
        f"{module}:3 imports kun.store.paths",
        f"{module}:5 imports kun.runtime.service",
        f"{module}:6 imports kun.domain.shown",
        f"{module}:6 imports kun.domain.reduce",
        f"{module}:7 imports kun.domain.state",
        f"{module}:8 imports kun.cli.options",
    ]
    assert offences == [
        f"{module}:3 imports kun.store.paths",
        f"{module}:5 imports kun.runtime.service",
        f"{module}:6 imports kun.domain.reduce",
        f"{module}:7 imports kun.domain.state",
    ]


def test_each_layer_rule_catches_its_offence() -> None:
    tried = [
        Import("kun.cli.probe", 1, "kun.chat.session"),
        Import("kun.chat.probe", 2, "kun.cli.main"),
        Import("kun.cli.probe", 3, "kun.entry"),
        Import("kun.store.probe", 4, "kun.cli.options"),
        Import("kun.app.probe", 5, "kun.chat.view"),
        Import("kun.contracts.probe", 6, "kun.domain.state"),
        Import("kun.domain.probe", 7, "kun.store.paths"),
        Import("kun.domain.probe", 8, "os"),
        Import("kun.contracts.probe", 9, "time"),
        Import("kun.client.probe", 10, "kun.runtime.service"),
        Import("kun.__main__", 11, "kun.entry"),
        Import("kun.chat.probe", 12, "kun.cli.options"),
        Import("kun.domain.probe", 13, "kun.errors"),
        Import("kun.client.probe", 14, "kun.store.codec"),
    ]
    assert [found.line for found in layer_offences(tried)] == list(range(1, 11))
