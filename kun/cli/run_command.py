"""The ``kun run`` command: its options, and the checks a command line gets
before anything runs; the run itself is :mod:`kun.cli.run`, on whichever
adapter the command line names (:func:`kun.cli.target.command_target`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from kun.cli.colors import no_color_option
from kun.cli.flags import runtime_flags, runtime_options
from kun.cli.options import home_option

if TYPE_CHECKING:
    pass

__all__ = ["run"]

EXIT_FAILURE = 1
_POLICIES = ["never", "on-request", "untrusted", "always", "auto", "full-auto"]


@click.command()
@click.argument("prompt", required=False)
@click.option("--thread", "thread_id", default=None, help="Continue this thread.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the turn's events as JSON lines (the log's format).",
)
@no_color_option
@click.option("--provider", default=None, help="Provider name from kun.toml or the environment.")
@click.option("--model", default=None, help="Model of that provider.")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("."),
    help="Folder the tools work in (default: here); with --thread, the thread's from now on.",
)
@click.option(
    "--approval",
    type=click.Choice(_POLICIES),
    default=None,
    help="Approval policy. full-auto runs every command without asking: dangerous, opt-in.",
)
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="kun.toml to use (default: $KUN_CONFIG, ./kun.toml, $KUN_HOME/kun.toml).",
)
@click.option(
    "--plan",
    "plan_mode",
    is_flag=True,
    help="Plan mode: the model investigates with read-only tools and records a plan; "
    "nothing is changed.",
)
@click.option(
    "--goal",
    default=None,
    help="Set this goal on the thread and stay while kun resumes it, until it is "
    "complete, blocked or paused (Ctrl-C stops; the goal stays active).",
)
@click.option(
    "--goal-budget",
    type=click.IntRange(min=1),
    default=None,
    help="Token budget of --goal: no resume once it is spent.",
)
@click.option(
    "--multitask",
    type=click.Choice(["reject", "enqueue", "steer", "interrupt"]),
    default="reject",
    show_default=True,
    help="With --thread, when its turn is still running: reject (refuse), enqueue (wait, "
    "then run), steer (add PROMPT to the running turn), interrupt (stop it, then run).",
)
@runtime_options
@home_option
def run(
    prompt: str | None,
    thread_id: str | None,
    as_json: bool,
    provider: str | None,
    model: str | None,
    workspace: Path,
    approval: Any,
    config: Path | None,
    plan_mode: bool,
    goal: str | None,
    goal_budget: int | None,
    multitask: Any,
    home: Path | None,
) -> None:
    """Run one turn of PROMPT (in a new thread, or --thread) and show it live.

    With --goal, PROMPT may be left out: the objective is the first turn's
    prompt. PROMPT - reads the prompt from stdin. With --json, stdout gets only the
    turn's events, one JSON line each, as the log writes them. Ctrl-C
    interrupts the turn cleanly: the log records it as aborted.
    """
    from kun.app.connect import RemoteTarget
    from kun.cli.remote import local_only
    from kun.cli.run import RunOptions, run_prompt
    from kun.cli.runjson import prompt_argument
    from kun.cli.target import command_target, run_explained

    if goal_budget is not None and goal is None:
        raise click.UsageError("--goal-budget needs --goal")
    if goal is not None and not goal.strip():
        raise click.UsageError("--goal needs an objective")
    if prompt is None:
        if goal is None:
            raise click.UsageError("Missing argument 'PROMPT' (or give --goal OBJECTIVE)")
        prompt = goal.strip()
    flags = runtime_flags(approval)
    target = command_target(home, config=config, flags=flags)
    if isinstance(target, RemoteTarget):
        local_only(system=flags.system_prompt)
    given = click.get_current_context().get_parameter_source("workspace")
    options = RunOptions(
        prompt=prompt_argument(prompt, sys.stdin),
        thread_id=thread_id,
        provider=provider,
        model=model,
        workspace=workspace,
        approval=approval,
        runtime=flags,
        json=as_json,
        plan_mode=plan_mode,
        goal=goal.strip() if goal is not None else None,
        goal_budget=goal_budget,
        multitask=multitask,
        rebind=thread_id is not None and given is ParameterSource.COMMANDLINE,
    )
    result = run_explained(target, lambda: run_prompt(target, options))
    thread, turn = result.thread_id, result.turn
    click.echo(f"thread {thread} · turn {turn.turn_id} {turn.status}", err=True)
    if result.failed(options):
        sys.exit(EXIT_FAILURE)
