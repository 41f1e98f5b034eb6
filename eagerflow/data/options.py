"""``tf.data.Options``: settings attached to a dataset with ``with_options``.

eagerflow reads ``deterministic`` (the default order of parallel ``map``); the other
settings exist so that TF programs that set them run unchanged, and they are carried and
merged as TF does. Setting an attribute that TF does not have raises AttributeError.

Example:
    >>> from eagerflow.data import Dataset, Options
    >>> opts = Options()
    >>> opts.experimental_distribute.auto_shard_policy = 2
    >>> Dataset.range(3).with_options(opts).options().experimental_distribute.auto_shard_policy
    2
"""

from __future__ import annotations

import enum

from eagerflow.data.dataset import Dataset

__all__ = ["Options", "AutoShardPolicy", "ExternalStatePolicy", "AutotuneOptions",
           "DistributeOptions", "OptimizationOptions", "ThreadingOptions", "OptionsDataset",
           "merged_options"]


class AutoShardPolicy(enum.IntEnum):
    """How a distributed dataset is split between workers (TF's values)."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.IntEnum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


class _OptionGroup:
    """A set of named options, each None (unset) until assigned; merging keeps set values."""

    _fields = ()
    _groups = {}

    def __init__(self):
        for name in self._fields:
            object.__setattr__(self, name, None)
        for name, group in self._groups.items():
            object.__setattr__(self, name, group())

    def __setattr__(self, name, value):
        if name not in self._fields:
            if name in self._groups:
                raise AttributeError("%s.%s is a group of options; set its attributes "
                                     "instead." % (type(self).__name__, name))
            raise AttributeError("%s has no option %r; the options are %s."
                                 % (type(self).__name__, name,
                                    sorted(self._fields + tuple(self._groups))))
        object.__setattr__(self, name, value)

    def merge(self, other):
        """A new object with ``other``'s set values overriding this one's."""
        result = type(self)()
        for name in self._fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            object.__setattr__(result, name, theirs if theirs is not None else mine)
        for name in self._groups:
            object.__setattr__(result, name, getattr(self, name).merge(getattr(other, name)))
        return result

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n in self._fields + tuple(self._groups))

    def __repr__(self):
        parts = ["%s=%r" % (n, getattr(self, n)) for n in self._fields
                 if getattr(self, n) is not None]
        parts += ["%s=%r" % (n, getattr(self, n)) for n in self._groups]
        return "%s(%s)" % (type(self).__name__, ", ".join(parts))


class AutotuneOptions(_OptionGroup):
    _fields = ("enabled", "cpu_budget", "ram_budget", "autotune_algorithm")


class DistributeOptions(_OptionGroup):
    _fields = ("auto_shard_policy", "num_devices")


class OptimizationOptions(_OptionGroup):
    _fields = ("apply_default_optimizations", "filter_fusion", "filter_parallelization",
               "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion",
               "map_fusion", "map_parallelization", "noop_elimination", "parallel_batch",
               "shuffle_and_repeat_fusion", "seq_interleave_prefetch")


class ThreadingOptions(_OptionGroup):
    _fields = ("max_intra_op_parallelism", "private_threadpool_size")


class Options(_OptionGroup):
    """Options for a dataset (``tf.data.Options``).

    Attributes:
        deterministic: Whether parallel transformations keep the input order (default
            True when unset).
        autotune, experimental_distribute, experimental_optimization, threading: Option
            groups, accepted and merged for TF compatibility.
    """

    _fields = ("deterministic", "experimental_external_state_policy", "experimental_slack",
               "experimental_symbolic_checkpoint", "experimental_warm_start")
    _groups = {"autotune": AutotuneOptions, "experimental_distribute": DistributeOptions,
               "experimental_optimization": OptimizationOptions,
               "threading": ThreadingOptions}

    # TF's older names for two of the options.
    @property
    def experimental_deterministic(self):
        return self.deterministic

    @experimental_deterministic.setter
    def experimental_deterministic(self, value):
        self.deterministic = value

    @property
    def experimental_threading(self):
        return self.threading

    def __setattr__(self, name, value):
        if name == "experimental_deterministic":
            name = "deterministic"
        super().__setattr__(name, value)


class OptionsDataset(Dataset):
    """``with_options``: the input, unchanged, with options attached."""

    def __init__(self, input_dataset, options):
        if not isinstance(options, Options):
            raise TypeError("Dataset.with_options: `options` must be a tf.data.Options, got "
                            "%s." % type(options).__name__)
        super().__init__((input_dataset,))
        self._options = options

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        return self._inputs[0]._elements()

    def _rows(self):
        return self._inputs[0]._rows()


def merged_options(dataset):
    """The options of ``dataset``: its inputs' options, then its own, merged in order."""
    result = Options()
    for input_dataset in dataset._inputs:
        result = result.merge(merged_options(input_dataset))
    if dataset._options is not None:
        result = result.merge(dataset._options)
    return result
