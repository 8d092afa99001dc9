"""The three families of errors kun raises on purpose.

::

    KunError
    ├── UserMistake        the caller asked for something wrong: a bad thread id,
    │                      a missing thread, a malformed request. The CLI prints
    │                      the message as one line and exits non-zero.
    ├── RuntimeFailure     kun could not do what was asked: a corrupt log, a
    │                      provider error, a lost lock. Carries enough context to
    │                      act on (file, line, seq, status code).
    └── ControlFlow        not a failure: an abort travelling up the stack.

Each layer defines its own errors under these bases in its ``errors`` module
(``kun.store.errors``, ``kun.domain.errors``, ...). Callers classify by type,
never by message text.
"""

from __future__ import annotations


class KunError(Exception):
    """Base of every error kun raises on purpose.

    ``suggests``: the arguments of the ``kun`` command the message tells
    the user to run, written in it as ``kun ARGS``; a surface that knows
    more (the CLI knows its ``--home`` and ``--server``) writes that
    command out in full (:func:`kun.cli.options.explained`);
    ``also_suggests``: the other commands it names, written out alike."""

    suggests: tuple[str, ...] = ()
    also_suggests: tuple[tuple[str, ...], ...] = ()


class UserMistake(KunError):
    """The caller asked for something invalid; the message says what and how to fix it."""


class RuntimeFailure(KunError):
    """kun could not do what was asked."""


class ControlFlow(KunError):
    """Not a failure: cancellation or abort travelling up the stack."""
