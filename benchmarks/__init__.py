"""Benchmarks for cortex: retrieval quality (LoCoMo, LongMemEval) and, later, latency."""
