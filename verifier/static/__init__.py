"""The static analyzer: discovery, parsing, heat, type facts, suppression and the engine."""
