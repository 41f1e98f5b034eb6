"""``tf.random.Generator``: random numbers from an explicit, saveable state.

A Philox generator's state is three int64 words ``[counter_lo, counter_hi, key]``: a 128-bit
counter and a 64-bit key. Each draw of ``n`` values reads the state, moves the counter on by
``256 * n`` (TF's ``RngReadAndSkip``, so draws never overlap) and runs the stateless V2 op
of :mod:`eagerflow.ops.random.random_stateless` on the key and counter it read. The numbers
therefore equal TF's for the same seed, on every device.

The state lives in a non-trainable int64 ``eagerflow.Variable`` (as TF's), read and written
only through ``_read_state`` and ``_write_state`` eagerly. Inside a traced function a draw
reads the variable, moves the counter on with graph ops (a 128-bit add in two uint64
words) and assigns it back, so every call of the graph draws new numbers, as TF's does.

Example:
    >>> import eagerflow as ef
    >>> g = ef.random.Generator.from_seed(1234)
    >>> g.normal([3]).shape
    TensorShape([3])
    >>> g.state.numpy().tolist()
    [2002, 0, 0]
"""

from __future__ import annotations

import enum
import operator
import os
import threading

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import random
from eagerflow.ops.random import random_stateless
from eagerflow.ops.dispatch import execute

__all__ = ["Algorithm", "Generator", "create_rng_state", "get_global_generator",
           "set_global_generator"]

EXPORTS = {
    "random": list(__all__),
    "random.experimental": list(__all__),
}

_M64 = (1 << 64) - 1
_STATE_SIZE = 3  # Philox: two counter words, one key word


