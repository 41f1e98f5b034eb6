"""Data helpers of ``keras.utils``: packing ``(x, y, sample_weight)``, one-hot labels,
normalization, seeding, and ``PyDataset`` (Keras' indexable batch source).

Example:
    >>> from eagerflow.keras import utils
    >>> utils.to_categorical([0, 2], num_classes=3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    >>> utils.unpack_x_y_sample_weight(("x", "y"))
    ('x', 'y', None)
"""

from __future__ import annotations

import random

import numpy as np

__all__ = ["unpack_x_y_sample_weight", "pack_x_y_sample_weight", "to_categorical",
           "normalize", "set_random_seed", "PyDataset", "Sequence"]


def unpack_x_y_sample_weight(data):
    """Splits a batch into ``(x, y, sample_weight)``, filling the missing parts with None.

    Args:
        data: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` (a list counts as a
            tuple).

    Returns:
        The tuple ``(x, y, sample_weight)``.

    Raises:
        ValueError: For a tuple of more than three elements.

    Example:
        >>> from eagerflow.keras.utils import unpack_x_y_sample_weight
        >>> unpack_x_y_sample_weight((1, 2, 3)), unpack_x_y_sample_weight(1)
        ((1, 2, 3), (1, None, None))
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     "`(x, y, sample_weight)`, found a tuple of %d elements." % len(data))


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The inverse of :func:`unpack_x_y_sample_weight`.

    A lone ``x`` that is not a tuple or list is returned as is (no ambiguity); otherwise the
    result is ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

    Example:
        >>> from eagerflow.keras.utils import pack_x_y_sample_weight
        >>> pack_x_y_sample_weight(1), pack_x_y_sample_weight([1, 2]), pack_x_y_sample_weight(1, 2)
        (1, ([1, 2],), (1, 2))
    """
    if y is None:
        if not isinstance(x, (list, tuple)):
            return x
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def to_categorical(x, num_classes=None):
    """One-hot encodes integer class labels, as Keras 3.

    A trailing axis of size 1 is replaced by the class axis, as Keras does. Float labels
    with integer values (``2.0``) are accepted; non-integer ones raise (Keras truncates
    them silently).

    Args:
        x: Integer labels, any shape: a list or numpy array, or a tensor.
        num_classes: Number of classes; default ``max(x) + 1``.

    Returns:
        For a tensor, a float32 tensor; otherwise a float64 numpy array (Keras 3's dtypes),
        of shape ``x.shape + (num_classes,)``.

    Raises:
        ValueError: For negative labels or labels >= ``num_classes``.

    Example:
        >>> from eagerflow.keras.utils import to_categorical
        >>> to_categorical([[1], [0]]).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    is_tensor = hasattr(x, "numpy") and not isinstance(x, np.ndarray)
    x = np.asarray(x.numpy() if is_tensor else x)
    if x.dtype.kind == "f":
        if not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError("to_categorical expects integer class labels, got non-integer "
                             "values such as %r." % (x[np.mod(x, 1) != 0].flat[0],))
    x = x.astype(np.int64)
    shape = x.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = x.reshape(-1)
    if num_classes is None:
        num_classes = int(flat.max()) + 1 if flat.size else 0
    num_classes = int(num_classes)
    if flat.size and (flat.min() < 0 or flat.max() >= num_classes):
        raise ValueError("to_categorical: labels must lie in [0, %d), got values from %d to %d."
                         % (num_classes, flat.min(), flat.max()))
    out = np.zeros((flat.size, num_classes), dtype=np.float32 if is_tensor else np.float64)
    out[np.arange(flat.size), flat] = 1.0
    out = out.reshape(tuple(shape) + (num_classes,))
    if is_tensor:
        from eagerflow.tensor import convert_to_tensor

        return convert_to_tensor(out)
    return out


def normalize(x, axis=-1, order=2):
    """Scales ``x`` to unit ``order``-norm along ``axis`` (zero vectors stay zero).

    Example:
        >>> from eagerflow.keras.utils import normalize
        >>> normalize([[3.0, 4.0]]).tolist()
        [[0.6, 0.8]]
    """
    x = np.asarray(x, dtype=np.float64 if np.asarray(x).dtype == np.float64 else np.float32)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


def set_random_seed(seed):
    """Seeds Python's ``random``, numpy's global generator and eagerflow's global seed.

    Raises:
        ValueError: If ``seed`` is not an int.

    Example:
        >>> from eagerflow.keras.utils import set_random_seed
        >>> set_random_seed(1)
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError("Expected `seed` argument to be an integer. Received: seed=%r"
                         % (seed,))
    import eagerflow as ef

    random.seed(int(seed))
    np.random.seed(int(seed))
    ef.random.set_seed(int(seed))


class PyDataset:
    """Base class of indexable batch sources for ``fit``: ``dataset[i]`` is batch ``i``.

    Subclasses implement ``__len__`` (number of batches per epoch) and ``__getitem__``
    (one batch: ``x``, ``(x, y)`` or ``(x, y, sample_weight)``), and may implement
    ``on_epoch_end``. Batches are read in order (``fit(shuffle=True)`` shuffles the order of
    indices, as Keras does for ``PyDataset``).

    Args:
        workers: Accepted for compatibility; batches are read in the calling thread.
        use_multiprocessing: Accepted for compatibility.
        max_queue_size: Accepted for compatibility.

    Example:
        >>> import numpy as np
        >>> from eagerflow.keras.utils import PyDataset
        >>> class Ones(PyDataset):
        ...     def __len__(self):
        ...         return 2
        ...     def __getitem__(self, i):
        ...         return np.ones((4, 3)), np.zeros((4, 1))
        >>> len(Ones())
        2
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size

    def __len__(self):
        raise NotImplementedError("%s must implement __len__ (batches per epoch)."
                                  % type(self).__name__)

    def __getitem__(self, index):
        raise NotImplementedError("%s must implement __getitem__ (one batch)."
                                  % type(self).__name__)

    def on_epoch_end(self):
        """Called at the end of every epoch (e.g. to reshuffle)."""

    @property
    def num_batches(self):
        return len(self)


Sequence = PyDataset
