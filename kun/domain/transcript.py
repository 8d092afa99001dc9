"""A thread rendered as the transcript a person wants to read.

Pure: takes a ``ThreadState`` and returns lines. Long tool arguments and
results are cut to a few lines so a transcript stays skimmable; reasoning is
folded to a one-line summary unless asked for. A file write shows the diff
its result recorded (or, if it never ran, the one its approval showed), and
the header lists the thread's "always" rules; an approval answered "always"
says so, so where each rule came from is in the transcript too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    Compaction,
    ErrorItem,
    Item,
    Plan,
    ToolCall,
    ToolResult,
    UserInput,
    UserMessage,
    WarningItem,
)
from kun.contracts.usage import UsageTotals
from kun.domain.checkpoints import restoring_lines, rewind_lines
from kun.domain.goals import goal_usage_line
from kun.domain.shown import shown
from kun.domain.state import QUEUE_CANCELLED, Imported, ThreadState, TurnState

RESULT_LINES = 6
DIFF_LINES = 80
LINE_WIDTH = 160
ARGUMENT_WIDTH = 200


def render_transcript(
    state: ThreadState, *, show_hidden: bool = False, show_reasoning: bool = False
) -> list[str]:
    return [
        line
        for chunk in iter_transcript(state, show_hidden=show_hidden, show_reasoning=show_reasoning)
        for line in chunk
    ]


def iter_transcript(
    state: ThreadState, *, show_hidden: bool = False, show_reasoning: bool = False
) -> Iterator[list[str]]:
    """The transcript's lines in chunks: each turn, then the summary. A
    printer writes each chunk as it comes; a replay that streams produces the
    same chunks from :func:`turn_lines` and :func:`summary_lines` while it
    folds, so the summary (which needs the whole log) comes last."""
    for number, turn in enumerate(state.turns, start=1):
        yield turn_lines(number, turn, show_hidden=show_hidden, show_reasoning=show_reasoning)
    yield summary_lines(state)


def turn_lines(
    number: int, turn: TurnState, *, show_hidden: bool = False, show_reasoning: bool = False
) -> list[str]:
    """Turn ``number`` (1-based) as the transcript draws it: after a blank
    line, except the first turn, which opens the transcript."""
    lines = _numbered(number, turn, show_hidden, show_reasoning)
    return _shown(lines[1:] if number == 1 and lines[0] == "" else lines)


def summary_lines(state: ThreadState) -> list[str]:
    """What closes the transcript: the thread (title, status, turns, settings,
    lineage, repairs), the warnings and the total."""
    warnings = [f"warning {warning.code}: {warning.message}" for warning in state.warnings]
    lead = [""] if state.turns else []
    return _shown([*lead, *_header(state), *warnings, "", f"total: {format_usage(state.usage)}"])


def _shown(lines: list[str]) -> list[str]:
    """The lines with the model's and tools' control characters made
    visible (:mod:`kun.domain.shown`): one scan of the chunk when it holds
    none, as nearly every chunk does."""
    whole = "\n".join(lines)
    return lines if shown(whole) is whole else [shown(line) for line in lines]


def render_since(
    before: ThreadState,
    state: ThreadState,
    *,
    show_hidden: bool = False,
    show_reasoning: bool = False,
) -> list[str]:
    """What happened after ``before`` (the same thread at an earlier seq):
    one line naming the seqs, then every turn that started or changed since,
    numbered and drawn as in the whole transcript (a turn a later rewind hid
    shows as hidden), the warnings since and the thread's total. A page of
    the transcript, for a log too long to read whole on a screen."""
    known = {turn.turn_id: turn for turn in before.turns}
    lines = [f"-- since seq {before.last_seq + 1} (to seq {state.last_seq}) --"]
    for number, turn in enumerate(state.turns, start=1):
        if known.get(turn.turn_id) != turn:
            lines.extend(_numbered(number, turn, show_hidden, show_reasoning))
    through = state.imported_through
    if isinstance(through, int) and through > before.last_seq:
        lines.extend(imported_lines(state))
    for warning in state.warnings:
        if warning.seq > before.last_seq:
            lines.append(f"warning {warning.code}: {warning.message}")
    lines.append("")
    lines.append(f"total: {format_usage(state.usage)}")
    return _shown(lines)


def imported_lines(state: ThreadState) -> list[str]:
    """Where the thread came from (its latest ``thread_imported``): the
    file changes recorded before it name another machine's files, so a
    reader of the transcript learns why a rewind there leaves them alone.
    Nothing for a thread never imported."""
    mark, seq = state.imported, state.imported_through
    if not isinstance(mark, Imported) or not isinstance(seq, int):
        return []
    workspace = f" into workspace {mark.workspace}" if mark.workspace is not None else ""
    return [
        f"-- imported from {mark.source} at seq {seq}{workspace}: "
        "file changes before this are never restored here --"
    ]


def _numbered(number: int, turn: TurnState, show_hidden: bool, show_reasoning: bool) -> list[str]:
    if turn.hidden_by is not None and not show_hidden:
        return [f"-- turn {number} · hidden by the rewind at seq {turn.hidden_by} --"]
    shown = _turn(number, turn, show_reasoning)
    if turn.hidden_by is not None:
        shown = _hidden(shown, turn.hidden_by)
    return ["", *shown]


def _header(state: ThreadState) -> list[str]:
    s = state.settings
    model = "/".join(p for p in (s.provider, s.model) if p) or "default model"
    turns = plural(len(state.turns), "turn")
    lines = [
        f"thread {state.thread_id} · {s.title!r} · {state.status} · {turns}",
        f"workspace {s.workspace or '-'} · {model} · approval {s.approval_policy}",
    ]
    if s.allow_rules:
        lines.append(f"always allowed: {', '.join(r.describe() for r in s.allow_rules)}")
    if state.forked_from is not None:
        origin = state.forked_from
        lines.append(f"forked from {origin.thread_id} at seq {origin.seq}")
    lines.extend(imported_lines(state))
    if s.goal is not None:
        used = goal_usage_line(s.goal)
        lines.append(f"goal ({s.goal.status}): {_one_line(s.goal.objective)} · {used}")
    for todo in s.todos:
        mark = {"completed": "x", "in_progress": "~"}.get(todo.status, " ")
        lines.append(f"  [{mark}] {_one_line(todo.content)}")
    for repair in state.repairs:
        lines.append(
            f"log repaired at seq {repair.seq}: dropped {repair.dropped_bytes} bytes "
            f"at line {repair.line} ({repair.reason})"
        )
    for rewind in state.rewinds:
        lines.extend(rewind_lines(rewind))
    lines.extend(restoring_lines(state.restoring))
    return lines


def _turn(number: int, turn: TurnState, show_reasoning: bool) -> list[str]:
    duration = turn.duration_ms if turn.abort_reason != QUEUE_CANCELLED else None
    took = f" · {duration / 1000:.1f}s" if duration is not None else ""
    model = f" · {turn.model}" if turn.model else ""
    plan = " · plan mode" if turn.plan_mode else ""
    lines = [f"== turn {number} · {turn.status}{took}{model}{plan} · {turn.turn_id} =="]
    items = turn.items
    calls = {item.call_id for item in items if type(item) is ToolCall}
    attached: dict[str, list[Item]] = {}
    if calls:
        for item in items:
            if isinstance(item, _ATTACHED) and item.call_id in calls:
                attached.setdefault(item.call_id, []).append(item)
    for item in items:
        if type(item) is ToolCall:
            lines.extend(_tool_call(item, attached.get(item.call_id, ())))
        elif not (isinstance(item, _ATTACHED) and item.call_id in calls):
            lines.extend(_item(item, show_reasoning))
    if turn.error is not None:
        lines.append(f"  failed [{turn.error.code}]: {_one_line(turn.error.message)}")
    if turn.status == "queued":
        lines.append("  queued: it starts when the turns before it have ended")
    elif turn.status == "aborted" and turn.abort_reason == QUEUE_CANCELLED:
        lines.append("  aborted: cancelled while queued (it never ran)")
    elif turn.status == "aborted":
        dropped = f", {turn.discarded_items} items discarded" if turn.discarded_items else ""
        lines.append(f"  aborted: {turn.abort_reason}{dropped}")
    if turn.usage.calls:
        lines.append(f"  usage: {format_usage(turn.usage)}")
    return lines


_ATTACHED = (ToolResult, Approval)
_CALL_MARKS = {"completed": "ok", "in_progress": "running"}


def _hidden(lines: list[str], rewind_seq: int) -> list[str]:
    """A hidden turn shown anyway (``--hidden``): its header says so and
    every other line starts with ``~``, so it cannot pass for a live turn."""
    header, _, rest = lines[0].partition(" · ")
    marked = [f"{header} · HIDDEN by the rewind at seq {rewind_seq} · {rest}"]
    return marked + ["~" + line[1:] if line.startswith(" ") else "~ " + line for line in lines[1:]]


def plural(n: int, word: str) -> str:
    """``1 turn``, ``2 turns``: every count kun prints goes through it."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _item(item: Item, show_reasoning: bool) -> list[str]:
    status = "" if item.status == "completed" else f" ({item.status})"
    match item:
        case UserMessage():
            who = "user (steering)" if item.steered else "user"
            return _block(f"  {who} > ", item.text)
        case AssistantText():
            return _block(f"  assistant{status} > ", item.text)
        case AssistantReasoning():
            if show_reasoning:
                return _block(f"  thinking{status} > ", item.text)
            return [f"  thinking{status}: {len(item.text)} chars (folded; --reasoning shows it)"]
        case ToolCall():
            return _tool_call(item, [])
        case ToolResult():
            return _result(item, "  ")
        case Approval():
            reason = f" ({item.reason})" if item.reason else ""
            return [
                f"  approval for {item.tool_name}: {_one_line(item.summary)} -> "
                f"{item.status}{reason}"
            ]
        case UserInput():
            answer = f": {_one_line(item.answer)}" if item.answer is not None else ""
            return [f"  question: {_one_line(item.question)} -> {item.status}{answer}"]
        case Plan():
            summary = f": {_one_line(item.summary)}" if item.summary else ""
            origin = " (from the reply)" if item.from_reply else ""
            return [f"  plan{origin}{summary}", *_block("    ", item.markdown.rstrip("\n"))]
        case Compaction():
            return [f"  compacted {item.replaced_items} items: {_one_line(item.summary)}"]
        case WarningItem():
            return [f"  warning {item.code}: {_one_line(item.message)}"]
        case ErrorItem():
            return [f"  error {item.code} ({item.severity}): {_one_line(item.message)}"]


