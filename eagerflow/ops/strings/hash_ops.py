"""Keyed string hashing: ``tf.strings.to_hash_bucket_strong`` (SipHash-2-4).

``to_hash_bucket_fast`` (FarmHash, unkeyed) lives with the other string ops; this is its
keyed sibling, which ``keras.layers.Hashing(salt=...)`` uses.

Example:
    >>> import eagerflow as ef
    >>> ef.strings.to_hash_bucket_strong(["Hello", "TensorFlow"], 10, key=[1, 2]).shape
    TensorShape([2])
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import string_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.strings.siphash import siphash24
from eagerflow.tensor import convert_to_tensor

__all__ = ["to_hash_bucket_strong"]

EXPORTS = {"strings": ["to_hash_bucket_strong"]}


def _buckets(x, key, num_buckets):
    k0, k1 = key
    out = np.empty(x.shape, np.int64)
    flat = out.reshape(-1)
    for i, v in enumerate(x.reshape(-1)):
        flat[i] = siphash24(k0, k1, v) % num_buckets
    return out


def _kernel(xp):
    def kernel(x, *, num_buckets, key):
        return _buckets(x, key, num_buckets)
    return kernel


def _samples(rng, dtype):
    return [((string_values(rng, (2, 3)),), {"num_buckets": 7, "key": (1, 2)}),
            ((np.array([b"x" * n for n in (0, 7, 8, 9, 15, 16, 33)], object),),
             {"num_buckets": 1 << 40, "key": (-5, 1 << 62)})]


HASH_BUCKET_STRONG = registry.primitive(
    "StringToHashBucketStrong", _kernel, dtypes=(d.string,), family="strings",
    reference=lambda x, *, num_buckets, key: np.vectorize(
        lambda v: siphash24(key[0], key[1], v) % num_buckets, otypes=[np.int64])(x),
    samples=_samples, sweep_dtypes=(d.string,),
    shape_fn=lambda x, **a: AbstractValue(x.shape, d.int64))
HASH_BUCKET_STRONG.elementwise = True  # runs on a RaggedTensor's flat values


def _int64(v):
    """A key word as TF's int64 attr holds it (the kernel reads it as uint64)."""
    v = int(v) & ((1 << 64) - 1)
    return v - (1 << 64) if v >= 1 << 63 else v


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Hashes strings to buckets with keyed SipHash-2-4 (``tf.strings.to_hash_bucket_strong``).

    The bucket of ``s`` is ``SipHash24(key[0], key[1], s) % num_buckets``, as TF computes it.

    Args:
        input: A string tensor (or convertible value).
        num_buckets: The number of buckets (>= 1).
        key: Two integers, the 128-bit key as two 64-bit words.
        name: Unused (TF compatibility).

    Returns:
        An int64 tensor of the input's shape.

    Raises:
        InvalidArgumentError: If ``num_buckets`` < 1, ``key`` is not two integers, or the
            input is not a string tensor.

    Example:
        >>> import eagerflow as ef
        >>> ids = ef.strings.to_hash_bucket_strong(["a", "b", "a"], 100, key=[7, 11])
        >>> ids.numpy()[0] == ids.numpy()[2]
        np.True_
    """
    if int(num_buckets) < 1:
        raise errors.InvalidArgumentError(
            None, "StringToHashBucketStrong", "num_buckets must be >= 1, got %r."
            % (num_buckets,))
    try:
        words = [int(k) for k in key]
    except (TypeError, ValueError):
        words = None
    if words is None or len(words) != 2:
        raise errors.InvalidArgumentError(
            None, "StringToHashBucketStrong", "key must be a list of 2 integers (the two "
            "64-bit words of the SipHash key), got %r." % (key,))
    x = input if getattr(input, "_is_ragged", False) else convert_to_tensor(input)
    if x.dtype is not d.string:
        raise errors.InvalidArgumentError(
            None, "StringToHashBucketStrong", "input must be a string tensor, got %s; "
            "convert numbers with tf.strings.as_string first." % x.dtype.name)
    return execute(HASH_BUCKET_STRONG, (x,), {"num_buckets": int(num_buckets),
                                              "key": tuple(_int64(k) for k in words)})
