"""Turns what ``fit``/``evaluate``/``predict`` accept into batches of tensors.

Accepted inputs (``x`` with optional ``y`` and ``sample_weight``):

- numpy arrays, eagerflow tensors, Python lists of numbers, and lists/tuples/dicts of them
  (several inputs or outputs); batched here, shuffled per epoch when asked;
- an ``eagerflow.data.Dataset`` of ``x``, ``(x, y)`` or ``(x, y, sample_weight)`` batches;
- a ``keras.utils.PyDataset`` (``dataset[i]`` is batch ``i``);
- a Python iterator or generator of batches.

Floating numpy arrays are converted to Keras' float type (float32) once, as Keras does, and
``class_weight`` becomes per-sample weights. Every batch is handed over as
``pack_x_y_sample_weight(x, y, sample_weight)`` of eager tensors.

Example:
    >>> import numpy as np
    >>> from eagerflow.keras.models.data_adapter import get_adapter
    >>> adapter = get_adapter(np.zeros((10, 3)), np.arange(10), batch_size=4)
    >>> adapter.num_batches, [tuple(x.shape) for x, y in adapter.epoch()]
    (3, [(4, 3), (4, 3), (2, 3)])
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

import eagerflow as ef
from eagerflow import nest
from eagerflow.keras.utils.data_utils import (PyDataset, pack_x_y_sample_weight,
                                              unpack_x_y_sample_weight)
from eagerflow import tensor as tensor_module
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["get_adapter", "train_validation_split", "EpochIterator", "is_dataset"]


def is_dataset(x):
    """True for an ``eagerflow.data.Dataset`` (without importing ``eagerflow.data``)."""
    module = sys.modules.get("eagerflow.data.dataset")
    return module is not None and isinstance(x, module.Dataset)


def _floatx():
    from eagerflow.keras import backend

    return backend.floatx()


def _is_leaf_array(x):
    return isinstance(x, (np.ndarray, np.generic, Tensor)) or getattr(
        x, "_is_variable", False) or (hasattr(x, "__array__") and hasattr(x, "shape"))


def _to_numpy(x, name):
    if isinstance(x, np.ndarray):
        array = x
    elif isinstance(x, Tensor) or getattr(x, "_is_variable", False):
        array = np.asarray(x.numpy())
    else:
        array = np.asarray(x)
    if array.dtype.kind in "US" or (array.dtype == object and all(
            isinstance(v, (str, bytes)) for v in array.flat)):
        return np.asarray(convert_to_tensor(array)._value)  # string features: bytes
    if array.dtype == object:
        raise ValueError("`%s` contains Python objects (dtype=object) that cannot become "
                         "tensors; pass numeric arrays of one shape (or strings)." % name)
    if array.dtype.kind == "f" and array.dtype != np.dtype(_floatx()):
        array = array.astype(_floatx())
    if array.ndim == 0:
        raise ValueError("`%s` must have a batch dimension; got a scalar." % name)
    return array


def _structure_to_numpy(x, name):
    """A structure of arrays; a list of plain numbers is one array, not several inputs."""
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _structure_to_numpy(v, "%s[%r]" % (name, k)) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        if x and all(_is_leaf_array(v) or isinstance(v, (dict, list, tuple)) for v in x) and \
                not all(isinstance(v, (list, tuple)) and _is_numbers(v) for v in x):
            return type(x)(_structure_to_numpy(v, "%s[%d]" % (name, i))
                           for i, v in enumerate(x)) if isinstance(x, tuple) else \
                [_structure_to_numpy(v, "%s[%d]" % (name, i)) for i, v in enumerate(x)]
        return _to_numpy(x, name)
    return _to_numpy(x, name)


def _is_numbers(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            if not _is_numbers(v):
                return False
        elif not isinstance(v, (int, float, bool, np.number)):
            return False
    return True


def _to_tensor(array):
    return ef.convert_to_tensor(array)


def _gathered_tensor(array):
    """A tensor of ``array``, which an index array just gathered: a fresh array that only
    this batch holds, so it becomes the tensor as it is (``convert_to_tensor`` would copy
    it again: about 12 us of a [128, 784] float32 batch). Other dtypes convert."""
    if array.dtype.kind not in "biuf" or not array.flags.owndata or \
            tensor_module._from_numpy(array.dtype) is None:
        return _to_tensor(array)
    device = tensor_module._target_device()
    return tensor_module.wrap(tensor_module._place(array, device), device)


def _class_weights(y, class_weight):
    """Per-sample weights (float32 numpy) from labels and ``{class: weight}``."""
    y = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
    if y.ndim == 2 and y.shape[1] > 1:
        classes = np.argmax(y, axis=1)
    elif y.ndim == 2 and y.shape[1] == 1:
        classes = y[:, 0]
    elif y.ndim == 1:
        classes = y
    else:
        raise ValueError("`class_weight` needs labels of shape (batch,), (batch, 1) or one-hot "
                         "(batch, classes); got y of shape %s." % (y.shape,))
    classes = np.round(classes).astype(np.int64)
    out = np.ones(classes.shape[0], dtype=_floatx())
    for i, c in enumerate(classes):
        out[i] = class_weight.get(int(c), 1.0)
    return out


def _check_class_weight(class_weight, y):
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict):
        raise ValueError("`class_weight` must be a dict {class index: weight}, got %r."
                         % (class_weight,))
    if y is not None and isinstance(y, (list, tuple, dict)) and not _is_numbers(
            nest.flatten(y) if isinstance(y, dict) else y):
        raise ValueError("`class_weight` is only supported for models with a single output.")
    return class_weight


class ArrayAdapter:
    """Batches in-memory arrays; shuffles the sample order each epoch when asked."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                 class_weight=None):
        self.x = _structure_to_numpy(x, "x")
        self.y = _structure_to_numpy(y, "y")
        self.sample_weight = _structure_to_numpy(sample_weight, "sample_weight")
        self.class_weight = _check_class_weight(class_weight, y)
        leaves = [("x", a) for a in nest.flatten(self.x)]
        leaves += [("y", a) for a in nest.flatten(self.y)] if self.y is not None else []
        leaves += [("sample_weight", a) for a in nest.flatten(self.sample_weight)] \
            if self.sample_weight is not None else []
        sizes = {}
        for name, a in leaves:
            sizes.setdefault(name, []).append(int(a.shape[0]))
        all_sizes = {s for v in sizes.values() for s in v}
        if len(all_sizes) > 1:
            raise ValueError("Data cardinality is ambiguous. Make sure all arrays contain the "
                             "same number of samples. %s" % "; ".join(
                                 "'%s' sizes: %s" % (k, ", ".join(map(str, v)))
                                 for k, v in sizes.items()))
        self.num_samples = all_sizes.pop() if all_sizes else 0
        if batch_size is None:
            batch_size = 32
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError("`batch_size` must be a positive integer, got %r." % (batch_size,))
        self.batch_size = int(batch_size)
        if shuffle not in (True, False, "batch"):
            raise ValueError("`shuffle` must be True, False or 'batch', got %r." % (shuffle,))
        self.shuffle = shuffle
        self.num_batches = int(math.ceil(self.num_samples / self.batch_size)) \
            if self.num_samples else 0

    def _batch_indices(self):
        """Index (a slice or an index array) of each batch of one epoch, in order."""
        n, bs = self.num_samples, self.batch_size
        starts = list(range(0, n, bs))
        if self.shuffle is True:
            order = np.random.permutation(n)
            return [order[s:s + bs] for s in starts]
        if self.shuffle == "batch":
            # Batches keep their samples (contiguous chunks); only their order changes.
            starts = [starts[i] for i in np.random.permutation(len(starts))]
        return [slice(s, s + bs) for s in starts]

    def epoch(self):
        """One pass over the data: a generator of packed batches."""
        for index in self._batch_indices():
            yield self._batch(index)

    def _batch(self, index):
        # A slice is a view of the data (converted, so copied); an index array gathers.
        convert = _to_tensor if index.__class__ is slice else _gathered_tensor

        def take(a):
            return convert(a[index])

        x = nest.map_structure(take, self.x)
        y = nest.map_structure(take, self.y) if self.y is not None else None
        sw = nest.map_structure(lambda a: a[index], self.sample_weight) \
            if self.sample_weight is not None else None
        if self.class_weight is not None and self.y is not None:
            cw = _class_weights(nest.flatten(self.y)[0][index], self.class_weight)
            sw = cw if sw is None else nest.map_structure(lambda s: s * cw, sw)
        if sw is not None:
            sw = nest.map_structure(_to_tensor, sw)
        return pack_x_y_sample_weight(x, y, sw)


