"""Learning-rate schedules: callables from the optimizer step to a learning rate.

An optimizer given a ``LearningRateSchedule`` calls it with its ``iterations`` variable
before each update, so the rate follows the step count. Every schedule is written with
eagerflow ops only (no Python branch on the step's value), so it also runs inside a
traced ``@function``.

Example:
    >>> from eagerflow.keras.optimizers import schedules
    >>> s = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    >>> round(float(s(10)), 6)
    0.05
"""

from __future__ import annotations

import math

import eagerflow as ef

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "PolynomialDecay", "InverseTimeDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]


def _as_float(value, dtype):
    """``value`` (a Python number, Variable or Tensor of any dtype) as a ``dtype`` tensor."""
    if getattr(value, "_is_variable", False):
        value = value.read_value()
    if isinstance(value, ef.Tensor):
        return value if value.dtype is dtype else ef.cast(value, dtype)
    return ef.constant(value, dtype=dtype)


def _initial(value):
    """The initial rate as a tensor; Python numbers become float32 (Keras' floatx)."""
    if isinstance(value, ef.Tensor):
        return value
    if getattr(value, "_is_variable", False):
        return value.read_value()
    return ef.constant(float(value), dtype=ef.float32)


def _check_positive(name, value):
    if value is None or value <= 0:
        raise ValueError("Argument `%s` must be > 0. Received: %s=%r" % (name, name, value))


