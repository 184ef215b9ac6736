"""Benchmarks (make bench): figures as ratios against references measured in the same run."""
