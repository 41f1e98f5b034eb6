"""Stateful random ops and their seeds: set_seed, normal, uniform, truncated_normal,
categorical, shuffle and gamma.

The global seed and an op's ``seed`` give each call the attrs ``seed``/``seed2`` (see
:func:`set_seed` and :func:`get_seed`); each kernel keeps one stream per (op, dtype, seed,
seed2), so repeated eager calls with the same seeds continue the stream, and ``set_seed``
restarts them all. ``seed == seed2 == 0`` means "no seed": the stream starts from OS
entropy. Stateful primitives have no reference for the sweeps; their family tests check
them statistically.
"""

from __future__ import annotations

import collections
import itertools
import operator
import os
import random as _pyrandom
import threading
import weakref

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT
from eagerflow.ops.random.philox import _BLOCKS_PER_OUTPUT, _M128, _M64
from eagerflow.ops.random import (
    _INT_DTYPES, _UNIFORM_DTYPES, _bad_shape_samples, _check_int_bounds, _check_logits,
    _creation_shape, _dtype_in, _host_kernel, _multinomial_shape, _num_samples, _output_dtype,
    _scale_shift, _shape_attr, _size, _stretch, _validated_shape,
)
from eagerflow.ops.random.random_distributions import _categorical, _gamma, _shuffle_order, sample
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_NUMPY

__all__ = ["set_seed", "normal", "uniform", "truncated_normal", "categorical", "shuffle", "gamma"]

EXPORTS = {
    "random": ["set_seed", "normal", "uniform", "truncated_normal", "categorical", "shuffle",
               "gamma"],
}


# ---------------------------------------------------------------------------------------
# Seeds and the per-kernel streams of stateful ops
# ---------------------------------------------------------------------------------------

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


class _SeedState:
    """The process-wide global seed and the op-seed sequence it starts."""

    def __init__(self):
        self.global_seed = None
        self.rng = None  # random.Random(global seed): eager op seeds, as TF draws them
        self.lock = threading.Lock()


_seeds = _SeedState()


class _Streams:
    """The state of every stateful kernel: (op, dtype, seed, seed2, stream) -> (key, counter).

    TF caches one kernel per op and attrs, and each kernel owns a Philox generator started
    at ``key = seed, counter = seed2 << 64``; this table plays that cache. Eager calls use
    ``stream = 0``; each traced graph node gets its own stream number, so two nodes with
    the same seeds draw the same values, as two TF graph kernels do.

    With a global seed set, every eager call gets a new operation seed and so a new entry;
    TF's kernel cache grows without bound in that case. This table forgets the least
    recently used streams beyond ``limit`` entries instead.
    """

    def __init__(self, limit=1 << 16):
        self.table = collections.OrderedDict()
        self.limit = limit
        self.lock = threading.Lock()

    def reserve(self, name, seed, seed2, stream, blocks):
        """Returns the (key, counter) to draw from and moves the stream ``blocks`` on."""
        table_key = (name, seed, seed2, stream)
        with self.lock:
            entry = self.table.get(table_key)
            if entry is None:
                if seed == 0 and seed2 == 0:
                    # "No seed": TF picks two random 64-bit seeds for the kernel.
                    seed = int.from_bytes(os.urandom(8), "little")
                    seed2 = int.from_bytes(os.urandom(8), "little")
                entry = [seed & _M64, (seed2 & _M64) << 64]
                self.table[table_key] = entry
                if len(self.table) > self.limit:
                    self.table.popitem(last=False)
            else:
                self.table.move_to_end(table_key)
            key, counter = entry
            entry[1] = (counter + blocks) & _M128
        return key, counter

    def clear(self):
        with self.lock:
            self.table.clear()


_streams = _Streams()
_stream_ids = itertools.count(1)
_trace_seed_counters = weakref.WeakKeyDictionary()
_trace_seed_counters_by_id = {}


