"""verify-perf: a pre-merge performance gate for PyTorch training code."""

__version__ = "0.1.0"
