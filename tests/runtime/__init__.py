"""Tests of kun.runtime."""
