"""AdamW: Adam with decoupled weight decay (Keras 3: ``weight_decay=0.004``).

Each step first applies ``w -= w * weight_decay * lr`` (the base optimizer's decoupled
decay), then the Adam update.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import AdamW
    >>> AdamW().weight_decay
    0.004
"""

from __future__ import annotations

from eagerflow.keras.optimizers.adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with decoupled weight decay.

    Args:
        learning_rate: A float, Variable, schedule or callable (default 0.001).
        weight_decay: The decay factor (default 0.004); must not be None.
        beta_1: Decay of the first-moment estimate (default 0.9).
        beta_2: Decay of the second-moment estimate (default 0.999).
        epsilon: Added to ``sqrt(v)`` (default 1e-7).
        amsgrad: Whether to use the AMSGrad variant.
        name: The optimizer's name (default "adamw").
        **kwargs: The base options; see ``Optimizer``.

    Raises:
        ValueError: If ``weight_decay`` is None.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.optimizers import AdamW
        >>> w = ef.Variable(1.0)
        >>> _ = AdamW(learning_rate=0.1, weight_decay=0.5).apply_gradients(
        ...     [(ef.constant(0.0), w)])
        >>> round(float(w), 6)  # only the decay acts on a zero gradient
        0.95
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name="adamw", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: "
                             "weight_decay=None")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, name=name,
                         weight_decay=weight_decay, **kwargs)
