"""``Assert`` and the ``eagerflow.debugging.assert_*`` family, as TF.

Eagerly a failed check raises at once. Inside a traced function a check whose answer is
already known (static shapes, constants) is decided while tracing, as TF does; otherwise
it becomes an ``Assert`` node (kind ``"data"``) that runs with the graph and raises
InvalidArgumentError with the message and the data's values when its condition is false.
Shape and rank checks that fail on static shapes raise ValueError, dtype checks TypeError.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function.symbolic import user_frame
from eagerflow.function.tracer import _device_string
from eagerflow.ops.static_value import constant_value
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["Assert", "assert_equal", "assert_none_equal", "assert_less",
           "assert_less_equal", "assert_greater", "assert_greater_equal", "assert_positive",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_near",
           "assert_rank", "assert_rank_at_least", "assert_rank_in", "assert_shapes",
           "assert_type", "assert_all_finite", "assert_proper_iterable", "assert_scalar",
           "assert_integer", "format_data"]

_state = context.state


def format_data(parts, summarize=3):
    """The text of an assertion's data: strings as they are, arrays summarized."""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        array = np.asarray(p)
        if array.dtype.kind in "SO":
            array = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v)(array)
        flat = array.reshape(-1)
        n = flat.size if summarize is None or summarize < 0 else summarize
        text = " ".join(str(v) for v in flat[:n])
        if flat.size > n:
            text += " ..."
        out.append("[%s]" % text if array.ndim else text)
    return " ".join(out)


def _is_data_tensor(value):
    return isinstance(value, (Tensor, np.ndarray)) or getattr(value, "_is_variable", False)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """Raises InvalidArgumentError with ``data`` if ``condition`` is false (``tf.Assert``).

    Args:
        condition: A boolean tensor; the assertion holds when all of it is true.
        data: A list of strings and tensors printed when it fails.
        summarize: How many entries of each tensor to print (default 3).
        name: Accepted for compatibility.

    Returns:
        None (inside a traced function the check is a node run with the graph).

    Raises:
        InvalidArgumentError: Eagerly, or when the graph runs, if ``condition`` is false.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.constant([1, 2])
        >>> ef.debugging.Assert(ef.reduce_all(x > 0), ["x must be positive:", x])
    """
    if summarize is None:
        summarize = 3
    elif isinstance(summarize, bool) or not isinstance(summarize, (int, np.integer)):
        raise TypeError("Assert(): summarize must be an int (entries of each tensor to "
                        "print), got %r." % (summarize,))
    summarize = int(summarize)
    data = list(data) if isinstance(data, (list, tuple)) else [data]
    if _state.trace is None:
        if not bool(np.all(np.asarray(convert_to_tensor(condition).numpy()))):
            raise errors.InvalidArgumentError(None, builtins.ASSERT, "assertion failed: %s" % (
                format_data([d if isinstance(d, str) else np.asarray(
                    convert_to_tensor(d).numpy()) for d in data], summarize),))
        return None
    known = constant_value(condition) if isinstance(condition, Tensor) else np.asarray(
        condition)
    tensors = [d for d in data if not isinstance(d, str)]
    if known is not None and bool(np.all(known)):
        return None
    tracer = _state.trace
    inputs = [tracer.to_symbolic(condition)] + [tracer.to_symbolic(t) for t in tensors]
    order = "".join("s" if isinstance(d, str) else "t" for d in data)
    node = tracer.graph.add_node(
        builtins.ASSERT, [(t._node, t._index) for t in inputs],
        {"kind": "data", "message": "assertion failed", "order": order,
         "strings": tuple(d for d in data if isinstance(d, str)), "summarize": summarize},
        (), device=_device_string(), stateful=True)
    node.origin = user_frame()
    return None


def _name_of(x):
    return getattr(x, "name", None) or "x"


def _compare(op, symbol, x, y, message, summarize, api):
    from eagerflow.ops.reduce.reductions import reduce_all

    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype) if not isinstance(y, Tensor) else y
    kx, ky = constant_value(x), constant_value(y)
    data = ([message] if message else []) + [
        "Condition x %s y did not hold element-wise:" % symbol, "x (%s) = " % _name_of(x), x,
        "y (%s) = " % _name_of(y), y]
    if kx is not None and ky is not None:
        try:
            ok = bool(np.all(_NUMPY[symbol](kx, ky)))
        except ValueError:
            raise errors.InvalidArgumentError(
                None, api, "%s: x and y shapes %s and %s are incompatible." % (
                    api, list(np.shape(kx)), list(np.shape(ky)))) from None
        if not ok:
            raise errors.InvalidArgumentError(None, api, "%s%s" % (
                (message + "\n") if message else "", format_data(
                    data[len([message] if message else []):][:1] + [
                        "x =", kx, "y =", ky], summarize)))
        return None
    return Assert(reduce_all(op(x, y)), data, summarize)


_NUMPY = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
          ">": np.greater, ">=": np.greater_equal}


def _op(symbol):
    from eagerflow.ops.math import arithmetic

    return {"==": arithmetic.equal, "!=": arithmetic.not_equal, "<": arithmetic.less,
            "<=": arithmetic.less_equal, ">": arithmetic.greater,
            ">=": arithmetic.greater_equal}[symbol]


