"""Moving threads in and out of a kun home (issue 13).

- :mod:`kun.portable.bundle` writes a thread as one self-checking archive
  (``kun export``); :mod:`kun.portable.unbundle` verifies and installs one
  (``kun import FILE``), under its own id or another (``--as``).
- :mod:`kun.portable.codex` and :mod:`kun.portable.claude_code` turn another
  agent's session log into a kun thread (``kun import --from``), through
  :mod:`kun.portable.builder`.
- :mod:`kun.portable.install` is what both share: a thread is assembled in a
  hidden staging home beside the real one and renamed into place, so an
  import is all or nothing.
"""
