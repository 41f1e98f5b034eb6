"""``Optimizer``: the base of every Keras optimizer (Keras 3 semantics).

One ``apply`` does, in order: drop ``None`` gradients (with a warning naming the
variables), divide by ``loss_scale_factor``, clip (``clipnorm`` per variable, ``clipvalue``
elementwise or ``global_clipnorm`` over all gradients), decoupled weight decay
(``var -= var * weight_decay * lr``), the algorithm's ``update_step`` for each variable,
the moving average of the weights (``use_ema``), ``iterations += 1``, then variable
constraints.

Slot variables (momenta, accumulators) are made lazily, the first time a variable is
seen, through ``add_variable_from_reference``; ``variables`` lists ``iterations``, the
learning-rate variable and the slots in creation order, and ``get_slot(var, name)``
finds one slot. All updates are written with eagerflow ops and ``Variable.assign*``:
nothing branches in Python on a tensor's value, so the same code runs traced inside
``@eagerflow.function``. Where Keras uses ``ops.cond`` on a step count (gradient
accumulation, EMA overwrite) both outcomes are computed and one is selected with
``where``.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import optimizers
    >>> w = ef.Variable([1.0, 2.0])
    >>> opt = optimizers.SGD(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(ef.constant([1.0, 1.0]), w)])
    >>> [round(x, 6) for x in w.numpy().tolist()], int(opt.iterations)
    ([0.9, 1.9], 1)
"""

from __future__ import annotations

import re
import warnings

import eagerflow as ef
from eagerflow.framework import strategy_context
from eagerflow.keras.optimizers import fused_updates
from eagerflow.keras.optimizers import schedules as schedules_lib
from eagerflow.keras.optimizers.optimizer_gradients import GradientTransformsMixin
from eagerflow.keras.optimizers.optimizer_slots import SlotsMixin
from eagerflow.keras.optimizers.optimizer_utils import (
    _cast,
    _check_nonneg,
    _dense,
    floatx,
)
from eagerflow.module import Module

__all__ = ["Optimizer"]