def set_seed(seed):
    """Sets the global random seed.

    Random ops derive their seeds from two: this global seed and their own ``seed``
    argument (the operation seed):

    1. Neither set: a randomly picked seed is used, so every call and every run of the
       program gives different numbers.
    2. Global set, operation seed not: the operation seed is taken from a sequence that
       the global seed starts, so each call gets a different seed, yet a fresh program
       that calls ``set_seed`` with the same value repeats the same numbers.
    3. Operation seed set, global not: a default global seed (87654321) is used with it.
    4. Both set: the pair determines the numbers.

    An op with a given pair of seeds keeps an internal counter: calling it again with the
    same seeds continues its sequence (A1, then A2). Calling ``set_seed`` resets every such
    counter and restarts the operation-seed sequence. Inside a traced function the
    operation seeds come from a counter per trace (0, 1, ...), so two functions traced
    after the same ``set_seed`` draw the same numbers, and each graph op keeps its own
    counter across calls.

    Args:
        seed: An integer, or None to clear the global seed (back to case 1 or 3).

    Example:
        >>> import eagerflow as ef
        >>> ef.random.set_seed(1234)
        >>> a = ef.random.uniform([2])
        >>> ef.random.set_seed(1234)
        >>> bool((ef.random.uniform([2]).numpy() == a.numpy()).all())
        True
    """
    seed_int = None if seed is None else seed_value(seed, "random.set_seed")
    with _seeds.lock:
        _seeds.global_seed = seed_int
        _seeds.rng = None if seed_int is None else _pyrandom.Random(seed_int)
    _streams.clear()


def seed_value(seed, op):
    """A seed as a Python int: ints, integer numpy scalars and scalar integer tensors.

    Raises:
        TypeError: For anything else (floats, objects, strings, non-scalar tensors), naming
            ``op``.
    """
    value = seed
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        try:
            value = value.numpy()
        except Exception:  # noqa: BLE001 - a symbolic tensor has no value: refused below
            pass
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError("%s: seed must be an integer (or None), got %s. Seeds are Python ints; "
                    "for a seed that is a tensor use the stateless ops (seed=[a, b])."
                    % (op, errors.short_repr(seed)))


def get_global_seed():
    """The seed last passed to :func:`set_seed`, or None."""
    return _seeds.global_seed


def _trace_op_seed():
    """The next operation seed of the current trace: 0, 1, 2, ... per traced graph."""
    hook = context.state.trace
    try:
        n = _trace_seed_counters.get(hook, 0)
        _trace_seed_counters[hook] = n + 1
    except TypeError:  # a hook that cannot be weakly referenced
        n = _trace_seed_counters_by_id.get(id(hook), 0)
        _trace_seed_counters_by_id[id(hook)] = n + 1
    return n


