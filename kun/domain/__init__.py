"""Pure functions over contracts: reducers, projections, transcripts. No IO."""
