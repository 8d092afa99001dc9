"""``kun demo``: real turns on the loopback provider, a priced usage line,
and a tour of the log whose commands are printed as typed and really run."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

import kun.cli.demo
from kun.cli import demo_tour
from kun.entry import cli
from tests.terminal_support import events_of, finish, spawn, state_of


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _commands(out: str) -> list[tuple[list[str], str]]:
    """Each ``$ kun ...`` line of the tour: its arguments, and what it printed."""
    blocks = out.split("\n$ ")[1:]
    found = []
    for block in blocks:
        typed, _, printed = block.partition("\n")
        command = shlex.split(typed.partition("  # ")[0])
        found.append((command, printed.partition("\nworkspace: ")[0].rstrip("\n")))
    return found


def test_the_demo_runs_real_turns_priced_and_tours_its_own_log(tmp_path: Path) -> None:
    code, out, err = _run("demo", "--home", str(tmp_path))
    assert code == 0, err
    live, _, tour = out.partition("What the log makes possible")
    assert "-> read_file(" in live and "-> edit_file(" in live and "turn completed" in live
    usage_lines = [line for line in live.split("\n") if line.startswith("usage: ")]
    assert len(usage_lines) == 2 and all("· $0.00" in line for line in usage_lines)
    assert "openai/gpt-4.1-mini" in live
    commands = _commands(tour)
    assert [c[0][1] for c in commands] == ["replay", "fork", "usage", "rewind", "rewind"]
    for args, _ in commands:
        assert args[0] == "kun" and args[-2:] == ["--home", str(tmp_path)]
    thread_id = commands[0][0][2]
    events = events_of(tmp_path, thread_id)
    # the rewind and its undo came after the count
    assert f"\n{len(events) - 2} events, one JSON line each" in tour

    (replay_args, replayed), (fork_args, fork_id), (usage_args, compared), *rest = commands
    seq = int(replay_args[replay_args.index("--until-seq") + 1])
    assert "== turn 1 · running" in replayed and "-> ok" in replayed
    assert "edit_file" not in replayed
    assert fork_args[fork_args.index("--at-seq") + 1] == str(seq)
    fork = state_of(tmp_path, fork_id)
    assert fork.forked_from is not None
    assert (fork.forked_from.thread_id, fork.forked_from.seq) == (thread_id, seq)
    assert usage_args[2:4] == [thread_id, fork_id]
    assert compared.split("\n")[1].split()[:4] == ["model", "calls", "5", "1"]

    (rewind_args, rewound), (undo_args, undone) = rest
    assert "--before-turn" in rewind_args and "hid turn 2" in rewound
    # The undo the rewind's line offers is the next command printed.
    offered = shlex.split(rewound.rpartition("; ")[2].removesuffix(" brings them back"))
    assert offered == undo_args == ["kun", "rewind", thread_id, "--undo", "--home", str(tmp_path)]
    assert "brought back 1 turn " in undone
    state = state_of(tmp_path, thread_id)
    assert [t.status for t in state.turns] == ["completed", "completed"]
    assert len(state.visible_turns) == 2
    # Every printed command, pasted in the order shown, really runs again.
    for args, _ in commands:
        code, again, err = _run(*args[1:])
        assert code == 0, (args, again, err)
    code, again, _ = _run(*replay_args[1:])
    assert code == 0 and again.rstrip("\n") == replayed
    workspace = Path(out.rpartition("\nworkspace: ")[2].strip())
    assert "return a + b" in (workspace / "calc.py").read_text()


def test_the_paced_provider_streams_word_by_word_over_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pace is the provider's: the follow-up's words reach the viewer
    spread over (words - 1) gaps, not as one buffered burst (the log merges
    them for up to a second; the view draws the recorder's previews)."""
    monkeypatch.setattr(kun.cli.demo, "PACE", (0.0, 0.01))
    written: list[tuple[float, str]] = []

    class Out:
        def write(self, text: str) -> int:
            written.append((time.monotonic(), text))
            return len(text)

        def flush(self) -> None: ...

    anyio.run(lambda: kun.cli.demo.run_demo(tmp_path, Out(), paced=True))  # type: ignore[arg-type]
    answer = kun.cli.demo.FOLLOW_UP_ANSWER
    shown = "".join(text for _, text in written)
    start = shown.rindex(answer[:12])
    position, times = 0, []
    for at, text in written:
        if start <= position < start + len(answer):
            times.append(at)
        position += len(text)
    words = len(answer.split())
    assert len(times) >= 5
    assert times[-1] - times[0] >= 0.01 * (words - 1) * 0.75


@pytest.mark.parametrize(
    ("tty", "fast", "paced"), [(True, False, True), (True, True, False), (False, False, False)]
)
def test_the_demo_paces_only_on_a_terminal_and_not_when_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool, fast: bool, paced: bool
) -> None:
    seen: dict[str, bool] = {}

    async def fake_run(
        home: Path, out: object, *, color: bool, paced: bool, wire: str
    ) -> kun.cli.demo.DemoRun:
        seen["paced"] = paced
        raise SystemExit(0)

    monkeypatch.setattr(kun.cli.demo, "run_demo", fake_run)
    monkeypatch.setattr("sys.stdout.isatty", lambda: tty, raising=False)
    with pytest.raises(SystemExit):
        demo_tour.demo(tmp_path, cli, fast=fast)
    assert seen == {"paced": paced}


def test_the_demo_at_a_terminal(tmp_path: Path) -> None:
    """At a terminal (with --fast, to stay quick): colour, and the tour's
    commands as typed."""
    child = spawn(["demo", "--fast", "--home", str(tmp_path)], cwd=tmp_path)
    status, text = finish(child)
    assert status == 0, text
    assert "\x1b[" in child.logfile_read.getvalue()  # type: ignore[union-attr]
    assert "$ kun usage thr_" in text and "What the log makes possible" in text


def test_the_demo_speaks_gemini_offline(tmp_path: Path) -> None:
    """``kun demo --format gemini``: the same turns over Gemini streams, the
    calls id-less as Gemini sends them, priced at Google's rates."""
    code, out, err = _run("demo", "--format", "gemini", "--home", str(tmp_path))
    assert code == 0, err
    live, _, _ = out.partition("What the log makes possible")
    assert "-> read_file(" in live and "-> edit_file(" in live and "turn completed" in live
    assert "google/gemini-2.5-flash" in live
    usage_lines = [line for line in live.split("\n") if line.startswith("usage: ")]
    assert len(usage_lines) == 2 and all("$" in line for line in usage_lines)