class DatasetAdapter:
    """Iterates an ``eagerflow.data.Dataset`` of batches."""

    def __init__(self, dataset, class_weight=None):
        self.dataset = dataset
        self.class_weight = class_weight
        try:
            n = int(dataset.cardinality())
        except Exception:  # noqa: BLE001 - a dataset that cannot say
            n = -2
        self.num_batches = n if n >= 0 else None
        self.infinite = n == -1

    def epoch(self):
        for element in self.dataset:
            if self.class_weight is not None:
                x, y, sw = unpack_x_y_sample_weight(element)
                if y is None:
                    raise ValueError("`class_weight` needs targets: the dataset yields no y.")
                cw = _to_tensor(_class_weights(nest.flatten(y)[0], self.class_weight))
                sw = cw if sw is None else sw * cw
                element = (x, y, sw)
            yield element


def _convert_batch(batch):
    """A batch from Python code: arrays become tensors, float64 becomes float32."""
    if isinstance(batch, list):
        batch = tuple(batch)
    x, y, sw = unpack_x_y_sample_weight(batch)

    def convert(v):
        if v is None or isinstance(v, Tensor):
            return v
        return _to_tensor(_to_numpy(v, "batch"))

    x = nest.map_structure(convert, _structure_to_numpy(x, "x") if not isinstance(x, Tensor)
                           else x)
    y = nest.map_structure(convert, y) if y is not None else None
    sw = nest.map_structure(convert, sw) if sw is not None else None
    return pack_x_y_sample_weight(x, y, sw)


