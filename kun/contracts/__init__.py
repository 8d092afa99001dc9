"""Declared contracts: msgspec Structs only, no logic, no IO."""
