"""``eagerflow.profiler``: op-level profiles written as Chrome traces.

Example:
    >>> import tempfile, eagerflow as ef
    >>> opts = ef.profiler.experimental.ProfilerOptions(verbose=0)
    >>> with ef.profiler.experimental.Profile(tempfile.mkdtemp(), opts):
    ...     _ = ef.add(ef.ones([2]), 1.0)
    >>> sorted(row[0] for row in ef.profiler.experimental.last_summary)
    ['AddV2', 'Ones']
"""

from eagerflow.profiler import experimental  # noqa: F401

__all__ = ["experimental"]
