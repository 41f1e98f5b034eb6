"""``IndexedSlices``: a sparse set of rows of a dense tensor (values, indices, dense_shape).

Example:
    >>> import eagerflow as ef
    >>> s = ef.IndexedSlices(ef.constant([[1.0, 2.0]]), ef.constant([1]), [3, 2])
    >>> ef.convert_to_tensor(s).numpy().tolist()
    [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow.tensor import convert_to_tensor, wrap


class IndexedSlices:
    """Rows ``values[i]`` at positions ``indices[i]`` of a tensor of ``dense_shape``.

    Args:
        values: A Tensor of shape [N, ...].
        indices: A 1-D int Tensor of N row indices.
        dense_shape: The shape of the dense tensor, or None.
    """

    _is_eagerflow_tensor_like = True

    def __init__(self, values, indices, dense_shape=None):
        self.values = convert_to_tensor(values)
        self.indices = convert_to_tensor(indices)
        self.dense_shape = None if dense_shape is None else tuple(
            int(d) for d in np.asarray(dense_shape).reshape(-1))

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        from eagerflow.tensor_shape import TensorShape

        return TensorShape(self.dense_shape)

    @property
    def device(self):
        return self.values.device

    def _as_tensor(self, dtype=None):
        """Densifies (summing duplicate indices), as TF's conversion does."""
        if self.dense_shape is None:
            raise ValueError("Cannot densify IndexedSlices without a dense_shape")
        values = self.values
        xp = values._device.backend
        out = xp.zeros(self.dense_shape, dtype=values._value.dtype)
        xp.add.at(out, self.indices._value, values._value)
        dense = wrap(out, values._device)
        return dense if dtype is None else convert_to_tensor(dense, dtype=dtype)

    def __repr__(self):
        return "IndexedSlices(indices=%s, values=%s, dense_shape=%s)" % (
            self.indices.numpy().tolist(), self.values.shape, self.dense_shape)
