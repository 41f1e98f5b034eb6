"""Summary ops: ``scalar``, ``histogram``, ``image``, ``text``, ``graph`` and graph tracing.

Each op writes one ``Event`` in the format ``tf.summary`` (TF 2) writes: a tensor value with
the plugin's metadata (``scalars``, ``histograms``, ``images``, ``text``), so TensorBoard's
dashboards read it. Writes happen eagerly, when the op is called.

Limitation: inside an ``@eagerflow.function`` the Python body runs once, at trace time, on
symbolic tensors that have no values yet; summary ops called there write nothing, return
False and warn once. Call them from eager code (after the traced step, with its returned
values), or run functions eagerly (``eagerflow.config.run_functions_eagerly(True)``).
"""

from __future__ import annotations

import contextlib
import time
import warnings

import numpy as np

from eagerflow.framework import context
from eagerflow.summary.writer import _pb, state

__all__ = ["scalar", "histogram", "image", "text", "graph", "write", "trace_on", "trace_off",
           "trace_export", "record_if", "should_record_summaries", "flush", "get_step",
           "set_step"]

_warned_symbolic = False


def get_step():
    """The default step of this thread (None when unset)."""
    return state.step


def set_step(step):
    """Sets the default step of this thread (an int, a Tensor or a Variable, read per write).

    Example:
        >>> import eagerflow as ef
        >>> ef.summary.experimental.set_step(3)
        >>> ef.summary.experimental.get_step()
        3
        >>> ef.summary.experimental.set_step(None)
    """
    state.step = step


@contextlib.contextmanager
def record_if(condition):
    """Records summaries in the block only when ``condition`` (a bool or a callable) holds.

    Example:
        >>> import eagerflow as ef
        >>> with ef.summary.record_if(False):
        ...     ef.summary.should_record_summaries()
        False
    """
    old = state.record_if
    state.record_if = condition
    try:
        yield
    finally:
        state.record_if = old


def should_record_summaries():
    """True when a default writer is set and the ``record_if`` condition holds."""
    if state.writer is None:
        return False
    condition = state.record_if
    if callable(condition):
        condition = condition()
    return bool(_value(condition)) if not isinstance(condition, bool) else condition


def flush(writer=None, name=None):
    """Flushes ``writer`` (default: the default writer); no-op when there is none."""
    del name
    writer = writer if writer is not None else state.writer
    if writer is not None:
        writer.flush()


def _is_symbolic(x):
    return context.state.trace is not None and hasattr(x, "_value") and \
        type(x).__name__ == "SymbolicTensor"


def _value(x):
    """A host numpy value of a tensor, variable, array or Python value."""
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


def _resolve_step(step, op):
    if step is None:
        step = state.step
    if step is None:
        raise ValueError(
            "%s: no step set. Pass step=..., use writer.as_default(step=...), or call "
            "eagerflow.summary.experimental.set_step(step)." % op)
    value = _value(step)
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise ValueError("%s: step must be a scalar integer, got %r." % (op, step))
    return int(value)


def _prepare(data, step, op):
    """(writer, step, numpy data) or None when nothing should be written."""
    global _warned_symbolic
    if not should_record_summaries():
        return None
    if _is_symbolic(data) or _is_symbolic(step):
        if not _warned_symbolic:
            _warned_symbolic = True
            warnings.warn("eagerflow.summary.%s was called inside a traced function: summaries "
                          "are written eagerly only, so nothing is written. Call it outside "
                          "the @function with the values the function returns." % op,
                          stacklevel=3)
        return None
    step = _resolve_step(step, "eagerflow.summary." + op)
    return state.writer, step, (None if data is None else _value(data))


def _tensor(pb, msg, array):
    array = np.asarray(array)
    for d in array.shape:
        msg.tensor_shape.dim.add(size=int(d))
    if array.dtype.kind in "OUS":
        msg.dtype = pb.DT_STRING
        msg.string_val.extend(v if isinstance(v, bytes) else str(v).encode("utf-8")
                              for v in array.reshape(-1).tolist())
    elif array.dtype == np.float64:
        msg.dtype = pb.DT_DOUBLE
        msg.tensor_content = array.astype("<f8").tobytes()
    else:
        msg.dtype = pb.DT_FLOAT
        msg.tensor_content = array.astype("<f4").tobytes()


def _write(writer, step, tag, plugin, array, description=None):
    pb = _pb()
    event = pb.Event(step=step, wall_time=time.time())
    value = event.summary.value.add(tag=tag)
    value.metadata.plugin_data.plugin_name = plugin
    if description:
        value.metadata.summary_description = description
    _tensor(pb, value.tensor, array)
    writer.write_event(event)
    return True


def _result(ok):
    from eagerflow.tensor import convert_to_tensor

    return convert_to_tensor(bool(ok))


def _tag(name):
    scope = context.state.name_scope
    return (scope.rstrip("/") + "/" + name) if scope else name


