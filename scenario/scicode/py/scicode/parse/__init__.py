"""Targets reader for SciCode test cases (see parse)."""