def get_seed(op_seed, op="random op"):
    """The (seed, seed2) pair a random op should use given its own ``seed`` argument.

    Implements the four cases of :func:`set_seed`. Returns ``(None, None)`` when neither
    seed is set. ``(0, 0)`` (which kernels read as "no seed") becomes ``(0, 2**31 - 1)``.

    Args:
        op_seed: The operation's seed (an int) or None.
        op: The public name of the op, for the error a bad seed raises.

    Returns:
        A pair of ints in [0, 2**31 - 1), or ``(None, None)``.
    """
    global_seed = _seeds.global_seed
    if op_seed is not None:
        op_seed = seed_value(op_seed, op)
    if global_seed is not None:
        if op_seed is None:
            if context.state.trace is not None:
                op_seed = _trace_op_seed()
            else:
                with _seeds.lock:
                    op_seed = _seeds.rng.randint(0, _MAXINT32)
        seeds = (global_seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        return None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def _stateful_attrs(seed, op, **attrs):
    seed1, seed2 = get_seed(seed, op)
    attrs["seed"] = seed1 or 0
    attrs["seed2"] = seed2 or 0
    if context.state.trace is not None:
        attrs["stream"] = next(_stream_ids)
    return attrs


# ---------------------------------------------------------------------------------------
# Kernels: each draws from its stream on the host
# ---------------------------------------------------------------------------------------

def _stateful_fill(kind, name):
    def kernel(*, shape, dtype, seed, seed2, stream=0):
        n = _size(shape)
        key, counter = _streams.reserve((name, dtype), seed, seed2, stream,
                                        n * _BLOCKS_PER_OUTPUT)
        return sample(kind, dtype, n, key, counter).reshape(shape)
    return kernel


def _uniform_int_kernel(lo, hi, *, shape, seed, seed2, stream=0):
    n = _size(shape)
    dtype = lo.dtype.name
    if lo.ndim or hi.ndim or n:
        _check_int_bounds(lo, hi)
    key, counter = _streams.reserve(("RandomUniformInt", dtype), seed, seed2, stream,
                                    n * _BLOCKS_PER_OUTPUT)
    return sample("uniform_int", dtype, n, key, counter, lo, hi).reshape(shape)


def _multinomial_kernel(logits, *, num_samples, output_dtype, seed, seed2, stream=0):
    _check_logits(logits, num_samples)
    batch = logits.shape[0]
    reserve = 0
    if batch * num_samples:
        reserve = batch * (-(-num_samples // 4) * 4) * 2 * _BLOCKS_PER_OUTPUT
    key, counter = _streams.reserve(("Multinomial", logits.dtype.name, output_dtype), seed,
                                    seed2, stream, reserve)
    return _categorical(logits, num_samples, key, counter).astype(
        d.as_dtype(output_dtype).np_dtype)


def _shuffle_kernel(value, *, seed, seed2, stream=0):
    if value.size <= 1 or value.shape[0] <= 1:
        return value.copy()
    n = value.shape[0]
    key, counter = _streams.reserve(("RandomShuffle", value.dtype.name), seed, seed2, stream,
                                    -(-(n - 1) // 4))
    return value[np.asarray(_shuffle_order(n, key, counter), np.intp)]


def _gamma_kernel(alpha, *, shape, seed, seed2, stream=0):
    n = _size(shape)
    out_shape = tuple(shape) + alpha.shape
    if n == 0 or alpha.size == 0:
        return np.zeros(out_shape, alpha.dtype)
    key, counter = _streams.reserve(("RandomGamma", alpha.dtype.name), seed, seed2, stream,
                                    n * alpha.size * _BLOCKS_PER_OUTPUT)
    return _gamma(alpha, n, key, counter).reshape(out_shape).astype(alpha.dtype)


# ---------------------------------------------------------------------------------------
# Primitives
# ---------------------------------------------------------------------------------------

def _stateful(name, kind, doc):
    return registry.primitive(
        name, _host_kernel(_validated_shape(_stateful_fill(kind, name))), dtypes=(),
        host_sync=HOST_NUMPY,
        dtype_group=(), shape_fn=_creation_shape, family="random", stateful=True, doc=doc,
        bad_samples=_bad_shape_samples({"dtype": "float32", "seed": 1, "seed2": 2}))


RANDOM_STANDARD_NORMAL = _stateful("RandomStandardNormal", "normal",
                                   "Standard normal values (stateful stream).")
RANDOM_UNIFORM = _stateful("RandomUniform", "uniform", "Uniform [0, 1) values (stateful).")
TRUNCATED_NORMAL = _stateful("TruncatedNormal", "truncated_normal",
                             "Standard normals within 2 (stateful stream).")


RANDOM_UNIFORM_INT = registry.primitive(
    "RandomUniformInt", _host_kernel(_validated_shape(_uniform_int_kernel)),
    host_sync=HOST_NUMPY,
    dtypes=_INT_DTYPES, shape_fn=lambda lo, hi, *, shape, **a: AbstractValue(shape, lo.dtype),
    family="random", stateful=True,
    bad_samples=lambda rng: [
        ((np.int32(5), np.int32(3)), {"shape": (2,), "seed": 1, "seed2": 2},
         errors.InvalidArgumentError),
        ((np.int32(3), np.int32(3)), {"shape": (2,), "seed": 1, "seed2": 2},
         errors.InvalidArgumentError),
        ((np.zeros(2, np.int32), np.int32(3)), {"shape": (2,), "seed": 1, "seed2": 2},
         errors.InvalidArgumentError)])

MULTINOMIAL = registry.primitive(
    "Multinomial", _host_kernel(_multinomial_kernel), dtypes=FLOAT, dtype_group=(0,),
    host_sync=HOST_NUMPY,
    shape_fn=_multinomial_shape, family="random", stateful=True,
    bad_samples=lambda rng: [
        ((np.zeros(3, np.float32),), {"num_samples": 2, "output_dtype": "int64", "seed": 1,
                                      "seed2": 2}, errors.InvalidArgumentError),
        ((np.zeros((2, 0), np.float32),), {"num_samples": 2, "output_dtype": "int64",
                                           "seed": 1, "seed2": 2},
         errors.InvalidArgumentError)])

RANDOM_SHUFFLE = registry.primitive(
    "RandomShuffle", _host_kernel(_shuffle_kernel), dtypes=None,
    host_sync=HOST_NUMPY,
    shape_fn=lambda x, **a: AbstractValue(x.shape, x.dtype), family="random", stateful=True)

RANDOM_GAMMA = registry.primitive(
    "RandomGamma", _host_kernel(_validated_shape(_gamma_kernel)), dtypes=FLOAT,
    host_sync=HOST_NUMPY,
    shape_fn=lambda alpha, *, shape, **a: AbstractValue(
        None if alpha.shape is None else tuple(shape) + tuple(alpha.shape), alpha.dtype),
    family="random", stateful=True)


# ---------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------

def normal(shape, mean=0.0, stddev=1.0, dtype=d.float32, seed=None, name=None):
    """Outputs random values from a normal distribution.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        mean: A scalar or tensor broadcastable with ``shape``, of ``dtype``.
        stddev: A scalar or tensor broadcastable with ``shape``, of ``dtype``.
        dtype: A floating dtype (float16, bfloat16, float32, float64).
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``shape`` (broadcast with mean and stddev).

    Raises:
        InvalidArgumentError: For a non-floating dtype or a negative dimension.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.normal([2, 3], seed=1).shape
        TensorShape([2, 3])
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES, "random.normal")
    attrs = _stateful_attrs(seed, "random.normal", shape=_shape_attr(shape, "RandomStandardNormal"),
                            dtype=dtype.name)
    return _scale_shift(execute(RANDOM_STANDARD_NORMAL, (), attrs), stddev, mean, dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=d.float32, seed=None, name=None):
    """Outputs random values from a truncated normal distribution.

    Values more than two standard deviations from the mean are dropped and re-drawn, so
    every value lies in ``(mean - 2 stddev, mean + 2 stddev)``.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        mean: A scalar or tensor of ``dtype``: the mean before truncation.
        stddev: A scalar or tensor of ``dtype``: the standard deviation before truncation.
        dtype: A floating dtype.
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``shape``.

    Example:
        >>> import eagerflow as ef
        >>> bool((abs(ef.random.truncated_normal([100], seed=3).numpy()) < 2).all())
        True
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES, "random.truncated_normal")
    attrs = _stateful_attrs(seed, "random.truncated_normal",
                            shape=_shape_attr(shape, "TruncatedNormal"), dtype=dtype.name)
    return _scale_shift(execute(TRUNCATED_NORMAL, (), attrs), stddev, mean, dtype)


def uniform(shape, minval=0, maxval=None, dtype=d.float32, seed=None, name=None):
    """Outputs random values from a uniform distribution on ``[minval, maxval)``.

    For floats the default range is [0, 1). For integers (int32, int64) ``maxval`` is
    required; the values are ``minval + bits % (maxval - minval)``, slightly biased unless
    the range is a power of two, exactly as TF.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        minval: The inclusive lower bound (scalar; a tensor broadcastable with ``shape`` for
            floats).
        maxval: The exclusive upper bound; defaults to 1 for floats.
        dtype: float16, bfloat16, float32, float64, int32 or int64.
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``shape``.

    Raises:
        InvalidArgumentError: For an integer dtype without ``maxval``, integer bounds with
            ``minval >= maxval``, another dtype, or a negative dimension.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.random.uniform([1000], minval=-2, maxval=3, dtype=ef.int32, seed=7)
        >>> int(x.numpy().min()) >= -2 and int(x.numpy().max()) < 3
        True
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES + _INT_DTYPES, "random.uniform")
    if maxval is None:
        if dtype.is_integer:
            raise errors.InvalidArgumentError(
                None, "random.uniform", "random.uniform: must specify maxval for integer "
                "dtype %s (values are drawn from [minval, maxval))." % dtype.name)
        maxval = 1
    if dtype.is_integer:
        from eagerflow.tensor import convert_to_tensor

        bounds = (convert_to_tensor(minval, dtype=dtype), convert_to_tensor(maxval, dtype=dtype))
        attrs = _stateful_attrs(seed, "random.uniform",
                                shape=_shape_attr(shape, "RandomUniformInt"))
        return execute(RANDOM_UNIFORM_INT, bounds, attrs)
    attrs = _stateful_attrs(seed, "random.uniform", shape=_shape_attr(shape, "RandomUniform"),
                            dtype=dtype.name)
    return _stretch(execute(RANDOM_UNIFORM, (), attrs), minval, maxval, dtype)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Draws samples from categorical distributions given by unnormalized log-probabilities.

    Row ``i`` of ``logits`` defines probabilities ``softmax(logits[i])``; each sample is a
    class index. Classes with ``-inf`` (or any non-finite) logit are never drawn.

    Args:
        logits: A 2-D floating tensor ``[batch_size, num_classes]``.
        num_samples: Number of samples per row (a non-negative int).
        dtype: int32 or int64 (default int64).
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A ``[batch_size, num_samples]`` tensor of class indices.

    Example:
        >>> import eagerflow as ef
        >>> s = ef.random.categorical([[float("-inf"), 0.0]], 4, seed=2)
        >>> s.numpy().tolist()
        [[1, 1, 1, 1]]
    """
    attrs = _stateful_attrs(seed, "random.categorical",
                            num_samples=_num_samples(num_samples, "Multinomial"),
                            output_dtype=_output_dtype(dtype, "Multinomial"))
    return execute(MULTINOMIAL, (logits,), attrs)


def shuffle(value, seed=None, name=None):
    """Randomly shuffles a tensor along its first dimension.

    Args:
        value: A tensor of rank >= 1 (a scalar is returned unchanged).
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``value``'s shape and dtype whose rows are a permutation of its rows.

    Example:
        >>> import eagerflow as ef
        >>> sorted(ef.random.shuffle([1, 2, 3, 4], seed=5).numpy().tolist())
        [1, 2, 3, 4]
    """
    return execute(RANDOM_SHUFFLE, (value,), _stateful_attrs(seed, "random.shuffle"))


def gamma(shape, alpha, beta=None, dtype=d.float32, seed=None, name=None):
    """Draws samples from Gamma(alpha, beta) distributions (beta is the inverse scale).

    The output has shape ``shape + broadcast(alpha, beta).shape``: for each entry of the
    broadcast parameters, ``shape`` independent samples. Results below the dtype's smallest
    normal number are raised to it, as in TF.

    Args:
        shape: A 1-D list or tuple: the sample shape per distribution.
        alpha: Concentration (shape) parameter, a float tensor or scalar.
        beta: Inverse scale (rate), broadcastable with alpha; default 1.
        dtype: float16, float32 or float64.
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``dtype``.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.gamma([10], alpha=[0.5, 1.5], seed=4).shape
        TensorShape([10, 2])
    """
    from eagerflow.ops.math import arithmetic
    from eagerflow.ops.math.broadcast import broadcast_to
    from eagerflow.tensor import convert_to_tensor

    dtype = _dtype_in(dtype, (d.float16, d.float32, d.float64), "random.gamma")
    alpha = convert_to_tensor(alpha, dtype=dtype)
    beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype)
    both = np.broadcast_shapes(tuple(alpha.shape.as_list()), tuple(beta.shape.as_list()))
    if tuple(alpha.shape.as_list()) != both:
        alpha = broadcast_to(alpha, both)
    attrs = _stateful_attrs(seed, "random.gamma", shape=_shape_attr(shape, "RandomGamma"))
    samples = arithmetic.truediv(execute(RANDOM_GAMMA, (alpha,), attrs), beta)
    tiny = convert_to_tensor(np.finfo(dtype.np_dtype).tiny, dtype=dtype)
    return arithmetic.where(arithmetic.less(samples, tiny), tiny, samples)
