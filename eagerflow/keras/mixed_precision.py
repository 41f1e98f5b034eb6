"""Dtype policies: which dtype a layer computes in and which dtype its variables are stored in.

A policy has a ``compute_dtype`` (inputs are cast to it and the layer's math runs in it) and a
``variable_dtype`` (the dtype of the weights ``add_weight`` creates). Plain policies such as
``"float32"`` use one dtype for both; ``"mixed_float16"`` and ``"mixed_bfloat16"`` compute in
16 bits and keep float32 variables, so small updates are not lost to rounding.

Layers made without a ``dtype`` take the global policy in force when they are constructed.

Example:
    >>> from eagerflow.keras import mixed_precision
    >>> mixed_precision.set_global_policy("mixed_float16")
    >>> p = mixed_precision.global_policy()
    >>> p.compute_dtype, p.variable_dtype
    ('float16', 'float32')
    >>> mixed_precision.set_global_policy("float32")
"""

from __future__ import annotations

from eagerflow import dtypes as dtypes_lib

__all__ = ["DTypePolicy", "Policy", "global_policy", "set_global_policy", "get_policy",
           "LossScaleOptimizer"]  # noqa: F822 - resolved on first use by __getattr__


def __getattr__(name):
    # keras.mixed_precision.LossScaleOptimizer, as Keras: defined with the optimizers, which
    # import this module, so it resolves on first use.
    if name == "LossScaleOptimizer":
        from eagerflow.keras.optimizers.loss_scale import LossScaleOptimizer

        return LossScaleOptimizer
    raise AttributeError("module 'eagerflow.keras.mixed_precision' has no attribute %r" % name)

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


def _dtype_name(value):
    return dtypes_lib.as_dtype(value).name


class DTypePolicy:
    """A named pair of (compute dtype, variable dtype) for Keras layers.

    Args:
        name: ``"mixed_float16"``, ``"mixed_bfloat16"``, or a dtype name such as ``"float32"``,
            ``"float64"``, ``"float16"`` (and non-floating dtypes like ``"int32"`` for layers
            that never hold floating weights). None means ``"float32"``.

    Raises:
        ValueError: If ``name`` is not a policy or dtype name.

    Example:
        >>> from eagerflow.keras.mixed_precision import DTypePolicy
        >>> DTypePolicy("float64").compute_dtype
        'float64'
    """

    def __init__(self, name=None):
        if name is None:
            name = "float32"
        if isinstance(name, DTypePolicy):
            name = name.name
        if not isinstance(name, str):
            try:
                name = _dtype_name(name)
            except TypeError:
                raise ValueError("DTypePolicy name must be a string such as 'float32' or "
                                 "'mixed_float16', got %r." % (name,)) from None
        if name in _MIXED:
            compute, variable = _MIXED[name], "float32"
        else:
            try:
                compute = variable = _dtype_name(name)
            except TypeError:
                raise ValueError(
                    "Cannot convert value %r to a mixed precision DTypePolicy. Valid policies "
                    "are 'mixed_float16', 'mixed_bfloat16' and dtype names such as 'float32', "
                    "'float64' or 'float16'." % (name,)) from None
            name = compute
        self._name = name
        self._compute_dtype = compute
        self._variable_dtype = variable

    @property
    def name(self):
        """The policy's name, e.g. ``"mixed_float16"`` or ``"float32"``."""
        return self._name

    @property
    def compute_dtype(self):
        """The dtype (a string) layers cast their inputs to and compute in."""
        return self._compute_dtype

    @property
    def variable_dtype(self):
        """The dtype (a string) of the variables layers create."""
        return self._variable_dtype

    @property
    def is_mixed(self):
        """True when compute and variable dtypes differ."""
        return self._compute_dtype != self._variable_dtype

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other.name == self.name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return '<DTypePolicy "%s">' % self._name


Policy = DTypePolicy  # TF 2's ``tf.keras.mixed_precision.Policy``


class _GlobalPolicy:
    # Process-wide (as in tf.keras 2): replica threads of a strategy must see the policy the
    # main thread set.
    policy = None


_global = _GlobalPolicy()


def global_policy():
    """Returns the global DTypePolicy (``"float32"`` unless ``set_global_policy`` changed it).

    Example:
        >>> from eagerflow.keras import mixed_precision
        >>> mixed_precision.global_policy().name
        'float32'
    """
    if _global.policy is None:
        _global.policy = DTypePolicy("float32")
    return _global.policy


def set_global_policy(policy):
    """Sets the policy that layers constructed from now on use when given no ``dtype``.

    Args:
        policy: A DTypePolicy, a policy name (``"mixed_float16"``, ``"float32"``...), or None
            to restore ``"float32"``.

    Raises:
        ValueError: If the policy is not floating point (a global integer policy would make
            every layer's weights integers).

    Example:
        >>> from eagerflow.keras import mixed_precision
        >>> mixed_precision.set_global_policy("mixed_bfloat16")
        >>> mixed_precision.global_policy().compute_dtype
        'bfloat16'
        >>> mixed_precision.set_global_policy(None)
    """
    policy = DTypePolicy(policy) if not isinstance(policy, DTypePolicy) else policy
    if not dtypes_lib.as_dtype(policy.compute_dtype).is_floating:
        raise ValueError("set_global_policy can only be used to set the global policy to "
                         "floating-point policies, such as 'float32' and 'mixed_float16', but "
                         "got policy: %s" % policy.name)
    _global.policy = policy


def get_policy(identifier):
    """Converts a layer's ``dtype`` argument into a DTypePolicy.

    Args:
        identifier: None (the global policy), a DTypePolicy, a policy or dtype name, an
            eagerflow DType, or a serialized policy dict ``{"class_name", "config"}``.

    Returns:
        A DTypePolicy.

    Example:
        >>> from eagerflow.keras.mixed_precision import get_policy
        >>> get_policy("float64").variable_dtype
        'float64'
    """
    if identifier is None:
        return global_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        config = identifier.get("config", identifier)
        return DTypePolicy(config.get("name"))
    return DTypePolicy(identifier)


def serialize(policy):
    """A plain policy serializes to its dtype name, a mixed one to a class/config dict."""
    if not policy.is_mixed:
        return policy.name
    return {"class_name": "DTypePolicy", "config": policy.get_config()}
