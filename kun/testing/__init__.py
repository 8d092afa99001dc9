"""Fakes with behaviour for tests, the demo and benchmarks."""
