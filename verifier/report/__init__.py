"""Turning an analysis into a decision and into output formats."""
