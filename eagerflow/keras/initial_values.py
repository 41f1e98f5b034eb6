"""The first value of a variable an optimizer or a metric adds (``add_variable``).

Both accept the same ``initializer`` forms as Keras: a callable ``(shape, dtype)``, "zeros",
"ones", a number, or a Keras initializer name.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.initial_values import initial_value
    >>> initial_value(1.5, [2], ef.float32).numpy().tolist()
    [1.5, 1.5]
"""

from __future__ import annotations

import eagerflow as ef


def named_initializer(initializer, shape, dtype, name):
    """A Keras initializer given by name ("glorot_uniform", ...), called once."""
    try:
        from eagerflow.keras import initializers  # on first use: it imports the layers' code
        init = initializers.get(initializer)
    except (ImportError, ValueError, TypeError):
        raise ValueError("Unsupported initializer %r for variable %r; use 'zeros', 'ones', a "
                         "number, a Keras initializer name, or a callable (shape, dtype)."
                         % (initializer, name)) from None
    return init(shape, dtype=dtype)


def initial_value(initializer, shape, dtype, name=None):
    """The tensor of ``shape`` and ``dtype`` that ``initializer`` gives."""
    if callable(initializer):
        return initializer(shape, dtype)
    if isinstance(initializer, str) and initializer == "zeros":
        return ef.zeros(shape, dtype=dtype)
    if isinstance(initializer, str) and initializer == "ones":
        return ef.ones(shape, dtype=dtype)
    if isinstance(initializer, (int, float)):
        return ef.fill(shape, ef.constant(initializer, dtype=dtype))
    return named_initializer(initializer, shape, dtype, name)
