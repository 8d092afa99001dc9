"""``import kun.client`` is cheap: nothing loads until a name is used, and
the clients never load the server or the runtime."""

from __future__ import annotations

import subprocess
import sys

SHOW = "import sys; {code}; print(' '.join(sorted(sys.modules)))"


def _loaded(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", SHOW.format(code=code)],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


def test_importing_the_package_loads_neither_httpx_nor_kuns_layers() -> None:
    loaded = _loaded("import kun.client")
    assert "httpx" not in loaded
    assert not {m for m in loaded if m.startswith(("kun.store", "kun.server", "kun.runtime"))}


def test_the_clients_load_no_server_and_no_runtime() -> None:
    loaded = _loaded("from kun.client import AsyncKunClient, KunClient")
    assert not {m for m in loaded if m.startswith(("kun.server", "kun.runtime", "starlette"))}
