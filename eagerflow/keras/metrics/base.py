"""``Metric`` and the reducing metrics ``Sum``, ``Mean`` and ``MeanMetricWrapper``.

A metric is a ``Module`` holding state variables (not trainable, synchronized on read and
summed across replicas, as Keras makes them). ``update_state`` changes them only with
``assign_add``, so updates from a traced step are plain graph ops; ``result`` computes
the value from the state; ``reset_state`` zeroes it.

Example:
    >>> from eagerflow.keras import metrics
    >>> m = metrics.Mean()
    >>> m.update_state([1.0, 3.0])
    >>> m.update_state([5.0], sample_weight=[2.0])
    >>> float(m.result())  # (1 + 3 + 2 * 5) / (1 + 1 + 2)
    3.5
"""

from __future__ import annotations

import re

import eagerflow as ef
from eagerflow.keras.initial_values import initial_value
from eagerflow.keras.losses.base import (_broadcast_like, _tensor, floatx, get_keras_mask,
                                         squeeze_or_expand_to_same_rank)
from eagerflow.module import Module

__all__ = ["Metric", "Sum", "Mean", "MeanMetricWrapper", "reduce_to_samplewise_values"]

_AGGREGATIONS = {"sum": ef.VariableAggregation.SUM, "mean": ef.VariableAggregation.MEAN,
                 "none": ef.VariableAggregation.NONE, None: ef.VariableAggregation.NONE,
                 "only_first_replica": ef.VariableAggregation.ONLY_FIRST_REPLICA}


