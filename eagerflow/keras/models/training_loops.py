"""The loops over data: ``fit``, ``evaluate``, ``predict`` and the single-batch calls, run
through the model's step functions (``Trainer.make_train_function`` and its siblings).
"""

from __future__ import annotations


import numpy as np

from eagerflow import nest
from eagerflow.function.function import Function
from eagerflow.keras.callbacks.callback import CallbackList, pythonify_logs
from eagerflow.keras.callbacks.progbar_logger import resolve_verbose
from eagerflow.keras.models import data_adapter as adapters
from eagerflow.keras.utils.data_utils import unpack_x_y_sample_weight
from eagerflow.keras.models.training_utils import (
    _FIT_IGNORED,
    _in_strategy_scope,
    _num_samples,
    _should_validate,
    _spec_with_free_batch,
    _to_numpy_tree,
)


class LoopsMixin:
    """The training, evaluation and prediction loops (mixed into ``Trainer``)."""

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
