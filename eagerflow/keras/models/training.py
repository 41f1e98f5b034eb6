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

import warnings


import eagerflow as ef
from eagerflow import nest
from eagerflow.framework import strategy_context
from eagerflow.keras.utils.data_utils import unpack_x_y_sample_weight
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape
from eagerflow.keras.models.training_utils import (
    _batch_size,
    _floatx,
    _nonempty,
    _parameters,
    _replace_tensors,
    _replica_share,
    _specs_of,
)
from eagerflow.keras.models.training_compile import CompileMixin
from eagerflow.keras.models.training_loops import LoopsMixin

__all__ = ["Trainer"]


class Trainer(CompileMixin, LoopsMixin):
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


