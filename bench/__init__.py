"""Benchmarks for llmfix (not tests): ``python -m bench [--quick]`` runs them all."""
