"""``py_function`` and ``numpy_function``: Python code as an op of a traced graph (TF's).

Eagerly the function is simply called. Inside a trace it becomes one ``PyFunction`` node:
the graph runs the Python function each time the node runs, with eager tensors
(``py_function``) or numpy arrays (``numpy_function``), and the results are converted to
``Tout``. The function is kept in a table of this process, named in the node by a number,
so such a graph cannot be saved: serialization refuses it with an error that says why.

``py_function`` is differentiable: its gradient runs the function again under a tape (in
another ``PyFunction`` node when traced). ``numpy_function`` has no gradient, as in TF.

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def f(x):
    ...     return ef.py_function(lambda t: t * 2.0, [x], Tout=ef.float32)
    >>> f(ef.constant(3.0)).numpy()
    np.float32(6.0)
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.ops.family import HOST_PYTHON

__all__ = ["py_function", "numpy_function", "PY_FUNCTION"]

_FUNCTIONS = {}  # token -> Python callable; kept for the life of the process (as TF)
_TOKENS = itertools.count(1)
_LOCK = threading.Lock()


def _register(func):
    with _LOCK:
        token = next(_TOKENS)
        _FUNCTIONS[token] = func
    return token


def _as_array(value, dtype, func_name, k):
    if isinstance(value, Tensor):
        value = value.numpy()
    array = np.asarray(value)
    want = d.as_dtype(dtype).np_dtype
    if array.dtype != want:
        try:
            array = array.astype(want, casting="same_kind")
        except TypeError:
            raise errors.InvalidArgumentError(
                None, "PyFunction", "%s returned a %s value for output %d, which cannot "
                "become the declared Tout %s." % (func_name, array.dtype, k,
                                                  d.as_dtype(dtype).name)) from None
    return array


def _numpy_arg(value):
    """A numpy_function argument as TF passes it: an array, but a scalar string as bytes
    (so the common ``path.decode()`` works)."""
    array = np.asarray(value)
    return array[()] if array.dtype.kind in "OS" and array.ndim == 0 else array


def _kernel(xp):
    def kernel(*arrays, token, Tout, numpy_args):
        from eagerflow.tape import stop_recording_all

        func = _FUNCTIONS[token]
        name = getattr(func, "__name__", "the function")
        if numpy_args:
            args = [_numpy_arg(a) for a in arrays]
        else:
            args = [convert_to_tensor(np.asarray(a)) for a in arrays]
        with stop_recording_all():
            result = func(*args)
        flat = [] if result is None else (list(result) if isinstance(result, (list, tuple))
                                          else [result])
        if len(flat) != len(Tout):
            raise errors.InvalidArgumentError(
                None, "PyFunction", "%s returned %d values, but Tout declares %d." % (
                    name, len(flat), len(Tout)))
        out = tuple(xp.asarray(_as_array(v, t, name, k)) for k, (v, t) in
                    enumerate(zip(flat, Tout)))
        return out
    return kernel


def _shape(*avals, token, Tout, numpy_args):
    return tuple(AbstractValue(None, d.as_dtype(t)) for t in Tout)


def _sample_square(t):
    return t * t


_SAMPLE_TOKEN = None


def _samples(rng, dtype):
    global _SAMPLE_TOKEN
    if _SAMPLE_TOKEN is None:
        _SAMPLE_TOKEN = _register(_sample_square)
    x = rng.standard_normal((3,)).astype(dtype.np_dtype)
    return [((x,), {"token": _SAMPLE_TOKEN, "Tout": (dtype.name,), "numpy_args": False})]


PY_FUNCTION = registry.primitive(
    "PyFunction", _kernel, family="control", shape_fn=_shape, stateful=True, variadic=True,
    host_sync=HOST_PYTHON,
    dtype_group=(), num_outputs=lambda attrs: len(attrs["Tout"]), samples=_samples,
    sweep_dtypes=(d.float64,))


def runs_python(node):
    """True for a node that runs Python code of this process (serialization refuses it)."""
    return node.prim is PY_FUNCTION


@registry.defvjp(PY_FUNCTION, saves=("all",))
def _py_function_vjp(g, *args, **attrs):
    inputs = args[:-1]  # the last positional is the primitive's output
    if attrs["numpy_args"]:
        return tuple(None for _ in inputs)
    func = _FUNCTIONS[attrs["token"]]
    grads = g if isinstance(g, (tuple, list)) else (g,)
    n = len(inputs)

    def gradient_of(*values):
        from eagerflow.tape import GradientTape

        xs = [convert_to_tensor(v) for v in values[:n]]
        with GradientTape() as tape:
            tape.watch(xs)
            ys = func(*xs)
        ys = [ys] if not isinstance(ys, (list, tuple)) else list(ys)
        out = tape.gradient(ys, xs, output_gradients=list(values[n:]))
        return [o if o is not None else np.zeros(np.shape(x), x.dtype.np_dtype)
                for o, x in zip(out, xs)]

    differentiable = [x for x in inputs if x.dtype.is_floating or x.dtype.is_complex]
    if not differentiable:
        return tuple(None for _ in inputs)
    result = py_function(gradient_of, list(inputs) + list(grads),
                         Tout=[x.dtype for x in inputs])
    result = result if isinstance(result, (list, tuple)) else [result]
    return tuple(r if (x.dtype.is_floating or x.dtype.is_complex) else None
                 for r, x in zip(result, inputs))


def _tout(Tout):
    single = not isinstance(Tout, (list, tuple))
    dtypes = [d.as_dtype(t) for t in ([Tout] if single else Tout)]
    return single, dtypes


def _call(func, inp, Tout, numpy_args, api):
    if not callable(func):
        raise TypeError("%s(): func must be callable, got %r." % (api, func))
    inp = list(inp) if isinstance(inp, (list, tuple)) else [inp]
    single, dtypes = _tout(Tout)
    if context.state.trace is None:
        args = [_numpy_arg(convert_to_tensor(x).numpy()) if numpy_args else x for x in inp]
        result = func(*args)
        flat = [] if result is None else (list(result) if isinstance(result, (list, tuple))
                                          else [result])
        if len(flat) != len(dtypes):
            raise errors.InvalidArgumentError(
                None, "PyFunction", "%s(): %s returned %d values, but Tout declares %d." % (
                    api, getattr(func, "__name__", "func"), len(flat), len(dtypes)))
        out = [v if isinstance(v, Tensor) and v.dtype is t else
               convert_to_tensor(_as_array(v, t, api, k))
               for k, (v, t) in enumerate(zip(flat, dtypes))]
    else:
        tensors = [convert_to_tensor(x) for x in inp]
        out = list(execute(PY_FUNCTION, tuple(tensors), {
            "token": _register(func), "Tout": tuple(t.name for t in dtypes),
            "numpy_args": numpy_args}))
    if single:
        return out[0] if out else None
    return out


def py_function(func, inp, Tout, name=None):
    """Runs Python ``func`` on eager tensors as an op (``tf.py_function``).

    Args:
        func: A Python callable taking ``len(inp)`` eager tensors; it may use eagerflow ops.
        inp: A list of tensors (or one tensor).
        Tout: A dtype, or a list of dtypes (one per output; an empty list for none).
        name: Accepted for compatibility.

    Returns:
        One tensor if ``Tout`` is a dtype, else a list. Traced outputs have unknown shapes;
        use ``ensure_shape`` or ``set_shape`` to state them.

    Raises:
        InvalidArgumentError: If ``func`` returns a different number of values than ``Tout``
            declares, or values that cannot take those dtypes.

    Example:
        >>> import eagerflow as ef
        >>> ef.py_function(lambda a, b: a + b, [1.0, 2.0], Tout=ef.float32).numpy()
        np.float32(3.0)
    """
    return _call(func, inp, Tout, False, "py_function")


def numpy_function(func, inp, Tout, stateful=True, name=None):
    """Runs Python ``func`` on numpy arrays as an op (``tf.numpy_function``); no gradient.

    Example:
        >>> import numpy as np
        >>> import eagerflow as ef
        >>> ef.numpy_function(lambda a: np.sort(a), [ef.constant([3, 1, 2])],
        ...                   Tout=ef.int32).numpy().tolist()
        [1, 2, 3]
    """
    return _call(func, inp, Tout, True, "numpy_function")