class PyDatasetAdapter:
    """Reads ``dataset[i]`` for each batch index; shuffles the index order when asked."""

    def __init__(self, dataset, shuffle=False, class_weight=None):
        self.dataset = dataset
        self.shuffle = shuffle
        self.class_weight = class_weight
        self.num_batches = len(dataset)

    def epoch(self):
        order = np.random.permutation(self.num_batches) if self.shuffle else \
            range(self.num_batches)
        for i in order:
            batch = _convert_batch(self.dataset[int(i)])
            if self.class_weight is not None:
                x, y, sw = unpack_x_y_sample_weight(batch)
                cw = _to_tensor(_class_weights(nest.flatten(y)[0], self.class_weight))
                batch = (x, y, cw if sw is None else sw * cw)
            yield batch
        on_epoch_end = getattr(self.dataset, "on_epoch_end", None)
        if on_epoch_end is not None:
            on_epoch_end()


class GeneratorAdapter:
    """Reads batches from a Python iterator (single use: it is not restarted)."""

    def __init__(self, iterator):
        self.iterator = iterator
        self.num_batches = None

    def epoch(self):
        for batch in self.iterator:
            yield _convert_batch(batch)


def get_adapter(x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                class_weight=None):
    """The adapter for ``x`` (see the module docstring for the accepted inputs).

    Raises:
        ValueError: For ``y``/``sample_weight`` given with a dataset or generator, or bad
            argument values.
    """
    if x is None:
        raise ValueError("No input data: pass `x` (arrays, a Dataset or a generator).")
    if is_dataset(x) or isinstance(x, PyDataset) or _is_iterator(x):
        if y is not None:
            raise ValueError("`y` argument is not supported when using a dataset or generator "
                             "as input: its elements must be (x, y) pairs. Received: y=%r"
                             % (type(y).__name__,))
        if sample_weight is not None:
            raise ValueError("`sample_weight` argument is not supported when using a dataset "
                             "or generator as input: yield (x, y, sample_weight) instead.")
        if batch_size is not None:
            warnings.warn("`batch_size` is ignored when the input is a dataset or generator: "
                          "its elements are already batches.", stacklevel=3)
        if is_dataset(x):
            return DatasetAdapter(x, class_weight=class_weight)
        if isinstance(x, PyDataset):
            return PyDatasetAdapter(x, shuffle=bool(shuffle), class_weight=class_weight)
        return GeneratorAdapter(x)
    if _is_indexable_dataset(x):
        return PyDatasetAdapter(x, shuffle=bool(shuffle), class_weight=class_weight)
    return ArrayAdapter(x, y, sample_weight, batch_size=batch_size, shuffle=shuffle,
                        class_weight=class_weight)


def _is_iterator(x):
    return hasattr(x, "__next__") and hasattr(x, "__iter__")


def _is_indexable_dataset(x):
    """A tf.keras ``Sequence``-like object: ``__getitem__`` + ``__len__`` + ``on_epoch_end``."""
    return (not isinstance(x, (np.ndarray, list, tuple, dict, Tensor))
            and hasattr(x, "__getitem__") and hasattr(x, "__len__")
            and hasattr(x, "on_epoch_end"))


