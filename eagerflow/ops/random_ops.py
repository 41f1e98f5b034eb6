"""Random numbers: ``tf.random`` with TF 2's seeds, streams and bit-exact algorithms.

Every random value comes from Philox4x32-10, a counter-based generator: 128 random bits are
a pure function ``philox(key, counter)`` of a 64-bit key and a 128-bit counter, so a stream
is a key with a counter that advances. The kernels follow TensorFlow's CPU kernels exactly
(which 32-bit words each output consumes, how Box-Muller pairs them, how a truncated normal
re-draws, how far each call advances its stream), so that ``import eagerflow as tf`` gives
the numbers TF gives (to the last bit for integers; within a unit in the last place for
floats, where TF's ``logf``/``sincosf`` and numpy's may round differently).

Bits are always made on the host with numpy, then copied to the op's device: a GPU gets the
same numbers as the CPU for the same seeds, which TF only promises for the stateless ops.

Seeds (``set_seed`` and each op's ``seed``) follow TF 2 (see :func:`set_seed`):

* stateful ops (``normal``, ``uniform``, ...) carry attrs ``seed``/``seed2`` picked by
  :func:`get_seed`; a kernel keeps one stream per (op, dtype, seed, seed2), so repeated
  eager calls with the same seeds continue the stream, and ``set_seed`` restarts them all.
  ``seed == seed2 == 0`` means "no seed": the stream starts from OS entropy.
* stateless ops (``stateless_normal``, ...) take a shape-[2] integer ``seed`` tensor; the
  seed is scrambled into a key and counter (``StatelessRandomGetKeyCounter``) and the same
  seed gives the same numbers on every call, in every program, on every device.

The family lives in one module per concept; this module re-exports their public names:

* :mod:`eagerflow.ops.philox`: the Philox4x32-10 bit generator.
* :mod:`eagerflow.ops.random_distributions`: 32-bit words to values, as TF makes them.
* :mod:`eagerflow.ops.random_stateful`: the global seed, the kernels' streams and the
  stateful ops.
* :mod:`eagerflow.ops.random_stateless`: the stateless ops and their scalar references.
* :mod:`eagerflow.ops.random_common`: the kernel plumbing and argument handling they share.

Example:
    >>> import eagerflow as ef
    >>> ef.random.stateless_uniform([3], seed=[1, 2], maxval=10, dtype=ef.int32).shape
    TensorShape([3])
"""

from __future__ import annotations

from eagerflow.ops.random_stateful import (  # noqa: F401
    set_seed, normal, uniform, truncated_normal, categorical, shuffle, gamma,
)
from eagerflow.ops.random_stateless import (  # noqa: F401
    stateless_normal, stateless_uniform, stateless_truncated_normal, stateless_categorical,
    stateless_gamma, stateless_split, stateless_fold_in,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.philox import (  # noqa: F401
    key_counter_arrays, philox, philox_words, scramble_seed,
)
from eagerflow.ops.random_distributions import (  # noqa: F401
    sample,
)
from eagerflow.ops.random_common import (  # noqa: F401
    _FULL_INT_DTYPES, _UNIFORM_DTYPES, _dtype_in, _scale_shift, _shape_attr, _size, _stretch,
)
from eagerflow.ops.random_stateful import (  # noqa: F401
    DEFAULT_GRAPH_SEED, MULTINOMIAL, RANDOM_GAMMA, RANDOM_SHUFFLE, RANDOM_STANDARD_NORMAL,
    RANDOM_UNIFORM, RANDOM_UNIFORM_INT, TRUNCATED_NORMAL, _Streams, _seeds, _streams,
    get_global_seed, get_seed,
)
from eagerflow.ops.random_stateless import (  # noqa: F401
    STATELESS_FULL_INT, STATELESS_GET_KEY_COUNTER, STATELESS_MULTINOMIAL, STATELESS_NORMAL,
    STATELESS_TRUNCATED_NORMAL, STATELESS_UNIFORM, STATELESS_UNIFORM_INT,
)

__all__ = [
    "set_seed", "normal", "uniform", "truncated_normal", "categorical", "shuffle", "gamma",
    "stateless_normal", "stateless_uniform", "stateless_truncated_normal", "stateless_categorical",
    "stateless_gamma", "stateless_split", "stateless_fold_in",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