def write(tag, tensor, step=None, metadata=None, name=None):
    """Writes a generic tensor summary (no plugin unless ``metadata`` names one).

    Args:
        tag: The tag.
        tensor: The value (numbers or strings).
        step: The step (default: the default step).
        metadata: Optional plugin name (str).
        name: Ignored (TF compatibility).

    Returns:
        A bool tensor: True when written.
    """
    del name
    prepared = _prepare(tensor, step, "write")
    if prepared is None:
        return _result(False)
    writer, step, array = prepared
    return _result(_write(writer, step, tag, metadata or "", array))


def scalar(name, data, step=None, description=None):
    """Writes a scalar summary (TensorBoard's Scalars dashboard).

    Args:
        name: The tag.
        data: A real scalar (Python number, tensor or variable).
        step: The step (default: the default step).
        description: Optional Markdown description.

    Returns:
        A bool tensor: True when written, False with no default writer.

    Raises:
        ValueError: ``data`` is not a scalar, or no step is available.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> with ef.summary.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     bool(ef.summary.scalar("loss", 0.25, step=1))
        True
    """
    prepared = _prepare(data, step, "scalar")
    if prepared is None:
        return _result(False)
    writer, step, array = prepared
    if array.ndim != 0:
        raise ValueError("eagerflow.summary.scalar(%r): data must be a scalar, got shape %s."
                         % (name, list(array.shape)))
    return _result(_write(writer, step, _tag(name), "scalars", array.astype(np.float32),
                          description))


