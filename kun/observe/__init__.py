"""Observability: structured JSON logs of model and tool calls and optional
OpenTelemetry spans, off by default.

One JSON line per model call (``kind`` ``model_call``), tool call
(``tool_call``), wait for the user's approval or answer (``wait``) and turn
(``turn``), to ``<home>/logs/kun-YYYYMMDD.jsonl``,
a named file or stderr (:mod:`kun.observe.sink`); spans of the same work
behind the ``kun[otel]`` extra (:mod:`kun.observe.otel`). Both watch the
turn from outside, at the model client, tool host and approval gate boundaries
(:mod:`kun.observe.observer`): the event log is the same with them on or
off. Settings: :mod:`kun.observe.settings`; composition:
:mod:`kun.observe.setup`.
"""
