"""The public AutoGraph API: ``to_code``, ``to_graph`` and ``experimental``."""

from __future__ import annotations

import types

from eagerflow.function.autograph import conversion

__all__ = ["to_code", "to_graph", "experimental"]


def _plain(entity):
    from eagerflow.function.function import Function

    if isinstance(entity, Function):
        return entity.python_function
    return entity


def to_code(entity, recursive=True, experimental_optional_features=None):
    """Returns the source AutoGraph generates for ``entity`` (``tf.autograph.to_code``).

    Args:
        entity: A Python function or method (or an ``eagerflow.function`` of one).
        recursive: Accepted for compatibility (calls are always converted when they run).
        experimental_optional_features: Accepted for compatibility.

    Returns:
        The converted function's source, as a string.

    Raises:
        eagerflow.autograph.experimental.ConversionError: If ``entity`` has no source or is
            not a plain function.

    Example:
        >>> import eagerflow as ef
        >>> def f(x):
        ...     if x > 0:
        ...         x = x * 2
        ...     return x
        >>> "ag__.if_stmt" in ef.autograph.to_code(f)
        True
    """
    return conversion.to_source(_plain(entity))


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """Returns the converted Python function of ``entity`` (``tf.autograph.to_graph``).

    The result runs Python control flow on tensors as graph control flow when called while
    a function is traced (for example from inside ``eagerflow.function(...,
    autograph=False)``), and as plain Python otherwise.

    Args:
        entity: A Python function or method.
        recursive: Accepted for compatibility.
        experimental_optional_features: Accepted for compatibility.

    Returns:
        The converted function.

    Raises:
        eagerflow.autograph.experimental.ConversionError: If it cannot be converted.

    Example:
        >>> import eagerflow as ef
        >>> def absolute(x):
        ...     return x if x >= 0 else -x
        >>> g = ef.autograph.to_graph(absolute)
        >>> int(ef.function(g, autograph=False)(ef.constant(-3)))
        3
    """
    return conversion.convert(_plain(entity), strict=True)


def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None,
                     shape_invariants=None):
    """Options for the enclosing converted loop (``tf.autograph.experimental``).

    Called as the first statements of a loop body; AutoGraph moves the call out of the loop
    and passes the options to the ``while_loop`` the loop becomes. Elsewhere it does
    nothing (a Python loop has no options).

    Args:
        parallel_iterations: Passed to ``while_loop``.
        swap_memory: Accepted for compatibility.
        maximum_iterations: The loop stops after this many iterations.
        shape_invariants: A list of ``(loop variable, TensorShape)`` pairs; None
            dimensions may change between iterations.

    Example:
        >>> import eagerflow as ef
        >>> @ef.function
        ... def grow(n):
        ...     x = ef.zeros([1])
        ...     for _ in ef.range(n):
        ...         ef.autograph.experimental.set_loop_options(
        ...             shape_invariants=[(x, ef.TensorShape([None]))])
        ...         x = ef.concat([x, x], 0)
        ...     return x
        >>> grow(ef.constant(3)).shape.as_list()
        [8]
    """


class _Experimental(types.SimpleNamespace):
    pass


experimental = _Experimental(
    do_not_convert=conversion.do_not_convert,
    set_loop_options=set_loop_options,
    ConversionError=conversion.ConversionError,
)
