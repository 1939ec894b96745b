"""Speed and memory benchmarks (not timed tests): run them all with ``make bench`` or ``python -m benchmarks``."""
