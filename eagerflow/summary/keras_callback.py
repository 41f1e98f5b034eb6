"""The Keras ``TensorBoard`` callback: training curves, weight histograms and the graph.

Writes, as Keras does, to ``<log_dir>/train`` and ``<log_dir>/validation``:

* at each epoch end: ``epoch_<metric>`` scalars (``val_<metric>`` logs go to
  ``validation/`` without the prefix), step = epoch;
* with ``update_freq="batch"`` or an int N: ``batch_<metric>`` every N training batches,
  step = the number of training batches run so far;
* at the end of an ``evaluate`` inside or outside ``fit``:
  ``evaluation_<metric>_vs_iterations`` in ``validation/``, step = the optimizer's
  iterations when the model has one;
* every ``histogram_freq`` epochs: a histogram of each weight (tag ``dense/kernel_0``), and
  with ``write_images`` the 2-D weights as images;
* with ``write_graph``: the graph of the train step, collected as it first runs.

Summaries are written from the hooks, outside the traced train step, so they work with
``jit_compile``/``@function`` training (see the ``eagerflow.summary`` limitation).
"""

from __future__ import annotations

import os

import numpy as np

from eagerflow.summary import summary_ops
from eagerflow.summary.writer import create_file_writer, create_noop_writer

try:  # The Keras base class when Keras is present (it always is in a full install).
    from eagerflow.keras.callbacks.callback import Callback as _Base
except ImportError:  # pragma: no cover - keras is part of eagerflow
    class _Base:
        def __init__(self):
            self.model = None
            self.params = {}

        def set_params(self, params):
            self.params = params

        def set_model(self, model):
            self.model = model

__all__ = ["TensorBoard"]


class TensorBoard(_Base):
    """Logs training to TensorBoard.

    Args:
        log_dir: Root directory of the run's logs (default ``"logs"``).
        histogram_freq: Epoch frequency of weight histograms; 0 disables them.
        write_graph: Write the train step's graph.
        write_images: Write 2-D (and 4-D convolution) weights as images with the histograms.
        write_steps_per_second: Also log ``epoch_steps_per_second`` (training batches per
            second of the epoch).
        update_freq: ``"epoch"``, ``"batch"`` or an int N (write batch scalars every N
            batches).
        profile_batch: Accepted for compatibility; profile with
            ``eagerflow.profiler.experimental`` instead. Must be 0.
        embeddings_freq: Accepted for compatibility; must be 0.
        embeddings_metadata: Accepted for compatibility.

    Raises:
        ValueError: ``update_freq`` or ``histogram_freq`` is invalid, or profiling or
            embeddings were requested.

    Example:
        >>> import tempfile, numpy as np, eagerflow as ef
        >>> from eagerflow.summary.keras_callback import TensorBoard
        >>> model = ef.keras.Sequential([ef.keras.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> cb = TensorBoard(tempfile.mkdtemp())
        >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0, callbacks=[cb])
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (not isinstance(update_freq, int) or update_freq < 1):
            raise ValueError("TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             "int, got %r." % (update_freq,))
        if not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError("TensorBoard: histogram_freq must be an int >= 0, got %r."
                             % (histogram_freq,))
        if profile_batch not in (0, None, (0, 0)):
            raise ValueError("TensorBoard: profile_batch is not supported (got %r); wrap the "
                             "batches in eagerflow.profiler.experimental.Profile(logdir) "
                             "instead." % (profile_batch,))
        if embeddings_freq:
            raise ValueError("TensorBoard: embeddings_freq is not supported; use 0.")
        del embeddings_metadata
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = update_freq
        self._writers = {}
        self._train_step = 0
        self._graphs = None
        self._epoch_start = None
        self._epoch_batches = 0

    def _writer(self, kind):
        writer = self._writers.get(kind)
        if writer is None:
            from eagerflow.framework import worker_context

            # Under a multi-worker strategy only the chief writes event files.
            chief = worker_context.is_chief(getattr(self.model, "distribute_strategy", None))
            writer = self._writers[kind] = (create_file_writer(os.path.join(self.log_dir, kind))
                                            if chief else create_noop_writer())
        return writer

    def _scalars(self, kind, prefix, logs, step, suffix=""):
        with self._writer(kind).as_default(step=step):
            for key, value in logs.items():
                try:
                    value = float(value)
                except (TypeError, ValueError):
                    continue
                summary_ops.scalar(prefix + key + suffix, value)

    def on_train_begin(self, logs=None):
        self._train_step = 0
        if self.write_graph and self._graphs is None:
            from eagerflow.profiler import hooks

            self._graphs = []
            hooks.add_graph_collector(self._graphs)

    def _write_graph(self):
        from eagerflow.profiler import hooks

        graphs, self._graphs = self._graphs, None
        hooks.remove_graph_collector(graphs)
        if graphs:
            with self._writer("train").as_default():
                summary_ops.graph(graphs[0])

    def on_epoch_begin(self, epoch, logs=None):
        import time

        self._epoch_start = time.perf_counter()
        self._epoch_batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self._train_step += 1
        self._epoch_batches += 1
        if self._graphs is not None:
            self._write_graph()
        if self.update_freq != "epoch" and self._train_step % self.update_freq == 0:
            self._scalars("train", "batch_", dict(logs or {}), self._train_step)

    def on_epoch_end(self, epoch, logs=None):
        import time

        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if self.write_steps_per_second and self._epoch_start is not None:
            elapsed = time.perf_counter() - self._epoch_start
            train["steps_per_second"] = self._epoch_batches / elapsed if elapsed > 0 else 0.0
        optimizer = getattr(self.model, "optimizer", None)
        lr = getattr(optimizer, "learning_rate", None)
        if lr is not None and not callable(lr):
            train.setdefault("learning_rate", lr)
        self._scalars("train", "epoch_", train, epoch)
        if val:
            self._scalars("validation", "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._histograms(epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_test_end(self, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        iterations = getattr(optimizer, "iterations", None)
        if iterations is None or not logs:
            return
        step = int(np.asarray(iterations.numpy() if hasattr(iterations, "numpy")
                              else iterations))
        self._scalars("validation", "evaluation_", dict(logs), step, suffix="_vs_iterations")

    def _histograms(self, epoch):
        with self._writer("train").as_default(step=epoch):
            for weight in getattr(self.model, "weights", []):
                name = getattr(weight, "path", None) or weight.name
                name = name.replace(":", "_")
                values = np.asarray(weight.numpy())
                summary_ops.histogram(name, values)
                if self.write_images:
                    image = _weight_image(values)
                    if image is not None:
                        summary_ops.image(name + "/image", image)

    def on_train_end(self, logs=None):
        if self._graphs is not None:
            from eagerflow.profiler import hooks

            hooks.remove_graph_collector(self._graphs)
            self._graphs = None
        for writer in self._writers.values():
            writer.close()
        self._writers = {}


def _weight_image(values):
    """A weight as a [1, h, w, 1] image scaled to [0, 1] (2-D, or 4-D kernels tiled)."""
    if values.ndim == 1:
        values = values[None, :]
    elif values.ndim == 4:
        kh, kw, cin, cout = values.shape
        values = values.transpose(2, 0, 3, 1).reshape(cin * kh, cout * kw)
    elif values.ndim != 2:
        return None
    lo, hi = float(values.min()), float(values.max())
    scaled = (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)
    return scaled[None, :, :, None].astype(np.float32)
