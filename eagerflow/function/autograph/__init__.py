"""AutoGraph: Python control flow on tensors becomes graph control flow, as in TF.

Inside ``@eagerflow.function`` (``autograph=True``, the default) the function's source is
converted once (cached per code object): ``if``/``elif``/``else``, ``while``, ``for`` over
a tensor, ``eagerflow.range`` or a Dataset, ``break``/``continue``/``return`` in loops,
``and``/``or``/``not`` and conditional expressions run as ``cond``/``while_loop`` when
their condition or iterable is a tensor, and as plain Python when it is a Python value.
Functions called from converted code are converted too, unless they are library code or
marked with :func:`experimental.do_not_convert`.

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def collatz_steps(n):
    ...     steps = 0
    ...     while n != 1:
    ...         if n % 2 == 0:
    ...             n = n // 2
    ...         else:
    ...             n = 3 * n + 1
    ...         steps += 1
    ...     return steps
    >>> int(collatz_steps(ef.constant(6)))
    8
"""

from __future__ import annotations

from eagerflow.function.autograph.api import experimental, to_code, to_graph  # noqa: F401

__all__ = ["to_code", "to_graph", "experimental"]
