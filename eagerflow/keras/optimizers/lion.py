"""Lion (evolved sign momentum), as Keras 3 writes it.

Slot ``m`` ("momentum"):

    w -= lr * sign(beta_1 * m + (1 - beta_1) * g)
    m = beta_2 * m + (1 - beta_2) * g

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Lion
    >>> w = ef.Variable([1.0, 1.0])
    >>> _ = Lion(learning_rate=0.1).apply_gradients([(ef.constant([3.0, -0.5]), w)])
    >>> [round(x, 6) for x in w.numpy().tolist()]
    [0.9, 1.1]
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["Lion"]


class Lion(Optimizer):
    """The Lion optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        beta_1: Weight of the momentum (against the gradient) in the sign (default 0.9).
        beta_2: Decay of the momentum (default 0.99).
        name: The optimizer's name (default "lion").
        **kwargs: The base options; see ``Optimizer``.

    Raises:
        ValueError: If ``beta_1`` is not in (0, 1].

    Example:
        >>> from eagerflow.keras.optimizers import Lion
        >>> Lion().beta_2
        0.99
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, name="lion", **kwargs):
        if not 0.0 < beta_1 <= 1.0:
            raise ValueError("Argument `beta_1` must be in the [0, 1] range. Otherwise, "
                             "the optimizer degenerates to SignSGD. Received: beta_1=%r"
                             % (beta_1,))
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2

    def _slot_specs(self):
        return [("momentum", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        gradient = _cast(gradient, dtype)
        beta_1 = ef.constant(self.beta_1, dtype=dtype)
        beta_2 = ef.constant(self.beta_2, dtype=dtype)
        m = self.get_slot(variable, "momentum")
        direction = ef.sign(m * beta_1 + gradient * (1.0 - beta_1))
        variable.assign_sub(lr * direction)
        m.assign(m * beta_2 + gradient * (1.0 - beta_2))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2})
        return config
