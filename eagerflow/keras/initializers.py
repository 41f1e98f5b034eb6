"""Weight initializers, as ``tf.keras.initializers``.

An initializer is called as ``init(shape, dtype=None)`` and returns a tensor (float32 when no
dtype is given). Random initializers take a ``seed``: with an integer seed every call returns
the same values (stateless ops seeded with ``[seed, 0]``, as tf.keras does); without one each
call draws fresh values from the global random state.

Fans, used by the variance-scaling family: for a kernel of shape ``(..., fan_in_ch,
fan_out_ch)`` with receptive field ``r = prod(shape[:-2])``, ``fan_in = shape[-2] * r`` and
``fan_out = shape[-1] * r``; a vector has ``fan_in = fan_out = shape[0]``; a scalar has 1.

Example:
    >>> from eagerflow.keras import initializers
    >>> init = initializers.get("glorot_uniform")
    >>> init((3, 4)).shape
    TensorShape([3, 4])
"""

from __future__ import annotations

import math

import numpy as np

import eagerflow as ef
from eagerflow.errors import short_repr
from eagerflow import dtypes as dtypes_lib

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal",
           "HeUniform", "LecunNormal", "LecunUniform", "Orthogonal", "Identity", "get",
           "serialize", "deserialize"]

# Standard deviation of a unit normal truncated to [-2, 2], used to keep the variance exact.
_TRUNCATED_STD = 0.87962566103423978


def _as_dtype(dtype, name, floating=True):
    dtype = dtypes_lib.as_dtype(dtype or "float32")
    if floating and not dtype.is_floating:
        raise ValueError("%s: expected a floating point dtype, got %s. Random initializers "
                         "only make floating point values." % (name, dtype.name))
    return dtype


def _as_shape(shape, name):
    try:
        dims = tuple(ef.TensorShape(shape).as_list())
    except (TypeError, ValueError):
        raise ValueError("%s: shape must be a list of ints, got %r." % (name, shape)) from None
    if any(d is None for d in dims):
        raise ValueError("%s: cannot initialize a weight of partially unknown shape %s; "
                         "every dimension must be known." % (name, list(dims)))
    return dims


def compute_fans(shape):
    """Returns (fan_in, fan_out) of a weight shape (see the module docstring).

    Example:
        >>> from eagerflow.keras.initializers import compute_fans
        >>> compute_fans((3, 3, 4, 8))
        (36, 72)
    """
    shape = tuple(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def _check_seed(seed, name):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ValueError("%s: seed must be an int or None, got %r." % (name, seed))
    return None if seed is None else int(seed)


class Initializer:
    """Base class: subclasses implement ``__call__(shape, dtype=None)`` and ``get_config``.

    Example:
        >>> from eagerflow.keras.initializers import Initializer
        >>> import eagerflow as ef
        >>> class Twos(Initializer):
        ...     def __call__(self, shape, dtype=None, **kwargs):
        ...         return ef.fill(shape, ef.constant(2.0, dtype=dtype or "float32"))
        >>> Twos()((2,)).numpy().tolist()
        [2.0, 2.0]
    """

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError("Initializer subclasses must implement __call__.")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)  # tf.keras 1 configs carried a dtype
        return cls(**config)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % kv for kv in self.get_config().items()))


class Zeros(Initializer):
    """All zeros (any dtype).

    Example:
        >>> from eagerflow.keras.initializers import Zeros
        >>> Zeros()((2,)).numpy().tolist()
        [0.0, 0.0]
    """

    def __call__(self, shape, dtype=None, **kwargs):
        return ef.zeros(_as_shape(shape, "Zeros"), dtype=_as_dtype(dtype, "Zeros", False))


class Ones(Initializer):
    """All ones (any dtype).

    Example:
        >>> from eagerflow.keras.initializers import Ones
        >>> Ones()((2,), dtype="int32").numpy().tolist()
        [1, 1]
    """

    def __call__(self, shape, dtype=None, **kwargs):
        return ef.ones(_as_shape(shape, "Ones"), dtype=_as_dtype(dtype, "Ones", False))


