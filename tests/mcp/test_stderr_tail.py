"""What is kept of a stdio server's stderr: a bounded tail, cleaned."""

from __future__ import annotations

from kun.mcp.stderr_tail import KEPT_BYTES, SHOWN_CHARS, StderrTail


def test_a_server_that_writes_forever_costs_a_bounded_buffer() -> None:
    tail = StderrTail(secrets=["s3cret-value"])
    for n in range(10_000):
        tail.feed(f"line {n} s3cret-value\n".encode())
    assert len(tail._kept) == KEPT_BYTES
    assert tail.lines() == [f"line {n} [redacted]" for n in range(9995, 10_000)]


def test_a_line_cut_by_the_bound_is_not_shown_and_long_lines_are_cut() -> None:
    tail = StderrTail(secrets=["abcdefgh"])
    tail.feed(b"abcdefgh" * 2000 + b"\n" + b"x" * 500 + b"\n")
    (shown,) = tail.lines()  # the first line lost its start: a secret may be cut in two
    assert shown == "x" * (SHOWN_CHARS - 1) + "…"


def test_without_stderr_the_failure_is_said_as_it_was() -> None:
    assert StderrTail().explain("MCPError: Connection closed") == "MCPError: Connection closed"