def _binary(symbol, api):
    def check(x, y, message=None, summarize=None, name=None):
        return _compare(_op(symbol), symbol, x, y, message, summarize, api)
    check.__name__ = api
    check.__doc__ = ("Asserts ``x %s y`` element-wise (``tf.debugging.%s``).\n\n"
                     "Raises:\n    InvalidArgumentError: When it does not hold (eagerly, "
                     "while tracing if both are known, else when the graph runs).\n" % (
                         symbol, api))
    return check


assert_equal = _binary("==", "assert_equal")
assert_none_equal = _binary("!=", "assert_none_equal")
assert_less = _binary("<", "assert_less")
assert_less_equal = _binary("<=", "assert_less_equal")
assert_greater = _binary(">", "assert_greater")
assert_greater_equal = _binary(">=", "assert_greater_equal")


def _against_zero(symbol, api):
    def check(x, message=None, summarize=None, name=None):
        x = convert_to_tensor(x)
        return _compare(_op(symbol), symbol, x, convert_to_tensor(0, dtype=x.dtype), message,
                        summarize, api)
    check.__name__ = api
    check.__doc__ = "Asserts ``x %s 0`` element-wise (``tf.debugging.%s``).\n" % (symbol, api)
    return check


assert_positive = _against_zero(">", "assert_positive")
assert_negative = _against_zero("<", "assert_negative")
assert_non_negative = _against_zero(">=", "assert_non_negative")
assert_non_positive = _against_zero("<=", "assert_non_positive")


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """Asserts ``|x - y| <= atol + rtol * |y|`` element-wise (``tf.debugging.assert_near``).

    Default tolerances are ``10 * eps`` of the dtype, as TF.
    """
    from eagerflow.ops.math.arithmetic import subtract
    from eagerflow.ops.math.complex_math import abs as tf_abs

    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype) if not isinstance(y, Tensor) else y
    eps = float(np.finfo(x.dtype.np_dtype).eps) if x.dtype.is_floating else 0.0
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    bound = atol + rtol * tf_abs(y)
    return _compare(_op("<="), "<=", tf_abs(subtract(x, y)), bound, message or
                    "x and y not equal to tolerance rtol = %g, atol = %g" % (rtol, atol),
                    summarize, "assert_near")


def _static_rank(x):
    shape = convert_to_tensor(x).shape if not getattr(x, "_is_variable", False) else x.shape
    return shape.rank


def assert_rank(x, rank, message=None, name=None):
    """Asserts that ``x`` has rank ``rank`` (``tf.debugging.assert_rank``).

    Raises:
        ValueError: If the static rank is known and differs.
        InvalidArgumentError: When the graph runs, if the rank was not known statically.
    """
    return _rank_check(x, lambda r: r == int(rank), "must have rank %d" % int(rank), message,
                       "assert_rank", lambda t: _op("==")(t, int(rank)))


def assert_rank_at_least(x, rank, message=None, name=None):
    """Asserts that ``x`` has rank ``rank`` or more (``tf.debugging``)."""
    return _rank_check(x, lambda r: r >= int(rank), "must have rank at least %d" % int(rank),
                       message, "assert_rank_at_least", lambda t: _op(">=")(t, int(rank)))


def assert_rank_in(x, ranks, message=None, name=None):
    """Asserts that the rank of ``x`` is one of ``ranks`` (``tf.debugging``)."""
    from eagerflow.ops.reduce.reductions import reduce_any

    ranks = [int(r) for r in ranks]
    return _rank_check(x, lambda r: r in ranks, "must have rank in %s" % ranks, message,
                       "assert_rank_in", lambda t: reduce_any(
                           _op("==")(t, convert_to_tensor(ranks))))


def _rank_check(x, ok, what, message, api, dynamic):
    from eagerflow.ops.array.shape_ops import rank as tf_rank

    x = convert_to_tensor(x)
    r = x.shape.rank
    if r is not None:
        if not ok(r):
            raise ValueError("%s%s: tensor %s %s. Received rank %d, shape %s." % (
                (message + ". ") if message else "", api, _name_of(x), what, r, x.shape))
        return None
    return Assert(dynamic(tf_rank(x)), [message or "", "Tensor %s %s." % (_name_of(x), what)])


def assert_type(tensor, tf_type, message=None, name=None):
    """Raises TypeError if ``tensor``'s dtype is not ``tf_type`` (``tf.debugging``)."""
    from eagerflow.dtypes import as_dtype

    want = as_dtype(tf_type)
    dtype = tensor.dtype if hasattr(tensor, "dtype") else convert_to_tensor(tensor).dtype
    if dtype is not want:
        raise TypeError("%s%s must be of type %s; got %s." % (
            (message + ": ") if message else "", _name_of(tensor), want.name, dtype.name))
    return None


