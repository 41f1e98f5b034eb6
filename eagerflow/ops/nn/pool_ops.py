"""Pooling: ``tf.nn.max_pool*``, ``tf.nn.avg_pool*`` and ``tf.nn.pool`` (1 to 3 spatial dims).

For a window of ``k`` taps (stride ``s``, dilation ``d``) at output position ``p``::

    max_pool(x)[p] = max_t  pad(x, -inf)[p * s + t * d]
    avg_pool(x)[p] = sum_t  pad(x, 0)[p * s + t * d] / (number of taps inside x)

so, as in TF, ``avg_pool`` with ``"SAME"`` padding averages over the valid (non-padded)
elements only. Kernels loop over the window's taps (a handful) with whole-array operations
on strided slices, in the input's own layout (channels last or first, no transposes).

Gradients, each a primitive whose own gradient is another one, so all orders work:

* ``MaxPoolGrad(x, g)`` routes each output gradient to the first maximum of its window (TF's
  tie rule: the first in row-major window order), found by comparing each tap with the
  recomputed maximum (no argmax indices). When the windows tile a large input (stride
  equal to the window, no padding) each spatial axis is split into (window, tap) axes of
  a view, so one comparison marks every maximum and one multiply writes the gradient;
  the tie rule goes tap by tap on the marks, only when some window has two maxima.
  It is linear in ``g``; its gradient is ``MaxPoolGradGrad(x, h)``, which gathers ``h`` at
  the same argmax positions, and whose gradient is ``MaxPoolGrad`` again.
* ``AvgPoolGrad(g)`` spreads each ``g / count`` over its window; its gradient is ``AvgPool``.

The kernels are in :mod:`eagerflow.ops.nn.pool_kernels`; this module declares the
primitives (shape and gradient rules, numpy references, samples) and the public functions.

Example:
    >>> import eagerflow as ef
    >>> x = ef.reshape(ef.range(16.0), [1, 4, 4, 1])
    >>> ef.nn.max_pool2d(x, 2, 2, "VALID")[0, :, :, 0].numpy().tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.nn.pool_kernels import (
    avg_pool_grad_kernel, avg_pool_kernel, geometry, max_pool_grad_grad_kernel,
    max_pool_grad_kernel, max_pool_grad_with_output_kernel, max_pool_kernel,
)
from eagerflow.ops.nn.window_geometry import (
    FORMATS, normalize_format, normalize_ints, normalize_padding, spatial_rank,
)
from eagerflow.ops.dispatch import execute
from eagerflow import dtypes as _d
from eagerflow.ops.family import FLOAT, REAL
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_VALUE_CHECK

__all__ = [
    "max_pool", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "pool",
]

EXPORTS = {"nn": list(__all__)}


# --------------------------------------------------------------------------------------------
# Shape rules, gradient rules, references, samples.
# --------------------------------------------------------------------------------------------

def _traced_geometry(name, shape, attrs):
    if shape is None:
        raise errors.InvalidArgumentError(
            None, name, "%s needs inputs of known rank to trace." % name)
    try:
        return geometry(shape, attrs)
    except errors.OpError as exc:
        if exc.op is None:
            exc.op = name
            exc.message = "%s: %s" % (name, exc.message)
            exc.args = (exc.message,)
        raise


def _pooled_shape_fn(name):
    def shape_fn(x, *rest, **attrs):
        return AbstractValue(_traced_geometry(name, x.shape, attrs).out_shape, x.dtype)
    return shape_fn


def _input_shape_fn(name):
    def shape_fn(x, grad, **attrs):
        _traced_geometry(name, x.shape, attrs)
        return AbstractValue(x.shape, grad.dtype)
    return shape_fn


def _avg_grad_shape_fn(grad, *, input_shape, **attrs):
    _traced_geometry("AvgPoolGrad", tuple(input_shape), attrs)
    return AbstractValue(input_shape, grad.dtype)


def _static_shape(t):
    return tuple(t.shape.as_list()) if hasattr(t.shape, "as_list") else tuple(t.shape)


def _max_pool_vjp(g, x, out, **attrs):
    return execute(MAX_POOL_GRAD, (x, g), attrs)


def _max_pool_grad_vjp(g, x, grad, out, relu=False, **attrs):
    if relu:
        from eagerflow.ops.nn.activation_ops import RELU_GRAD

        g = execute(RELU_GRAD, (g, x))
    return None, execute(MAX_POOL_GRAD_GRAD, (x, g), attrs)


def _max_pool_grad_grad_vjp(g, x, h, out, **attrs):
    return None, execute(MAX_POOL_GRAD, (x, g), attrs)


def _avg_pool_vjp(g, x, out, **attrs):
    return execute(AVG_POOL_GRAD, (g,), dict(attrs, input_shape=_static_shape(x)))


def _avg_pool_grad_vjp(g, grad, out, *, input_shape, **attrs):
    return execute(AVG_POOL, (g,), attrs)


def _ref_windows(shape, attrs):
    """(geometry, iterator of (output index, input index arrays, valid mask)) in numpy."""
    g = geometry(shape, attrs)
    strides, dilations = attrs["strides"], attrs["dilations"]
    lead = (slice(None),) * g.lead

    def positions():
        for pos in np.ndindex(*g.out_sp):
            axes = [p * s - lo + np.arange(k) * d
                    for p, s, k, d, (lo, _) in zip(pos, strides, g.k, dilations, g.pads)]
            axes = [a[(a >= 0) & (a < n)] for a, n in zip(axes, g.in_sp)]
            yield lead + pos, lead + np.ix_(*axes)
    return g, positions()


def _ref_pool(kind):
    def ref(x, **attrs):
        x = np.asarray(x)
        g, positions = _ref_windows(x.shape, attrs)
        out = np.zeros(g.out_shape, np.float64 if kind == "avg" else x.dtype)
        axes = tuple(range(g.lead, g.lead + len(g.k)))
        for opos, index in positions:
            window = x[index]
            if window.size == 0 and kind == "avg":
                continue
            # The average in float64: a bfloat16 mean would round at every step.
            out[opos] = (window.max(axis=axes) if kind == "max"
                         else window.astype(np.float64).mean(axis=axes))
        return out.astype(x.dtype)
    return ref


def _ref_max_routes(x, attrs):
    """Yields (output index, input index of the first max) per window and channel slot."""
    g, positions = _ref_windows(x.shape, attrs)
    nd = len(g.k)
    for opos, index in positions:
        window = x[index]
        # Move the spatial window axes last and flatten them (row-major = TF's order).
        win = np.moveaxis(window, tuple(range(g.lead, g.lead + nd)),
                          tuple(range(window.ndim - nd, window.ndim)))
        flat = win.reshape(win.shape[:window.ndim - nd] + (int(np.prod(win.shape[-nd:])),))
        first = np.argmax(flat, axis=-1)
        grids = [ix.reshape(-1) for ix in index[g.lead:]]
        for other in np.ndindex(*flat.shape[:-1]):
            spatial = np.unravel_index(first[other], win.shape[window.ndim - nd:])
            src = tuple(grid[i] for grid, i in zip(grids, spatial))
            lead_idx = other[:g.lead]
            trail = other[g.lead:]
            yield (lead_idx + opos[g.lead:] + trail, lead_idx + src + trail)


def _ref_max_pool_grad(x, grad, relu=False, **attrs):
    x, grad = np.asarray(x), np.asarray(grad)
    dx = np.zeros(x.shape, np.float64)
    for opos, src in _ref_max_routes(x, attrs):
        dx[src] += grad[opos]
    if relu:
        dx *= x > 0
    return dx.astype(grad.dtype)


def _ref_max_pool_grad_grad(x, h, **attrs):
    x, h = np.asarray(x), np.asarray(h)
    g = geometry(x.shape, attrs)
    out = np.zeros(g.out_shape, h.dtype)
    for opos, src in _ref_max_routes(x, attrs):
        out[opos] = h[src]
    return out


def _ref_avg_pool_grad(grad, *, input_shape, **attrs):
    grad = np.asarray(grad)
    g, positions = _ref_windows(tuple(input_shape), attrs)
    dx = np.zeros(tuple(input_shape), np.float64)
    axes = tuple(range(g.lead, g.lead + len(g.k)))
    for opos, index in positions:
        count = np.prod([len(ix.reshape(-1)) for ix in index[g.lead:]])
        if count:
            dx[index] += np.expand_dims(grad[opos], axes) / count
    return dx.astype(grad.dtype)


def _attrs(nd, ksize, strides=None, padding="VALID", data_format=None, dilations=1):
    as_tuple = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd)
    return {"ksize": as_tuple(ksize), "strides": as_tuple(ksize if strides is None else strides),
            "dilations": as_tuple(dilations), "padding": padding,
            "data_format": data_format or FORMATS[nd][0]}


_CASES = [
    ((2, 5, 5, 3), _attrs(2, 2)),
    ((2, 5, 5, 3), _attrs(2, 3, 2, "SAME")),
    ((1, 6, 7, 2), _attrs(2, (2, 3), (1, 2), "SAME")),
    ((1, 2, 5, 5), _attrs(2, 3, 1, "SAME", "NCHW")),
    ((2, 7, 3), _attrs(1, 3, 2, "SAME")),
    ((1, 2, 8), _attrs(1, 2, 3, "VALID", "NCW")),
    ((1, 4, 4, 4, 2), _attrs(3, 2, 2, "SAME")),
    ((1, 2, 3, 5, 4), _attrs(3, 2, (2, 1, 2), "SAME", "NCDHW")),
    ((1, 5, 5, 2), _attrs(2, 3, 2, ((1, 0), (2, 1)))),
    ((1, 7, 7, 2), _attrs(2, 2, 1, "SAME", dilations=2)),
    ((0, 4, 4, 2), _attrs(2, 2, 2, "SAME")),
]


def _values(rng, shape, dtype):
    np_dt = dtype.np_dtype
    if np.issubdtype(np_dt, np.integer):
        return rng.integers(-50, 50, size=shape).astype(np_dt)
    # A permutation keeps values distinct, so maxima (and their gradients) are unambiguous.
    size = int(np.prod(shape))
    return (rng.permutation(size).reshape(shape) / max(size, 1) - 0.5).astype(np_dt)


def _pool_samples(rng, dtype):
    return [((_values(rng, shape, dtype),), attrs) for shape, attrs in _CASES]


def _grad_samples(kind):
    def samples(rng, dtype):
        out = []
        for shape, attrs in _CASES:
            g = geometry(shape, attrs)
            x = _values(rng, shape, dtype)
            if kind == "max_grad":
                out.append(((x, _values(rng, g.out_shape, dtype)), attrs))
            elif kind == "max_grad_grad":
                out.append(((x, _values(rng, shape, dtype)), attrs))
            else:
                out.append(((_values(rng, g.out_shape, dtype),), dict(attrs, input_shape=shape)))
        return out
    return samples


def _bad_samples(kind):
    def bad(rng):
        err = errors.InvalidArgumentError
        a = _attrs(2, 2)
        cases = [
            ((5, 5, 3), a),                                        # rank
            ((1, 5, 5, 3), dict(a, padding="same-ish")),           # padding string
            ((1, 5, 5, 3), dict(a, strides=(0, 2))),               # stride
            ((1, 5, 5, 3), dict(a, ksize=(0, 2))),                 # window
            ((1, 1, 5, 3), dict(a, ksize=(3, 3))),                 # window > input (VALID)
            ((1, 5, 5, 3), dict(a, data_format="NCDHW")),          # data format
            ((1, 5, 5, 3), dict(a, padding=((2, 0), (0, 0)))),     # padding >= window
        ]
        out = []
        for shape, attrs in cases:
            x = np.zeros(shape)
            if kind == "pool":
                out.append(((x,), attrs, err))
            elif kind == "max_grad":
                out.append(((x, np.zeros((1, 2, 2, 3))), attrs, err))
            elif kind == "max_grad_grad":
                out.append(((x, x), attrs, err))
            else:
                out.append(((np.zeros((1, 2, 2, 3)),), dict(attrs, input_shape=shape), err))
        # A gradient of the wrong shape.
        x = np.zeros((1, 4, 4, 3))
        if kind == "max_grad":
            out.append(((x, np.zeros((1, 3, 3, 3))), a, err))
        elif kind == "max_grad_grad":
            out.append(((x, np.zeros((1, 3, 3, 3))), a, err))
        elif kind == "avg_grad":
            out.append(((np.zeros((1, 3, 3, 3)),), dict(a, input_shape=(1, 4, 4, 3)), err))
        return out
    return bad


# The half types compute in float32 on their own paths; the sweeps cover them too.
_SWEEP = (_d.float16, _d.bfloat16, _d.float32, _d.float64)

MAX_POOL = registry.primitive(
    "MaxPool", max_pool_kernel, dtypes=REAL, family="nn", shape_fn=_pooled_shape_fn("MaxPool"),
    vjp=_max_pool_vjp, saves=(0,), reference=_ref_pool("max"), samples=_pool_samples,
    bad_samples=_bad_samples("pool"), sweep_dtypes=_SWEEP + (_d.int32,))
MAX_POOL_GRAD = registry.primitive(
    "MaxPoolGrad", max_pool_grad_kernel, dtypes=FLOAT, family="nn",
    host_sync=HOST_VALUE_CHECK,
    shape_fn=_input_shape_fn("MaxPoolGrad"), vjp=_max_pool_grad_vjp, saves=(0,),
    reference=_ref_max_pool_grad, samples=_grad_samples("max_grad"),
    bad_samples=_bad_samples("max_grad"), sweep_dtypes=_SWEEP)
def _with_output_samples(rng, dtype):
    out = []
    for (x, grad), attrs in _grad_samples("max_grad")(rng, dtype):
        out.append(((x, _ref_pool("max")(x, **attrs), grad), attrs))
    return out


def _with_output_bad(rng):
    err = errors.InvalidArgumentError
    a = _attrs(2, 2)
    x = np.zeros((1, 4, 4, 3))
    return [((x, np.zeros((1, 3, 3, 3)), np.zeros((1, 2, 2, 3))), a, err),
            ((x, np.zeros((1, 2, 2, 3)), np.zeros((1, 3, 3, 3))), a, err),
            ((np.zeros((4, 4, 3)), np.zeros((2, 2, 3)), np.zeros((2, 2, 3))), a, err)]


# MaxPoolGrad given the forward pass's output: the optimizer's remapping pass writes it
# where MaxPool(x) is in the graph, so that the gradient's tiled form does not recompute
# the window maxima. ``pooled`` must be MaxPool(x); no public function makes it, and it
# has no gradient rule (it appears only in optimized graphs, after differentiation: the
# maxima are not free to move apart from x, so finite differences could not check one).
MAX_POOL_GRAD_WITH_OUTPUT = registry.primitive(
    "MaxPoolGradWithOutput", max_pool_grad_with_output_kernel, dtypes=FLOAT, family="nn",
    host_sync=HOST_VALUE_CHECK,
    shape_fn=lambda x, pooled, grad, **attrs: _input_shape_fn("MaxPoolGradWithOutput")(
        x, grad, **attrs),
    reference=lambda x, pooled, grad, **attrs: _ref_max_pool_grad(x, grad, **attrs),
    samples=_with_output_samples, bad_samples=_with_output_bad, sweep_dtypes=_SWEEP)
MAX_POOL_GRAD_GRAD = registry.primitive(
    "MaxPoolGradGrad", max_pool_grad_grad_kernel, dtypes=FLOAT, family="nn",
    host_sync=HOST_VALUE_CHECK,
    shape_fn=_pooled_shape_fn("MaxPoolGradGrad"), vjp=_max_pool_grad_grad_vjp, saves=(0,),
    reference=_ref_max_pool_grad_grad, samples=_grad_samples("max_grad_grad"),
    bad_samples=_bad_samples("max_grad_grad"), sweep_dtypes=_SWEEP)
AVG_POOL = registry.primitive(
    "AvgPool", avg_pool_kernel, dtypes=FLOAT, family="nn", shape_fn=_pooled_shape_fn("AvgPool"),
    vjp=_avg_pool_vjp, saves=(0,), reference=_ref_pool("avg"), samples=_pool_samples,
    bad_samples=_bad_samples("pool"), sweep_dtypes=_SWEEP)
AVG_POOL_GRAD = registry.primitive(
    "AvgPoolGrad", avg_pool_grad_kernel, dtypes=FLOAT, family="nn",
    shape_fn=_avg_grad_shape_fn, vjp=_avg_pool_grad_vjp, saves=(),
    reference=_ref_avg_pool_grad, samples=_grad_samples("avg_grad"),
    bad_samples=_bad_samples("avg_grad"), sweep_dtypes=_SWEEP)


# --------------------------------------------------------------------------------------------
# Public functions.
# --------------------------------------------------------------------------------------------

def _pool_attrs(nd, ksize, strides, padding, data_format, op, generic=False, dilations=None):
    data_format = normalize_format(data_format, nd, op, generic)
    return {"ksize": normalize_ints(ksize, nd, "ksize", data_format, op),
            "strides": normalize_ints(strides, nd, "strides", data_format, op),
            "dilations": normalize_ints(dilations, nd, "dilations", data_format, op),
            "padding": normalize_padding(padding, nd, data_format, op),
            "data_format": data_format}


_POOL_ARGS = """
    Args:
        input: A Tensor of rank N + 2: ``[batch, *spatial, channels]`` (or channels first).
        ksize: An int or list of 1, N or N + 2 ints: the window size.
        strides: An int or list of 1, N or N + 2 ints.
        padding: "VALID", "SAME", or explicit [before, after] pairs (each smaller than the
            window){extra}.
        data_format: {formats}
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Raises:
        InvalidArgumentError: For a bad rank, window, stride, padding or data format.
