"""Comparison helpers for SciCode test cases (see cmp)."""
