"""Proof under stress: concurrency, crashes, hostile input, secrets, damaged environments."""
