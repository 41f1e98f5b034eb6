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

__all__ = ["to_code", "to_graph", "experimental", "set_verbosity", "trace"]

_verbosity = [0]


def set_verbosity(level, alsologtostdout=False):
    """Sets how much the conversion logs (``tf.autograph.set_verbosity``).

    Conversion logs nothing at any level; errors in converted code always name the
    user's line. Kept so that programs calling it run unchanged.
    """
    _verbosity[0] = int(level)


def trace(*args):
    """Prints ``args`` when called, in eager code and while converting (``tf.autograph.trace``).
    """
    print(*args)
