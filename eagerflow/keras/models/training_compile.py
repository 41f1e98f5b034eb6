"""``compile`` and the compiled state of a model: loss, metrics, optimizer, run mode, and
the metrics' results (``metrics``, ``metrics_names``, ``get_metrics_result``).
"""

from __future__ import annotations

import contextlib

import numpy as np

from eagerflow.framework import strategy_context
from eagerflow.keras import metrics as metrics_lib
from eagerflow.keras import optimizers as optimizers_lib
from eagerflow.keras.models import compile_utils
from eagerflow.keras.models.training_utils import (
    _CompiledLossCompat,
)


class CompileMixin:
    """Compiling a model and reading its metrics (mixed into ``Trainer``)."""

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
