"""SGD with optional (Nesterov) momentum, as Keras 3 writes it.

Without momentum: ``w -= lr * g``. With momentum ``m`` (slot "momentum", zero at
start): ``v = m * v - lr * g``, then ``w += v`` or, with Nesterov,
``w += m * v - lr * g`` (using the updated ``v``).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import SGD
    >>> w = ef.Variable(1.0)
    >>> opt = SGD(learning_rate=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     _ = opt.apply_gradients([(ef.constant(1.0), w)])
    >>> round(float(w), 6)
    0.71
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["SGD"]


class SGD(Optimizer):
    """Gradient descent with momentum.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.01).
        momentum: A float in [0, 1] (default 0: plain gradient descent, no slot).
        nesterov: Whether to apply Nesterov momentum.
        name: The optimizer's name (default "SGD", as Keras).
        **kwargs: The base options: ``weight_decay``, ``clipnorm``, ``clipvalue``,
            ``global_clipnorm``, ``use_ema``, ``ema_momentum``,
            ``ema_overwrite_frequency``, ``loss_scale_factor``,
            ``gradient_accumulation_steps``.

    Raises:
        ValueError: If ``momentum`` is not a number in [0, 1].

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.optimizers import SGD
        >>> w = ef.Variable(1.0)
        >>> _ = SGD(0.1).apply_gradients([(ef.constant(2.0), w)])
        >>> round(float(w), 6)
        0.8
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD",
                 **kwargs):
        if not isinstance(momentum, (int, float)) or momentum < 0 or momentum > 1:
            raise ValueError("`momentum` must be a float between [0, 1]. Received: "
                             "momentum=%r" % (momentum,))
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.momentum = momentum
        self.nesterov = nesterov

    def _slot_specs(self):
        return [("momentum", "zeros")] if self.momentum != 0 else []

    def update_step(self, gradient, variable, learning_rate):
        lr = _cast(learning_rate, variable.dtype)
        gradient = _cast(gradient, variable.dtype)
        if self.momentum == 0:
            variable.assign_sub(gradient * lr)
            return
        m = self.get_slot(variable, "momentum")
        momentum = ef.constant(self.momentum, dtype=variable.dtype)
        m.assign(m * momentum - gradient * lr)
        if self.nesterov:
            variable.assign_add(m * momentum - gradient * lr)
        else:
            variable.assign_add(m)

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config

