"""``format``: a template with ``{}`` placeholders filled with summarized tensors.
"""

from __future__ import annotations


import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor

__all__ = ["format"]


# Loaded on first use (eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "strings": ["format"],
}


# -- format ----------------------------------------------------------------------------------
def _summarize(array, summarize, depth=0):
    """TF's tensor summary: nested brackets, elements space-separated, rows on new lines
    (indented to their depth), dimensions longer than ``2 * summarize`` elided."""
    if array.ndim == 0:
        return _element(array[()])
    n = array.shape[0]
    if summarize >= 0 and n > 2 * summarize:
        rows = list(range(summarize)) + [None] + list(range(n - summarize, n))
    else:
        rows = list(range(n))
    parts = ["..." if i is None else _summarize(np.asarray(array[i], dtype=array.dtype),
                                                summarize, depth + 1) for i in rows]
    sep = " " if array.ndim == 1 else "\n" + " " * (depth + 1)
    return "[" + sep.join(parts) + "]"


def _element(v):
    if isinstance(v, bytes):
        return '"%s"' % v.decode("utf-8", "replace")
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (np.floating, float)):
        return "%g" % v
    return str(v)


def _format_kernel(xp):
    def kernel(*xs, template, placeholder, summarize):
        pieces = template.split(placeholder)
        if len(pieces) - 1 != len(xs):
            raise errors.InvalidArgumentError(
                None, None, "the template has %d placeholders but %d tensors were given"
                % (len(pieces) - 1, len(xs)))
        out = [pieces[0]]
        for x, piece in zip(xs, pieces[1:]):
            out.append(_summarize(np.asarray(x), summarize))
            out.append(piece)
        return np.array("".join(out).encode("utf-8"), dtype=object)
    return kernel


def _format_samples(rng, dtype):
    return [(([np.array([1, 2, 3], np.int32)],),
             {"template": "x={}", "placeholder": "{}", "summarize": 3}),
            (([np.arange(8, dtype=np.int32), np.array(b"s", object)],),
             {"template": "{} and {}!", "placeholder": "{}", "summarize": 2}),
            (([np.array([[1.5, 2.0]], np.float32)],),
             {"template": "[{}]", "placeholder": "{}", "summarize": 3}),
            (([np.arange(12, dtype=np.int32).reshape(3, 4)],),
             {"template": "m={}", "placeholder": "{}", "summarize": 3})]


def _format_reference(*xs, template, placeholder, summarize):
    # numpy's own printer, reshaped into TF's conventions (no commas, quoted strings).
    text = template
    for x in xs:
        x = np.asarray(x)
        if x.dtype.kind == "O":
            x = np.vectorize(lambda v: '"%s"' % v.decode(), otypes=[object])(x) if x.size \
                else x
        rendered = np.array2string(
            x, separator=" ", threshold=2 * summarize if summarize >= 0 else 10**9,
            edgeitems=max(summarize, 0), formatter={
                "float_kind": lambda v: "%g" % v, "int": str, "object": str,
                "bool": lambda v: str(int(v))})
        text = text.replace(placeholder, rendered, 1)
    return np.array(text.encode(), dtype=object)


STRING_FORMAT = registry.primitive(
    "StringFormat", _format_kernel, dtypes=None, dtype_group=(), variadic=True,
    family="strings", reference=_format_reference, samples=_format_samples,
    sweep_dtypes=(d.int32,), shape_fn=lambda *xs, **a: AbstractValue((), d.string))


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """Formats tensors into a template string (``tf.strings.format``).

    Each ``placeholder`` is replaced by one tensor printed as TF prints it: brackets per
    dimension, elements separated by spaces, rows on new lines, the middle of dimensions
    longer than ``2 * summarize`` elided as ``...``, strings in double quotes.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.format("x={}", [ef.constant([1, 2])]).numpy()
        b'x=[1 2]'
    """
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    return execute(STRING_FORMAT, tuple(convert_to_tensor(x) for x in inputs),
                   {"template": str(template), "placeholder": str(placeholder),
                    "summarize": int(summarize)})
