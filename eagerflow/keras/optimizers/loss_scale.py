"""``LossScaleOptimizer``: dynamic loss scaling for mixed-precision training.

The loss is multiplied by a scale (``scale_loss``) so small float16 gradients do not
underflow; ``apply`` divides the gradients by the scale again and then:

* if every gradient is finite, runs the inner optimizer's step; after
  ``dynamic_growth_steps`` finite steps in a row the scale doubles;
* otherwise skips the step entirely (no variable, slot or ``iterations`` changes) and
  halves the scale.

Everything is computed with ops: the inner step runs on gradients zeroed where they are
not finite, and its results are kept or discarded with ``where``, so ``apply`` traces
into a graph without a Python branch on the finiteness check.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import optimizers
    >>> opt = optimizers.LossScaleOptimizer(optimizers.SGD(0.1), initial_scale=4.0)
    >>> w = ef.Variable(1.0)
    >>> with ef.GradientTape() as tape:
    ...     loss = opt.scale_loss(w * 2.0)
    >>> _ = opt.apply_gradients([(tape.gradient(loss, w), w)])  # divides by 4 itself
    >>> round(float(w), 6)
    0.8
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.framework import strategy_context
from eagerflow.keras.optimizers.base import Optimizer, _cast
from eagerflow.module import Module

__all__ = ["LossScaleOptimizer"]


def _scale_grad(grad, factor):
    if grad is None:
        return None
    if isinstance(grad, ef.IndexedSlices):
        values = grad.values * _cast(factor, grad.values.dtype)
        return ef.IndexedSlices(values, grad.indices, grad.dense_shape)
    return grad * _cast(factor, grad.dtype)


class LossScaleOptimizer(Optimizer):
    """Wraps an optimizer with dynamic loss scaling (Keras 3 semantics).

    Two usage styles give the same numbers:

    * Keras 3: ``grads = tape.gradient(opt.scale_loss(loss), vars)``, then
      ``opt.apply(grads, vars)`` (``apply`` unscales).
    * tf.keras 2: ``opt.get_scaled_loss(loss)``, ``opt.get_unscaled_gradients(grads)``,
      then ``opt.apply_gradients(...)``. Because Keras 3's ``apply`` unscales on its
      own, mixing the styles would divide twice in Keras; here
      ``get_unscaled_gradients`` marks the next ``apply`` as already unscaled.

    Args:
        inner_optimizer: The ``Optimizer`` to wrap.
        initial_scale: The starting loss scale (default 2**15).
        dynamic_growth_steps: Finite steps in a row before the scale doubles
            (default 2000).
        name: The optimizer's name (default "loss_scale_optimizer").
        **kwargs: ``dynamic=True`` is accepted; ``dynamic=False`` is refused as in
            Keras 3 (set ``loss_scale_factor`` on the inner optimizer instead).

    Raises:
        TypeError: If ``inner_optimizer`` is not an ``Optimizer``.
        ValueError: For ``dynamic=False``, unknown arguments, or non-positive values.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import optimizers
        >>> opt = optimizers.LossScaleOptimizer(optimizers.SGD(0.1), initial_scale=8.0)
        >>> w = ef.Variable(1.0)
        >>> opt.apply([ef.constant(float("inf"))], [w])  # skipped, scale halves
        >>> float(w), float(opt.dynamic_scale), int(opt.iterations)
        (1.0, 4.0, 0)
    """

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. "
                             "Instead, simply set `loss_scale_factor` directly on the "
                             "`inner_optimizer`.")
        if kwargs:
            raise ValueError("Argument(s) not recognized: %s" % (kwargs,))
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError("LossScaleOptimizer: `inner_optimizer` must be an Optimizer "
                            "instance, got %r" % (inner_optimizer,))
        if not initial_scale > 0:
            raise ValueError("`initial_scale` must be > 0. Received: initial_scale=%r"
                             % (initial_scale,))
        if not isinstance(dynamic_growth_steps, int) or dynamic_growth_steps < 1:
            raise ValueError("`dynamic_growth_steps` must be an integer >= 1. Received: "
                             "dynamic_growth_steps=%r" % (dynamic_growth_steps,))
        # The wrapper has no learning rate or step counter of its own: both forward to
        # the inner optimizer, so only the Module part of the base is initialized.
        Module.__init__(self, name=name)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = dynamic_growth_steps
        self.built = False
        self._pending_unscaled = False
        with self.name_scope:
            self.step_counter = ef.Variable(0, dtype=ef.int64, name="step_counter",
                                            trainable=False)
            self.dynamic_scale = ef.Variable(self.initial_scale, dtype=ef.float32,
                                             name="dynamic_scale", trainable=False)

    # -- forwarding ---------------------------------------------------------------------------
    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @property
    def _iterations(self):
        return self.inner_optimizer._iterations

    def _current_learning_rate(self):
        return self.inner_optimizer._current_learning_rate()

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        self.inner_optimizer.learning_rate = learning_rate

    lr = learning_rate

    @property
    def variables(self):
        """``step_counter``, ``dynamic_scale``, then the inner optimizer's variables."""
        return [self.step_counter, self.dynamic_scale] + self.inner_optimizer.variables

    @property
    def non_trainable_variables(self):
        return tuple(self.variables)

    @property
    def dynamic(self):
        return True

    @property
    def loss_scale(self):
        """The current loss scale (tf.keras 2 name)."""
        return self.dynamic_scale

    @property
    def dynamic_counter(self):
        """Finite steps since the last scale change (tf.keras 2 name)."""
        return self.step_counter

    def get_slot(self, var, slot_name):
        return self.inner_optimizer.get_slot(var, slot_name)

    def get_slot_names(self):
        return self.inner_optimizer.get_slot_names()

    def build(self, var_list):
        """Builds the inner optimizer's slots for ``var_list``."""
        self.inner_optimizer.build(var_list)
        self.built = True

    def finalize_variable_values(self, var_list):
        self.inner_optimizer.finalize_variable_values(var_list)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        self.inner_optimizer.exclude_from_weight_decay(var_list, var_names)

    # -- scaling ------------------------------------------------------------------------------
    def scale_loss(self, loss):
        """Multiplies ``loss`` by the current scale (in the loss's dtype)."""
        return loss * _cast(self.dynamic_scale, ef.convert_to_tensor(loss).dtype)

    def get_scaled_loss(self, loss):
        """tf.keras 2 name of ``scale_loss``; a callable loss gives a callable."""
        if callable(loss):
            return lambda: self.scale_loss(loss())
        return self.scale_loss(loss)

    def get_scaled_gradients(self, grads):
        """Multiplies each gradient by the current scale (None stays None)."""
        return [_scale_grad(g, self.dynamic_scale) for g in grads]

    def get_unscaled_gradients(self, grads):
        """Divides each gradient by the current scale (None stays None).

        The next ``apply``/``apply_gradients`` then takes its gradients as already
        unscaled (the tf.keras 2 workflow) instead of dividing a second time.
        """
        self._pending_unscaled = True
        return [_scale_grad(g, 1.0 / self.dynamic_scale.read_value()) for g in grads]

    # -- applying -----------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None):
        """Unscales, checks finiteness, and steps the inner optimizer or skips.

        Args:
            grads: Gradients of the *scaled* loss (or already unscaled ones, after
                ``get_unscaled_gradients``); None entries are skipped.
            trainable_variables: The variables, in the same order (may be omitted once
                built).

        Raises:
            ValueError: If the lists do not match, or every gradient is None.
        """
        inner = self.inner_optimizer
        grads = list(grads)
        if trainable_variables is None:
            if not inner.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer "
                                 "must already be built. Call "
                                 "`optimizer.build(trainable_variables)` first.")
            trainable_variables = list(inner._trainable_variables)
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError("Received %d gradients for %d variables." % (
                len(grads), len(trainable_variables)))
        unscaled = self._pending_unscaled
        self._pending_unscaled = False
        if not grads or all(g is None for g in grads):
            inner.apply(grads, trainable_variables)  # raises Keras' "No gradients" error
            return
        replica = strategy_context.current_replica_context()
        if replica is not None and replica.num_replicas_in_sync > 1:
            # Under a strategy: build once (cross-replica), sum the scaled gradients across
            # replicas, then every replica takes the same finite/skip decision and update.
            inner._check_distributed(trainable_variables)
            if inner._needs_build(trainable_variables):
                replica.merge_call(lambda _s: inner._ensure_built(trainable_variables))
            kept = [k for k, g in enumerate(grads) if g is not None]
            summed = replica.all_reduce("SUM", [ef.convert_to_tensor(grads[k]) for k in kept])
            for k, g in zip(kept, summed):
                grads[k] = g
            self.built = True
            with strategy_context.local_updates():
                self._apply_scaled(grads, trainable_variables, unscaled, aggregate=False)
            return
        inner._ensure_built(trainable_variables)
        self.built = True
        self._apply_scaled(grads, trainable_variables, unscaled, aggregate=True)

    def _apply_scaled(self, grads, trainable_variables, unscaled, aggregate):
        inner = self.inner_optimizer
        grads = [None if g is None else ef.convert_to_tensor(g) for g in grads]
        finite = ef.reduce_all(ef.stack(
            [ef.reduce_all(ef.math.is_finite(g)) for g in grads if g is not None]))
        if not unscaled:
            inv_scale = 1.0 / self.dynamic_scale.read_value()
            grads = [None if g is None else g * _cast(inv_scale, g.dtype) for g in grads]
        # Zero the gradients of a skipped step, so the discarded update stays finite.
        grads = [None if g is None else ef.where(finite, g, ef.zeros_like(g))
                 for g in grads]
        state = inner._state_variables(trainable_variables) + [inner._iterations]
        saved = [v.read_value() for v in state]
        inner._apply(grads, trainable_variables, aggregate)
        for v, old in zip(state, saved):
            v.assign(ef.where(finite, v.read_value(), old))
        self._update_scale(finite)

    def _update_scale(self, finite):
        counter = self.step_counter.read_value()
        scale = self.dynamic_scale.read_value()
        grow = ef.equal(counter, self.dynamic_growth_steps - 1)
        zero = ef.zeros_like(counter)
        self.step_counter.assign(ef.where(finite, ef.where(grow, zero, counter + 1), zero))
        self.dynamic_scale.assign(
            ef.where(finite, ef.where(grow, scale * 2.0, scale), scale / 2.0))

    def compute_gradients(self, loss, var_list, tape=None):
        """Gradients of the loss computed through the scaled loss, returned unscaled.

        A callable ``loss`` is scaled before differentiation (the point of loss
        scaling). A Tensor ``loss`` was already recorded unscaled by ``tape``, so its
        gradients are returned as they are. Either way the next ``apply`` takes them as
        unscaled.

        Raises:
            ValueError: If ``loss`` is a Tensor and no tape is given.
        """
        if callable(loss):
            pairs = Optimizer.compute_gradients(self, self.get_scaled_loss(loss), var_list,
                                                tape)
            grads = self.get_unscaled_gradients([g for g, _ in pairs])
            return list(zip(grads, [v for _, v in pairs]))
        pairs = Optimizer.compute_gradients(self, loss, var_list, tape)
        self._pending_unscaled = True
        return pairs

    # -- config -------------------------------------------------------------------------------
    def get_config(self):
        # the name table: see eagerflow.keras
        from eagerflow.keras.optimizers import serialize

        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        # the name table: see eagerflow.keras
        from eagerflow.keras.optimizers import deserialize

        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            inner = deserialize(inner, custom_objects=custom_objects)
        return cls(inner, **config)
