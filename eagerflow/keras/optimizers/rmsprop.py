"""RMSprop (optionally centered, optionally with momentum), as Keras 3 writes it.

Slots: ``v`` ("velocity"), ``mg`` ("average_gradient", centered only) and ``mom``
("momentum", when ``momentum > 0``):

    v = rho * v + (1 - rho) * g**2
    mg = rho * mg + (1 - rho) * g                  (centered)
    d = v - mg**2 + epsilon  (centered)  or  v + epsilon
    inc = lr * g / sqrt(d)
    mom = momentum * mom + inc; w -= mom   (momentum > 0)   or   w -= inc

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import RMSprop
    >>> w = ef.Variable(1.0)
    >>> _ = RMSprop(learning_rate=0.01).apply_gradients([(ef.constant(1.0), w)])
    >>> round(float(w), 4)  # 1 - 0.01 / sqrt(0.1)
    0.9684
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """The RMSprop optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        rho: Decay of the squared-gradient average (default 0.9).
        momentum: Momentum (default 0.0: no momentum slot).
        epsilon: Added inside the square root (default 1e-7).
        centered: If True, normalize by the estimated variance of the gradient.
        name: The optimizer's name (default "rmsprop").
        **kwargs: The base options; see ``Optimizer``.

    Example:
        >>> from eagerflow.keras.optimizers import RMSprop
        >>> RMSprop(centered=True, momentum=0.9).get_config()["centered"]
        True
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="rmsprop", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def _slot_specs(self):
        specs = [("velocity", "zeros")]
        if self.momentum > 0:
            specs.append(("momentum", "zeros"))
        if self.centered:
            specs.append(("average_gradient", "zeros"))
        return specs

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        gradient = _cast(gradient, dtype)
        rho = self.rho
        velocity = self.get_slot(variable, "velocity")
        velocity.assign(rho * velocity + (1.0 - rho) * ef.square(gradient))
        if self.centered:
            average = self.get_slot(variable, "average_gradient")
            average.assign(rho * average + (1.0 - rho) * gradient)
            denominator = velocity - ef.square(average) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = lr * gradient / ef.sqrt(denominator)
        if self.momentum > 0:
            momentum = self.get_slot(variable, "momentum")
            momentum.assign(self.momentum * momentum + increment)
            variable.assign_sub(momentum)
        else:
            variable.assign_sub(increment)

    def get_config(self):
        config = super().get_config()
        config.update({"rho": self.rho, "momentum": self.momentum,
                       "epsilon": self.epsilon, "centered": self.centered})
        return config
