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
from eagerflow.keras.optimizers import schedules as schedules_lib
from eagerflow.module import Module

__all__ = ["Optimizer"]

_AGGREGATIONS = {
    None: ef.VariableAggregation.NONE, "none": ef.VariableAggregation.NONE,
    "sum": ef.VariableAggregation.SUM, "mean": ef.VariableAggregation.MEAN,
    "only_first_replica": ef.VariableAggregation.ONLY_FIRST_REPLICA,
}


def floatx():
    """Keras' default float dtype name (``eagerflow.keras.backend.floatx()`` if present)."""
    try:
        from eagerflow.keras import backend
    except ImportError:
        return "float32"
    get = getattr(backend, "floatx", None)
    return get() if get is not None else "float32"


def _cast(x, dtype):
    """``x`` as a tensor of ``dtype`` (no op when it already is one)."""
    if getattr(x, "_is_variable", False):
        x = x.read_value()
    if isinstance(x, ef.Tensor):
        return x if x.dtype is dtype else ef.cast(x, dtype)
    return ef.constant(x, dtype=dtype)


def _dense(grad):
    """A gradient as a dense tensor (IndexedSlices are summed into their rows)."""
    if isinstance(grad, ef.IndexedSlices):
        return ef.convert_to_tensor(grad)
    return grad if isinstance(grad, ef.Tensor) else ef.convert_to_tensor(grad)


def _check_nonneg(name, value, upper=None):
    if value is None:
        return
    if not isinstance(value, (int, float)) or value < 0 or (upper is not None and
                                                             value > upper):
        bound = "[0, %s]" % upper if upper is not None else ">= 0"
        raise ValueError("Argument `%s` must be a number %s. Received: %s=%r"
                         % (name, bound, name, value))


def _named_initializer(initializer, shape, dtype, name):
    """A Keras initializer given by name ("glorot_uniform", ...), called once."""
    try:
        from eagerflow.keras import initializers
        init = initializers.get(initializer)
    except (ImportError, ValueError, TypeError):
        raise ValueError("Unsupported initializer %r for variable %r; use 'zeros', 'ones', a "
                         "number, a Keras initializer name, or a callable (shape, dtype)."
                         % (initializer, name)) from None
    return init(shape, dtype=dtype)


