"""``eagerflow.autodiff``: tape utilities (``tf.autodiff`` names plus None-gradient reasons).

Example:
    >>> import eagerflow as ef
    >>> ef.autodiff.set_none_gradient_warnings(True)
    >>> ef.autodiff.set_none_gradient_warnings(False)
"""

from eagerflow.tape import GradientTape, UnconnectedGradients, set_none_gradient_warnings

__all__ = ["GradientTape", "UnconnectedGradients", "set_none_gradient_warnings"]