def histogram_buckets(values, buckets=30):
    """TF 2's histogram: ``buckets`` equal-width ``[left, right, count]`` rows over the data.

    The last bucket includes its right edge; all-equal data gets one unit-wide range around
    the value; empty data gets ``buckets`` zero rows over [0, 0].
    """
    values = np.asarray(values, np.float64).reshape(-1)
    if values.size == 0:
        return np.zeros((buckets, 3), np.float64)
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(values, bins=buckets, range=(lo, hi))
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes a histogram of ``data`` (TensorBoard's Histograms and Distributions).

    Args:
        name: The tag.
        data: Numbers of any shape (flattened).
        step: The step (default: the default step).
        buckets: Number of equal-width buckets (default 30).
        description: Optional Markdown description.

    Returns:
        A bool tensor: True when written.

    Raises:
        ValueError: ``buckets`` is not positive, or no step is available.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> with ef.summary.create_file_writer(tempfile.mkdtemp()).as_default(step=0):
        ...     bool(ef.summary.histogram("w", ef.random.normal([100]), buckets=10))
        True
    """
    buckets = 30 if buckets is None else int(buckets)
    if buckets < 1:
        raise ValueError("eagerflow.summary.histogram(%r): buckets must be >= 1, got %d."
                         % (name, buckets))
    prepared = _prepare(data, step, "histogram")
    if prepared is None:
        return _result(False)
    writer, step, array = prepared
    return _result(_write(writer, step, _tag(name), "histograms",
                          histogram_buckets(array, buckets), description))


def _to_uint8(images):
    if images.dtype == np.uint8:
        return images
    if images.dtype.kind == "f":
        # As tf.image.convert_image_dtype(saturate=True): scale by 255.5 and truncate.
        return np.clip(images * 255.5, 0, 255).astype(np.uint8)
    return np.clip(images, 0, 255).astype(np.uint8)


def image(name, data, step=None, max_outputs=3, description=None):
    """Writes up to ``max_outputs`` images, PNG-encoded (TensorBoard's Images dashboard).

    Args:
        name: The tag.
        data: ``[k, height, width, channels]`` with 1, 3 or 4 channels; floats in [0, 1]
            or uint8.
        step: The step (default: the default step).
        max_outputs: Most images written from the batch (default 3).
        description: Optional Markdown description.

    Returns:
        A bool tensor: True when written.

    Raises:
        ValueError: ``data`` is not rank 4 with 1, 3 or 4 channels, or no step is available.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> with ef.summary.create_file_writer(tempfile.mkdtemp()).as_default(step=0):
        ...     bool(ef.summary.image("x", ef.zeros([2, 4, 4, 3])))
        True
    """
    from eagerflow.summary.png import encode_png

    prepared = _prepare(data, step, "image")
    if prepared is None:
        return _result(False)
    writer, step, array = prepared
    if array.ndim != 4 or array.shape[-1] not in (1, 3, 4):
        raise ValueError("eagerflow.summary.image(%r): data must be [k, height, width, c] "
                         "with c in (1, 3, 4), got shape %s." % (name, list(array.shape)))
    array = _to_uint8(array[:max(int(max_outputs), 0)])
    h, w = array.shape[1:3]
    content = [str(w).encode(), str(h).encode()] + [encode_png(img) for img in array]
    return _result(_write(writer, step, _tag(name), "images", np.array(content, dtype=object),
                          description))


def text(name, data, step=None, description=None):
    """Writes a string (or a tensor of strings) for TensorBoard's Text dashboard (Markdown).

    Args:
        name: The tag.
        data: A Python str, bytes, or array/tensor of strings.
        step: The step (default: the default step).
        description: Optional Markdown description.

    Returns:
        A bool tensor: True when written.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> with ef.summary.create_file_writer(tempfile.mkdtemp()).as_default(step=0):
        ...     bool(ef.summary.text("notes", "**hello**"))
        True
    """
    prepared = _prepare(data, step, "text")
    if prepared is None:
        return _result(False)
    writer, step, array = prepared
    if array.dtype.kind not in "OUS":
        raise ValueError("eagerflow.summary.text(%r): data must be strings, got %s."
                         % (name, array.dtype))
    return _result(_write(writer, step, _tag(name), "text", array.astype(object), description))


def _graph_of(graph_data):
    g = getattr(graph_data, "graph", graph_data)
    if hasattr(g, "nodes") and hasattr(g, "outputs"):
        return g
    if hasattr(graph_data, "get_concrete_function"):
        raise ValueError("eagerflow.summary.graph: pass a traced graph, e.g. "
                         "f.get_concrete_function(*specs) (or its .graph), not the "
                         "polymorphic function %r." % (graph_data,))
    raise ValueError("eagerflow.summary.graph: graph_data must be a ConcreteFunction or an "
                     "eagerflow Graph, got %r." % (graph_data,))


def graph(graph_data):
    """Writes a traced function's graph (TensorBoard's Graphs dashboard).

    Args:
        graph_data: A ConcreteFunction or its ``.graph``.

    Returns:
        A bool tensor: True when written (False with no default writer).

    Raises:
        ValueError: ``graph_data`` is not a traced graph.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> f = ef.function(lambda x: x * 2.0).get_concrete_function(ef.TensorSpec([2]))
        >>> with ef.summary.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     bool(ef.summary.graph(f))
        True
    """
    from eagerflow.summary.graph_def import graph_to_graph_def

    g = _graph_of(graph_data)
    if not should_record_summaries():
        return _result(False)
    pb = _pb()
    state.writer.write_event(pb.Event(wall_time=time.time(), step=0,
                                      graph_def=graph_to_graph_def(g)))
    return _result(True)


_trace = None  # {"graphs": [...], "profiler": bool} while trace_on is active


def trace_on(graph=True, profiler=False):
    """Starts collecting the graphs of traced functions that run (and optionally profiling).

    Args:
        graph: Collect the graph of each ``@function`` called until ``trace_export``.
        profiler: Also start ``eagerflow.profiler`` (written by ``trace_export``).

    Example:
        >>> import tempfile, eagerflow as ef
        >>> f = ef.function(lambda x: x + 1.0)
        >>> ef.summary.trace_on(graph=True)
        >>> _ = f(ef.ones([2]))
        >>> with ef.summary.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     bool(ef.summary.trace_export("f", step=0))
        True
    """
    global _trace
    from eagerflow.profiler import experimental, hooks

    if _trace is not None:
        warnings.warn("eagerflow.summary.trace_on: a trace is already on; ignored.",
                      stacklevel=2)
        return
    _trace = {"graphs": [], "profiler": bool(profiler), "graph": bool(graph)}
    if graph:
        hooks.add_graph_collector(_trace["graphs"])
    if profiler:
        experimental.start(None, experimental.ProfilerOptions(verbose=0))


def trace_off():
    """Stops the trace started by ``trace_on`` without writing anything."""
    global _trace
    from eagerflow.profiler import experimental, hooks

    if _trace is None:
        return
    trace, _trace = _trace, None
    hooks.remove_graph_collector(trace["graphs"])
    if trace["profiler"] and hooks.session() is not None:
        experimental.stop(save=False)


def trace_export(name, step=None, profiler_outdir=None):
    """Writes the graphs collected since ``trace_on`` and ends the trace.

    Each distinct graph is written as a GraphDef event (the Graphs dashboard shows the last);
    with ``profiler=True`` the profile goes to ``profiler_outdir`` (default: the writer's
    logdir).

    Args:
        name: Tag of the trace (kept for TF compatibility; GraphDef events have no tag).
        step: The step (default: the default step).
        profiler_outdir: Where to write the profile.

    Returns:
        A bool tensor: True when written.

    Raises:
        ValueError: No trace is on, or no step is available.
    """
    del name
    global _trace
    from eagerflow.profiler import experimental, hooks

    if _trace is None:
        raise ValueError("eagerflow.summary.trace_export: no trace is on; call "
                         "eagerflow.summary.trace_on() first.")
    trace = _trace
    written = False
    try:
        if should_record_summaries():
            step = _resolve_step(step, "eagerflow.summary.trace_export")
            from eagerflow.summary.graph_def import graph_to_graph_def

            pb = _pb()
            for g in trace["graphs"]:
                state.writer.write_event(pb.Event(wall_time=time.time(), step=step,
                                                  graph_def=graph_to_graph_def(g)))
            written = True
        if trace["profiler"] and hooks.session() is not None:
            outdir = profiler_outdir or (state.writer.logdir if state.writer else None)
            sess = hooks.session()
            experimental.stop(save=False)
            if outdir is not None:
                experimental.export(sess, outdir)
    finally:
        _trace = None
        hooks.remove_graph_collector(trace["graphs"])
    return _result(written)
