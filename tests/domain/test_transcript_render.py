"""The transcript draws a tool result's first lines, tabs expanded and long
lines cut, then how many lines it left out: the fast drawing must give what
the plain rule gives for any output."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.items import ToolResult
from kun.domain.transcript import LINE_WIDTH, RESULT_LINES, _result, plural


def _plain(output: str, indent: str) -> list[str]:
    def cut(text: str) -> str:
        return text if len(text) <= LINE_WIDTH else text[: LINE_WIDTH - 3] + "..."

    rows = output.split("\n")
    shown = [f"{indent}| {cut(row.expandtabs(4))}" for row in rows[:RESULT_LINES]]
    if len(rows) > RESULT_LINES:
        shown.append(f"{indent}| ... ({plural(len(rows) - RESULT_LINES, 'more line')})")
    return shown


rows = st.text(alphabet=st.sampled_from("ab \t\u00e9"), max_size=LINE_WIDTH + 8)


@given(st.lists(rows, min_size=1, max_size=RESULT_LINES + 4), st.sampled_from(["  ", "    "]))
def test_a_result_is_drawn_as_the_plain_rule_draws_it(lines: list[str], indent: str) -> None:
    output = "\n".join(lines)
    result = ToolResult(id="r", call_id="c", name="bash", output=output)
    assert _result(result, indent) == _plain(output, indent)