def to_snake_case(name):
    """Keras' snake_case of a class name ("KLDivergence" -> "kl_divergence")."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()




class Metric(Module):
    """Base class of metrics: state variables, ``update_state``, ``result``.

    Args:
        dtype: The dtype of the state and result (default: Keras' floatx, float32).
        name: The metric's name (any string; default: the class name in snake_case).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.metrics import Metric
        >>> class Count(Metric):
        ...     def __init__(self, name="count", dtype=None):
        ...         super().__init__(name=name, dtype=dtype)
        ...         self.n = self.add_variable((), "zeros", name="n")
        ...     def update_state(self, values, sample_weight=None):
        ...         self.n.assign_add(ef.cast(ef.size(values), self.n.dtype))
        ...     def result(self):
        ...         return self.n.read_value()
        >>> c = Count()
        >>> float(c([1, 2, 3]))
        3.0
    """

    def __init__(self, dtype=None, name=None):
        name = name if name is not None else to_snake_case(type(self).__name__)
        # Keras metric names are free-form ("val/acc"); the Module name is sanitized.
        super().__init__(name=re.sub(r"[^\w.\-]", "_", str(name)).lstrip(".-") or "metric")
        self._name = str(name)
        self._scope_name = self.name_scope_name + "/"
        self._dtype = ef.as_dtype(dtype or floatx())
        self._metric_variables = []

    @property
    def name_scope_name(self):
        return re.sub(r"[^\w.\-]", "_", self._name).lstrip(".-") or "metric"

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):
        self._name = str(value)

    @property
    def dtype(self):
        return self._dtype.name

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """Creates a state variable (not trainable, summed across replicas).

        Args:
            shape: Its shape.
            initializer: "zeros", "ones", a number, or a callable ``(shape, dtype)``.
            dtype: Its dtype (default: the metric's dtype).
            aggregation: "sum" (default), "mean", "none" or "only_first_replica".
            name: Its name.

        Returns:
            The Variable.
        """
        dtype = ef.as_dtype(dtype or self._dtype)
        shape = [int(d) for d in shape]
        value = initial_value(initializer, shape, dtype, name)
        with self.name_scope:
            variable = ef.Variable(value, dtype=dtype, name=name, trainable=False,
                                   synchronization=ef.VariableSynchronization.ON_READ,
                                   aggregation=_AGGREGATIONS[aggregation])
        self._metric_variables.append(variable)
        return variable

    def add_weight(self, name=None, shape=(), aggregation="sum", synchronization=None,
                   initializer="zeros", dtype=None):
        """tf.keras 2 spelling of ``add_variable``."""
        if initializer is None:
            initializer = "zeros"
        if isinstance(aggregation, ef.VariableAggregation):
            aggregation = {v: k for k, v in _AGGREGATIONS.items() if k}[aggregation]
        return self.add_variable(shape, initializer=initializer, dtype=dtype,
                                 aggregation=aggregation, name=name)

    @property
    def variables(self):
        """This metric's state variables, then those of metrics it holds."""
        out = list(self._metric_variables)
        for sub in self.submodules:
            if isinstance(sub, Metric):
                out.extend(v for v in sub._metric_variables if all(v is not o for o in out))
        return out

    @property
    def trainable_variables(self):
        return ()

    @property
    def non_trainable_variables(self):
        return tuple(self.variables)

    def reset_state(self):
        """Sets every state variable to zero."""
        for v in self.variables:
            v.assign(ef.zeros_like(v.read_value()))

    def reset_states(self):
        """tf.keras 2 name of ``reset_state``."""
        self.reset_state()

    def update_state(self, *args, **kwargs):
        raise NotImplementedError("%s must implement update_state()." % type(self).__name__)

    def result(self):
        raise NotImplementedError("%s must implement result()." % type(self).__name__)

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)``, then returns ``result()``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "<%s name=%s>" % (type(self).__name__, self.name)


def reduce_to_samplewise_values(values, sample_weight, reduce_fn, dtype):
    """Casts values, applies weights, and reduces to one value per sample (Keras' rule).

    Values of higher rank than the weights are first reduced with ``reduce_fn`` over
    their extra trailing axes; the weights are broadcast to the values.

    Returns:
        ``(values, sample_weight)``: values ``[batch]`` (or scalar), weights broadcast.
    """
    values = _tensor(values, dtype)
    if sample_weight is not None:
        sample_weight = _tensor(sample_weight, dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_ndim, values_ndim = len(sample_weight.shape), len(values.shape)
        if values_ndim > weight_ndim:
            values = reduce_fn(values, axis=list(range(weight_ndim, values_ndim)))
        sample_weight = _broadcast_like(sample_weight, values)
        values = values * sample_weight
        if weight_ndim > 1:
            sample_weight = reduce_fn(sample_weight, axis=list(range(1, weight_ndim)))
    if len(values.shape) > 1:
        values = reduce_fn(values, axis=list(range(1, len(values.shape))))
    return values, sample_weight


class Sum(Metric):
    """The weighted sum of all values seen.

    Args:
        name: Default "sum".
        dtype: The state dtype.

    Example:
        >>> from eagerflow.keras import metrics
        >>> m = metrics.Sum()
        >>> float(m([1.0, 3.0, 5.0], sample_weight=[1.0, 0.0, 2.0]))
        11.0
    """

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), "zeros", name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = reduce_to_samplewise_values(values, sample_weight, ef.reduce_sum,
                                                self._dtype)
        self.total.assign_add(ef.reduce_sum(values))

    def result(self):
        return ef.identity(self.total.read_value())


class Mean(Metric):
    """The weighted mean of all values seen: ``sum(w * v) / sum(w)``.

    Values of rank > 1 are first averaged per sample; without weights each sample counts
    once.

    Args:
        name: Default "mean".
        dtype: The state dtype.

    Example:
        >>> from eagerflow.keras import metrics
        >>> m = metrics.Mean()
        >>> float(m([1.0, 3.0, 5.0, 7.0], sample_weight=[1.0, 1.0, 0.0, 0.0]))
        2.0
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), "zeros", name="total")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = reduce_to_samplewise_values(
            values, sample_weight, ef.reduce_mean, self._dtype)
        self.total.assign_add(ef.reduce_sum(values))
        if sample_weight is not None:
            count = ef.reduce_sum(sample_weight)
        elif len(values.shape) >= 1:
            count = ef.cast(ef.shape(values)[0], self._dtype)
        else:
            count = ef.constant(1.0, dtype=self._dtype)
        self.count.assign_add(_tensor(count, self._dtype))

    def result(self):
        return ef.math.divide_no_nan(self.total.read_value(), self.count.read_value())


class MeanMetricWrapper(Mean):
    """The weighted mean of ``fn(y_true, y_pred, **kwargs)`` over all samples.

    Args:
        fn: A per-sample metric function.
        name: The metric's name (default: ``fn``'s name).
        dtype: The state dtype.
        **kwargs: Extra arguments passed to ``fn``.

    Example:
        >>> from eagerflow.keras import metrics, losses
        >>> m = metrics.MeanMetricWrapper(losses.mean_absolute_error)
        >>> float(m([[0.0, 1.0]], [[1.0, 1.0]]))
        0.5
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds ``fn(y_true, y_pred)`` for each sample, weighted by ``sample_weight``.

        Entries masked by a Keras mask on ``y_pred`` count with weight 0 (Keras applies
        the mask only when a sample weight is also given; here it always applies).
        """
        mask = get_keras_mask(y_pred)
        y_pred = _tensor(y_pred)
        if not y_pred.dtype.is_floating:
            # Integer predictions would make mean-based functions truncate.
            y_pred = ef.cast(y_pred, self._dtype)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        if mask is not None:
            mask = _tensor(mask, self._dtype)
            if sample_weight is not None:
                sample_weight = _tensor(sample_weight, self._dtype)
                mask, sample_weight = squeeze_or_expand_to_same_rank(mask, sample_weight)
                sample_weight = sample_weight * mask
            else:
                sample_weight = mask
        super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is MeanMetricWrapper:
            config["fn"] = getattr(self._fn, "__name__", self._fn)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls is MeanMetricWrapper and isinstance(config.get("fn"), str):
            from eagerflow.keras import metrics  # the name table: see eagerflow.keras

            config["fn"] = metrics.get_function(config["fn"])
        return cls(**config)
