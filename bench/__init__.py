"""Benchmarks that print numbers: `python -m bench --help`. Never part of the test run."""
