"""``InputSpec``: what a layer accepts, checked on every call with errors that name the
layer, the input and the shapes.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.layers.input_spec import InputSpec, assert_input_compatibility
    >>> try:
    ...     assert_input_compatibility(InputSpec(ndim=3), ef.ones([2, 3]), "demo")
    ... except ValueError as e:
    ...     print(str(e)[:60])
    Input 0 of layer "demo" is incompatible with the layer: expe
"""

from __future__ import annotations

from eagerflow import dtypes as dtypes_lib
from eagerflow.keras.layers.call_context import _flatten
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["InputSpec", "assert_input_compatibility"]


# -- InputSpec --------------------------------------------------------------------------------

class InputSpec:
    """What a layer accepts: dtype, rank (exact, min, max), shape, or sizes of given axes.

    Args:
        dtype: Expected dtype name, or None.
        shape: Expected shape (None entries match anything).
        ndim: Expected rank.
        max_ndim: Largest allowed rank.
        min_ndim: Smallest allowed rank.
        axes: Dict of axis -> required size, e.g. ``{-1: 8}``.
        allow_last_axis_squeeze: Accept a rank one lower (or higher) when the last axis is 1.
        name: Optional input name.

    Raises:
        ValueError: If an axis in ``axes`` is out of range for ``ndim``/``max_ndim``.

    Example:
        >>> from eagerflow.keras.layers.base import InputSpec
        >>> InputSpec(min_ndim=2, axes={-1: 4})
        InputSpec(min_ndim=2, axes={-1: 4})
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None):
        self.dtype = dtypes_lib.as_dtype(dtype).name if dtype is not None else None
        self.shape = tuple(shape) if shape is not None else None
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.name = name
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        top = self.ndim if self.ndim is not None else self.max_ndim
        if self.axes and top is not None:
            for axis in self.axes:
                if axis >= top:
                    raise ValueError("InputSpec: axis %d is greater than the maximum allowed "
                                     "value: %d." % (axis, top - 1))

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        parts = ["%s=%r" % (k, v) for k, v in (
            ("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
            ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
            ("axes", self.axes or None)) if v is not None]
        return "InputSpec(%s)" % ", ".join(parts)


def _shape_str(shape):
    shape = TensorShape(shape)
    return str(tuple(shape.as_list())) if shape.rank is not None else "<unknown>"


def assert_input_compatibility(input_spec, inputs, layer_name):
    """Raises ValueError naming the layer and shapes when ``inputs`` break ``input_spec``."""
    if input_spec is None:
        return
    specs = _flatten(input_spec)
    flat = [x for x in _flatten(inputs)]
    if len(specs) != len(flat):
        raise ValueError('Layer "%s" expects %d input(s), but it received %d input tensors. '
                         "Inputs received: %r" % (layer_name, len(specs), len(flat), flat))
    for i, (spec, x) in enumerate(zip(specs, flat)):
        if spec is None:
            continue
        if x.__class__ is Tensor:  # eager: the array's shape, without a TensorShape
            shape = x._value.shape
            rank = len(shape)
        else:
            if not hasattr(x, "shape"):
                raise ValueError('Input %d of layer "%s" is not a tensor: %r.'
                                 % (i, layer_name, x))
            shape = TensorShape(x.shape)
            rank = shape.rank
            if rank is None:
                continue
        where = 'Input %d of layer "%s" is incompatible with the layer' % (i, layer_name)
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and rank != spec.ndim:
            raise ValueError("%s: expected ndim=%d, found ndim=%d. Full shape received: %s"
                             % (where, spec.ndim, rank, _shape_str(shape)))
        if spec.max_ndim is not None and rank > spec.max_ndim:
            raise ValueError("%s: expected max_ndim=%d, found ndim=%d. Full shape received: %s"
                             % (where, spec.max_ndim, rank, _shape_str(shape)))
        if spec.min_ndim is not None and rank < spec.min_ndim:
            raise ValueError("%s: expected min_ndim=%d, found ndim=%d. Full shape received: %s"
                             % (where, spec.min_ndim, rank, _shape_str(shape)))
        if spec.dtype is not None and getattr(x, "dtype", None) is not None:
            if dtypes_lib.as_dtype(x.dtype).name != spec.dtype:
                raise ValueError("%s: expected dtype=%s, found dtype=%s"
                                 % (where, spec.dtype, dtypes_lib.as_dtype(x.dtype).name))
        dims = list(shape) if shape.__class__ is tuple else shape.as_list()
        for axis, value in spec.axes.items():
            if value is None:
                continue
            if not -rank <= axis < rank:
                raise ValueError("%s: expected an axis %d, but the input has rank %d. Full "
                                 "shape received: %s" % (where, axis, rank, _shape_str(shape)))
            if dims[axis] is not None and dims[axis] != value:
                raise ValueError("%s: expected axis %d of input shape to have value %d, but "
                                 "received input with shape %s"
                                 % (where, axis, value, _shape_str(shape)))
        if spec.shape is not None and not spec.allow_last_axis_squeeze:
            for want, got in zip(spec.shape, dims):
                if want is not None and got is not None and want != got:
                    raise ValueError("%s: expected shape=%s, found shape=%s"
                                     % (where, spec.shape, _shape_str(shape)))
