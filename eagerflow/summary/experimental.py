"""``eagerflow.summary.experimental``: the default step and generic writes.

Example:
    >>> import eagerflow as ef
    >>> ef.summary.experimental.set_step(7)
    >>> ef.summary.experimental.get_step()
    7
    >>> ef.summary.experimental.set_step(None)
"""

from eagerflow.summary.summary_ops import get_step, set_step, write  # noqa: F401

__all__ = ["get_step", "set_step", "write"]
