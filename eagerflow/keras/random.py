"""``keras.random``: random tensors with Keras 3's signatures.

A ``seed`` is None (the global generator), an int (a fixed stream: the same call gives the
same values) or a ``SeedGenerator`` (a stateful seed that advances on every draw, so
repeated calls differ but the sequence is reproducible). The values come from eagerflow's own
generators, so they are not the numbers TensorFlow draws for the same seed.

Example:
    >>> from eagerflow import keras
    >>> a = keras.random.normal((2,), seed=3)
    >>> b = keras.random.normal((2,), seed=3)
    >>> bool((a.numpy() == b.numpy()).all())
    True
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import random as _random

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "dropout",
           "shuffle", "categorical", "gamma"]


class SeedGenerator:
    """A seed that advances on every use (Keras 3's ``keras.random.SeedGenerator``).

    Args:
        seed: An int that fixes the sequence, or None for a random start.

    Example:
        >>> from eagerflow import keras
        >>> gen = keras.random.SeedGenerator(7)
        >>> x = keras.random.uniform((3,), seed=gen)
        >>> y = keras.random.uniform((3,), seed=gen)
        >>> bool((x.numpy() != y.numpy()).any())
        True
    """

    def __init__(self, seed=None, name=None, **kwargs):
        from eagerflow.variables import Variable

        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0] % (2 ** 31))
        self.name = name or "seed_generator"
        self.state = Variable(np.array([int(seed), 0], np.int64), trainable=False,
                              name=self.name + "_state")

    def next(self, ordered=True):
        """The seed pair for the next draw; advances the state."""
        seed = self.state.read_value()
        self.state.assign_add(np.array([0, 1], np.int64))
        return seed


def _stateless_seed(seed):
    """A stateless seed pair for ``seed``, or None for the global generator."""
    if seed is None:
        return None
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return [int(seed), 0]
    raise ValueError("seed must be None, an int or a keras.random.SeedGenerator, got %r."
                     % (seed,))


def _dtype(dtype):
    return dtypes_lib.as_dtype(dtype or "float32")


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples from a normal distribution."""
    pair = _stateless_seed(seed)
    if pair is None:
        return _random.normal(shape, mean=mean, stddev=stddev, dtype=_dtype(dtype))
    return _random.stateless_normal(shape, pair, mean=mean, stddev=stddev, dtype=_dtype(dtype))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples uniformly from ``[minval, maxval)``."""
    pair = _stateless_seed(seed)
    if pair is None:
        return _random.uniform(shape, minval=minval, maxval=maxval, dtype=_dtype(dtype))
    return _random.stateless_uniform(shape, pair, minval=minval, maxval=maxval,
                                     dtype=_dtype(dtype))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples from a normal distribution truncated to two standard deviations."""
    pair = _stateless_seed(seed)
    if pair is None:
        return _random.truncated_normal(shape, mean=mean, stddev=stddev, dtype=_dtype(dtype))
    return _random.stateless_truncated_normal(shape, pair, mean=mean, stddev=stddev,
                                              dtype=_dtype(dtype))


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Samples integers uniformly from ``[minval, maxval)``."""
    return uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=seed)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zeroes entries with probability ``rate`` and scales the rest by ``1 / (1 - rate)``."""
    import eagerflow as ef

    inputs = ef.convert_to_tensor(inputs)
    mask_shape = noise_shape if noise_shape is not None else ef.shape(inputs)
    keep = uniform(mask_shape, dtype=inputs.dtype, seed=seed) >= rate
    return ef.where(keep, inputs / (1.0 - rate), ef.zeros_like(inputs))


def shuffle(x, axis=0, seed=None):
    """Shuffles ``x`` along ``axis``."""
    import eagerflow as ef

    x = ef.convert_to_tensor(x)
    keys = uniform((x.shape[axis],), seed=seed)
    return ef.gather(x, ef.argsort(keys), axis=axis)


def categorical(logits, num_samples, dtype="int32", seed=None):
    """Draws ``num_samples`` class indices per row of ``logits``."""
    pair = _stateless_seed(seed)
    if pair is None:
        return _random.categorical(logits, num_samples, dtype=dtype)
    return _random.stateless_categorical(logits, num_samples, pair, dtype=dtype)


def gamma(shape, alpha, dtype=None, seed=None):
    """Samples from a gamma distribution with concentration ``alpha`` (rate 1)."""
    pair = _stateless_seed(seed)
    if pair is None:
        return _random.gamma(shape, alpha, dtype=_dtype(dtype))
    return _random.stateless_gamma(shape, pair, alpha, dtype=_dtype(dtype))