def _approval(item: Approval) -> str:
    reason = f" ({item.reason})" if item.reason else ""
    return f"{_one_line(item.summary)} -> {item.status}{reason}"


def _tool_call(call: ToolCall, attached: Sequence[Item]) -> list[str]:
    arguments = bytes(call.arguments).decode() if call.arguments_text == "" else call.arguments_text
    mark = _CALL_MARKS.get(call.status, call.status)
    for item in attached:
        if type(item) is ToolResult and item.is_error:
            mark = f"error{f' [{item.code}]' if item.code else ''}"
    lines = [f"  tool {call.name}({_cut(_one_line(arguments), ARGUMENT_WIDTH)}) -> {mark}"]
    if call.side_thread is not None:
        lines.append(side_thread_line(call.side_thread, call.agent, "    "))
    diff = ""
    for item in attached:
        if type(item) is Approval:
            lines.append(f"    approval: {_approval(item)}")
            diff = diff or item.diff
        elif type(item) is ToolResult:
            lines.extend(_result(item, "    "))
            diff = item.diff or diff
    if diff:
        lines.extend(_diff(diff, "    "))
    return lines


SIDE_THREAD = "side thread "


def side_thread_line(thread_id: str, agent: str | None, indent: str) -> str:
    """The line under a ``delegate_task`` call naming its side thread
    (``kun replay --children`` puts the side thread's turns after it)."""
    who = f"agent {agent}" if agent else "read-only helper"
    return f"{indent}{SIDE_THREAD}{thread_id} ({who}): kun replay {thread_id}"


