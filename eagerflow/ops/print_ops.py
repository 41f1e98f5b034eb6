"""``eagerflow.print``: prints tensors when the computation runs (not when it is traced).

Eagerly it prints at once; inside a traced function it adds a Print node that prints each
time the graph runs, in program order with other side effects.

Example:
    >>> import sys, eagerflow as ef
    >>> ef.print("x:", ef.constant([1, 2, 3]), output_stream=sys.stdout)
    x: [1 2 3]
"""

from __future__ import annotations

import sys

import numpy as np

from eagerflow import errors
from eagerflow.framework import context

__all__ = ["print_"]


def _format_tensor(array, summarize):
    array = np.asarray(array)
    if array.ndim == 0:
        return str(array.item() if array.dtype.kind != "f" else array)
    threshold = array.size + 1 if summarize is None or summarize < 0 else 2 * summarize + 1
    return np.array2string(array, threshold=threshold, edgeitems=max(summarize or 3, 1),
                           separator=" ").replace("\n", "\n ")


def format_for_print(template, values, summarize):
    """The printed pieces: template strings with tensor values formatted in their slots."""
    parts = []
    it = iter(values)
    for item in template:
        if item is None:
            value = next(it)
            host = value if isinstance(value, (np.ndarray, np.generic)) else np.asarray(
                value.get() if hasattr(value, "get") else value)
            parts.append(_format_tensor(host, summarize))
        else:
            parts.append(item)
    return parts


def _stream_name(stream):
    if stream is sys.stdout or stream == "stdout":
        return "stdout"
    if stream is sys.stderr or stream == "stderr" or stream is None:
        return "stderr"
    return None


# The default stream is None (sys.stderr looked up when printing), not sys.stderr bound at
# import: a replaced sys.stderr (test capture, redirect_stderr) must receive the output.
def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """Prints tensors and Python values (``tf.print``).

    Args:
        *inputs: Tensors, variables and Python values, printed separated by ``sep``.
        output_stream: ``sys.stderr`` (default), ``sys.stdout``, or a file-like object
            (file-like objects only eagerly).
        summarize: How many leading and trailing elements of each dimension to print
            (-1 or None: all).
        sep: Separator between inputs.
        end: Printed after the last input.
        name: Unused.

    Raises:
        InvalidArgumentError: For a custom stream inside a traced function.
    """
    from eagerflow.tensor import Tensor

    template = []
    tensors = []
    for value in inputs:
        if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
            template.append(None)
            tensors.append(value.read_value() if getattr(value, "_is_variable", False)
                           else value)
        else:
            template.append(str(value))
    trace = context.state.trace
    if trace is None:
        parts = format_for_print(template, [t._value for t in tensors], summarize)
        stream = output_stream if output_stream not in (None, "stderr", "stdout") else (
            sys.stdout if output_stream == "stdout" else sys.stderr)
        stream.write(sep.join(parts) + end)
        if hasattr(stream, "flush"):
            stream.flush()
        return None
    stream_name = _stream_name(output_stream)
    if stream_name is None:
        raise errors.InvalidArgumentError(
            None, "Print", "Inside a @function eagerflow.print writes to sys.stdout or "
            "sys.stderr; got %r." % (output_stream,))
    symbolic = [trace.to_symbolic(t) for t in tensors]
    trace.graph.add_node(
        "Print", [(t._node, t._index) for t in symbolic],
        {"template": tuple(template), "summarize": summarize if summarize is not None else -1,
         "sep": sep, "end": end, "output_stream": stream_name}, (), stateful=True)
    return None
