"""Nadam (Adam with Nesterov momentum), as Keras 3 writes it.

With ``t = iterations + 1``, ``mu_t = beta_1 * (1 - 0.5 * 0.96**t)`` and the running
product ``U_t = mu_1 * ... * mu_t`` (a single optimizer variable "u_product", updated
once per step before the per-variable updates):

    m += (g - m) * (1 - beta_1)
    v += (g**2 - v) * (1 - beta_2)
    m_hat = mu_{t+1} * m / (1 - U_t * mu_{t+1}) + (1 - mu_t) * g / (1 - U_t)
    v_hat = v / (1 - beta_2**t)
    w -= lr * m_hat / (sqrt(v_hat) + epsilon)

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Nadam
    >>> w = ef.Variable(1.0)
    >>> _ = Nadam(learning_rate=0.1).apply_gradients([(ef.constant(1.0), w)])
    >>> float(w) < 1.0
    True
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["Nadam"]


class Nadam(Optimizer):
    """The Nadam optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        beta_1: Decay of the first moment (default 0.9).
        beta_2: Decay of the second moment (default 0.999).
        epsilon: Added to ``sqrt(v_hat)`` (default 1e-7).
        name: The optimizer's name (default "nadam").
        **kwargs: The base options; see ``Optimizer``.

    Example:
        >>> from eagerflow.keras.optimizers import Nadam
        >>> Nadam().epsilon
        1e-07
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="nadam", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self._u_product = None

    def _slot_specs(self):
        return [("momentum", "zeros"), ("velocity", "zeros")]

    def _build_slots(self, new_vars):
        super()._build_slots(new_vars)
        if self._u_product is None:
            # Made after the first slots and in the first variable's dtype, as Keras.
            self._u_product = self.add_variable((), initializer=1.0, dtype=new_vars[0].dtype,
                                                name="u_product")

    def _update_step_all(self, grads, variables, learning_rate):
        dtype = self._u_product.dtype
        step = ef.cast(self.iterations + 1, dtype)
        decay = 1.0 - 0.5 * ef.pow(ef.constant(0.96, dtype=dtype), step)
        self._u_product.assign(self._u_product * self.beta_1 * decay)
        super()._update_step_all(grads, variables, learning_rate)

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        gradient = _cast(gradient, dtype)
        local_step = ef.cast(self.iterations + 1, dtype)
        next_step = ef.cast(self.iterations + 2, dtype)
        decay = ef.constant(0.96, dtype=dtype)
        beta_1 = ef.constant(self.beta_1, dtype=dtype)
        beta_2 = ef.constant(self.beta_2, dtype=dtype)
        u_t = beta_1 * (1.0 - 0.5 * ef.pow(decay, local_step))
        u_t_1 = beta_1 * (1.0 - 0.5 * ef.pow(decay, next_step))
        u_product_t = _cast(self._u_product, dtype)
        u_product_t_1 = u_product_t * u_t_1
        beta_2_power = ef.pow(beta_2, local_step)
        m = self.get_slot(variable, "momentum")
        v = self.get_slot(variable, "velocity")
        m.assign_add((gradient - m) * (1.0 - beta_1))
        v.assign_add((ef.square(gradient) - v) * (1.0 - beta_2))
        m_hat = (u_t_1 * m) / (1.0 - u_product_t_1) + ((1.0 - u_t) * gradient) / (
            1.0 - u_product_t)
        v_hat = v / (1.0 - beta_2_power)
        variable.assign_sub((m_hat * lr) / (ef.sqrt(v_hat) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2,
                       "epsilon": self.epsilon})
        return config