class Optimizer(SlotsMixin, GradientTransformsMixin, Module):
    """Base class for optimizers; subclasses implement ``update_step``.

    Args:
        learning_rate: A float, a ``Variable``, a ``LearningRateSchedule`` (called with
            ``iterations`` before each update), or a zero-argument callable.
        weight_decay: If set, decoupled weight decay ``var -= var * weight_decay * lr``
            is applied before each update.
        clipnorm: If set, each gradient is clipped to this L2 norm.
        clipvalue: If set, each gradient is clipped elementwise to
            ``[-clipvalue, clipvalue]``.
        global_clipnorm: If set, all gradients are scaled so that their global norm is
            at most this value. Only one of the three clipping options may be set.
        use_ema: Keep an exponential moving average of the weights (slot ``average``).
        ema_momentum: ``average = m * average + (1 - m) * var`` (the first step copies).
        ema_overwrite_frequency: Every this many steps, write the averages into the
            variables; None means only on ``finalize_variable_values``.
        loss_scale_factor: If set, ``scale_loss`` multiplies the loss by it and
            gradients are divided by it before use.
        gradient_accumulation_steps: If an int >= 2, gradients are summed and the
            variables updated every this many calls with their mean.
        name: The optimizer's name (default: the class name in snake_case).
        **kwargs: ``decay`` is accepted and ignored with a warning, as in Keras 3.

    Raises:
        ValueError: On an unknown keyword argument, more than one clipping option, or
            an out-of-range value (the message names the argument).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.optimizers import Optimizer
        >>> class PlainSGD(Optimizer):
        ...     def update_step(self, gradient, variable, learning_rate):
        ...         variable.assign_sub(gradient * ef.cast(learning_rate, variable.dtype))
        >>> w = ef.Variable(1.0)
        >>> PlainSGD(learning_rate=0.5).apply([ef.constant(1.0)], [w])
        >>> float(w)
        0.5
    """

    # Model variables are referenced but not owned: keep them out of Module tracking.
    _TF_MODULE_IGNORED_PROPERTIES = Module._TF_MODULE_IGNORED_PROPERTIES | frozenset((
        "_trainable_variables", "_var_index", "_slots", "_exclude_ids",
        "_exclude_cache"))

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored.",
                          stacklevel=3)
        if kwargs:
            hint = " Use `learning_rate` instead of `lr`." if "lr" in kwargs else ""
            raise ValueError("Argument(s) not recognized: %s.%s" % (kwargs, hint))
        # Keras names are free-form; the Module (name scope) name is sanitized.
        super().__init__(name=None if name is None else
                         (re.sub(r"[^\w.\-]", "_", str(name)).lstrip(".-") or "optimizer"))
        if name is not None:
            self._name = str(name)
        clip_args = [a is not None for a in (clipnorm, clipvalue, global_clipnorm)]
        if sum(clip_args) > 1:
            raise ValueError(
                "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                "Received: clipnorm=%r, clipvalue=%r, global_clipnorm=%r"
                % (clipnorm, clipvalue, global_clipnorm))
        for arg, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                           ("global_clipnorm", global_clipnorm),
                           ("weight_decay", weight_decay)):
            _check_nonneg(arg, value)
        if gradient_accumulation_steps and (not isinstance(gradient_accumulation_steps, int)
                                            or gradient_accumulation_steps < 2):
            raise ValueError("`gradient_accumulation_steps` must be an integer >= 2. "
                             "Received: gradient_accumulation_steps=%r"
                             % (gradient_accumulation_steps,))
        if use_ema:
            _check_nonneg("ema_momentum", ema_momentum, upper=1)
            if ema_overwrite_frequency and (not isinstance(ema_overwrite_frequency, int)
                                            or ema_overwrite_frequency < 1):
                raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or "
                                 "None. Received: ema_overwrite_frequency=%r"
                                 % (ema_overwrite_frequency,))
        if loss_scale_factor is not None and not loss_scale_factor > 0:
            raise ValueError("`loss_scale_factor` must be a positive number or None. "
                             "Received: loss_scale_factor=%r" % (loss_scale_factor,))
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self.use_ema = bool(use_ema)
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.built = False
        self._variables = []
        self._trainable_variables = []
        self._var_index = {}
        self._slots = {}
        self._exclude_ids = set()
        self._exclude_pattern = None
        self._exclude_cache = {}
        with self.name_scope:
            self._iterations = ef.Variable(
                0, dtype=ef.int64, name="iteration", trainable=False,
                aggregation=ef.VariableAggregation.ONLY_FIRST_REPLICA)
        self._variables.append(self._iterations)
        self._learning_rate = None
        self._learning_rate = self._build_learning_rate(learning_rate)

    # -- learning rate ------------------------------------------------------------------------
    def _build_learning_rate(self, learning_rate):
        if isinstance(learning_rate, schedules_lib.LearningRateSchedule):
            return learning_rate
        if getattr(learning_rate, "_is_variable", False):
            self._track(learning_rate)
            return learning_rate
        if callable(learning_rate):
            return learning_rate
        if isinstance(learning_rate, ef.Tensor):
            learning_rate = learning_rate.numpy()
        try:
            value = float(learning_rate)
        except (TypeError, ValueError):
            raise ValueError(
                "Argument `learning_rate` should be a float, a Variable, an instance of "
                "LearningRateSchedule, or a callable (that takes in the current iteration "
                "value and returns the corresponding learning rate value). Received "
                "instead: learning_rate=%r" % (learning_rate,)) from None
        with self.name_scope:
            variable = ef.Variable(value, dtype=floatx(), name="learning_rate",
                                   trainable=False,
                                   aggregation=ef.VariableAggregation.ONLY_FIRST_REPLICA)
        self._track(variable)
        return variable


    @property
    def learning_rate(self):
        """The current learning rate: the variable, or the schedule's value now."""
        return self._current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        previous = self._learning_rate
        is_var = getattr(previous, "_is_variable", False)
        if isinstance(learning_rate, schedules_lib.LearningRateSchedule) or (
                callable(learning_rate) and not getattr(learning_rate, "_is_variable", False)):
            self._learning_rate = learning_rate
        elif is_var and not getattr(learning_rate, "_is_variable", False):
            previous.assign(_cast(learning_rate, previous.dtype))
            return
        elif isinstance(previous, schedules_lib.LearningRateSchedule):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object as its "
                "`learning_rate` constructor argument, hence its learning rate is not "
                "settable. If you need the learning rate to be settable, you should "
                "instantiate the optimizer with a float `learning_rate` argument.")
        else:
            self._learning_rate = self._build_learning_rate(learning_rate)
        if is_var and self._learning_rate is not previous:
            self._variables = [v for v in self._variables if v is not previous]

    lr = learning_rate  # tf.keras 2 alias

    def _current_learning_rate(self):
        lr = self._learning_rate
        if isinstance(lr, schedules_lib.LearningRateSchedule):
            return lr(self._iterations)
        if callable(lr) and not getattr(lr, "_is_variable", False):
            return lr()
        return lr

    # -- state --------------------------------------------------------------------------------
    @property
    def iterations(self):
        """The number of update steps applied (an int64 Variable).

        With ``gradient_accumulation_steps`` it is the number of real updates, a tensor.
        """
        if self.gradient_accumulation_steps:
            return self._iterations // self.gradient_accumulation_steps
        return self._iterations

    @iterations.setter
    def iterations(self, value):
        self._iterations.assign(_cast(value, ef.int64))


    # -- applying gradients -------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars, name=None, **kwargs):
        """Applies ``(gradient, variable)`` pairs; returns ``iterations``.

        Args:
            grads_and_vars: An iterable of ``(gradient, variable)``; ``None`` gradients
                are skipped with a warning naming the variables.
            name: Unused (tf.keras 2 compatibility).
            **kwargs: ``skip_gradients_aggregation=True`` (Keras) or
                ``experimental_aggregate_gradients=False`` (tf.keras 2): under a
                distribution strategy, apply the gradients as given, without the
                all-reduce across replicas (the caller already reduced them).

        Returns:
            The ``iterations`` variable.

        Raises:
            ValueError: If every gradient is None.

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.keras import optimizers
            >>> w = ef.Variable(1.0)
            >>> it = optimizers.SGD(0.5).apply_gradients([(ef.constant(2.0), w)])
            >>> float(w), int(it)
            (0.0, 1)
        """
        unknown = set(kwargs) - {"experimental_aggregate_gradients",
                                 "skip_gradients_aggregation"}
        if unknown:
            raise TypeError("apply_gradients() got unexpected keyword argument(s) %s"
                            % sorted(unknown))
        aggregate = kwargs.get("experimental_aggregate_gradients", True) and \
            not kwargs.get("skip_gradients_aggregation", False)
        pairs = list(grads_and_vars)
        if not pairs:
            return self._iterations
        grads, variables = zip(*pairs)
        if aggregate:
            self.apply(list(grads), list(variables))
        else:
            # Every replica passes the same flag, so one attribute serves them all.
            self._skip_aggregation = True
            try:
                self.apply(list(grads), list(variables))
            finally:
                self._skip_aggregation = False
        return self._iterations

    def apply(self, grads, trainable_variables=None):
        """Updates ``trainable_variables`` with ``grads`` (one gradient per variable).

        Args:
            grads: A list of gradients (Tensors, IndexedSlices or None).
            trainable_variables: The variables, in the same order. May be omitted once
                the optimizer is built; the built variable list is used then.

        Under a distribution strategy, in replica context (inside ``strategy.run``) the
        gradients are summed across replicas once (one all-reduce for all of them) and
        each replica then applies the same update to its own copy of every variable; in
        cross-replica context the update is applied to every copy.

        Raises:
            ValueError: If the lists do not match, or every gradient is None.
        """
        self._apply(grads, trainable_variables, not self._skip_aggregation)

    _skip_aggregation = False

    def _apply(self, grads, trainable_variables, aggregate):
        grads = list(grads)
        if not grads:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError(
                    "When passing `grads` without `variables`, the optimizer must already "
                    "be built on a list of variables. Call "
                    "`optimizer.build(trainable_variables)` first.")
            trainable_variables = list(self._trainable_variables)
        else:
            trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(
                "Received %d gradients for %d variables; pass one gradient (or None) per "
                "variable, in the same order." % (len(grads), len(trainable_variables)))
        replica = strategy_context.current_replica_context()
        if replica is None or replica.num_replicas_in_sync == 1:
            self._ensure_built(trainable_variables)
            self._update(grads, trainable_variables)
            return
        self._check_distributed(trainable_variables)
        if self._needs_build(trainable_variables):
            # Slots are made once, in cross-replica context, so they are mirrored too.
            replica.merge_call(lambda _strategy: self._ensure_built(trainable_variables))
        if aggregate:
            kept = [k for k, g in enumerate(grads) if g is not None]
            summed = replica.all_reduce("SUM", [_dense(grads[k]) for k in kept])
            for k, g in zip(kept, summed):
                grads[k] = g
        # Every replica now holds the same gradients and computes the same update: each
        # writes its own copy of the variables and slots, with no further communication.
        with strategy_context.local_updates():
            self._update(grads, trainable_variables)

    def _update(self, grads, trainable_variables):
        grads, trainable_variables = self._filter_empty_gradients(grads,
                                                                  trainable_variables)
        grads = [_dense(g) for g in grads]
        if self.loss_scale_factor is not None:
            grads = [g / ef.constant(self.loss_scale_factor, dtype=g.dtype) for g in grads]
        self._apply_dense(grads, trainable_variables)
        for variable in trainable_variables:
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))


    def _check_distributed(self, variables):
        if not getattr(self._iterations, "_is_distributed_variable", False):
            raise ValueError(
                "Optimizer %s was created outside the distribution strategy's scope but is "
                "used inside strategy.run: its step counter and slots would be shared by "
                "every replica. Create the optimizer inside `with strategy.scope():` (as "
                "the model)." % self.name)
        for v in variables:
            if not getattr(v, "_is_distributed_variable", False):
                raise ValueError(
                    "Variable %s was created outside the distribution strategy's scope but "
                    "is updated inside strategy.run: every replica would apply the update "
                    "to the one shared copy. Create the model (and its variables) inside "
                    "`with strategy.scope():`." % v.name)


    def _apply_dense(self, grads, variables):
        """Clipping, weight decay, update steps, EMA and the step counter."""
        learning_rate = self._current_learning_rate()
        if self.gradient_accumulation_steps:
            self._accumulate_and_maybe_update(grads, variables, learning_rate)
        else:
            grads = self._clip_gradients(grads)
            self._apply_weight_decay(variables, learning_rate)
            self._update_step_all(grads, variables, learning_rate)
        if self.use_ema:
            self._update_moving_averages()
        self._iterations.assign_add(1)

    def _update_step_all(self, grads, variables, learning_rate):
        """Runs ``update_step`` per variable (a strategy may override this hook).

        A variable held by another task (a parameter server's) names the device of its
        update in ``_update_device``: the update's arithmetic runs there, next to the
        variable and its slots, so only the gradient travels (TF colocates an update with
        its variable the same way).

        Under a strategy that shards optimizer updates across workers
        (``extended._sharded_updates``, MultiWorkerMirroredStrategy's
        ``shard_optimizer_updates``), each worker runs ``update_step`` on its own rows
        of every variable and the rows are all-gathered.

        Eagerly, a GPU variable's ``update_step`` runs traced (``fused_updates``): its
        graph's update is one generated kernel instead of one kernel per op.
        """
        replica = strategy_context.current_replica_context()
        if replica is not None:
            sharded = getattr(replica.strategy.extended, "_sharded_updates", None)
            if sharded is not None and sharded.applies_to(self):
                sharded.update_step_all(self, grads, variables, learning_rate)
                return
        for grad, var in zip(grads, variables):
            device = getattr(var, "_update_device", None)
            if device is None:
                if fused_updates.wanted(self, var):
                    # A GPU variable: the traced update, one generated kernel.
                    fused_updates.update(self, grad, var, learning_rate)
                else:
                    self.update_step(grad, var, learning_rate)
            else:
                with ef.device(device):
                    self.update_step(grad, var, learning_rate)

    def update_step(self, gradient, variable, learning_rate):
        """Updates one variable; subclasses implement the algorithm here.

        Args:
            gradient: The (dense, clipped) gradient tensor.
            variable: The variable to update.
            learning_rate: The learning rate for this step (Variable or tensor).
        """
        raise NotImplementedError("%s must implement update_step(gradient, variable, "
                                  "learning_rate)." % type(self).__name__)


    def get_config(self):
        """The optimizer's constructor arguments (Keras 3 keys)."""
        lr = self._learning_rate
        if isinstance(lr, schedules_lib.LearningRateSchedule):
            lr = schedules_lib.serialize(lr)
        elif getattr(lr, "_is_variable", False):
            lr = float(lr.numpy())
        return {
            "name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue, "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
            "loss_scale_factor": self.loss_scale_factor,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Creates an optimizer from ``get_config``'s output."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules_lib.deserialize(
                config["learning_rate"], custom_objects=custom_objects)
        return cls(**config)
