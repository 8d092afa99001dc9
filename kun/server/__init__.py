"""kun's HTTP API (SPEC §10): threads and turns over HTTP, served by
``kun serve`` (:mod:`kun.cli.serve`). :func:`create_app` builds the
Starlette app over a backend that owns one TurnService."""

from kun.server.app import begin_shutdown, create_app

__all__ = ["begin_shutdown", "create_app"]
