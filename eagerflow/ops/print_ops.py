"""``eagerflow.print``: prints tensors when the computation runs (not when it is traced).

Eagerly it prints at once; inside a traced function it adds a Print node that prints each
time the graph runs, in program order with other side effects.

Example:
    >>> import sys, eagerflow as ef
    >>> ef.print("x:", ef.constant([1, 2, 3]), output_stream=sys.stdout)
    x: [1 2 3]
"""

from __future__ import annotations

import pprint
import sys

import numpy as np

from eagerflow import errors
from eagerflow.framework import context

__all__ = ["print_"]


def _format_element(value, kind):
    """One element as TF's StrAppend writes it: shortest round-tripping %g, bools as 1/0."""
    if kind == "b":
        return "1" if value else "0"
    if kind == "f":
        if value.dtype.itemsize <= 4:  # float32, and float16/bfloat16 printed as float32
            v = np.float32(value)
            text = "%.6g" % v
            return text if np.float32(text) == v or v != v else "%.9g" % v
        text = "%.15g" % value
        return text if float(text) == value or value != value else "%.17g" % value
    if kind == "c":  # TF prints "?" for complex; the value is more useful
        return str(complex(value))
    return str(value.item() if hasattr(value, "item") else value)


def _format_tensor(array, summarize):
    """A tensor's values laid out as ``tf.print`` does (TF's SummarizeValue, print_v2).

    Each dimension shows its first and last ``summarize`` entries (all of them for -1)
    around ``...``; rows are separated by newlines and indented by their depth.
    """
    array = np.asarray(array)
    kind = array.dtype.kind
    if kind == "f" and array.dtype.itemsize < 4:
        array = array.astype(np.float32)
    elif kind == "V" or array.dtype.name == "bfloat16":
        array = array.astype(np.float32)
        kind = "f"
    if array.ndim == 0:
        return _format_element(array[()], kind)
    ends = array.size if summarize is None or summarize < 0 else min(summarize, array.size)
    rank = array.ndim
    out = []

    def spacing(dim):
        if dim == rank - 1:
            out.append(" ")
        else:
            out.append("\n" * (rank - dim - 1) + " " * (dim + 1))

    def walk(sub, dim):
        if dim == rank:
            out.append(_format_element(sub, kind))
            return
        out.append("[")
        count = sub.shape[0]
        for i in range(min(ends, count)):
            if i:
                spacing(dim)
            walk(sub[i], dim + 1)
        if count > 2 * ends:
            spacing(dim)
            out.append("...")
        for i in range(max(ends, count - ends), count):
            spacing(dim)
            walk(sub[i], dim + 1)
        out.append("]")

    walk(array, 0)
    return "".join(out)


def format_for_print(template, values, summarize):
    """The printed pieces: template strings with tensor values formatted in their slots.

    A template item is a string, None (one tensor's slot), or a tuple of strings and Nones
    whose pieces are joined without a separator (a nested structure holding tensors).
    """
    parts = []
    it = iter(values)

    def fmt(value):
        host = value if isinstance(value, (np.ndarray, np.generic)) else np.asarray(
            value.get() if hasattr(value, "get") else value)
        return _format_tensor(host, summarize)

    for item in template:
        if item is None:
            parts.append(fmt(next(it)))
        elif isinstance(item, (tuple, list)):
            parts.append("".join(fmt(next(it)) if p is None else p for p in item))
        else:
            parts.append(item)
    return parts


def _stream_name(stream):
    if stream is sys.stdout or stream == "stdout":
        return "stdout"
    if stream is sys.stderr or stream == "stderr" or stream is None:
        return "stderr"
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    return None


def write_text(text, stream):
    """Writes ``text`` to a stream name ("stdout", "stderr", "file://path") or object."""
    if isinstance(stream, str) and stream.startswith("file://"):
        with open(stream[len("file://"):], "a") as f:  # appends, as TF
            f.write(text)
        return
    if stream is None or stream == "stderr":
        stream = sys.stderr
    elif stream == "stdout":
        stream = sys.stdout
    if not hasattr(stream, "write") and callable(stream):  # a logging function
        stream(text[:-1] if text.endswith("\n") else text)
        return
    stream.write(text)
    if hasattr(stream, "flush"):
        stream.flush()


_PLACEHOLDER = "__eagerflow_print_tensor__"


def _is_tensor_like(value):
    from eagerflow.tensor import Tensor

    return isinstance(value, Tensor) or getattr(value, "_is_variable", False)


def _read(value):
    return value.read_value() if getattr(value, "_is_variable", False) else value


# The default stream is None (sys.stderr looked up when printing), not sys.stderr bound at
# import: a replaced sys.stderr (test capture, redirect_stderr) must receive the output.
def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """Prints tensors and Python values (``tf.print``).

    Lists, tuples and dicts that hold tensors print as TF prints them (``pprint`` layout,
    each tensor shown by its values).

    Args:
        *inputs: Tensors, variables, Python values and nested structures of them, printed
            separated by ``sep``.
        output_stream: ``sys.stderr`` (default), ``sys.stdout``, a ``"file://path"`` string
            (appended to), or a file-like object or logging function (these two only
            eagerly).
        summarize: How many leading and trailing elements of each dimension to print
            (default 3; None means 3 as in TF; -1 prints everything).
        sep: Separator between inputs.
        end: Printed after the last input.
        name: Unused.

    Raises:
        InvalidArgumentError: For a custom stream inside a traced function.
    """
    from eagerflow import nest

    template = []
    tensors = []
    for value in inputs:
        if _is_tensor_like(value):
            template.append(None)
            tensors.append(_read(value))
        elif isinstance(value, (list, tuple, dict)) and any(
                _is_tensor_like(leaf) for leaf in nest.flatten(value)):
            marks = []
            for leaf in nest.flatten(value):
                if _is_tensor_like(leaf):
                    marks.append(_PLACEHOLDER)
                    tensors.append(_read(leaf))
                else:
                    marks.append(leaf)
            text = pprint.pformat(nest.pack_sequence_as(value, marks))
            item = []
            for k, piece in enumerate(text.split(repr(_PLACEHOLDER))):
                if k:
                    item.append(None)
                if piece:
                    item.append(piece)
            template.append(tuple(item))
        else:
            template.append(str(value))
    print_template(tuple(template), tensors, output_stream, summarize, sep, end)


def print_template(template, tensors, output_stream, summarize, sep, end):
    """Prints now (eagerly) or adds a Print node (while tracing) for a built template."""
    if summarize is None:
        summarize = 3
    trace = context.state.trace
    if trace is None:
        parts = format_for_print(template, [t._value for t in tensors], summarize)
        write_text(sep.join(parts) + end, output_stream)
        return None
    stream_name = _stream_name(output_stream)
    if stream_name is None:
        raise errors.InvalidArgumentError(
            None, "Print", "Inside a @function eagerflow.print writes to sys.stdout, "
            "sys.stderr or a 'file://path'; got %r." % (output_stream,))
    trace.print_node([trace.to_symbolic(t) for t in tensors],
                     {"template": tuple(template), "summarize": summarize,
                      "sep": sep, "end": end, "output_stream": stream_name})
    return None
