"""kun: an event-sourced runtime for LLM agents."""

__version__ = "0.1.0"