def assert_scalar(tensor, name=None, message=None):
    """Asserts that ``tensor`` is a scalar (``tf.debugging.assert_scalar``); returns None,
    as TF 2's.

    Raises:
        ValueError: If its static rank is not 0 (checked at run time when unknown).
    """
    tensor = convert_to_tensor(tensor)
    if tensor.shape.rank is None:
        _rank_check(tensor, lambda r: r == 0, "must be a scalar", message, "assert_scalar",
                    lambda t: _op("==")(t, 0))
    elif tensor.shape.rank != 0:
        raise ValueError("%sExpected scalar shape for %s, saw shape: %s." % (
            (message + " ") if message else "", _name_of(tensor), tensor.shape))
    return None


def assert_integer(x, message=None, name=None):
    """Raises TypeError unless ``x`` has an integer dtype (``tf.debugging``)."""
    dtype = x.dtype if hasattr(x, "dtype") else convert_to_tensor(x).dtype
    if not dtype.is_integer:
        raise TypeError("%sExpected integer type for %s, got %s." % (
            (message + " ") if message else "", _name_of(x), dtype.name))
    return None


def assert_all_finite(t, msg, name=None, x=None, message=None):
    """``check_numerics``: returns ``t``, failing if it holds NaN or Inf (``tf.debugging``)."""
    from eagerflow.ops.debug_ops import check_numerics

    t = t if t is not None else x
    return check_numerics(t, msg if msg is not None else message)


def assert_proper_iterable(values):
    """Raises TypeError if ``values`` is a tensor, array or string (``tf.debugging``)."""
    if isinstance(values, (Tensor, np.ndarray, str, bytes)) or not hasattr(
            values, "__iter__"):
        raise TypeError("Expected argument 'values' to be a \"proper\" iterable. Found: %s"
                        % type(values).__name__)


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Asserts the shapes of several tensors agree with symbolic specs (``tf.debugging``).

    Args:
        shapes: ``[(tensor, spec), ...]`` or a dict; a spec is a list of dims, each an int,
            a symbol (a string: every use of one symbol must have one size), or None/``.``
            (any size); a leading ``...`` (or ``"*"``) allows any number of leading dims.
        data: Accepted for compatibility.
        summarize: Accepted for compatibility.
        message: Text put before the error.
        name: Accepted for compatibility.

    Raises:
        ValueError: If a static rank or size disagrees with its spec, or two uses of one
            symbol have different static sizes.
        InvalidArgumentError: When the graph runs, for sizes unknown while tracing.

    Example:
        >>> import eagerflow as ef
        >>> ef.debugging.assert_shapes([(ef.ones([2, 3]), ("N", "D")),
        ...                             (ef.ones([2]), ("N",))])
    """
    from eagerflow.ops.array.shape_ops import shape as tf_shape

    items = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes = {}
    pending = []
    prefix = (message + ". ") if message else ""
    for tensor, spec in items:
        tensor = convert_to_tensor(tensor) if not getattr(tensor, "_is_variable", False) \
            else tensor
        spec = list(spec) if not isinstance(spec, str) else list(spec)
        open_prefix = bool(spec) and spec[0] in (Ellipsis, "...", "*")
        if open_prefix:
            spec = spec[1:]
        shape = TensorShape(tensor.shape)
        if shape.rank is None:
            continue
        dims = shape.as_list()
        if (open_prefix and len(dims) < len(spec)) or (not open_prefix and
                                                        len(dims) != len(spec)):
            raise ValueError("%sassert_shapes: %s has shape %s, which does not match the spec "
                             "%s (rank %d expected%s)." % (
                                 prefix, _name_of(tensor), shape, tuple(spec), len(spec),
                                 " or more" if open_prefix else ""))
        offset = len(dims) - len(spec)
        for k, want in enumerate(spec):
            got = dims[offset + k]
            if want is None or want == "." or want == 1 and False:
                continue
            if isinstance(want, str):
                if want in sizes:
                    known, where = sizes[want]
                    if got is not None and known is not None and got != known:
                        raise ValueError(
                            "%sassert_shapes: dimension %d of %s is %d, but symbol %r is %d "
                            "(from %s)." % (prefix, offset + k, _name_of(tensor), got, want,
                                            known, where))
                    if got is None or known is None:
                        pending.append((tensor, offset + k, want))
                else:
                    sizes[want] = (got, _name_of(tensor))
                    if got is None:
                        pending.append((tensor, offset + k, want))
                continue
            if got is not None and got != int(want):
                raise ValueError("%sassert_shapes: dimension %d of %s is %d, but the spec "
                                 "says %d." % (prefix, offset + k, _name_of(tensor), got,
                                               int(want)))
            if got is None:
                Assert(_op("==")(tf_shape(tensor)[offset + k], int(want)), [
                    prefix + "assert_shapes: dimension %d of %s must be %d" % (
                        offset + k, _name_of(tensor), int(want))])
    first = {}
    for tensor, dim, symbol in pending:
        size = tf_shape(tensor)[dim]
        if symbol not in first:
            known = sizes[symbol][0]
            first[symbol] = convert_to_tensor(known) if known is not None else size
            continue
        Assert(_op("==")(size, first[symbol]), [
            prefix + "assert_shapes: dimension %d of %s must equal symbol %r" % (
                dim, _name_of(tensor), symbol)])
    return None