"""


def _document(fn, summary, formats, example, avg=False):
    extra = ("; padded elements never count in the average (TF accepts no explicit padding "
             "for average pooling)" if avg else "")
    fn.__doc__ = "%s\n%s\n    Example:\n        >>> import eagerflow as ef\n%s\n" % (
        summary, _POOL_ARGS.format(extra=extra, formats=formats),
        "\n".join("        " + line for line in example.strip().splitlines()))
    return fn


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    nd = spatial_rank(input, "max_pool")
    return execute(MAX_POOL, (input,), _pool_attrs(nd, ksize, strides, padding, data_format,
                                                   "max_pool", generic=True))


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return execute(MAX_POOL, (input,),
                   _pool_attrs(1, ksize, strides, padding, data_format, "max_pool1d"))


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return execute(MAX_POOL, (input,),
                   _pool_attrs(2, ksize, strides, padding, data_format, "max_pool2d"))


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    return execute(MAX_POOL, (input,),
                   _pool_attrs(3, ksize, strides, padding, data_format, "max_pool3d"))


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    nd = spatial_rank(input, "avg_pool")
    return execute(AVG_POOL, (input,), _pool_attrs(nd, ksize, strides, padding, data_format,
                                                   "avg_pool", generic=True))


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return execute(AVG_POOL, (input,),
                   _pool_attrs(1, ksize, strides, padding, data_format, "avg_pool1d"))


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return execute(AVG_POOL, (input,),
                   _pool_attrs(2, ksize, strides, padding, data_format, "avg_pool2d"))


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    return execute(AVG_POOL, (input,),
                   _pool_attrs(3, ksize, strides, padding, data_format, "avg_pool3d"))


_GENERIC = "None (channels last) or a string such as \"NHWC\" or \"NCHW\"."
_document(max_pool, "Max pooling over 1 to 3 spatial dimensions (N from the input's rank).",
          _GENERIC, '>>> ef.nn.max_pool(ef.constant([[[1.0], [3.0], [2.0]]]), 2, 1, "VALID")'
          '.numpy().ravel().tolist()\n[3.0, 3.0]')
_document(max_pool1d, "1-D max pooling.", '"NWC" (default) or "NCW".',
          '>>> ef.nn.max_pool1d(ef.constant([[[1.0], [3.0], [2.0]]]), 2, 2, "SAME")'
          '.numpy().ravel().tolist()\n[3.0, 2.0]')
_document(max_pool2d, "2-D max pooling.", '"NHWC" (default) or "NCHW".',
          '>>> ef.nn.max_pool2d(ef.ones([1, 4, 4, 3]), 2, 2, "VALID").shape\n'
          'TensorShape([1, 2, 2, 3])')
_document(max_pool3d, "3-D max pooling.", '"NDHWC" (default) or "NCDHW".',
          '>>> ef.nn.max_pool3d(ef.ones([1, 4, 4, 4, 1]), 2, 2, "SAME").shape\n'
          'TensorShape([1, 2, 2, 2, 1])')
_document(avg_pool, "Average pooling over 1 to 3 spatial dimensions; with \"SAME\" padding "
          "only valid elements are averaged.", _GENERIC,
          '>>> ef.nn.avg_pool(ef.constant([[[1.0], [3.0], [2.0]]]), 2, 2, "SAME")'
          '.numpy().ravel().tolist()\n[2.0, 2.0]', avg=True)
_document(avg_pool1d, "1-D average pooling (\"SAME\" averages valid elements only).",
          '"NWC" (default) or "NCW".',
          '>>> ef.nn.avg_pool1d(ef.constant([[[1.0], [3.0]]]), 2, 1, "VALID")'
          '.numpy().ravel().tolist()\n[2.0]', avg=True)
_document(avg_pool2d, "2-D average pooling (\"SAME\" averages valid elements only).",
          '"NHWC" (default) or "NCHW".',
          '>>> ef.nn.avg_pool2d(ef.ones([1, 3, 3, 1]), 2, 2, "SAME").numpy().ravel().tolist()'
          '\n[1.0, 1.0, 1.0, 1.0]', avg=True)
_document(avg_pool3d, "3-D average pooling (\"SAME\" averages valid elements only).",
          '"NDHWC" (default) or "NCDHW".',
          '>>> ef.nn.avg_pool3d(ef.ones([1, 2, 2, 2, 1]), 2, 2, "VALID").numpy().item()\n1.0',
          avg=True)


def pool(input, window_shape, pooling_type, strides=None, padding="VALID",  # noqa: A002
         data_format=None, dilations=None, name=None):
    """Max or average pooling over N spatial dimensions, optionally dilated.

    With dilations above 1 and "SAME" padding, padded elements are ignored (they never win
    the max and never count in the average). TF instead zero-pads through space_to_batch,
    so its dilated SAME pooling mixes zeros into edge windows; elsewhere the results agree.

    Args:
        input: A Tensor of rank N + 2 (``[batch, *spatial, channels]`` or channels first).
        window_shape: A list of N ints.
        pooling_type: "MAX" or "AVG".
        strides: An int or list of N ints (default 1). Must be 1 where dilations exceed 1.
        padding: "VALID" (default), "SAME" or explicit [before, after] pairs.
        data_format: None (channels last) or a string such as "NCHW".
        dilations: An int or list of N ints (default 1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Raises:
        InvalidArgumentError: For a bad pooling_type, or dilations with strides above 1.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.pool(ef.constant([[[1.0], [5.0], [2.0], [4.0]]]), [2], "MAX",
        ...            dilations=[2]).numpy().ravel().tolist()
        [2.0, 5.0]
    """
    op = "pool"
    kind = str(pooling_type).upper()
    if kind not in ("MAX", "AVG"):
        raise errors.InvalidArgumentError(
            None, op, "pool: pooling_type must be 'MAX' or 'AVG', got %r." % (pooling_type,))
    nd = spatial_rank(input, op)
    attrs = _pool_attrs(nd, window_shape, strides, padding, data_format, op, generic=True,
                        dilations=dilations)
    if any(d > 1 for d in attrs["dilations"]) and any(s > 1 for s in attrs["strides"]):
        raise errors.InvalidArgumentError(
            None, op, "pool: strides above 1 are not supported with dilations above 1 (got "
            "strides %s, dilations %s)." % (list(attrs["strides"]), list(attrs["dilations"])))
    return execute(MAX_POOL if kind == "MAX" else AVG_POOL, (input,), attrs)
