"""The delegated runtime (SPEC §9): a provider of ``kind = "agent-sdk"``
hands whole turns to the Claude Agent SDK, and kun records them as its own.

One module per job: :mod:`.messages` (the SDK's message types, shadowed),
:mod:`.mapper` (SDK messages → kun events, pure), :mod:`.rebase` (kun's
history as a prompt), :mod:`.env` (the scrubbed environment),
:mod:`.options` (the SDK's options), :mod:`.bridge` (kun's tools as an MCP
server), :mod:`.permissions` (``can_use_tool`` through kun's policy),
:mod:`.sdk` (the one import of the SDK) and :mod:`.engine` (the turn).
Nothing here imports the SDK until a delegated turn runs.
"""
