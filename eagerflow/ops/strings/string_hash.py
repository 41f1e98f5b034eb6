"""``to_hash_bucket_fast``: strings to bucket ids through a 64-bit fingerprint.
"""

from __future__ import annotations


import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import string_values
from eagerflow.ops.strings.fingerprint import fingerprint64
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.strings.string_ops import _values
from eagerflow.ops.strings.string_ops import (
    STRING,
    _SWEEP,
    _map,
)

__all__ = ["to_hash_bucket_fast"]


# Loaded on first use (eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "strings": ["to_hash_bucket_fast"],
}


# -- hashing ---------------------------------------------------------------------------------
def _hash_kernel(xp):
    def kernel(x, *, num_buckets):
        return _map(lambda v: fingerprint64(v) % num_buckets, x, np.int64)
    return kernel


def _hash_samples(rng, dtype):
    return [((string_values(rng, (2, 3)),), {"num_buckets": 7}),
            ((np.array([b"Hello", b"TensorFlow", b"2.x"], object),), {"num_buckets": 3}),
            ((np.array([b"x" * n for n in (0, 5, 17, 40, 64, 65, 130, 300)], object),),
             {"num_buckets": 1 << 40})]


HASH_BUCKET_FAST = registry.primitive(
    "StringToHashBucketFast", _hash_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, num_buckets: np.vectorize(
        lambda v: fingerprint64(v) % num_buckets, otypes=[np.int64])(x),
    samples=_hash_samples, sweep_dtypes=_SWEEP,
    shape_fn=lambda x, **a: AbstractValue(x.shape, d.int64))


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Hashes strings to buckets with FarmHash Fingerprint64 (``tf.strings.to_hash_bucket_fast``).

    The bucket of ``s`` is ``Fingerprint64(s) % num_buckets``, bit-identical to TF's.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3).numpy().tolist()
        [0, 2, 2]
    """
    if int(num_buckets) < 1:
        raise errors.InvalidArgumentError(
            None, "StringToHashBucketFast", "num_buckets must be >= 1, got %r." % num_buckets)
    return execute(HASH_BUCKET_FAST, (_values(input),),
                   {"num_buckets": int(num_buckets)})


# Run on a RaggedTensor's flat values (see eagerflow.ops.composite).
for _prim in (HASH_BUCKET_FAST,):
    _prim.elementwise = True
