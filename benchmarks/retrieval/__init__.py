"""Retrieval benchmark harness: LoCoMo and LongMemEval under the protocols of PROTOCOLS.md."""