class Algorithm(enum.Enum):
    """Random-number algorithms, with TF's ids. Only Philox is implemented."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _alg_id(alg):
    """An algorithm given as an id, an Algorithm or a name -> its id (Philox only)."""
    if alg is None:
        return Algorithm.PHILOX.value
    if isinstance(alg, Algorithm):
        alg = alg.value
    elif isinstance(alg, str):
        names = {"philox": 1, "threefry": 2, "auto_select": 3}
        if alg not in names:
            raise errors.InvalidArgumentError(
                None, "Generator", "Unknown RNG algorithm name %r; use 'philox' or "
                "'auto_select'." % alg)
        alg = names[alg]
    elif hasattr(alg, "numpy"):
        alg = int(alg.numpy())
    if alg == Algorithm.THREEFRY.value:
        raise errors.UnimplementedError(
            None, "Generator", "The ThreeFry algorithm is not implemented; use 'philox' "
            "(the default), which gives the same numbers on every device.")
    if alg not in (Algorithm.PHILOX.value, Algorithm.AUTO_SELECT.value):
        raise errors.InvalidArgumentError(
            None, "Generator", "Unsupported RNG algorithm id: %r" % (alg,))
    return alg


def _as_words(values, what):
    """Integers (Python, numpy or a tensor) -> a list of signed 64-bit ints."""
    if hasattr(values, "numpy"):
        values = values.numpy()
    flat = np.asarray(values, dtype=object).reshape(-1).tolist()
    out = []
    for v in flat:
        try:
            v = operator.index(v)
        except TypeError:
            raise errors.InvalidArgumentError(
                None, "Generator", "%s must be integers, got %r" % (what, values)) from None
        v &= _M64
        out.append(v - (1 << 64) if v >> 63 else v)
    return out


def _state_from_seed(seed):
    """TF's seed -> state rule: 64-bit chunks of an int; a vector is left-padded with 0.

    Padding on the left keeps a small seed in the key, so two small seeds give two
    independent streams rather than overlapping counters of one.
    """
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed = int(seed)
        words = [(seed >> (64 * i)) & _M64 for i in range(_STATE_SIZE)]
    else:
        words = _as_words(seed, "seed")[:_STATE_SIZE]
        words = [0] * (_STATE_SIZE - len(words)) + words
    return np.array(_as_words(words, "seed"), np.int64)


def create_rng_state(seed, alg):
    """Creates an RNG state from an integer or a vector of integers.

    Args:
        seed: A Python integer (any size) or a 1-D integer vector.
        alg: The algorithm (``"philox"``, an Algorithm or its id).

    Returns:
        An int64 tensor of shape [3].

    Example:
        >>> import eagerflow as ef
        >>> ef.random.create_rng_state(1234, "philox").numpy().tolist()
        [1234, 0, 0]
    """
    from eagerflow.tensor import convert_to_tensor

    _alg_id(alg)
    return convert_to_tensor(_state_from_seed(seed))


class Generator:
    """A random-number generator with an explicit state.

    Create one with :meth:`from_seed`, :meth:`from_non_deterministic_state`,
    :meth:`from_key_counter` or :meth:`from_state`. Every draw advances the state, so two
    draws differ; two generators made from the same seed produce the same sequence.
    :meth:`split` makes independent child generators.

    Args:
        copy_from: Another Generator to copy (its state and algorithm).
        state: An int64 vector of 3 words ``[counter_lo, counter_hi, key]``.
        alg: The algorithm; only Philox (``"philox"``, 1, or ``"auto_select"``) exists.

    Example:
        >>> import eagerflow as ef
        >>> g = ef.random.Generator.from_seed(1)
        >>> a, b = g.normal([2]), g.normal([2])
        >>> bool((a.numpy() != b.numpy()).all())
        True
    """

    def __init__(self, copy_from=None, state=None, alg=None):
        self._lock = threading.Lock()
        if copy_from is not None:
            if state is not None or alg is not None:
                raise errors.InvalidArgumentError(
                    None, "Generator", "Generator(copy_from=...) takes no state or alg.")
            if not isinstance(copy_from, Generator):
                raise TypeError("Generator: copy_from must be a Generator, got %s."
                                % errors.short_repr(copy_from))
            self._alg = copy_from.algorithm
            self._make_variable(copy_from._read_state())
            return
        if state is None or alg is None:
            raise errors.InvalidArgumentError(
                None, "Generator", "Generator needs copy_from, or both state and alg. Use "
                "Generator.from_seed(seed) to start from a seed.")
        self._alg = _alg_id(alg)
        self._make_variable(self._checked_state(state))

    # -- the state: the only two places that touch its storage ---------------------------

    def _make_variable(self, value):
        from eagerflow.variables import Variable

        self._state_var = Variable(np.array(value, np.int64), dtype=d.int64, trainable=False,
                                   name="generator_state")

    def _read_state(self):
        """A copy of the state: int64 ``[counter_lo, counter_hi, key]``."""
        return np.array(self._state_var.numpy(), np.int64)

    def _write_state(self, value):
        self._state_var.assign(np.array(value, np.int64))

    @property
    def state_variable(self):
        """The int64 variable that holds the state."""
        return self._state_var

    def _checkpoint_dependencies(self):
        # As TF's Generator (a trackable object): a checkpoint saves and restores the state,
        # so restored draws continue where the saved generator was.
        return [("_state_var", self._state_var)]

    # --------------------------------------------------------------------------------------

    @staticmethod
    def _checked_state(state):
        words = _as_words(state, "state")
        if len(words) != _STATE_SIZE:
            raise errors.InvalidArgumentError(
                None, "Generator", "A Philox state has %d int64 words [counter_lo, "
                "counter_hi, key], got %d: %r" % (_STATE_SIZE, len(words), state))
        return np.array(words, np.int64)

    @classmethod
    def from_state(cls, state, alg):
        """Creates a generator from a state (see the class Args)."""
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed, alg=None):
        """Creates a generator from a seed (an integer of any size, or a vector).

        Args:
            seed: The seed.
            alg: The algorithm (default Philox).

        Returns:
            A Generator whose numbers equal TF's ``Generator.from_seed(seed)``.
        """
        return cls(state=_state_from_seed(seed), alg=_alg_id(alg))

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """Creates a generator whose state comes from the operating system's entropy."""
        words = np.frombuffer(os.urandom(8 * _STATE_SIZE), np.int64).copy()
        return cls(state=words, alg=_alg_id(alg))

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        """Creates a generator from a key (scalar) and a counter (2 words)."""
        return cls(state=cls._key_counter_state(key, counter), alg=alg)

    @staticmethod
    def _key_counter_state(key, counter):
        counter_words = _as_words(counter, "counter")
        key_words = _as_words(key, "key")
        if len(counter_words) != _STATE_SIZE - 1 or len(key_words) != 1:
            raise errors.InvalidArgumentError(
                None, "Generator", "Philox needs a scalar key and a counter of %d words, "
                "got key %r and counter %r" % (_STATE_SIZE - 1, key, counter))
        return counter_words + key_words

    def reset(self, state):
        """Replaces the state."""
        with self._lock:
            self._write_state(self._checked_state(state))

    def reset_from_seed(self, seed):
        """Resets the state as :meth:`from_seed` would."""
        with self._lock:
            self._write_state(_state_from_seed(seed))

    def reset_from_key_counter(self, key, counter):
        """Resets the state from a key and a counter."""
        with self._lock:
            self._write_state(self._key_counter_state(key, counter))

    @property
    def state(self):
        """The state as an int64 tensor ``[counter_lo, counter_hi, key]``."""
        from eagerflow.tensor import convert_to_tensor

        return convert_to_tensor(self._read_state())

    @property
    def algorithm(self):
        """The algorithm id (1 for Philox)."""
        return self._alg

    @property
    def key(self):
        """The key word of the state (a scalar int64 tensor)."""
        from eagerflow.tensor import convert_to_tensor

        return convert_to_tensor(self._read_state()[-1])

    def _read_and_skip(self, delta):
        """Returns the state and advances its counter by ``256 * delta`` (128-bit carry)."""
        with self._lock:
            old = self._read_state()
            lo, hi = (int(w) & _M64 for w in old[:2])
            counter = (lo | hi << 64) + 256 * int(delta)
            new = old.copy()
            new[:2] = np.array([counter & _M64, (counter >> 64) & _M64], np.uint64).view(np.int64)
            self._write_state(new)
        return old

    def skip(self, delta):
        """Advances the counter as a draw of ``delta`` values would; returns the old state."""
        from eagerflow.tensor import convert_to_tensor

        return convert_to_tensor(self._read_and_skip(operator.index(delta)))

    def _key_counter(self, shape):
        from eagerflow.framework import context
        from eagerflow.tensor import convert_to_tensor

        if context.state.trace is not None:
            if None in shape:  # a shape known when the graph runs: so is the count
                from eagerflow.ops.math.cast import cast
                from eagerflow.ops.reduce import reductions

                return self._traced_key_counter(
                    reductions.reduce_prod(cast(shape.tensor, d.int64)))
            return self._traced_key_counter(random._size(shape))
        old = self._read_and_skip(random._size(shape)).view(np.uint64)
        return convert_to_tensor(old[2:3].copy()), convert_to_tensor(old[:2].copy())

    def _traced_key_counter(self, count):
        """Key and counter read from the state variable in the graph; the state moves on."""
        from eagerflow.ops.math.arithmetic import add, less
        from eagerflow.ops.math.cast import bitcast, cast
        from eagerflow.ops.array.join_ops import stack
        from eagerflow.tensor import convert_to_tensor

        words = bitcast(self._state_var.read_value(), d.uint64)
        lo, hi, key = words[0], words[1], words[2:3]
        if hasattr(count, "dtype"):
            from eagerflow.ops.math.arithmetic import multiply

            step = multiply(cast(count, d.uint64), convert_to_tensor(np.uint64(256)))
        else:
            step = convert_to_tensor(np.uint64((256 * int(count)) & _M64))
        new_lo = add(lo, step)
        new_hi = add(hi, cast(less(new_lo, lo), d.uint64))  # the carry
        self._state_var.assign(bitcast(stack([new_lo, new_hi, words[2]]), d.int64))
        return key, words[0:2]

    def _draw(self, prim, shape, attrs, extra=()):
        return execute(prim, self._key_counter(shape) + tuple(extra), attrs)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=d.float32, name=None):
        """Outputs values from a normal distribution.

        Args:
            shape: The output shape (1-D list, tuple or integer tensor).
            mean: A scalar or tensor of ``dtype``.
            stddev: A scalar or tensor of ``dtype``.
            dtype: A floating dtype.
            name: Unused.

        Returns:
            A tensor of ``shape``.
        """
        dtype = random._dtype_in(dtype, random._UNIFORM_DTYPES, "Generator.normal")
        shape = random._shape_attr(shape, "Generator.normal")
        rnd = self._draw(random_stateless.STATELESS_NORMAL, shape,
                         {"shape": shape, "dtype": dtype.name})
        return random._scale_shift(rnd, stddev, mean, dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=d.float32, name=None):
        """Outputs normal values re-drawn until within two standard deviations of the mean.

        Args:
            shape: The output shape.
            mean: A scalar or tensor of ``dtype``.
            stddev: A scalar or tensor of ``dtype`` (before truncation).
            dtype: A floating dtype.
            name: Unused.

        Returns:
            A tensor of ``shape``.
        """
        dtype = random._dtype_in(dtype, random._UNIFORM_DTYPES,
                                     "Generator.truncated_normal")
        shape = random._shape_attr(shape, "Generator.truncated_normal")
        rnd = self._draw(random_stateless.STATELESS_TRUNCATED_NORMAL, shape,
                         {"shape": shape, "dtype": dtype.name})
        return random._scale_shift(rnd, stddev, mean, dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=d.float32, name=None):
        """Outputs values from a uniform distribution on [minval, maxval).

        For floats the default range is [0, 1). For integers pass both bounds, or neither
        for the full range of the dtype (as :meth:`uniform_full_int`).

        Args:
            shape: The output shape.
            minval: Inclusive lower bound, or None (integers).
            maxval: Exclusive upper bound (default 1 for floats), or None (integers).
            dtype: A floating dtype, int32, int64, uint32 or uint64.
            name: Unused.

        Returns:
            A tensor of ``shape``.

        Raises:
            InvalidArgumentError: For an integer dtype with one bound only, or
                ``minval >= maxval``.
        """
        op = "Generator.uniform"
        dtype = random._dtype_in(
            dtype, random._UNIFORM_DTYPES + random._FULL_INT_DTYPES, op)
        if dtype.is_integer:
            if (minval is None) != (maxval is None):
                raise errors.InvalidArgumentError(
                    None, op, "%s: for integer dtype %s, minval and maxval must be both None "
                    "or both set; got minval=%r and maxval=%r" % (op, dtype.name, minval,
                                                                  maxval))
            if minval is None:
                return self.uniform_full_int(shape, dtype)
        elif maxval is None:
            maxval = 1
        shape = random._shape_attr(shape, op)
        if dtype.is_integer:
            from eagerflow.tensor import convert_to_tensor

            bounds = (convert_to_tensor(minval, dtype=dtype),
                      convert_to_tensor(maxval, dtype=dtype))
            return self._draw(random_stateless.STATELESS_UNIFORM_INT, shape, {"shape": shape},
                              bounds)
        rnd = self._draw(random_stateless.STATELESS_UNIFORM, shape,
                         {"shape": shape, "dtype": dtype.name})
        return random._stretch(rnd, minval, maxval, dtype)

    def uniform_full_int(self, shape, dtype=d.uint64, name=None):
        """Integers uniform over the whole range of ``dtype`` (int32/int64/uint32/uint64)."""
        op = "Generator.uniform_full_int"
        dtype = random._dtype_in(dtype, random._FULL_INT_DTYPES, op)
        shape = random._shape_attr(shape, op)
        return self._draw(random_stateless.STATELESS_FULL_INT, shape,
                          {"shape": shape, "dtype": dtype.name})

    def _make_int64_keys(self, count):
        # A new key is hash(old key, counter + i): one full-range int64 draw.
        return self.uniform_full_int([count], dtype=d.int64)

    def make_seeds(self, count=1):
        """Seeds for the stateless ops: an int64 tensor of shape [2, count].

        Example:
            >>> import eagerflow as ef
            >>> ef.random.Generator.from_seed(3).make_seeds(4).shape
            TensorShape([2, 4])
        """
        from eagerflow.ops.array.creation_ops import zeros_like
        from eagerflow.ops.array.join_ops import stack

        keys = self._make_int64_keys(operator.index(count))
        return stack([keys, zeros_like(keys)])

    def split(self, count=1):
        """Returns ``count`` new generators, independent of each other and of this one.

        Each child's key is drawn from this generator (which advances), with a zero counter.

        Example:
            >>> import eagerflow as ef
            >>> a, b = ef.random.Generator.from_seed(3).split(2)
            >>> bool((a.normal([4]).numpy() != b.normal([4]).numpy()).all())
            True
        """
        from eagerflow.framework import context

        if context.state.trace is not None:
            raise errors.UnimplementedError(
                None, "Generator.split", "Generator.split() makes new generators (new state "
                "variables), which a traced function cannot do on every call: split outside "
                "the function and pass the generators in, or draw seeds with make_seeds().")
        keys = self._make_int64_keys(operator.index(count)).numpy()
        return [Generator(state=[0, 0, int(k)], alg=self._alg) for k in keys]

    def __repr__(self):
        return "<eagerflow.random.Generator alg=%d state=%s>" % (
            self._alg, self._read_state().tolist())


_global_generator = None
_global_lock = threading.Lock()


def get_global_generator():
    """The process-wide Generator, created from OS entropy on first use.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.get_global_generator().normal([2]).shape
        TensorShape([2])
    """
    global _global_generator
    with _global_lock:
        if _global_generator is None:
            _global_generator = Generator.from_non_deterministic_state()
        return _global_generator


def set_global_generator(generator):
    """Replaces the global generator (e.g. with ``Generator.from_seed(...)``)."""
    global _global_generator
    if not isinstance(generator, Generator):
        raise errors.InvalidArgumentError(
            None, "set_global_generator", "set_global_generator expects a Generator, got %r"
            % (generator,))
    with _global_lock:
        _global_generator = generator
