"""The command line's commands: each family in a small module, the group's
own behaviour in :mod:`kun.cli.main`, what the terminal shows in
:mod:`kun.cli.terminal`. The group is built, and the commands registered,
by the composition root :mod:`kun.entry` (the ``kun`` console script)."""
