"""The project's benchmark command: ``python -m eagerflow.benchmarks``.

Each workload is timed for eagerflow and for its numpy floor (the same math written
directly in numpy) in the same run, and printed as a ratio; torch and tensorflow columns
appear when those packages are installed.
"""
