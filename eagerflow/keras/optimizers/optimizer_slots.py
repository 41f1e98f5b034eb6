"""An optimizer's variables: the tracked model variables, the slots made for them
(``add_variable_from_reference``, ``get_slot``), building, and weights in and out.
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.initial_values import initial_value, named_initializer
from eagerflow.keras.optimizers.optimizer_utils import _AGGREGATIONS, _cast, floatx


class SlotsMixin:
    """Slot variables and building (mixed into ``Optimizer``)."""

    def _track(self, variable):
        if all(v is not variable for v in self._variables):
            self._variables.append(variable)

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
        value = initial_value(initializer, shape, dtype, name)
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
            init = named_initializer(initializer, list(value.shape), dtype, slot)
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

    def _needs_build(self, variables):
        return not self.built or any(self._var_key(v) not in self._var_index
                                     for v in variables)

    def _ensure_built(self, variables):
        if not self.built:
            self.build(variables)
            return
        new = [v for v in variables if self._var_key(v) not in self._var_index]
        if not new:
            return
        if type(self).build is not SlotsMixin.build:
            # A subclass with its own build() keeps per-list slots: Keras' rule applies.
            raise ValueError(
                "Unknown variable: %s. This optimizer can only be called for the variables "
                "it was originally built with. When working with a new set of variables, "
                "you should recreate a new optimizer instance." % new[0].name)
        self.build(new)

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
