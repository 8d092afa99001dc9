"""Tracing off costs nothing: kun never imports OpenTelemetry unless it is
on, even with the JSON lines on and a turn observed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import kun.entry, kun.app.session, kun.observe.setup, kun.server.app
    from kun.observe.settings import ObserveSettings
    from kun.observe.setup import observer_for

    observer = observer_for(ObserveSettings(log="stderr"), Path("."))
    assert observer is not None and observer.spans is None
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    print(",".join(loaded) or "none")
    """
)


def test_kun_does_not_import_opentelemetry_with_tracing_off() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "none"


def test_the_check_sees_an_import_when_tracing_is_on() -> None:
    on = SCRIPT.replace('ObserveSettings(log="stderr")', "ObserveSettings(otel=True)")
    on = on.replace("observer.spans is None", "observer.spans is not None")
    env = {"OTEL_TRACES_EXPORTER": "none", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", on], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "opentelemetry.trace" in done.stdout.split(",")
