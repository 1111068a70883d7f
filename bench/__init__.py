"""Benchmarks for hermes-qt: each prints its figure next to a baseline measured in the same run."""
