"""What every surface (the CLI, the interactive session, later the HTTP
server) composes from the runtime: a service over the JSONL store with the
configured tools (:mod:`kun.app.session`), the settings in force, model
selection, and finding threads by id prefix or recency."""
