"""``eagerflow.autograph``: the public AutoGraph API (``tf.autograph``).

See :mod:`eagerflow.function.autograph` for what is converted and how.

Example:
    >>> import eagerflow as ef
    >>> def f(x):
    ...     while x < 10:
    ...         x = x * 2
    ...     return x
    >>> int(ef.function(f)(ef.constant(3)))
    12
"""

from eagerflow.function.autograph import experimental, to_code, to_graph  # noqa: F401

__all__ = ["to_code", "to_graph", "experimental"]
