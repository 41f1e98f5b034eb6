"""Sharded optimizer updates across workers (ZeRO stage 1, as PyTorch's
``ZeroRedundancyOptimizer``).

Without sharding every worker applies the same update to every variable: after the
gradient all-reduce each computes the whole optimizer step, redundantly. With sharding
each worker updates only its share of the rows of every variable and keeps the optimizer
slots (Adam's moments) of those rows only; the updated rows are then all-gathered, so
every worker ends the step with the whole new value.

- The split is by rows (the first axis), over the optimizer's variables taken as one
  flat sequence in their build order: worker ``r`` owns the rows that start in the
  ``r``-th ``1/size`` of all the elements, so the work is even whatever the layer sizes
  are and a variable may be split between workers or belong to one. A worker's rows of a
  variable are then a view of its gradient and its value (no copy), its slots keep the
  variable's trailing shape, and its rows of all the variables are one contiguous run of
  the elements in order: one all-gather per step returns every new value.
- The arithmetic of each element is the unsharded arithmetic on the same numbers, so the
  variables and slots are bit for bit what a worker updating everything computes.
- Slots become :class:`ShardedSlot` variables: the optimizer and checkpoints see the
  full shape, each worker stores its rows. Read in cross-replica context (a checkpoint
  save, ``get_weights``) a slot all-gathers its rows: a collective, so every worker must
  read it, as every worker runs a multi-worker save (``worker_context.write_path``), the
  same rule as for on-read variables. An assignment in cross-replica context (a restore)
  keeps this worker's rows of the value. A checkpoint is therefore the same as one
  written without sharding, and either restores into the other.
- Optimizers whose update of a variable is not elementwise in the rows (none of the
  built-in ones), or with EMA or gradient accumulation (their extra slots are updated
  outside the per-variable step), are updated unsharded.

Example (one worker: nothing is sharded)::

    strategy = ef.distribute.MultiWorkerMirroredStrategy(
        communication_options=ef.distribute.experimental.CommunicationOptions(
            shard_optimizer_updates=True))
"""

from __future__ import annotations

import numpy as np

from eagerflow import variables as variables_lib
from eagerflow.distribute import values as values_lib
from eagerflow.framework import strategy_context
from eagerflow.tensor import convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["ShardedUpdates", "ShardedSlot", "row_split"]