class LearningRateSchedule:
    """Base class: a serializable callable ``schedule(step) -> learning rate``.

    Subclasses implement ``__call__(step)`` with eagerflow ops and ``get_config()``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.optimizers.schedules import LearningRateSchedule
        >>> class Halving(LearningRateSchedule):
        ...     def __call__(self, step):
        ...         return 1.0 / (1.0 + ef.cast(step, ef.float32))
        ...     def get_config(self):
        ...         return {}
        >>> float(Halving()(1))
        0.5
    """

    def __call__(self, step):
        raise NotImplementedError(
            "Learning rate schedule '%s' must override `__call__(self, step)`."
            % type(self).__name__)

    def get_config(self):
        raise NotImplementedError(
            "Learning rate schedule '%s' must override `get_config()` in order to be "
            "serializable." % type(self).__name__)

    @classmethod
    def from_config(cls, config):
        """Instantiates a schedule from the output of ``get_config``."""
        return cls(**config)


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``.

    With ``staircase=True`` the exponent is ``floor(step / decay_steps)``, so the rate
    changes in steps.

    Args:
        initial_learning_rate: A float (or scalar tensor): the rate at step 0.
        decay_steps: A positive int: the decay period.
        decay_rate: A float: the factor applied once per period.
        staircase: If True, decay at discrete intervals.
        name: Name of the schedule.

    Raises:
        ValueError: If ``decay_steps`` is not positive.

    Example:
        >>> from eagerflow.keras.optimizers.schedules import ExponentialDecay
        >>> s = ExponentialDecay(1.0, decay_steps=2, decay_rate=0.5, staircase=True)
        >>> [float(s(k)) for k in range(4)]
        [1.0, 1.0, 0.5, 0.5]
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        _check_positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        initial = _initial(self.initial_learning_rate)
        dtype = initial.dtype
        p = _as_float(step, dtype) / _as_float(self.decay_steps, dtype)
        if self.staircase:
            p = ef.floor(p)
        return initial * ef.pow(_as_float(self.decay_rate, dtype), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """A constant rate on each interval between boundaries.

    ``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, and ``values[-1]`` after the last
    boundary.

    Args:
        boundaries: Increasing step boundaries (ints or floats).
        values: The rates, one more than ``boundaries``.
        name: Name of the schedule.

    Raises:
        ValueError: If ``len(values) != len(boundaries) + 1``.

    Example:
        >>> from eagerflow.keras.optimizers.schedules import PiecewiseConstantDecay
        >>> s = PiecewiseConstantDecay([2, 4], [1.0, 0.5, 0.1])
        >>> [round(float(s(k)), 2) for k in (0, 2, 3, 4, 5)]
        [1.0, 1.0, 0.5, 0.5, 0.1]
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        boundaries = list(boundaries)
        values = list(values)
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "The length of boundaries should be 1 less than the length of values. "
                "Received: boundaries=%s of length %d, and values=%s of length %d."
                % (boundaries, len(boundaries), values, len(values)))
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        values = [_initial(v) for v in self.values]
        dtype = values[0].dtype
        values = [_as_float(v, dtype) for v in values]
        # Compare in float64: exact for any integer step a float32 cannot hold.
        s = _as_float(step, ef.float64)
        bounds = [_as_float(b, ef.float64) for b in self.boundaries]
        # Each interval contributes (step in interval) * value: one expression, no branch.
        result = ef.cast(s <= bounds[0], dtype) * values[0]
        result = result + ef.cast(s > bounds[-1], dtype) * values[-1]
        for low, high, value in zip(bounds[:-1], bounds[1:], values[1:-1]):
            inside = ef.logical_and(s > low, s <= high)
            result = result + ef.cast(inside, dtype) * value
        return result

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """Polynomial decay from ``initial_learning_rate`` to ``end_learning_rate``.

    ``(initial - end) * (1 - step / decay_steps) ** power + end`` with ``step`` capped at
    ``decay_steps``. With ``cycle=True`` the period grows to the first multiple of
    ``decay_steps`` above ``step`` instead of capping.

    Args:
        initial_learning_rate: The rate at step 0.
        decay_steps: A positive int: steps to reach ``end_learning_rate``.
        end_learning_rate: The final rate (default 0.0001).
        power: The polynomial's power (default 1.0: linear).
        cycle: Whether to restart the decay past ``decay_steps``.
        name: Name of the schedule.

    Raises:
        ValueError: If ``decay_steps`` is not positive.

    Example:
        >>> from eagerflow.keras.optimizers.schedules import PolynomialDecay
        >>> s = PolynomialDecay(1.0, decay_steps=4, end_learning_rate=0.0)
        >>> [float(s(k)) for k in (0, 2, 4, 8)]
        [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name="PolynomialDecay"):
        _check_positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        initial = _initial(self.initial_learning_rate)
        dtype = initial.dtype
        end = _as_float(self.end_learning_rate, dtype)
        power = _as_float(self.power, dtype)
        s = _as_float(step, dtype)
        decay_steps = _as_float(self.decay_steps, dtype)
        if self.cycle:
            # The first multiple of decay_steps above step; 1 at step 0.
            multiplier = ef.where(ef.equal(s, 0.0), ef.ones_like(s),
                                  ef.math.ceil(s / decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            s = ef.minimum(s, decay_steps)
        p = s / decay_steps
        return (initial - end) * ef.pow(1.0 - p, power) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``.

    With ``staircase=True`` the ratio ``step / decay_steps`` is floored.

    Args:
        initial_learning_rate: The rate at step 0.
        decay_steps: A positive number: how often to apply the decay.
        decay_rate: The decay rate.
        staircase: Whether to decay at discrete intervals.
        name: Name of the schedule.

    Raises:
        ValueError: If ``decay_steps`` is not positive.

    Example:
        >>> from eagerflow.keras.optimizers.schedules import InverseTimeDecay
        >>> s = InverseTimeDecay(1.0, decay_steps=1, decay_rate=1.0)
        >>> [float(s(k)) for k in (0, 1, 3)]
        [1.0, 0.5, 0.25]
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        _check_positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        initial = _initial(self.initial_learning_rate)
        dtype = initial.dtype
        p = _as_float(step, dtype) / _as_float(self.decay_steps, dtype)
        if self.staircase:
            p = ef.floor(p)
        return initial / (1.0 + _as_float(self.decay_rate, dtype) * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay, optionally after a linear warmup (Keras 3 semantics).

    Without ``warmup_target``: ``lr(step) = initial * ((1 - alpha) * c + alpha)`` with
    ``c = 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps))``.

    With ``warmup_target``: for ``step < warmup_steps`` the rate rises linearly from
    ``initial_learning_rate`` to ``warmup_target``; afterwards it is the cosine decay
    above started from ``warmup_target`` at ``step - warmup_steps`` (the step is capped
    at ``warmup_steps + decay_steps``).

    Args:
        initial_learning_rate: The rate at step 0.
        decay_steps: A positive int: steps of the cosine part.
        alpha: The final rate as a fraction of the decay's starting rate.
        name: Name of the schedule.
        warmup_target: The rate reached at the end of the warmup, or None for no warmup.
        warmup_steps: Length of the warmup.

    Raises:
        ValueError: If ``decay_steps`` is not positive.

    Example:
        >>> from eagerflow.keras.optimizers.schedules import CosineDecay
        >>> s = CosineDecay(0.0, decay_steps=10, warmup_target=1.0, warmup_steps=2)
        >>> [round(float(s(k)), 4) for k in (0, 1, 2, 7, 12)]
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        _check_positive("decay_steps", decay_steps)
        if warmup_steps is None or warmup_steps < 0:
            raise ValueError("Argument `warmup_steps` must be >= 0. Received: "
                             "warmup_steps=%r" % (warmup_steps,))
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step, decay_steps, start, dtype):
        fraction = step / decay_steps
        cosine = 0.5 * (1.0 + ef.cos(_as_float(math.pi, dtype) * fraction))
        return start * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        initial = _initial(self.initial_learning_rate)
        dtype = initial.dtype
        decay_steps = _as_float(self.decay_steps, dtype)
        s = _as_float(step, dtype)
        if self.warmup_target is None:
            return self._decay(ef.minimum(s, decay_steps), decay_steps, initial, dtype)
        target = _as_float(self.warmup_target, dtype)
        warmup_steps = _as_float(self.warmup_steps, dtype)
        s = ef.minimum(s, decay_steps + warmup_steps)
        # Both branches are computed and one is selected; the max() keeps the unused
        # warmup branch finite when warmup_steps is 0.
        warm = (target - initial) * (s / ef.maximum(warmup_steps, 1.0)) + initial
        decayed = self._decay(s - warmup_steps, decay_steps, target, dtype)
        return ef.where(s < warmup_steps, warm, decayed)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR).

    The first period lasts ``first_decay_steps``; each next one is ``t_mul`` times longer
    and starts from ``m_mul`` times the previous peak. Within a period the rate is
    ``initial * ((1 - alpha) * 0.5 * m_mul**i * (1 + cos(pi * f)) + alpha)`` where ``i``
    is the period index and ``f`` the fraction of it completed.

    Args:
        initial_learning_rate: The rate at step 0.
        first_decay_steps: A positive int: length of the first period.
        t_mul: Period length multiplier.
        m_mul: Peak rate multiplier per restart.
        alpha: Minimum rate as a fraction of ``initial_learning_rate``.
        name: Name of the schedule.

    Raises:
        ValueError: If ``first_decay_steps`` is not positive.

    Example:
        >>> from eagerflow.keras.optimizers.schedules import CosineDecayRestarts
        >>> s = CosineDecayRestarts(1.0, first_decay_steps=2, t_mul=1.0)
        >>> [round(float(s(k)), 4) for k in (0, 1, 2, 3)]
        [1.0, 0.5, 1.0, 0.5]
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name="SGDRDecay"):
        _check_positive("first_decay_steps", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        initial = _initial(self.initial_learning_rate)
        dtype = initial.dtype
        alpha = _as_float(self.alpha, dtype)
        t_mul = _as_float(self._t_mul, dtype)
        m_mul = _as_float(self._m_mul, dtype)
        fraction = _as_float(step, dtype) / _as_float(self.first_decay_steps, dtype)
        # t_mul is a Python constant, so choosing the formula here is static.
        if float(self._t_mul) == 1.0:
            i_restart = ef.floor(fraction)
            fraction = fraction - i_restart
        else:
            i_restart = ef.floor(ef.math.log(1.0 - fraction * (1.0 - t_mul))
                                 / ef.math.log(t_mul))
            sum_r = (1.0 - ef.pow(t_mul, i_restart)) / (1.0 - t_mul)
            fraction = (fraction - sum_r) / ef.pow(t_mul, i_restart)
        m_fac = ef.pow(m_mul, i_restart)
        cosine = 0.5 * m_fac * (1.0 + ef.cos(_as_float(math.pi, dtype) * fraction))
        return initial * ((1.0 - alpha) * cosine + alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (
    ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay,
    CosineDecay, CosineDecayRestarts)}


def serialize(learning_rate_schedule):
    """Serializes a schedule into a JSON-compatible dict (Keras 3's format).

    Args:
        learning_rate_schedule: A ``LearningRateSchedule``.

    Returns:
        ``{"module", "class_name", "config", "registered_name"}``.

    Raises:
        TypeError: If the argument is not a ``LearningRateSchedule``.

    Example:
        >>> from eagerflow.keras.optimizers import schedules
        >>> d = schedules.serialize(schedules.InverseTimeDecay(0.1, 10, 0.5))
        >>> d["class_name"], d["config"]["decay_rate"]
        ('InverseTimeDecay', 0.5)
    """
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise TypeError("serialize expects a LearningRateSchedule, got %r"
                        % (learning_rate_schedule,))
    cls = type(learning_rate_schedule)
    builtin = _SCHEDULES.get(cls.__name__) is cls
    return {"module": "keras.optimizers.schedules" if builtin else cls.__module__,
            "class_name": cls.__name__,
            "config": learning_rate_schedule.get_config(),
            "registered_name": None if builtin else cls.__name__}


def deserialize(config, custom_objects=None):
    """Rebuilds a schedule from ``serialize``'s output (or tf.keras 2's two-key form).

    Args:
        config: A dict with ``class_name`` and ``config``.
        custom_objects: Optional ``{name: class}`` for user-defined schedules.

    Returns:
        A ``LearningRateSchedule``.

    Raises:
        ValueError: If the class is unknown or the dict is malformed.

    Example:
        >>> from eagerflow.keras.optimizers import schedules
        >>> s = schedules.ExponentialDecay(0.1, 100, 0.9)
        >>> type(schedules.deserialize(schedules.serialize(s))).__name__
        'ExponentialDecay'
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Could not deserialize learning rate schedule from %r: expected a "
                         "dict with 'class_name' and 'config'." % (config,))
    name = config["class_name"]
    table = dict(_SCHEDULES)
    table.update(custom_objects or {})
    cls = table.get(name) or table.get(config.get("registered_name") or "")
    if cls is None:
        raise ValueError("Unknown learning rate schedule: %r. Known: %s. Pass custom "
                         "schedules with custom_objects={'%s': cls}."
                         % (name, sorted(_SCHEDULES), name))
    return cls.from_config(dict(config.get("config", {})))
