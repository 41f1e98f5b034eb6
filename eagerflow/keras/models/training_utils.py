"""Helpers of the Keras training loops: batch sizes and specs, replica shares, numpy trees,
the compiled-loss view, and the arguments ``fit`` accepts and ignores.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

import eagerflow as ef
from eagerflow import nest
from eagerflow.framework import strategy_context
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec


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
