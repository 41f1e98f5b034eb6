"""``Trainer``: ``compile``, ``fit``, ``evaluate``, ``predict`` and the per-batch steps.

The contract is Keras 3's (TensorFlow backend): ``fit`` calls ``train_step(data)`` once per
batch, where ``data`` is ``x``, ``(x, y)`` or ``(x, y, sample_weight)``; the default step runs
the model under a GradientTape, computes ``compute_loss`` (compiled loss plus
``model.losses``), applies the optimizer, updates the metrics and returns
``get_metrics_result()``. ``test_step`` and ``predict_step`` do the same for ``evaluate`` and
``predict``. Subclasses override these steps and ``fit`` uses them.

Unless ``compile(run_eagerly=True)``, each step runs as one ``eagerflow.function``: before
the first batch the model, the compiled metrics and the optimizer's slots are built from the
shapes of that batch (a throwaway trace, no computation), then the step is traced once with
a batch dimension of None, so the last, smaller batch reuses the same graph. Metric and
optimizer updates are variable assignments inside that graph.

Example:
    >>> import numpy as np
    >>> from eagerflow import keras
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
    ...     from_logits=True), metrics=["accuracy"])
    >>> x, y = np.random.rand(50, 4), np.random.randint(0, 3, 50)
    >>> history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss']
    >>> model.train_function.experimental_get_tracing_count()  # 16,16,16 and 2 share one trace
    1
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings

import numpy as np

import eagerflow as ef
from eagerflow import nest
from eagerflow.framework import strategy_context
from eagerflow.function.function import Function
from eagerflow.keras import metrics as metrics_lib
from eagerflow.keras import optimizers as optimizers_lib
from eagerflow.keras.callbacks.callback import CallbackList, pythonify_logs
from eagerflow.keras.callbacks.progbar_logger import resolve_verbose
from eagerflow.keras.models import compile_utils
from eagerflow.keras.models import data_adapter as adapters
from eagerflow.keras.utils.data_utils import unpack_x_y_sample_weight
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["Trainer"]

_FIT_IGNORED = frozenset(("max_queue_size", "workers", "use_multiprocessing"))


class _CompiledLossCompat:
    """tf.keras 2's ``model.compiled_loss(y, y_pred, sample_weight, regularization_losses)``:
    the total loss, also recorded in the model's ``loss`` metric."""

    def __init__(self, model):
        self._model = model

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        model = self._model
        total = None
        if model._compile_loss is not None:
            total = model._compile_loss(y_true, y_pred, sample_weight)
        for loss in regularization_losses or ():
            value = ef.reduce_sum(ef.cast(loss, _floatx()))
            total = value if total is None else total + value
        if total is None:
            total = ef.constant(0.0, dtype=_floatx())
        model._loss_tracker.update_state(total, sample_weight=_batch_size(y_pred))
        return total

    @property
    def metrics(self):
        model = self._model
        return [model._loss_tracker] + (model._compile_loss.metrics
                                        if model._compile_loss is not None else [])


def _floatx():
    from eagerflow.keras import backend

    return backend.floatx()


def _batch_size(structure):
    first = nest.flatten(structure)[0]
    return ef.cast(ef.shape(first)[0], _floatx())


def _spec_with_free_batch(value):
    if isinstance(value, Tensor):
        dims = list(value.shape.as_list()) if value.shape.rank is not None else None
        if dims:
            dims[0] = None
        return TensorSpec(TensorShape(dims), value.dtype)
    return value


def _specs_of(structure):
    """``(shape, dtype)`` of every tensor in a batch, the batch dimension set free."""
    out = []
    for leaf in nest.flatten(structure):
        if isinstance(leaf, Tensor):
            dims = leaf.shape.as_list()
            out.append((TensorShape([None] + dims[1:] if dims else dims), leaf.dtype))
    return out


def _replica_share(loss, x):
    """The loss a replica differentiates: its mean loss times its share of the batch.

    Replicas' gradients are summed, so each replica's mean loss is weighted by
    ``local batch / global batch`` (the global batch summed across replicas): the sum is
    exactly the gradient of the global mean loss, uneven or empty last batches included.
    Outside a strategy (or with one replica) the loss is returned as it is.
    """
    replica = strategy_context.current_replica_context()
    if replica is None or replica.num_replicas_in_sync == 1:
        return loss
    n = ef.cast(_batch_size(x), loss.dtype)
    total = replica.all_reduce("SUM", n)
    return loss * (n / total)


