"""Adam (and its AMSGrad variant), as Keras 3 writes it.

With ``t = iterations + 1`` and slots ``m`` ("momentum") and ``v`` ("velocity"):

    m += (g - m) * (1 - beta_1)
    v += (g**2 - v) * (1 - beta_2)
    alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
    w -= alpha * m / (sqrt(v) + epsilon)

With ``amsgrad=True`` a third slot ``v_hat = max(v_hat, v)`` replaces ``v`` in the
last line. Note epsilon is added to ``sqrt(v)`` *before* the bias correction is folded
into ``alpha`` (Keras' "epsilon hat"), so results differ slightly from the paper's form.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Adam
    >>> w = ef.Variable(1.0)
    >>> _ = Adam(learning_rate=0.1).apply_gradients([(ef.constant(0.5), w)])
    >>> round(float(w), 5)  # the first Adam step moves by about lr
    0.9
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.optimizers.base import Optimizer, _cast

__all__ = ["Adam"]


class Adam(Optimizer):
    """The Adam optimizer.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        beta_1: Decay of the first-moment estimate (default 0.9).
        beta_2: Decay of the second-moment estimate (default 0.999).
        epsilon: Added to ``sqrt(v)`` for stability (default 1e-7).
        amsgrad: Whether to use the AMSGrad variant.
        name: The optimizer's name (default "adam").
        **kwargs: The base options (``weight_decay``, clipping, ``use_ema``, ...); see
            ``Optimizer``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.optimizers import Adam
        >>> opt = Adam(amsgrad=True)
        >>> w = ef.Variable([1.0, 2.0])
        >>> _ = opt.apply_gradients([(ef.constant([0.1, 0.2]), w)])
        >>> sorted(opt.get_slot_names())
        ['momentum', 'velocity', 'velocity_hat']
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="adam", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def _slot_specs(self):
        specs = [("momentum", "zeros"), ("velocity", "zeros")]
        if self.amsgrad:
            specs.append(("velocity_hat", "zeros"))
        return specs

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = _cast(learning_rate, dtype)
        gradient = _cast(gradient, dtype)
        local_step = ef.cast(self.iterations + 1, dtype)
        beta_1_power = ef.pow(ef.constant(self.beta_1, dtype=dtype), local_step)
        beta_2_power = ef.pow(ef.constant(self.beta_2, dtype=dtype), local_step)
        m = self.get_slot(variable, "momentum")
        v = self.get_slot(variable, "velocity")
        alpha = lr * ef.sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)
        m.assign_add((gradient - m) * (1.0 - self.beta_1))
        v.assign_add((ef.square(gradient) - v) * (1.0 - self.beta_2))
        if self.amsgrad:
            v_hat = self.get_slot(variable, "velocity_hat")
            v_hat.assign(ef.maximum(v_hat, v))
            v = v_hat
        variable.assign_sub((m * alpha) / (ef.sqrt(v) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2,
                       "epsilon": self.epsilon, "amsgrad": self.amsgrad})
        return config
