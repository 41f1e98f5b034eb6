"""Adamax (Adam with the infinity norm), as Keras 3 writes it.

With ``t = iterations + 1``, slots ``m`` ("momentum") and ``u`` ("norm"):

    m += (g - m) * (1 - beta_1)
    u = max(beta_2 * u, |g|)
    w -= lr * m / ((1 - beta_1**t) * (u + epsilon))

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Adamax
    >>> w = ef.Variable(1.0)
    >>> _ = Adamax(learning_rate=0.1).apply_gradients([(ef.constant(2.0), w)])
    >>> round(float(w), 5)
    0.9
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """The Adamax optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        beta_1: Decay of the first moment (default 0.9).
        beta_2: Decay of the infinity norm (default 0.999).
        epsilon: Added to the norm (default 1e-7).
        name: The optimizer's name (default "adamax").
        **kwargs: The base options; see ``Optimizer``.

    Example:
        >>> from eagerflow.keras.optimizers import Adamax
        >>> Adamax().beta_2
        0.999
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="adamax", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def _slot_specs(self):
        return [("momentum", "zeros"), ("norm", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        gradient = _cast(gradient, dtype)
        local_step = ef.cast(self.iterations + 1, dtype)
        beta_1_power = ef.pow(ef.constant(self.beta_1, dtype=dtype), local_step)
        m = self.get_slot(variable, "momentum")
        u = self.get_slot(variable, "norm")
        m.assign_add((gradient - m) * (1.0 - self.beta_1))
        u.assign(ef.maximum(self.beta_2 * u, ef.abs(gradient)))
        variable.assign_sub((lr * m) / ((1.0 - beta_1_power) * (u + self.epsilon)))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2,
                       "epsilon": self.epsilon})
        return config
