"""Adagrad, as Keras 3 writes it.

Slot ``a`` ("accumulator", starting at ``initial_accumulator_value``):

    a += g**2
    w -= lr * g / sqrt(a + epsilon)

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Adagrad
    >>> w = ef.Variable(1.0)
    >>> _ = Adagrad(learning_rate=0.1).apply_gradients([(ef.constant(1.0), w)])
    >>> round(float(w), 4)  # 1 - 0.1 / sqrt(1.1)
    0.9047
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """The Adagrad optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        initial_accumulator_value: Starting value of the accumulators (default 0.1).
        epsilon: Added inside the square root (default 1e-7).
        name: The optimizer's name (default "adagrad").
        **kwargs: The base options; see ``Optimizer``.

    Raises:
        ValueError: If ``initial_accumulator_value`` is negative.

    Example:
        >>> from eagerflow.keras.optimizers import Adagrad
        >>> Adagrad().initial_accumulator_value
        0.1
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="adagrad", **kwargs):
        if initial_accumulator_value < 0:
            raise ValueError("`initial_accumulator_value` must be >= 0. Received: "
                             "initial_accumulator_value=%r" % (initial_accumulator_value,))
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def _slot_specs(self):
        return [("accumulator", float(self.initial_accumulator_value))]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        gradient = _cast(gradient, dtype)
        accumulator = self.get_slot(variable, "accumulator")
        accumulator.assign_add(ef.square(gradient))
        variable.assign_sub(lr * gradient / ef.sqrt(accumulator + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"initial_accumulator_value": self.initial_accumulator_value,
                       "epsilon": self.epsilon})
        return config
