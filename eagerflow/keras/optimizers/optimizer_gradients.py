"""What an optimizer does around its update rule: dropping empty gradients, clipping,
decoupled weight decay, gradient accumulation, the moving average of the weights, loss
scaling, and ``compute_gradients``/``minimize``.
"""

from __future__ import annotations

import re
import warnings

import eagerflow as ef
from eagerflow.keras.optimizers.optimizer_utils import (
    _cast,
)


class GradientTransformsMixin:
    """Gradient transforms around ``update_step`` (mixed into ``Optimizer``)."""

    def _filter_empty_gradients(self, grads, variables):
        kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
        missing = [v.name for g, v in zip(grads, variables) if g is None]
        if not kept:
            raise ValueError("No gradients provided for any variable. Variables: %s. Check "
                             "that the loss depends on them (GradientTape.explain_none says "
                             "why a gradient is None)." % [v.name for v in variables])
        if missing:
            warnings.warn("Gradients do not exist for variables %s when minimizing the "
                          "loss. If using `model.compile()`, did you forget to provide a "
                          "`loss` argument?" % missing, stacklevel=3)
        return [g for g, _ in kept], [v for _, v in kept]

    def _accumulate_and_maybe_update(self, grads, variables, learning_rate):
        steps = self.gradient_accumulation_steps
        is_update = ef.equal((self._iterations + 1) % steps, 0)
        accumulators = [self.get_slot(v, "gradient_accumulator") for v in variables]
        # Without a cond op both outcomes are computed: snapshot the state, run the
        # update, then keep the updated values only on an update step.
        state = self._state_variables(variables, exclude=accumulators)
        saved = [v.read_value() for v in state]
        summed = [g + _cast(a, g.dtype) for g, a in zip(grads, accumulators)]
        mean = [s / ef.constant(steps, dtype=s.dtype) for s in summed]
        mean = self._clip_gradients(mean)
        self._apply_weight_decay(variables, learning_rate)
        self._update_step_all(mean, variables, learning_rate)
        for v, old in zip(state, saved):
            v.assign(ef.where(is_update, v.read_value(), old))
        for a, s in zip(accumulators, summed):
            s = _cast(s, a.dtype)
            a.assign(ef.where(is_update, ef.zeros_like(s), s))

    # -- clipping, weight decay, EMA ----------------------------------------------------------
    def _clip_gradients(self, grads):
        if self.clipnorm and self.clipnorm > 0:
            return [ef.clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm and self.global_clipnorm > 0:
            clipped, _ = ef.clip_by_global_norm(grads, self.global_clipnorm)
            return clipped
        if self.clipvalue and self.clipvalue > 0:
            v = self.clipvalue
            return [ef.clip_by_value(g, -v, v) for g in grads]
        return grads

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Excludes variables from weight decay (call before the optimizer is built).

        Args:
            var_list: Variables to exclude.
            var_names: Substrings (regular expressions); a variable whose name contains
                one is excluded, e.g. ``["bias"]``.

        Raises:
            ValueError: If the optimizer is already built.
        """
        if self.built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before "
                             "the optimizer is built.")
        self._exclude_ids = {self._var_key(v) for v in (var_list or [])}
        self._exclude_pattern = (re.compile("|".join(sorted(set(var_names))))
                                 if var_names else None)
        self._exclude_cache = {}

    def _use_weight_decay(self, variable):
        key = self._var_key(variable)
        if key not in self._exclude_cache:
            use = key not in self._exclude_ids and not (
                self._exclude_pattern is not None
                and self._exclude_pattern.search(variable.name) is not None)
            self._exclude_cache[key] = use
        return self._exclude_cache[key]

    def _apply_weight_decay(self, variables, learning_rate):
        if self.weight_decay is None:
            return
        for variable in variables:
            if self._use_weight_decay(variable):
                lr = _cast(learning_rate, variable.dtype)
                wd = ef.constant(self.weight_decay, dtype=variable.dtype)
                variable.assign_sub(variable * wd * lr)

    def _update_moving_averages(self):
        not_first = ef.not_equal(self.iterations, 0)
        overwrite = None
        if self.ema_overwrite_frequency:
            overwrite = ef.equal((self.iterations + 1) % self.ema_overwrite_frequency, 0)
        for var in self._trainable_variables:
            average = self.get_slot(var, "average")
            momentum = ef.cast(not_first, var.dtype) * self.ema_momentum
            average.assign(momentum * average + (1.0 - momentum) * var)
            if overwrite is not None:
                var.assign(ef.where(overwrite, average.read_value(), var.read_value()))

    def finalize_variable_values(self, var_list):
        """With ``use_ema``, writes the moving averages into ``var_list``.

        Args:
            var_list: The model variables (those the optimizer was built with).
        """
        if not self.use_ema:
            return
        for var in var_list:
            var.assign(self.get_slot(var, "average"))

    # -- losses and minimize ------------------------------------------------------------------
    def scale_loss(self, loss):
        """Multiplies the loss by ``loss_scale_factor`` when one is set."""
        if self.loss_scale_factor is not None:
            return loss * self.loss_scale_factor
        return loss

    def compute_gradients(self, loss, var_list, tape=None):
        """Gradients of ``loss`` for ``var_list`` as ``[(gradient, variable)]``.

        Args:
            loss: A scalar Tensor (then ``tape`` is required) or a zero-argument callable.
            var_list: Variables, or a callable returning them (called after ``loss``).
            tape: The GradientTape that recorded a Tensor ``loss``.

        Raises:
            ValueError: If ``loss`` is a Tensor and no tape is given.
        """
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed. Received: "
                             "loss=%s, tape=None. Pass the GradientTape that computed the "
                             "loss, or pass the loss as a callable." % (loss,))
        if tape is None:
            tape = ef.GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        elif callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list)
        return list(zip(grads, var_list))

    def minimize(self, loss, var_list, tape=None):
        """Computes gradients of ``loss`` and applies them; returns ``iterations``.

        Args:
            loss: A scalar Tensor (with ``tape``) or a zero-argument callable.
            var_list: Variables, or a callable returning them.
            tape: The GradientTape that recorded a Tensor ``loss``.

        Returns:
            The ``iterations`` variable.

        Raises:
            ValueError: If ``loss`` is a Tensor and no tape is given.

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.keras import optimizers
            >>> w = ef.Variable(3.0)
            >>> _ = optimizers.SGD(0.25).minimize(lambda: w * w, [w])
            >>> float(w)
            1.5
        """
        return self.apply_gradients(self.compute_gradients(loss, var_list, tape))