class Optimizer(Module):
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

    def _track(self, variable):
        if all(v is not variable for v in self._variables):
            self._variables.append(variable)

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

    @property
    def variables(self):
        """``iterations``, the learning-rate variable, then the slots in creation order."""
        return list(self._variables)

    @property
    def trainable_variables(self):
        return ()

    @property
    def non_trainable_variables(self):
        return tuple(self._variables)

    def _var_key(self, variable):
        key = getattr(variable, "unique_id", None)
        return id(variable) if key is None else key

    def _get_variable_index(self, variable):
        return self._var_index[self._var_key(variable)]

    def get_slot_names(self):
        """The names of the slots this optimizer keeps per variable."""
        names = []
        for table in self._slots.values():
            names.extend(n for n in table if n not in names)
        return names

    def get_slot(self, var, slot_name):
        """The slot variable ``slot_name`` of model variable ``var``.

        Raises:
            KeyError: If ``var`` has no such slot (it was never updated, or the
                optimizer keeps no slot of that name); the message lists what exists.
        """
        table = self._slots.get(self._var_key(var))
        if table is None or slot_name not in table:
            raise KeyError("No slot %r for variable %s in optimizer %s. Slots it has: %s"
                           % (slot_name, getattr(var, "name", var), self.name,
                              sorted(table) if table else "none (variable not built)"))
        return table[slot_name]

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="mean",
                     name=None):
        """Creates an optimizer variable (not trainable) and tracks it.

        Args:
            shape: The variable's shape.
            initializer: "zeros", "ones", a number, or a callable ``(shape, dtype)``.
            dtype: The dtype (default: Keras' floatx).
            aggregation: "none", "sum", "mean" or "only_first_replica".
            name: Its name within the optimizer's name scope.

        Returns:
            The new Variable.
        """
        dtype = ef.as_dtype(dtype or floatx())
        shape = [int(d) for d in shape]
        if callable(initializer):
            value = initializer(shape, dtype)
        elif initializer == "zeros":
            value = ef.zeros(shape, dtype=dtype)
        elif initializer == "ones":
            value = ef.ones(shape, dtype=dtype)
        elif isinstance(initializer, (int, float)):
            value = ef.fill(shape, ef.constant(initializer, dtype=dtype))
        else:
            value = _named_initializer(initializer, shape, dtype, name)
        with self.name_scope:
            variable = ef.Variable(value, dtype=dtype, name=name, trainable=False,
                                   aggregation=_AGGREGATIONS[aggregation])
        self._track(variable)
        return variable

    def add_variable_from_reference(self, reference_variable, name=None,
                                    initializer="zeros"):
        """Creates a slot with the shape, dtype and device of ``reference_variable``.

        Args:
            reference_variable: The model variable the slot belongs to.
            name: The slot's name (e.g. "momentum").
            initializer: "zeros", "ones", a number, or a callable ``(shape, dtype)``.

        Returns:
            The new Variable, also registered so ``get_slot(reference, name)`` finds it.
        """
        slot = name or "var"
        base = str(reference_variable.name).split(":")[0].replace("/", "_")
        value = reference_variable.read_value()
        dtype = value.dtype
        if callable(initializer):
            init = initializer(list(value.shape), dtype)
        elif initializer == "zeros":
            init = ef.zeros_like(value)
        elif initializer == "ones":
            init = ef.ones_like(value)
        elif isinstance(initializer, (int, float)):
            init = ef.zeros_like(value) + ef.constant(initializer, dtype=dtype)
        else:
            init = _named_initializer(initializer, list(value.shape), dtype, slot)
        with ef.device(reference_variable.device), self.name_scope:
            variable = ef.Variable(init, name=base + "_" + slot, trainable=False,
                                   shape=reference_variable.shape)
        self._track(variable)
        self._slots.setdefault(self._var_key(reference_variable), {})[slot] = variable
        return variable

    def build(self, var_list):
        """Creates the slots of every variable in ``var_list`` not seen before.

        Called by ``apply`` on first use; calling it ahead (e.g. at compile time) makes
        every optimizer variable before any step, which a traced train step prefers.

        Args:
            var_list: The model variables this optimizer will update.
        """
        new = []
        for v in var_list:
            key = self._var_key(v)
            if key not in self._var_index:
                self._var_index[key] = len(self._trainable_variables)
                self._trainable_variables.append(v)
                new.append(v)
        if new:
            self._build_slots(new)
        self.built = True

    def _slot_specs(self):
        """``[(slot_name, initializer), ...]``: the algorithm's per-variable slots."""
        return []

    def _build_slots(self, new_vars):
        for v in new_vars:
            if self.use_ema:
                self.add_variable_from_reference(v, "average")
            if self.gradient_accumulation_steps:
                self.add_variable_from_reference(v, "gradient_accumulator")
        # Grouped by slot kind, so a single build lists slots in Keras' order.
        for slot, initializer in self._slot_specs():
            for v in new_vars:
                self.add_variable_from_reference(v, slot, initializer=initializer)

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

    def _needs_build(self, variables):
        return not self.built or any(self._var_key(v) not in self._var_index
                                     for v in variables)

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

    def _ensure_built(self, variables):
        if not self.built:
            self.build(variables)
            return
        new = [v for v in variables if self._var_key(v) not in self._var_index]
        if not new:
            return
        if type(self).build is not Optimizer.build:
            # A subclass with its own build() keeps per-list slots: Keras' rule applies.
            raise ValueError(
                "Unknown variable: %s. This optimizer can only be called for the variables "
                "it was originally built with. When working with a new set of variables, "
                "you should recreate a new optimizer instance." % new[0].name)
        self.build(new)

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
        """
        for grad, var in zip(grads, variables):
            device = getattr(var, "_update_device", None)
            if device is None:
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

    def _state_variables(self, variables, exclude=()):
        """Model variables plus every optimizer variable except ``iterations``."""
        skip = {id(v) for v in exclude}
        skip.add(id(self._iterations))
        out, seen = [], set()
        for v in list(variables) + self._variables:
            if id(v) not in skip and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

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

    # -- weights and config -------------------------------------------------------------------
    def get_weights(self):
        """The values of ``variables`` as numpy arrays."""
        return [v.numpy() for v in self.variables]

    def set_weights(self, weights):
        """Assigns values to ``variables`` (same order and shapes).

        Raises:
            ValueError: If the number of weights or a shape does not match.
        """
        weights = list(weights)
        variables = self.variables
        if len(weights) != len(variables):
            raise ValueError("Optimizer %s has %d variables but %d weights were given. Build "
                             "it first (optimizer.build(var_list)) so its slots exist."
                             % (self.name, len(variables), len(weights)))
        for variable, value in zip(variables, weights):
            variable.assign(_cast(ef.convert_to_tensor(value), variable.dtype)
                            if not isinstance(value, (int, float)) else value)

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
