"""Benchmarks that print figures (never timed assertions); ``python -m tests.perf`` runs them all."""
