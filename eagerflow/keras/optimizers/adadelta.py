"""Adadelta, as Keras 3 writes it (note the learning rate still scales the step).

Slots ``Eg`` ("accumulated_grad") and ``Ex`` ("accumulated_delta_var"), with
``rms(x) = sqrt(x + epsilon)``:

    Eg = rho * Eg + (1 - rho) * g**2
    dx = -rms(Ex) * g / rms(Eg)
    Ex = rho * Ex + (1 - rho) * dx**2
    w += lr * dx

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Adadelta
    >>> w = ef.Variable(1.0)
    >>> _ = Adadelta(learning_rate=1.0).apply_gradients([(ef.constant(1.0), w)])
    >>> float(w) < 1.0
    True
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """The Adadelta optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        rho: Decay rate of both running averages (default 0.95).
        epsilon: Added inside the square roots (default 1e-7).
        name: The optimizer's name (default "adadelta").
        **kwargs: The base options; see ``Optimizer``.

    Example:
        >>> from eagerflow.keras.optimizers import Adadelta
        >>> Adadelta().rho
        0.95
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="adadelta",
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def _slot_specs(self):
        return [("accumulated_grad", "zeros"), ("accumulated_delta_var", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        grad = _cast(gradient, dtype)
        rho = self.rho
        acc_grad = self.get_slot(variable, "accumulated_grad")
        acc_delta = self.get_slot(variable, "accumulated_delta_var")

        def rms(x):
            return ef.sqrt(x + self.epsilon)

        acc_grad.assign(rho * acc_grad + (1.0 - rho) * ef.square(grad))
        delta = -(rms(acc_delta) * grad) / rms(acc_grad)
        acc_delta.assign(rho * acc_delta + (1.0 - rho) * ef.square(delta))
        variable.assign_add(lr * delta)

    def get_config(self):
        config = super().get_config()
        config.update({"rho": self.rho, "epsilon": self.epsilon})
        return config