def _diff(diff: str, indent: str) -> list[str]:
    """A file write's diff as recorded: the change made, or for a call that
    did not run, the change its approval showed."""
    if not diff:
        return []
    rows = diff.split("\n")
    shown = [f"{indent}{_cut(row.expandtabs(4), LINE_WIDTH)}" for row in rows[:DIFF_LINES]]
    if len(rows) > DIFF_LINES:
        shown.append(f"{indent}... ({len(rows) - DIFF_LINES} more diff lines)")
    return shown


def _result(result: ToolResult, indent: str) -> list[str]:
    """The first ``RESULT_LINES`` lines of the output and how many more
    (split no further than shown: an output can be long)."""
    output = result.output
    rows = output.split("\n", RESULT_LINES)
    rest = rows.pop() if len(rows) > RESULT_LINES else None
    if "\t" in output:
        rows = "\n".join(rows).expandtabs(4).split("\n")
    prefix, width = f"{indent}| ", LINE_WIDTH
    shown = [prefix + (row if len(row) <= width else row[: width - 3] + "...") for row in rows]
    if rest is not None:
        shown.append(f"{indent}| ... ({plural(rest.count(chr(10)) + 1, 'more line')})")
    ref = result.output_ref
    if ref is not None:
        shown.append(f"{indent}| [{-(-ref.size // 1024):,} KB in side file {ref.sha256[:12]}]")
    return shown


def _block(prefix: str, text: str) -> list[str]:
    if "\n" not in text:
        return [prefix + text]
    rows = text.split("\n")
    pad = " " * len(prefix)
    return [prefix + rows[0], *(pad + row for row in rows[1:])]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_usage(usage: UsageTotals) -> str:
    if usage.calls == 0:
        return "no usage reported"
    if usage.unpriced_calls == usage.calls:
        cost = "cost unknown"
    else:
        cost = f"${usage.cost_usd:.4f}"
        if usage.unpriced_calls:
            cost += f" + {plural(usage.unpriced_calls, 'unpriced call')}"
    return (
        f"{plural(usage.calls, 'call')} · prompt {usage.prompt_tokens:,} "
        f"(cache hit {usage.cache_hit_tokens:,}) · completion {usage.completion_tokens:,} "
        f"· {cost}"
    )
