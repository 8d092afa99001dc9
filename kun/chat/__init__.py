"""The interactive session (``kun``, ``kun chat``, ``kun -c``, ``kun resume``).

Small modules: ``input`` (the prompt and its keys), ``view`` (drawing a turn
above it), ``commands`` (the slash-command table), ``session`` (the loop),
``start`` (which thread and model), ``cli`` (the click commands). Nothing
here is imported until a session starts, so other commands start fast.
"""
