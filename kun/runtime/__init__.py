"""The runtime: the writer of threads and the agent loop.

This package's own surface is the event path: :class:`EventRecorder` (number,
validate, persist, publish, coalesce deltas) and :class:`EventBus` (live
followers, backlog then live). The TurnService and the loop live in their
modules (``kun.runtime.service``, ``kun.runtime.loop``) and are imported from
there, so importing the recorder does not load the model or tool layers.
"""

from __future__ import annotations

from kun.runtime.bus import EventBus, Follower, FollowerGap
from kun.runtime.clock import now_ms
from kun.runtime.recorder import EventRecorder, RecorderNotRunning, ThreadExists, ThreadNotOpen

__all__ = [
    "EventBus",
    "EventRecorder",
    "Follower",
    "FollowerGap",
    "RecorderNotRunning",
    "ThreadExists",
    "ThreadNotOpen",
    "now_ms",
]