class Constant(Initializer):
    """Fills with ``value`` (a scalar, or an array of exactly the requested shape).

    Args:
        value: A Python scalar or array-like.

    Example:
        >>> from eagerflow.keras.initializers import Constant
        >>> Constant(3.0)((2,)).numpy().tolist()
        [3.0, 3.0]
    """

    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _as_shape(shape, "Constant")
        dtype = _as_dtype(dtype, "Constant", False)
        value = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        if value.ndim and value.shape != shape:
            try:
                value = np.broadcast_to(value, shape)
            except ValueError:
                raise ValueError("Constant: value of shape %s cannot fill a weight of shape %s."
                                 % (value.shape, list(shape))) from None
        return ef.constant(np.broadcast_to(value, shape).copy(), dtype=dtype)

    def get_config(self):
        value = self.value
        if isinstance(value, np.ndarray):
            value = value.tolist()
        return {"value": value}


class RandomNormal(Initializer):
    """Normal samples with ``mean`` and ``stddev``.

    Args:
        mean: Mean.
        stddev: Standard deviation.
        seed: Optional int; a seeded initializer returns the same values on every call.

    Example:
        >>> from eagerflow.keras.initializers import RandomNormal
        >>> a = RandomNormal(seed=1)((2, 2)); b = RandomNormal(seed=1)((2, 2))
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean = mean
        self.stddev = stddev
        self.seed = _check_seed(seed, "RandomNormal")

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _as_shape(shape, "RandomNormal")
        dtype = _as_dtype(dtype, "RandomNormal")
        if self.seed is not None:
            return ef.random.stateless_normal(shape, [self.seed, 0], self.mean, self.stddev,
                                              dtype=dtype)
        return ef.random.normal(shape, self.mean, self.stddev, dtype=dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    """Uniform samples in ``[minval, maxval)``.

    Args:
        minval: Lower bound.
        maxval: Upper bound.
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import RandomUniform
        >>> x = RandomUniform(-1.0, 1.0, seed=3)((100,)).numpy()
        >>> bool((x >= -1).all() and (x < 1).all())
        True
    """

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval = minval
        self.maxval = maxval
        self.seed = _check_seed(seed, "RandomUniform")

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _as_shape(shape, "RandomUniform")
        dtype = _as_dtype(dtype, "RandomUniform", floating=False)
        if not (dtype.is_floating or dtype.is_integer):
            raise ValueError("RandomUniform: dtype must be floating or integer, got %s."
                             % dtype.name)
        if self.seed is not None:
            return ef.random.stateless_uniform(shape, [self.seed, 0], self.minval, self.maxval,
                                               dtype=dtype)
        return ef.random.uniform(shape, self.minval, self.maxval, dtype=dtype)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(Initializer):
    """Normal samples with ``mean``/``stddev``, redrawn when more than 2 stddev from the mean.

    Args:
        mean: Mean.
        stddev: Standard deviation of the normal before truncation.
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import TruncatedNormal
        >>> x = TruncatedNormal(stddev=1.0, seed=0)((1000,)).numpy()
        >>> bool(abs(x).max() <= 2.0)
        True
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean = mean
        self.stddev = stddev
        self.seed = _check_seed(seed, "TruncatedNormal")

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _as_shape(shape, "TruncatedNormal")
        dtype = _as_dtype(dtype, "TruncatedNormal")
        return _truncated(shape, self.mean, self.stddev, dtype, self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _truncated(shape, mean, stddev, dtype, seed):
    if seed is not None:
        return ef.random.stateless_truncated_normal(shape, [seed, 0], mean, stddev, dtype=dtype)
    return ef.random.truncated_normal(shape, mean, stddev, dtype=dtype)


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")


class VarianceScaling(Initializer):
    """Samples scaled to the weight's fans: variance ``scale / n``.

    ``n`` is fan_in, fan_out or their average (``mode``). For ``"truncated_normal"`` the
    stddev is ``sqrt(scale / n) / 0.8796`` (so the truncated samples have variance
    ``scale / n``); for ``"untruncated_normal"`` it is ``sqrt(scale / n)``; ``"uniform"``
    samples lie in ``[-limit, limit]`` with ``limit = sqrt(3 scale / n)``.

    Args:
        scale: Positive scaling factor.
        mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``.
        distribution: ``"truncated_normal"``, ``"untruncated_normal"`` or ``"uniform"``
            (``"normal"`` is accepted as ``"truncated_normal"``, as in tf.keras).
        seed: Optional int.

    Raises:
        ValueError: For a non-positive scale or an unknown mode or distribution.

    Example:
        >>> from eagerflow.keras.initializers import VarianceScaling
        >>> w = VarianceScaling(2.0, "fan_in", "uniform", seed=0)((50, 10)).numpy()
        >>> bool(abs(w).max() <= (3 * 2.0 / 50) ** 0.5)
        True
    """

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if not scale > 0.0:
            raise ValueError("VarianceScaling: scale must be a positive float, got scale=%r."
                             % (scale,))
        if mode not in _MODES:
            raise ValueError("VarianceScaling: invalid mode=%r; expected one of %s."
                             % (mode, _MODES))
        distribution = str(distribution).lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in _DISTRIBUTIONS:
            raise ValueError("VarianceScaling: invalid distribution=%r; expected one of %s."
                             % (distribution, _DISTRIBUTIONS))
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = _check_seed(seed, type(self).__name__)

    def __call__(self, shape, dtype=None, **kwargs):
        name = type(self).__name__
        shape = _as_shape(shape, name)
        dtype = _as_dtype(dtype, name)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[
            self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return _truncated(shape, 0.0, math.sqrt(scale) / _TRUNCATED_STD, dtype, self.seed)
        if self.distribution == "untruncated_normal":
            return RandomNormal(0.0, math.sqrt(scale), self.seed)(shape, dtype)
        limit = math.sqrt(3.0 * scale)
        return RandomUniform(-limit, limit, self.seed)(shape, dtype)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _Preset(VarianceScaling):
    """A VarianceScaling with fixed scale, mode and distribution; only the seed is free."""

    _args = (1.0, "fan_in", "truncated_normal")

    def __init__(self, seed=None):
        super().__init__(*self._args, seed=seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """Glorot (Xavier) uniform: ``U(-limit, limit)``, ``limit = sqrt(6 / (fan_in + fan_out))``.

    Args:
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import GlorotUniform
        >>> GlorotUniform(seed=0)((4, 4)).shape
        TensorShape([4, 4])
    """

    _args = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Glorot normal: truncated normal with stddev ``sqrt(2 / (fan_in + fan_out))``.

    Args:
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import GlorotNormal
        >>> GlorotNormal(seed=0)((4, 4)).shape
        TensorShape([4, 4])
    """

    _args = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_Preset):
    """He normal: truncated normal with stddev ``sqrt(2 / fan_in)``.

    Args:
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import HeNormal
        >>> HeNormal(seed=0)((4, 4)).shape
        TensorShape([4, 4])
    """

    _args = (2.0, "fan_in", "truncated_normal")


class HeUniform(_Preset):
    """He uniform: ``U(-limit, limit)`` with ``limit = sqrt(6 / fan_in)``.

    Args:
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import HeUniform
        >>> HeUniform(seed=0)((4, 4)).shape
        TensorShape([4, 4])
    """

    _args = (2.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """LeCun normal: truncated normal with stddev ``sqrt(1 / fan_in)``.

    Args:
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import LecunNormal
        >>> LecunNormal(seed=0)((4, 4)).shape
        TensorShape([4, 4])
    """

    _args = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """LeCun uniform: ``U(-limit, limit)`` with ``limit = sqrt(3 / fan_in)``.

    Args:
        seed: Optional int.

    Example:
        >>> from eagerflow.keras.initializers import LecunUniform
        >>> LecunUniform(seed=0)((4, 4)).shape
        TensorShape([4, 4])
    """

    _args = (1.0, "fan_in", "uniform")


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``, from the QR decomposition of normal samples.

    The weight is viewed as a matrix ``(prod(shape[:-1]), shape[-1])``; its rows (or columns,
    whichever are fewer) are orthonormal. Signs follow the diagonal of R so the result is
    uniformly distributed over orthogonal matrices.

    Args:
        gain: Multiplicative factor.
        seed: Optional int.

    Raises:
        ValueError: For shapes of rank < 2.

    Example:
        >>> from eagerflow.keras.initializers import Orthogonal
        >>> import numpy as np
        >>> q = Orthogonal(seed=0)((3, 3), dtype="float64").numpy()
        >>> bool(np.allclose(q @ q.T, np.eye(3)))
        True
    """

    def __init__(self, gain=1.0, seed=None):
        self.gain = gain
        self.seed = _check_seed(seed, "Orthogonal")

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _as_shape(shape, "Orthogonal")
        dtype = _as_dtype(dtype, "Orthogonal")
        if len(shape) < 2:
            raise ValueError("Orthogonal: the tensor to initialize must be at least "
                             "two-dimensional, got shape %s." % (list(shape),))
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        a = RandomNormal(0.0, 1.0, self.seed)(flat, dtype)
        q, r = ef.linalg.qr(a)
        q = q * ef.sign(ef.linalg.diag_part(r))
        if rows < cols:
            q = ef.transpose(q)
        return ef.reshape(q * ef.cast(self.gain, dtype), shape)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (rectangular shapes get ones on the main diagonal).

    Args:
        gain: Multiplicative factor.

    Raises:
        ValueError: For shapes that are not 2-D.

    Example:
        >>> from eagerflow.keras.initializers import Identity
        >>> Identity()((2, 2)).numpy().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _as_shape(shape, "Identity")
        dtype = _as_dtype(dtype, "Identity")
        if len(shape) != 2:
            raise ValueError("Identity: the initializer can only be used for 2D matrices, got "
                             "shape %s." % (list(shape),))
        return ef.eye(shape[0], shape[1], dtype=dtype) * ef.cast(self.gain, dtype)

    def get_config(self):
        return {"gain": self.gain}


_CLASSES = {cls.__name__: cls for cls in (
    Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
    GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform, Orthogonal,
    Identity)}
_ALIASES = {
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "random_normal": RandomNormal, "normal": RandomNormal, "random_uniform": RandomUniform,
    "uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
    "identity": Identity,
}
# Aliases tf.keras exports as classes.
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
glorot_uniform, glorot_normal, he_normal, he_uniform = (GlorotUniform, GlorotNormal, HeNormal,
                                                        HeUniform)
lecun_normal, lecun_uniform, orthogonal, identity = (LecunNormal, LecunUniform, Orthogonal,
                                                     Identity)
variance_scaling = VarianceScaling


def serialize(initializer):
    """Returns ``{"class_name": ..., "config": ...}`` for an initializer.

    Example:
        >>> from eagerflow.keras.initializers import Zeros, serialize
        >>> serialize(Zeros())
        {'class_name': 'Zeros', 'config': {}}
    """
    if initializer is None:
        return None
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config, custom_objects=None):
    """Rebuilds an initializer from ``serialize``'s dict (or a name).

    Raises:
        ValueError: For an unknown class name.

    Example:
        >>> from eagerflow.keras.initializers import deserialize
        >>> type(deserialize({"class_name": "Ones", "config": {}})).__name__
        'Ones'
    """
    if isinstance(config, str):
        return get(config, custom_objects)
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name) or _ALIASES.get(name)
    if cls is None:
        raise ValueError("Unknown initializer: %r. Pass custom initializers through "
                         "custom_objects." % (name,))
    return cls.from_config(config.get("config", {}))


def get(identifier, custom_objects=None):
    """Turns a name, a serialized dict, a class or an instance into an initializer.

    Args:
        identifier: None, e.g. ``"glorot_uniform"`` or ``"GlorotUniform"``, a dict from
            ``serialize``, an Initializer class (instantiated with defaults) or any callable.
        custom_objects: Optional dict of extra names.

    Returns:
        A callable ``(shape, dtype) -> tensor``, or None for None.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras.initializers import get
        >>> type(get("he_normal")).__name__
        'HeNormal'
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    if isinstance(identifier, str):
        cls = ((custom_objects or {}).get(identifier) or _ALIASES.get(identifier)
               or _CLASSES.get(identifier))
        if cls is None:
            raise ValueError("Could not interpret initializer identifier: %r. Known names: %s."
                             % (identifier, ", ".join(sorted(_ALIASES))))
        return cls() if isinstance(cls, type) else cls
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret initializer identifier: %s."
                     % (short_repr(identifier),))