def row_split(shapes, size):
    """``[[(lo, hi) per rank] per variable]``: the rows each rank owns.

    Rank ``r`` owns the rows whose first element falls in ``[total * r / size,
    total * (r + 1) / size)`` of the variables' elements taken in order (a scalar is one
    row of one element).

    Example:
        >>> from eagerflow.distribute.update_sharding import row_split
        >>> row_split([(4, 2), (2,)], 2)
        [[(0, 3), (3, 4)], [(0, 0), (0, 2)]]
    """
    total = sum(int(np.prod(s, dtype=np.int64)) for s in shapes)
    cuts = [total * r // size for r in range(size + 1)]
    out, offset = [], 0
    for shape in shapes:
        rows = int(shape[0]) if len(shape) else 1
        row = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
        ranges = []
        for r in range(size):
            lo, hi = (min(rows, max(0, -(-(cuts[k] - offset) // row))) if row else 0
                      for k in (r, r + 1))
            ranges.append((lo, hi if r < size - 1 else rows))
        out.append(ranges)
        offset += rows * row
    return out


class _ShardParam:
    """What ``update_step`` sees of a variable: this worker's rows, written to a tensor.

    The optimizer reads and writes it as the variable (``assign_sub``, ``dtype``, its
    slots through ``unique_id``); the rows it leaves are all-gathered into the variable.
    """

    _is_variable = False

    def __init__(self, variable, value):
        self._variable = variable
        self.value = value
        self.dtype = variable.dtype
        self.shape = value.shape
        self.name = variable.name
        self.unique_id = variable.unique_id
        self.constraint = None

    def _as_tensor(self, dtype=None):
        return self.value

    def read_value(self):
        return self.value

    def assign(self, value, use_locking=None, name=None, read_value=True):
        self.value = convert_to_tensor(value, dtype=self.dtype)
        return self

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        self.value = self.value + delta
        return self

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        self.value = self.value - delta
        return self


class ShardedSlot(values_lib.DistributedVariableMixin, variables_lib.Variable):
    """An optimizer slot of which each worker stores its own rows (see the module).

    In replica context it is this worker's rows (what the sharded update reads and
    writes); in cross-replica context reading it all-gathers the rows (every worker must
    read) and assigning to it keeps this worker's rows of the value.

    Args:
        strategy: The strategy.
        shard: The plain Variable holding this worker's rows.
        full: The slot it replaces (its name and shape are kept).
        rows: This worker's ``(lo, hi)`` rows.
    """

    def __init__(self, strategy, shard, full, rows):
        self._setup(strategy, [shard], variables_lib.VariableAggregation.NONE)
        self._shape = TensorShape(full.shape)
        self._name = full.name
        self._rows = rows
        self._scalar = full.shape.rank == 0

    def _local(self):
        return strategy_context.current_replica_context() is not None

    def read_value(self):
        shard = self._read_component(self._primary)
        if self._local():
            return shard
        from eagerflow.ops.array.reshape_ops import reshape

        if self._scalar:
            shard = reshape(shard, [-1])
        out = self._distribute_strategy.extended._gather([shard], 0)
        return reshape(out, []) if self._scalar else out

    @property
    def _value(self):
        return np.asarray(self.read_value()._value)

    def _rows_of(self, value):
        """This worker's rows of a full-shaped value (a scalar delta is kept whole)."""
        t = convert_to_tensor(value, dtype=self.dtype)
        if self._scalar:
            from eagerflow.ops.array.reshape_ops import reshape

            t = reshape(t, [1])
        elif t.shape.rank == 0:
            return t
        return t[self._rows[0]:self._rows[1]]

    def _write(self, array):
        self._primary._write(np.array(self._rows_of(array)._value))

    def _update(self, method, value, read_value):
        self._check_not_traced_per_replica(value)
        if not self._local():
            value = self._rows_of(value)
        getattr(self._primary, method)(value, read_value=False)
        return self if read_value else None

    def __repr__(self):
        return "<ShardedSlot '%s' shape=%s rows=%s>" % (self._name, self._shape, self._rows)


class ShardedUpdates:
    """Runs an optimizer's per-variable updates on this worker's rows (the strategy's part).

    Args:
        extended: The strategy's ``MultiWorkerExtended``.
    """

    def __init__(self, extended):
        self._extended = extended
        self._plans = {}  # id(optimizer) -> {variable key: (lo, hi)}

    @staticmethod
    def applies_to(optimizer):
        return not optimizer.use_ema and not optimizer.gradient_accumulation_steps

    def _plan(self, optimizer):
        plan = self._plans.get(id(optimizer))
        if plan is None or plan[0] is not optimizer:
            built = list(optimizer._trainable_variables)
            comm = self._extended._comm
            ranges = row_split([tuple(v.shape.as_list()) for v in built], comm.size)
            plan = self._plans[id(optimizer)] = (optimizer, {
                optimizer._var_key(v): r[comm.rank] for v, r in zip(built, ranges)})
        return plan[1]

    def update_step_all(self, optimizer, grads, variables, learning_rate):
        """``optimizer.update_step`` on this worker's rows, then the rows all-gathered."""
        from eagerflow.ops.array.join_ops import concat
        from eagerflow.ops.array.reshape_ops import reshape

        plan = self._plan(optimizer)
        replica = strategy_context.current_replica_context()
        mine, sizes, targets = [], [], []
        for grad, var in zip(grads, variables):
            rows = plan.get(optimizer._var_key(var))
            if rows is None:  # built after the plan: updated whole, unsharded slots
                optimizer.update_step(grad, var, learning_rate)
                continue
            self._shard_slots(optimizer, var, rows)
            shape = var.shape.as_list()
            param = _ShardParam(var, _rows(var.read_value(), rows))
            if rows[1] > rows[0]:
                optimizer.update_step(_rows(grad, rows), param, learning_rate)
            mine.append(reshape(param.value, [-1]))
            sizes.append(int(np.prod(shape, dtype=np.int64)))
            targets.append((var, shape))
        if not targets:
            return
        # This worker's rows of all the variables are one contiguous run of their
        # elements taken in order (``row_split``), so one gather, in rank order, gives
        # every element: one collective per step instead of one per variable (each is a
        # point where a worker waits for the slowest; on a loaded machine each costs a
        # scheduling delay). The variables' values are views of it.
        flat = concat(mine, 0) if len(mine) > 1 else mine[0]
        full = self._gather(replica, flat, sum(sizes))
        parts = _split(full, sizes)
        for (var, shape), part in zip(targets, parts):
            var.assign(reshape(part, shape))

    def _gather(self, replica, rows_value, rows):
        from eagerflow.distribute import collective_ops
        from eagerflow.framework import context
        from eagerflow.tensor import wrap

        if context.state.trace is not None:
            return collective_ops.all_gather(self._extended, replica, rows_value, rows)
        out = self._extended._comm.allgather(np.asarray(rows_value._value),
                                             name="sharded update")
        return wrap(out, rows_value._device)

    def _shard_slots(self, optimizer, var, rows):
        table = optimizer._slots.get(optimizer._var_key(var), {})
        for name, slot in list(table.items()):
            if isinstance(slot, ShardedSlot):
                continue
            shard = _make_shard(slot, rows)
            sharded = ShardedSlot(self._extended._container, shard, slot, rows)
            shard._distributed_container = sharded
            table[name] = sharded
            optimizer._variables[:] = [sharded if v is slot else v
                                       for v in optimizer._variables]


def _split(value, sizes):
    from eagerflow.ops.array.join_ops import split

    return split(value, sizes, axis=0) if len(sizes) > 1 else [value]


def _rows(value, rows):
    """Rows ``lo:hi`` of ``value`` (a scalar as a vector of one), as a view: split
    returns views where slicing copies (two 1.3 MB copies a step on the MLP)."""
    from eagerflow.ops.array.reshape_ops import reshape

    if value.shape.rank == 0:
        value = reshape(value, [1])
    n, (lo, hi) = value.shape[0], rows
    if (lo, hi) == (0, n):
        return value
    return _split(value, [lo, hi - lo, n - hi])[1]


def _make_shard(slot, rows):
    """A plain (not mirrored) variable holding ``rows`` of ``slot``'s current value."""
    from eagerflow.framework import context

    value = np.asarray(slot._component()._value)
    value = value.reshape(1) if value.ndim == 0 else value
    part = np.array(value[rows[0]:rows[1]])
    saved = variables_lib.set_creator_stack(())
    previous = context.set_trace_hook(None)
    try:
        with _on(slot):
            return variables_lib.Variable(part, trainable=False,
                                          name=slot.name.split(":")[0] + "/shard")
    finally:
        context.set_trace_hook(previous)
        variables_lib.set_creator_stack(saved)


def _on(slot):
    from eagerflow.framework.device_scope import device

    return device(slot.device)