def _nonempty(loss, x):
    """0 for a replica whose slice of the batch is empty (its mean loss is 0/0)."""
    if strategy_context.current_replica_context() is None:
        return loss
    loss = ef.reduce_sum(loss)  # a scalar (an empty batch's loss may have shape [0])
    return ef.where(_batch_size(x) > 0, loss, ef.zeros_like(loss))


def _in_strategy_scope(method):
    """Runs a Model method inside the scope of the strategy the model was made under."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        strategy = getattr(self, "_distribute_strategy", None)
        if strategy is None:
            return method(self, *args, **kwargs)
        self._global_batch = None  # fixed by the first batch of this call
        with strategy.scope():
            return method(self, *args, **kwargs)

    return wrapper


def _to_numpy_tree(structure):
    return nest.map_structure(
        lambda t: np.asarray(t.numpy()) if isinstance(t, Tensor) or getattr(
            t, "_is_variable", False) else t, structure)


class Trainer:
    """Training, evaluation and prediction for ``Model`` (mixed into it).

    Example:
        >>> import numpy as np
        >>> from eagerflow import keras
        >>> m = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        >>> m.compile(keras.optimizers.SGD(0.1), "mse")
        >>> round(m.evaluate(np.zeros((4, 1)), np.zeros((4, 1)), verbose=0), 6)
        0.0
    """

    def _init_trainer(self):
        self.compiled = False
        self.optimizer = None
        self.loss = None
        self._compile_loss = None
        self._compile_metrics = None
        self._loss_tracker = None
        self._run_eagerly = False
        self._jit_compile = None
        self.steps_per_execution = 1
        self.train_function = None
        self.test_function = None
        self.predict_function = None
        self.stop_training = False
        self.stop_evaluating = False
        self.stop_predicting = False
        self.history = None
        self._compile_config = None
        self._symbolic_built = False
        # The strategy whose scope the model was made in (TF's model.distribute_strategy):
        # fit, evaluate and predict run their steps with it. Read through the low-level
        # strategy context, so Keras never imports eagerflow.distribute.
        self._distribute_strategy = strategy_context.current_strategy()
        self._global_batch = None

    @property
    def distribute_strategy(self):
        """The strategy the model was created (or compiled) under, or None."""
        return self._distribute_strategy

    def _distributed(self):
        # Any strategy but the default: even one replica (OneDeviceStrategy) runs its
        # steps through strategy.run, which places them on the strategy's device.
        return self._distribute_strategy is not None

    # -- compile --------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile="auto", auto_scale_loss=True, **kwargs):
        """Configures training: optimizer, loss(es), metrics.

        Args:
            optimizer: An optimizer name (``"adam"``) or instance (default ``"rmsprop"``).
            loss: A loss name, function or ``Loss``; a list (one per output) or a dict keyed
                by output name for several outputs. None is allowed when the model adds its
                own losses (``add_loss``).
            loss_weights: Per-output loss weights (a list, a dict, or a number).
            metrics: Metrics reported during training: names (``"accuracy"`` picks binary,
                categorical or sparse accuracy from the loss and shapes), functions or
                ``Metric`` objects; a list of lists or a dict for several outputs.
            weighted_metrics: Metrics that use the sample weights.
            run_eagerly: Run the steps as plain Python (easier to debug) instead of traced
                graphs.
            steps_per_execution: A positive int; steps always run one per call here, so
                values above 1 give the same results with per-step callbacks.
            jit_compile: Accepted for compatibility (no XLA).
            auto_scale_loss: With a ``mixed_float16`` dtype policy, wrap the optimizer in a
                ``LossScaleOptimizer`` (dynamic loss scaling), as Keras 3 does.
            **kwargs: tf.keras 2's ``sample_weight_mode``/``target_tensors`` are refused with a
                clear error; ``experimental_steps_per_execution`` is an alias.

        Raises:
            ValueError: For an unknown optimizer, loss or metric, or a bad argument.

        Example:
            >>> from eagerflow import keras
            >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
            >>> m.compile(optimizer="sgd", loss="mse", metrics=["mae"])
            >>> type(m.optimizer).__name__
            'SGD'
        """
        if "experimental_steps_per_execution" in kwargs:
            steps_per_execution = kwargs.pop("experimental_steps_per_execution")
        for name in ("sample_weight_mode", "target_tensors", "distribute"):
            if kwargs.pop(name, None) is not None:
                raise ValueError("compile(%s=...) is not supported." % name)
        if kwargs:
            raise TypeError("compile() got unexpected keyword argument(s) %s." % sorted(kwargs))
        if not isinstance(steps_per_execution, (int, np.integer)) or steps_per_execution < 1:
            raise ValueError("`steps_per_execution` must be a positive integer, got %r."
                             % (steps_per_execution,))
        if metrics is not None and not isinstance(metrics, (list, tuple, dict)):
            raise TypeError("Type of `metrics` argument not understood. Expected a list or "
                            "dictionary, found: %r" % (metrics,))
        if self._distribute_strategy is None:
            self._distribute_strategy = strategy_context.current_strategy()
        with (self._distribute_strategy.scope() if self._distribute_strategy is not None
              else contextlib.nullcontext()):
            self._compile(optimizer, loss, loss_weights, metrics, weighted_metrics,
                          run_eagerly, steps_per_execution, jit_compile, auto_scale_loss)

    def _compile(self, optimizer, loss, loss_weights, metrics, weighted_metrics, run_eagerly,
                 steps_per_execution, jit_compile, auto_scale_loss):
        self.optimizer = optimizers_lib.get(optimizer if optimizer is not None else "rmsprop")
        if auto_scale_loss and self.dtype_policy.compute_dtype == "float16" and not isinstance(
                self.optimizer, optimizers_lib.LossScaleOptimizer):
            # float16 gradients underflow without loss scaling (Keras 3 wraps likewise).
            self.optimizer = optimizers_lib.LossScaleOptimizer(self.optimizer)
        self.loss = loss
        output_names = self._output_names_for_compile()
        self._compile_loss = compile_utils.CompileLoss(loss, loss_weights, output_names) \
            if loss is not None else None
        self._compile_metrics = compile_utils.CompileMetrics(
            metrics, weighted_metrics, output_names, loss=loss)
        self._loss_tracker = metrics_lib.Mean(name="loss")
        self.compiled_loss = _CompiledLossCompat(self)
        self._run_eagerly = bool(run_eagerly)
        self._jit_compile = jit_compile
        self.steps_per_execution = int(steps_per_execution)
        self.compiled = True
        self.train_function = self.test_function = self.predict_function = None
        self._symbolic_built = False
        self._compile_config = {
            "optimizer": optimizers_lib.serialize(self.optimizer),
            "loss": compile_utils.serialize_loss_or_metric(loss),
            "loss_weights": loss_weights,
            "metrics": compile_utils.serialize_loss_or_metric(metrics),
            "weighted_metrics": compile_utils.serialize_loss_or_metric(weighted_metrics),
            "run_eagerly": bool(run_eagerly),
            "steps_per_execution": int(steps_per_execution),
            "jit_compile": jit_compile if isinstance(jit_compile, (bool, str)) else None,
        }

    def _output_names_for_compile(self):
        names = getattr(self, "output_names", None)
        try:
            return list(names) if names else None
        except TypeError:
            return None

    @property
    def compiled_metrics(self):
        """The compiled metrics (``update_state(y, y_pred, sample_weight)``), tf.keras 2 style."""
        return self._compile_metrics

    @property
    def run_eagerly(self):
        """Whether the steps run as plain Python instead of traced graphs."""
        return self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value):
        self._run_eagerly = bool(value)
        self.train_function = self.test_function = self.predict_function = None

    @property
    def jit_compile(self):
        return self._jit_compile

    def get_compile_config(self):
        """The arguments of the last ``compile`` in JSON form, or None if not compiled."""
        return dict(self._compile_config) if self._compile_config else None

    def compile_from_config(self, config, custom_objects=None):
        """Compiles from :meth:`get_compile_config` output."""
        from eagerflow.keras import saving

        config = dict(config)
        optimizer = config.pop("optimizer", "rmsprop")
        if isinstance(optimizer, dict):
            optimizer = optimizers_lib.deserialize(optimizer, custom_objects=custom_objects)

        def resolve(value):
            if isinstance(value, dict) and "class_name" in value:
                return saving.deserialize_keras_object(value, custom_objects=custom_objects)
            if isinstance(value, list):
                return [resolve(v) for v in value]
            if isinstance(value, dict):
                return {k: resolve(v) for k, v in value.items()}
            if isinstance(value, str):
                found = saving.get_registered_object(value, custom_objects)
                return found if found is not None else value
            return value

        self.compile(optimizer=optimizer, loss=resolve(config.get("loss")),
                     loss_weights=config.get("loss_weights"),
                     metrics=resolve(config.get("metrics")),
                     weighted_metrics=resolve(config.get("weighted_metrics")),
                     run_eagerly=config.get("run_eagerly", False),
                     steps_per_execution=config.get("steps_per_execution", 1) or 1,
                     jit_compile=config.get("jit_compile", "auto"))

    def _assert_compiled(self):
        if not self.compiled:
            raise RuntimeError("You must call `compile()` before using the model.")

    # -- metrics --------------------------------------------------------------------------------
    @property
    def metrics(self):
        """Every metric the model reports: the loss, per-output losses, compiled metrics, then
        Metric objects held as attributes of the model or its layers."""
        out = []
        if self.compiled:
            out.append(self._loss_tracker)
            if self._compile_loss is not None:
                out.extend(self._compile_loss.metrics)
            if self._compile_metrics is not None:
                out.extend(self._compile_metrics.metrics)
        seen = {id(m) for m in out}
        for m in self._attribute_metrics():
            if id(m) not in seen:
                seen.add(id(m))
                out.append(m)
        return out

    _INTERNAL = frozenset(("_loss_tracker", "_compile_metrics", "_compile_loss", "optimizer",
                           "compiled_loss", "history"))

    def _attribute_metrics(self):
        found = []
        for layer in self._flatten_layers(include_self=True):
            for key, value in vars(layer).items():
                if key in self._INTERNAL or key in layer._NON_TRACKED:
                    continue
                if isinstance(value, metrics_lib.Metric):
                    found.append(value)
                elif isinstance(value, (list, tuple)):
                    found.extend(v for v in value if isinstance(v, metrics_lib.Metric))
        return found

    @property
    def metrics_names(self):
        """The names of :attr:`metrics`, in order."""
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        """Resets the state of every metric."""
        for m in self.metrics:
            m.reset_state()

    def get_metrics_result(self):
        """``{name: result}`` of every metric (a metric returning a dict is merged in)."""
        out = {}
        for m in self.metrics:
            result = m.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[m.name] = result
        return out

    def _flatten_metrics_in_order(self, logs):
        names = []
        for m in self.metrics:
            names.append(m.name)
        results = [logs[n] for n in names if n in logs]
        results += [logs[k] for k in sorted(logs) if k not in names]
        if len(results) == 1:
            return results[0]
        return results

    # -- the steps ------------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The total loss: the compiled loss plus ``model.losses`` (regularization, add_loss).

        Raises:
            ValueError: If there is nothing to minimize.
        """
        losses = []
        if self._compile_loss is not None:
            value = self._compile_loss(y, y_pred, sample_weight)
            if value is not None:
                losses.append(value)
        for loss in self.losses:
            losses.append(ef.reduce_sum(ef.cast(loss, _floatx())))
        if not losses:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        total = losses[0]
        for value in losses[1:]:
            total = total + ef.cast(value, total.dtype)
        return total

    def _compute_loss_call(self, x, y, y_pred, sample_weight, training):
        params = _parameters(type(self).compute_loss)
        if "training" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                     training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the compiled metrics; returns :meth:`get_metrics_result`."""
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def train_step(self, data):
        """One training step on a batch: forward, loss, gradients, update, metrics.

        Args:
            data: ``x``, ``(x, y)`` or ``(x, y, sample_weight)``.

        Returns:
            A dict of metric values (tensors), reported in the logs.
        """
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with ef.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = _nonempty(self._compute_loss_call(x, y, y_pred, sample_weight, True), x)
            self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
            share = _replica_share(loss, x)
            scaled = self.optimizer.scale_loss(share) if self.optimizer is not None else share
        variables = self.trainable_variables
        if variables:
            gradients = tape.gradient(scaled, variables)
            self.optimizer.apply_gradients(zip(gradients, variables))
        else:
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def test_step(self, data):
        """One evaluation step: forward (``training=False``), loss, metrics."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = _nonempty(self._compute_loss_call(x, y, y_pred, sample_weight, False), x)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        """One prediction step: ``self(x, training=False)``."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _make_function(self, kind, reduce_retracing=True):
        method = getattr(self, kind + "_step")

        def step(data):
            return method(data)

        if self._distributed():
            strategy = self._distribute_strategy

            def step(data):  # noqa: F811 - the distributed form of the same step
                outputs = strategy.run(method, args=(data,))
                return self._combine_replica_outputs(kind, outputs)

        step.__name__ = kind + "_function"
        if self.run_eagerly:
            return step
        return ef.function(step, reduce_retracing=reduce_retracing, name=kind + "_function")

    def make_train_function(self, force=False):
        """The function ``fit`` calls per batch (``train_step``, traced unless eager)."""
        if self.train_function is None or force:
            self.train_function = self._make_function("train")
        return self.train_function

    def make_test_function(self, force=False):
        """The function ``evaluate`` calls per batch."""
        if self.test_function is None or force:
            self.test_function = self._make_function("test")
        return self.test_function

    def make_predict_function(self, force=False):
        """The function ``predict`` calls per batch."""
        if self.predict_function is None or force:
            self.predict_function = self._make_function("predict")
        return self.predict_function

    def _chief_verbose(self, verbose):
        """Under a multi-worker strategy only the chief prints progress."""
        from eagerflow.framework import worker_context

        return verbose if worker_context.is_chief(self._distribute_strategy) else 0

    def _combine_replica_outputs(self, kind, outputs):
        """One step's per-replica outputs as the logs callbacks see (cross-replica).

        Predictions are concatenated in replica order; metric values are the metrics'
        own cross-replica results (their on-read variables aggregate every replica);
        other per-replica log values are averaged.
        """
        strategy = self._distribute_strategy
        if kind == "predict":
            return nest.map_structure(lambda v: strategy.gather(v, axis=0), outputs)
        results = self.get_metrics_result()
        if not isinstance(outputs, dict):
            return outputs
        out = {}
        for key, value in outputs.items():
            if key in results:
                out[key] = results[key]
            elif type(value).__name__ == "PerReplica":
                out[key] = strategy.reduce("MEAN", value, axis=None)
            else:
                out[key] = value
        return out

    def _coordinator(self):
        """The coordinator that schedules steps on workers (a parameter-server strategy's;
        it names it through ``_coordinator_for_fit``), or None."""
        strategy = self._distribute_strategy
        make = getattr(strategy, "_coordinator_for_fit", None)
        return make() if make is not None else None

    def _run(self, function, data, kind):
        coordinator = self._coordinator() if kind == "train" else None
        if coordinator is not None:
            # Scheduled on a worker with its batch; the result is a RemoteValue.
            if not self._symbolic_built:
                self._symbolic_build(data)
            return coordinator.schedule(function, args=(data,))
        if not getattr(function, "_keras_prepared", False):
            function = self._prepare(function, data, kind)
        if self._distributed():
            if self._global_batch is None:
                self._global_batch = int(_num_samples(data))
            data = self._distribute_strategy.experimental_split_global_batch(
                data, self._global_batch)
        return function(data)

    def _prepare(self, function, data, kind):
        """Before the first step: build what the step would otherwise create while tracing,
        then trace the step once with a free batch dimension.

        A step that cannot be traced with an unknown batch size (a layer needing it as a
        Python int) gets a function that traces once per batch size instead (usually two:
        full batches and the last one). Returns the function to call.
        """
        if not self._symbolic_built and kind != "predict":
            self._symbolic_build(data)
        elif not self.built or not self.weights:
            self._symbolic_build(data, model_only=True)
        if isinstance(function, Function) and not self._distributed():
            # (A distributed step takes PerReplica slices: it traces on its first call,
            # and once more, with relaxed shapes, for a smaller last batch.)
            specs = nest.map_structure(_spec_with_free_batch, data)

            try:
                function.get_concrete_function(specs)
            except Exception:  # noqa: BLE001 - fall back to one trace per batch size
                function = self._make_function(kind, reduce_retracing=False)
                setattr(self, kind + "_function", function)
        try:
            function._keras_prepared = True
        except AttributeError:
            pass
        return function

    def _symbolic_build(self, data, model_only=False):
        """Creates the model's weights, the compiled metrics and the optimizer's slots from
        the batch's shapes, without computing anything."""
        from eagerflow.keras.models import keras_tensor

        x, y, _ = unpack_x_y_sample_weight(data)
        x_struct = x
        specs = _specs_of(x_struct)

        def run(*tensors):
            inputs = nest.pack_sequence_as(
                x_struct, _replace_tensors(x_struct, list(tensors)))
            return self(inputs, training=False)

        described = None
        errors = []
        for candidate in (specs, [(TensorShape(t.shape), t.dtype) for t in nest.flatten(x_struct)
                                  if isinstance(t, Tensor)]):
            try:
                described = keras_tensor.symbolic_trace(run, candidate)
                break
            except Exception as exc:  # noqa: BLE001 - retried with exact shapes, then eagerly
                errors.append(exc)
            finally:
                self._clear_losses()
        if described is None:
            if self.run_eagerly:
                return
            raise errors[-1]
        if not model_only and self.compiled:
            if self._compile_loss is not None and not self._compile_loss.built:
                self._compile_loss.build(y, described)
            if self._compile_metrics is not None and not self._compile_metrics.built \
                    and y is not None:
                self._compile_metrics.build(y, described)
            if self.optimizer is not None and self.trainable_variables:
                self.optimizer.build(self.trainable_variables)
            self._symbolic_built = True

    # -- fit / evaluate / predict ---------------------------------------------------------------
    @_in_strategy_scope
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, **kwargs):
        """Trains the model for ``epochs`` passes over the data.

        Args:
            x: Inputs: arrays/tensors (a list or dict of them for several inputs), a
                ``Dataset`` of ``(x, y[, sample_weight])`` batches, a ``PyDataset`` or a
                generator.
            y: Targets, like ``x`` (None when ``x`` is a dataset or generator).
            batch_size: Samples per batch for array inputs (default 32).
            epochs: The epoch index to stop at (``epochs - initial_epoch`` epochs run).
            verbose: ``"auto"`` (1 on a terminal, else 2), 0 (silent), 1 (live bar) or 2
                (one line per epoch).
            callbacks: A list of ``keras.callbacks.Callback``.
            validation_split: Fraction of the array data (taken from the end, before
                shuffling) held out for validation.
            validation_data: ``(x_val, y_val)``, ``(x_val, y_val, sample_weight_val)`` or a
                Dataset, evaluated at the end of each epoch.
            shuffle: Shuffle array data each epoch (True, False or ``"batch"``).
            class_weight: ``{class: weight}`` multiplying each sample's loss weight.
            sample_weight: Per-sample loss weights (arrays).
            initial_epoch: The epoch to start from (to resume training).
            steps_per_epoch: Batches per epoch (needed for infinite datasets).
            validation_steps: Batches per validation pass.
            validation_batch_size: Batch size for validation arrays (default ``batch_size``).
            validation_freq: Validate every this many epochs (an int) or at these epochs
                (a list of 1-based epoch numbers).
            **kwargs: ``max_queue_size``, ``workers``, ``use_multiprocessing`` are accepted and
                ignored.

        Returns:
            A ``History`` whose ``history`` dict maps each metric to its per-epoch values.

        Raises:
            RuntimeError: If the model is not compiled.
            ValueError: For inconsistent data or arguments.
        """
        unknown = set(kwargs) - _FIT_IGNORED
        if unknown:
            raise TypeError("fit() got unexpected keyword argument(s) %s." % sorted(unknown))
        self._assert_compiled()
        coordinator = self._coordinator()
        if coordinator is not None and steps_per_epoch is None:
            raise ValueError("When using `ParameterServerStrategy`, `steps_per_epoch` must be "
                             "specified: fit schedules that many steps per epoch on the "
                             "workers.")
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = adapters.train_validation_split(
                (x, y, sample_weight), validation_split)
        adapter = adapters.get_adapter(x, y, sample_weight, batch_size=batch_size,
                                       shuffle=shuffle, class_weight=class_weight)
        iterator = adapters.EpochIterator(adapter, steps_per_epoch)
        val_iterator = None
        if validation_data is not None:
            val_iterator = self._validation_iterator(
                validation_data, validation_batch_size or batch_size, validation_steps)
        verbose = self._chief_verbose(resolve_verbose(verbose))
        callbacks = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                                 model=self, verbose=verbose, epochs=epochs,
                                 steps=iterator.num_batches)
        self.stop_training = False
        self.make_train_function()
        self._initial_epoch = None
        callbacks.on_train_begin()
        # A callback restoring a backup (BackupAndRestore) sets where training resumes.
        if self._initial_epoch is not None:
            initial_epoch = max(initial_epoch, self._initial_epoch)
        training_logs = None
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callbacks.on_epoch_begin(epoch)
            logs = None
            for step, data in iterator.enumerate_epoch():
                callbacks.on_train_batch_begin(step)
                logs = self._run(self.train_function, data, "train")
                # (A scheduled step's logs are a RemoteValue: callbacks get them per epoch.)
                callbacks.on_train_batch_end(step, logs if coordinator is None else None)
                if self.stop_training:
                    break
            if coordinator is not None:
                # The steps ran asynchronously on the workers: wait for all of them, then
                # read the metrics (their variables live on the parameter servers).
                coordinator.join()
                logs = None
            epoch_logs = pythonify_logs(logs if logs is not None else
                                        self.get_metrics_result())
            if val_iterator is not None and _should_validate(epoch, validation_freq):
                val_iterator.reset()
                val_logs = self._evaluate_loop(val_iterator, callbacks)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            callbacks.on_epoch_end(epoch, epoch_logs)
            training_logs = epoch_logs
            if self.stop_training or iterator.exhausted:
                break
        if self.optimizer is not None and epochs > initial_epoch and self.optimizer.built:
            self.optimizer.finalize_variable_values(self.trainable_variables)
        callbacks.on_train_end(logs=training_logs)
        return self.history

    def _validation_iterator(self, validation_data, batch_size, steps):
        if adapters.is_dataset(validation_data) or not isinstance(validation_data,
                                                                  (list, tuple)):
            adapter = adapters.get_adapter(validation_data)
        else:
            if len(validation_data) not in (2, 3):
                raise ValueError("`validation_data` must be a tuple (x_val, y_val) or "
                                 "(x_val, y_val, val_sample_weight), or a dataset; got a "
                                 "%s of %d elements." % (type(validation_data).__name__,
                                                          len(validation_data)))
            vx, vy, vsw = unpack_x_y_sample_weight(tuple(validation_data))
            adapter = adapters.get_adapter(vx, vy, vsw, batch_size=batch_size, shuffle=False)
        return adapters.EpochIterator(adapter, steps)

    @_in_strategy_scope
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        """Returns the loss and metrics of the model on the data.

        Args:
            x: Inputs (as for :meth:`fit`).
            y: Targets.
            batch_size: Samples per batch for arrays (default 32).
            verbose: ``"auto"``, 0, 1 or 2.
            sample_weight: Per-sample weights.
            steps: Number of batches to evaluate (default: all).
            callbacks: Callbacks receiving the ``on_test_*`` hooks.
            return_dict: Return ``{name: value}`` instead of a list.

        Returns:
            The loss (a float) when there are no metrics, else ``[loss, metric...]`` in the
            order of ``metrics_names``; or a dict with ``return_dict=True``.

        Raises:
            RuntimeError: If the model is not compiled.
        """
        unknown = set(kwargs) - _FIT_IGNORED
        if unknown:
            raise TypeError("evaluate() got unexpected keyword argument(s) %s."
                            % sorted(unknown))
        self._assert_compiled()
        adapter = adapters.get_adapter(x, y, sample_weight, batch_size=batch_size,
                                       shuffle=False)
        iterator = adapters.EpochIterator(adapter, steps)
        verbose = self._chief_verbose(resolve_verbose(verbose))
        callbacks = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                 verbose=verbose, epochs=1, steps=iterator.num_batches)
        logs = self._evaluate_loop(iterator, callbacks)
        if return_dict:
            return logs
        return self._flatten_metrics_in_order(logs)

    def _evaluate_loop(self, iterator, callbacks):
        self.make_test_function()
        self.stop_evaluating = False
        callbacks.on_test_begin()
        self.reset_metrics()
        logs = None
        for step, data in iterator.enumerate_epoch():
            callbacks.on_test_batch_begin(step)
            logs = self._run(self.test_function, data, "test")
            callbacks.on_test_batch_end(step, logs)
            if self.stop_evaluating:
                break
        logs = pythonify_logs(logs if logs is not None else self.get_metrics_result())
        callbacks.on_test_end(logs)
        return logs

    @_in_strategy_scope
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                **kwargs):
        """The model's outputs on ``x``, batch by batch, concatenated into numpy arrays.

        Args:
            x: Inputs (as for :meth:`fit`; targets in a dataset are ignored).
            batch_size: Samples per batch for arrays (default 32).
            verbose: ``"auto"``, 0, 1 or 2.
            steps: Number of batches (default: all).
            callbacks: Callbacks receiving the ``on_predict_*`` hooks.

        Returns:
            Numpy array(s) in the structure of the model's outputs.

        Raises:
            ValueError: If the input yields no batch.
        """
        unknown = set(kwargs) - _FIT_IGNORED
        if unknown:
            raise TypeError("predict() got unexpected keyword argument(s) %s." % sorted(unknown))
        adapter = adapters.get_adapter(x, batch_size=batch_size, shuffle=False)
        iterator = adapters.EpochIterator(adapter, steps)
        verbose = self._chief_verbose(resolve_verbose(verbose))
        callbacks = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                 verbose=verbose, epochs=1, steps=iterator.num_batches)
        self.make_predict_function()
        self.stop_predicting = False
        callbacks.on_predict_begin()
        outputs = None
        structure = None
        for step, data in iterator.enumerate_epoch():
            callbacks.on_predict_batch_begin(step)
            batch_outputs = self._run(self.predict_function, data, "predict")
            if outputs is None:
                structure = batch_outputs
                outputs = [[] for _ in nest.flatten(batch_outputs)]
            for bucket, value in zip(outputs, nest.flatten(batch_outputs)):
                bucket.append(np.asarray(value.numpy()) if hasattr(value, "numpy") else value)
            callbacks.on_predict_batch_end(step, {"outputs": batch_outputs})
            if self.stop_predicting:
                break
        callbacks.on_predict_end()
        if outputs is None:
            raise ValueError("predict() received no data: the input yielded no batch.")
        return nest.pack_sequence_as(structure, [np.concatenate(b, axis=0) if b[0].ndim else
                                                 np.stack(b) for b in outputs])

    # -- single batches -------------------------------------------------------------------------
    def _single_batch(self, x, y=None, sample_weight=None, class_weight=None):
        adapter = adapters.ArrayAdapter(x, y, sample_weight, batch_size=max(
            1, _num_samples(x)), shuffle=False, class_weight=class_weight)
        return next(adapter.epoch())

    @_in_strategy_scope
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One training step on one batch (metrics accumulate until ``reset_metrics``).

        Returns:
            The loss, ``[loss, metric...]``, or a dict with ``return_dict=True``.
        """
        self._assert_compiled()
        data = self._single_batch(x, y, sample_weight, class_weight)
        logs = pythonify_logs(self._run(self.make_train_function(), data, "train"))
        return logs if return_dict else self._flatten_metrics_in_order(logs)

    @_in_strategy_scope
    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """One evaluation step on one batch (metrics accumulate until ``reset_metrics``).

        Returns:
            The loss, ``[loss, metric...]``, or a dict with ``return_dict=True``.
        """
        self._assert_compiled()
        data = self._single_batch(x, y, sample_weight)
        logs = pythonify_logs(self._run(self.make_test_function(), data, "test"))
        return logs if return_dict else self._flatten_metrics_in_order(logs)

    @_in_strategy_scope
    def predict_on_batch(self, x):
        """The model's outputs on one batch, as numpy."""
        data = self._single_batch(x)
        return _to_numpy_tree(self._run(self.make_predict_function(), data, "predict"))


def _num_samples(x):
    first = nest.flatten(x)[0]
    shape = getattr(first, "shape", None)
    if shape is None:
        return len(np.asarray(first))
    return int(shape[0])


def _replace_tensors(structure, tensors):
    tensors = iter(tensors)
    return [next(tensors) if isinstance(leaf, Tensor) else leaf
            for leaf in nest.flatten(structure)]


def _should_validate(epoch, validation_freq):
    if isinstance(validation_freq, int):
        if validation_freq < 1:
            raise ValueError("`validation_freq` must be a positive integer, got %d."
                             % validation_freq)
        return (epoch + 1) % validation_freq == 0
    if isinstance(validation_freq, (list, tuple, set)):
        return (epoch + 1) in validation_freq
    raise ValueError("`validation_freq` must be an int or a list of epochs, got %r."
                     % (validation_freq,))


def _parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