def train_validation_split(arrays, validation_split):
    """Splits ``(x, y, sample_weight)`` arrays: the last ``validation_split`` fraction of the
    samples (taken before any shuffling, as Keras does) becomes the validation data.

    Raises:
        ValueError: For a dataset/generator input, or too few samples to split.

    Example:
        >>> import numpy as np
        >>> from eagerflow.keras.models.data_adapter import train_validation_split
        >>> (x, y, _), (vx, vy, _) = train_validation_split((np.arange(10), np.arange(10), None),
        ...                                                 0.2)
        >>> x.tolist()[-1], vx.tolist()
        (7, [8, 9])
    """
    if not 0.0 < validation_split < 1.0:
        raise ValueError("`validation_split` must be in (0, 1), got %r." % (validation_split,))
    x = arrays[0]
    if is_dataset(x) or isinstance(x, PyDataset) or _is_iterator(x):
        raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays; "
                         "pass `validation_data` with a dataset or generator.")
    converted = [_structure_to_numpy(a, name) if a is not None else None
                 for a, name in zip(arrays, ("x", "y", "sample_weight"))]
    n = int(nest.flatten(converted[0])[0].shape[0])
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError("Training data contains %d samples, which is not sufficient to split "
                         "it into a validation and training set as specified by "
                         "`validation_split=%s`. Either provide more data, or a different "
                         "value for the `validation_split` argument." % (n, validation_split))

    def part(a, sl):
        return nest.map_structure(lambda v: v[sl], a) if a is not None else None

    train = tuple(part(a, slice(0, split_at)) for a in converted)
    val = tuple(part(a, slice(split_at, None)) for a in converted)
    return train, val


class EpochIterator:
    """Hands out the batches of each epoch, honouring ``steps_per_epoch``.

    With ``steps_per_epoch`` the same underlying iterator continues across epochs (arrays
    start a new pass when one ends); a dataset or generator that runs dry stops training with
    a warning, as Keras does.

    Args:
        adapter: An adapter from :func:`get_adapter`.
        steps_per_epoch: Batches per epoch, or None for one full pass.
    """

    def __init__(self, adapter, steps_per_epoch=None):
        self.adapter = adapter
        if steps_per_epoch is not None and (not isinstance(steps_per_epoch, (int, np.integer))
                                            or steps_per_epoch < 1) and steps_per_epoch != -1:
            raise ValueError("`steps` must be a positive integer (or None), got %r."
                             % (steps_per_epoch,))
        if steps_per_epoch == -1:
            steps_per_epoch = None
        self.steps_per_epoch = steps_per_epoch
        if steps_per_epoch is None and getattr(adapter, "infinite", False):
            raise ValueError("The dataset is infinite (it repeats forever): pass "
                             "`steps_per_epoch` (or `steps`) to say how many batches an epoch "
                             "has.")
        self._iterator = None
        self.exhausted = False

    @property
    def num_batches(self):
        if self.steps_per_epoch is not None:
            return int(self.steps_per_epoch)
        return self.adapter.num_batches

    def enumerate_epoch(self):
        """Yields ``(step, batch)`` for one epoch."""
        if self.steps_per_epoch is None:
            step = -1
            for step, batch in enumerate(self.adapter.epoch()):
                yield step, batch
            if step >= 0 and self.adapter.num_batches is None and not isinstance(
                    self.adapter, GeneratorAdapter):
                self.adapter.num_batches = step + 1
            if isinstance(self.adapter, GeneratorAdapter):
                self.exhausted = True
            return
        cyclic = isinstance(self.adapter, ArrayAdapter)
        for step in range(self.steps_per_epoch):
            if self._iterator is None:
                self._iterator = iter(self.adapter.epoch())
            try:
                batch = next(self._iterator)
            except StopIteration:
                self._iterator = None
                if cyclic and self.adapter.num_batches:
                    self._iterator = iter(self.adapter.epoch())
                    batch = next(self._iterator)
                else:
                    warnings.warn(
                        "Your input ran out of data; interrupting training. Make sure that "
                        "your dataset or generator can generate at least `steps_per_epoch * "
                        "epochs` batches. You may need to use the `.repeat()` function when "
                        "building your dataset.", stacklevel=2)
                    # As Keras 3: the epoch ends early and the next one starts a new pass
                    # over a dataset; a generator cannot start again, so training stops.
                    self.exhausted = isinstance(self.adapter, GeneratorAdapter)
                    return
            yield step, batch

    def reset(self):
        self._iterator = None
