"""Evaluation and benchmarks: protocols that measure the product, kept out of the serving path."""
