"""Benchmarks of localsvm against its peers (``python -m localsvm_benchmarks``)."""
