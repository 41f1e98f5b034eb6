"""``eagerflow.Variable``: mutable state, created through a creator stack.

A variable holds an array that ``assign`` replaces (it never mutates an array a tensor may
share, so tensors read earlier keep their values). Updates (``assign``, ``assign_add``,
``assign_sub``, the scatters, and the same ops in a traced graph) hold the variable's lock
from the read of the old value to the write of the new one, so updates from several Python
threads are never lost; reads take no lock. Variables are made through a stack of
creators (``variable_creator_scope``): a distribution strategy pushes a creator that returns
mirrored or remote variables, so model code never needs to know which kind it got.

Example:
    >>> import eagerflow as ef
    >>> v = ef.Variable([1.0, 2.0], name="v")
    >>> v.assign_add([1.0, 1.0]).numpy().tolist()
    [2.0, 3.0]
    >>> (v * 2).numpy().tolist()
    [4.0, 6.0]
"""

from __future__ import annotations

import contextlib
import enum
import threading

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.tensor import Tensor, convert_to_tensor, numpy_text, wrap
from eagerflow.tensor_shape import TensorShape

_new = object.__new__

__all__ = ["Variable", "VariableAggregation", "VariableSynchronization",
           "variable_creator_scope"]

_state = context.state


class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies are synchronized."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How updates from several replicas are combined."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class _CreatorStack(threading.local):
    stack = ()


_creators = _CreatorStack()


def creator_stack():
    """This thread's creator stack (a tuple), to install on a helper thread."""
    return _creators.stack


def set_creator_stack(stack):
    """Replaces this thread's creator stack; returns the previous one.

    For code that runs a caller's work on another thread (a strategy's replica threads),
    so variables made there go through the caller's creators.
    """
    previous = _creators.stack
    _creators.stack = tuple(stack)
    return previous


@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Pushes ``variable_creator(next_creator, **kwargs)`` for variables made in the block.

    A creator may change the keyword arguments, return another variable-like object, or
    call ``next_creator(**kwargs)`` to continue down the stack.

    Example:
        >>> import eagerflow as ef
        >>> def not_trainable(next_creator, **kwargs):
        ...     kwargs["trainable"] = False
        ...     return next_creator(**kwargs)
        >>> with ef.variable_creator_scope(not_trainable):
        ...     v = ef.Variable(1.0)
        >>> v.trainable
        False
    """
    previous = _creators.stack
    _creators.stack = previous + (variable_creator,)
    try:
        yield
    finally:
        _creators.stack = previous


class _VariableMeta(type):
    """Routes ``Variable(...)`` through the creator stack (innermost creator first)."""

    def __call__(cls, *args, **kwargs):
        if cls is not Variable or not _creators.stack:
            return super().__call__(*args, **kwargs)
        kwargs = _bind_args(args, kwargs)

        def base(**kw):
            return type.__call__(Variable, **kw)

        creator = base
        for fn in _creators.stack:  # outermost wraps first, so innermost runs first
            creator = (lambda f, nxt: lambda **kw: f(nxt, **kw))(fn, creator)
        return creator(**kwargs)


_ARG_NAMES = ("initial_value", "trainable", "validate_shape", "caching_device", "name",
              "variable_def", "dtype", "import_scope", "constraint", "synchronization",
              "aggregation", "shape")


def _bind_args(args, kwargs):
    out = dict(zip(_ARG_NAMES, args))
    out.update(kwargs)
    return out


def _scoped_name(base):
    """The name inside the current name scope. As in TF 2 eager, names are not made unique:
    two variables created as ``b`` are both ``b:0`` (identity is the object, not the name)."""
    scope = _state.name_scope
    return scope + base if scope else base


class Variable(metaclass=_VariableMeta):
    """A tensor-like value that persists across calls and can be assigned.

    Args:
        initial_value: A tensor, value, or a callable returning one.
        trainable: Whether tapes watch it automatically (default True; False for
            ``synchronization=ON_READ``).
        validate_shape: If False, the variable's shape may change on assignment.
        name: Name within the name scope; not made unique (as TF 2 eager: two variables
            named ``b`` are both ``b:0``).
        dtype: If given, ``initial_value`` is converted to it.
        constraint: Optional function applied after optimizer updates.
        synchronization: A VariableSynchronization (for distribution strategies).
        aggregation: A VariableAggregation (for distribution strategies).
        shape: Static shape; ``TensorShape(None)`` or None dims allow any shape.

    Raises:
        ValueError: If no initial value is given.
    """

    _is_variable = True
    _is_eagerflow_tensor_like = True
    __array_priority__ = 100

    def __init__(self, initial_value=None, trainable=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 import_scope=None, constraint=None,
                 synchronization=VariableSynchronization.AUTO,
                 aggregation=VariableAggregation.NONE, shape=None,
                 experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        trace = _state.trace
        if trace is not None:
            # Variables made while tracing are created once, eagerly (TF's init_scope), and
            # captured by the graph; the function refuses to create more on later traces.
            trace.on_variable_created(self)
            previous = context.set_trace_hook(None)
            try:
                if callable(initial_value):
                    initial_value = initial_value()
                if getattr(initial_value, "_graph", None) is not None:
                    initial_value = trace.lift(initial_value)
                if initial_value is None:
                    raise ValueError(
                        "A variable created inside a @function needs an initial value that "
                        "does not depend on the function's inputs; pass a constant, an "
                        "initializer callable, or create the variable outside the function.")
                self._init(initial_value, trainable, validate_shape, name, dtype, constraint,
                           synchronization, aggregation, shape)
            finally:
                context.set_trace_hook(previous)
            return
        if callable(initial_value):
            initial_value = initial_value()
        self._init(initial_value, trainable, validate_shape, name, dtype, constraint,
                   synchronization, aggregation, shape)

    def _init(self, initial_value, trainable, validate_shape, name, dtype, constraint,
              synchronization, aggregation, shape):
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable, got %r"
                             % (constraint,))
        synchronization = VariableSynchronization(
            synchronization.value if isinstance(synchronization, VariableSynchronization)
            else synchronization)
        aggregation = VariableAggregation(
            aggregation.value if isinstance(aggregation, VariableAggregation) else aggregation)
        if trainable is None:
            trainable = synchronization is not VariableSynchronization.ON_READ
        elif trainable and synchronization is VariableSynchronization.ON_READ:
            raise ValueError("Synchronization value can be set to "
                             "VariableSynchronization.ON_READ only for non-trainable variables.")
        device = _state.device or context.CPU0
        with _plain_device(device):
            value = convert_to_tensor(initial_value, dtype=dtype) if not isinstance(
                initial_value, Tensor) else initial_value
        if dtype is not None and value.dtype is not dtypes_lib.as_dtype(dtype):
            value = _ops.cast(value, dtype)
        if value._device is not device:
            value = _ops.copy_to_device(value, device)
        self._device = device
        self._value = value._value
        self._lock = threading.Lock()  # held by every read-modify-write (module docstring)
        self._tid = context.new_id()
        self._trainable = bool(trainable)
        self._name = _scoped_name(name or "Variable") + ":0"
        self._constraint = constraint
        self._synchronization = synchronization
        self._aggregation = aggregation
        if shape is not None:
            self._shape = TensorShape(shape)
            if not self._shape.is_compatible_with(self._value.shape):
                raise ValueError("The initial value's shape %s is not compatible with the "
                                 "explicitly supplied shape argument %s."
                                 % (list(self._value.shape), self._shape))
        elif not validate_shape:
            self._shape = TensorShape(None)
        else:
            self._shape = TensorShape(self._value.shape)
        self._initial_value = value

    # -- reading ------------------------------------------------------------------------------
    def read_value(self):
        """Returns the current value as a Tensor (recorded on active tapes).

        Inside a traced function this is a ReadVariableOp node: the value when the graph runs.
        """
        st = _state
        if st.trace is None:
            t = _new(Tensor)  # wrap(), inlined: this read is in every step of a training loop
            t._value = self._value
            t._device = self._device
            t._tid = 0
        else:
            t = st.trace.read_variable(self)
        if st.tapes:
            context.variable_read_hook(self, t)
        return t

    def value(self):
        """The current value as a Tensor."""
        return self.read_value()

    def _as_tensor(self, dtype=None):
        t = self.read_value()
        if dtype is not None and t.dtype is not dtypes_lib.as_dtype(dtype):
            raise errors.InvalidArgumentError(
                None, None, "Variable %s has dtype %s; %s was requested. Use eagerflow.cast."
                % (self._name, t.dtype.name, dtypes_lib.as_dtype(dtype).name))
        return t

    def numpy(self):
        """The current value as a numpy array (a copy)."""
        return wrap(self._value, self._device).numpy()

    def __array__(self, dtype=None, copy=None):
        return wrap(self._value, self._device).__array__(dtype, copy)

    # -- properties ---------------------------------------------------------------------------
    name = property(lambda self: self._name)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)
    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)
    initial_value = property(lambda self: self._initial_value)

    @property
    def dtype(self):
        return dtypes_lib.from_numpy(self._value.dtype)

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def device(self):
        return self._device.name

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def handle(self):
        return self

    @property
    def initializer(self):
        return None

    @property
    def unique_id(self):
        return self._tid

    # -- writing ------------------------------------------------------------------------------
    def _new_value(self, value, op):
        """Converts and validates a value for assignment, returning an array."""
        dtype = self.dtype
        if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
            t = convert_to_tensor(value)
            if t.dtype is not dtype:
                raise errors.InvalidArgumentError(
                    None, op, "%s: cannot assign a %s value to variable %s of dtype %s; cast "
                    "it first." % (op, t.dtype.name, self._name, dtype.name))
        else:
            try:
                with _plain_device(self._device):
                    t = convert_to_tensor(value, dtype=dtype)
            except TypeError as exc:
                raise errors.InvalidArgumentError(None, op, "%s on %s: %s" % (
                    op, self._name, exc)) from None
        if t._device is not self._device:
            t = _ops.copy_to_device(t, self._device)
        return t

    def _check_shape(self, shape, op):
        if not self._shape.is_compatible_with(shape):
            message = ("%s: shape %s does not match variable %s of shape %s. Create the "
                       "variable with shape=TensorShape(None) (or None dims) to allow other "
                       "shapes." % (op, list(shape), self._name, self._shape))
            if op == "AssignVariableOp":
                raise ValueError(message)  # TF's class for assign; assign_add is the op's error
            raise errors.InvalidArgumentError(None, op, message)

    def _write(self, array):
        """The one place that changes the variable's state."""
        self._value = array

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Sets the value; returns the variable (or None with ``read_value=False``).

        Raises:
            InvalidArgumentError: If the dtype does not match.
            ValueError: If the shape does not match (TF's class).
        """
        if _state.trace is not None:
            _state.trace.assign_variable(self, value, "assign")
            return self if read_value else None
        t = self._new_value(value, "AssignVariableOp")
        self._check_shape(t._value.shape, "AssignVariableOp")
        array = t._value
        xp = self._device.backend
        # Own the array: a later assign_add must not write into a tensor someone holds.
        array = xp.array(array, copy=True) if isinstance(array, xp.ndarray) else \
            xp.asarray(array)
        with self._lock:
            self._write(array)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Adds ``delta``; returns the variable."""
        if _state.trace is not None:
            _state.trace.assign_variable(self, delta, "assign_add")
            return self if read_value else None
        t = self._new_value(delta, "AssignAddVariableOp")
        with self._lock:
            try:
                new = self._value + t._value
            except ValueError:
                raise errors.InvalidArgumentError(
                    None, "AssignAddVariableOp", "assign_add: delta of shape %s does not fit "
                    "variable %s of shape %s" % (list(t._value.shape), self._name,
                                                 list(self._value.shape))) from None
            self._check_shape(np.shape(new), "AssignAddVariableOp")
            self._write(self._device.backend.asarray(new, dtype=self._value.dtype))
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtracts ``delta``; returns the variable."""
        if _state.trace is not None:
            _state.trace.assign_variable(self, delta, "assign_sub")
            return self if read_value else None
        t = self._new_value(delta, "AssignSubVariableOp")
        with self._lock:
            try:
                new = self._value - t._value
            except ValueError:
                raise errors.InvalidArgumentError(
                    None, "AssignSubVariableOp", "assign_sub: delta of shape %s does not fit "
                    "variable %s of shape %s" % (list(t._value.shape), self._name,
                                                 list(self._value.shape))) from None
            self._check_shape(np.shape(new), "AssignSubVariableOp")
            self._write(self._device.backend.asarray(new, dtype=self._value.dtype))
        return self if read_value else None

    def _scatter(self, sparse_delta, mode, op):
        from eagerflow.indexed_slices import IndexedSlices

        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError("%s takes an IndexedSlices, got %r" % (op, type(sparse_delta)))
        if _state.trace is not None:
            return self._traced_scatter(_ops.expand_dims(sparse_delta.indices, -1),
                                        sparse_delta.values, mode, op)
        indices = sparse_delta.indices._value
        values = self._new_value(sparse_delta.values, op)._value
        rows = self._value.shape[0] if self._value.ndim else 0
        if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= rows):
            raise errors.InvalidArgumentError(
                None, op, "%s: indices %s out of range [0, %d) for variable %s"
                % (op, indices.tolist(), rows, self._name))
        xp = self._device.backend
        ufunc = {"add": xp.add, "sub": xp.subtract, "max": xp.maximum, "min": xp.minimum,
                 "mul": xp.multiply, "div": xp.divide}.get(mode)
        with self._lock:
            new = xp.array(self._value, copy=True)
            if mode == "update":
                new[indices] = values
            else:
                ufunc.at(new, indices, values)
            self._write(new)
        return self

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        """Sets rows ``sparse_delta.indices`` to ``sparse_delta.values``."""
        return self._scatter(sparse_delta, "update", "ResourceScatterUpdate")

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """Adds ``sparse_delta.values`` into rows ``sparse_delta.indices`` (duplicates sum)."""
        return self._scatter(sparse_delta, "add", "ResourceScatterAdd")

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, "sub", "ResourceScatterSub")

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, "max", "ResourceScatterMax")

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, "min", "ResourceScatterMin")

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, "mul", "ResourceScatterMul")

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, "div", "ResourceScatterDiv")

    def _traced_scatter(self, nd_indices, updates, mode, op):
        """Inside a trace: the new value is a tensor_scatter_nd_* of the read, assigned."""
        fns = _ops.tensor_scatter_nd
        if mode not in fns:
            raise errors.UnimplementedError(
                None, op, "%s on %s is not supported inside a @function; compute the new "
                "value with tensor ops and assign it, or call it outside the function."
                % (op, self._name))
        if not isinstance(updates, Tensor):
            updates = convert_to_tensor(updates, dtype=self.dtype)
        self.assign(fns[mode](self.read_value(), nd_indices, updates))
        return self

    def _scatter_nd(self, indices, updates, mode, op):
        if _state.trace is not None:
            return self._traced_scatter(indices, updates, mode, op)
        indices = convert_to_tensor(indices)
        updates = self._new_value(updates, op)._value
        idx = indices._value
        if idx.ndim == 0 or idx.shape[-1] > self._value.ndim:
            raise errors.InvalidArgumentError(
                None, op, "%s: indices of shape %s do not index variable %s of shape %s"
                % (op, list(idx.shape), self._name, list(self._value.shape)))
        depth = idx.shape[-1]
        bounds = np.asarray(self._value.shape[:depth])
        flat = idx.reshape(-1, depth)
        host = np.asarray(flat) if self._device.backend_index == 0 else \
            self._device.backend.to_numpy(flat)
        if host.size and (np.any(host < 0) or np.any(host >= bounds)):
            raise errors.InvalidArgumentError(
                None, op, "%s: an index in %s is out of bounds for variable shape %s"
                % (op, host.tolist(), list(self._value.shape)))
        xp = self._device.backend
        key = tuple(flat[:, k] for k in range(depth))
        with self._lock:
            new = xp.array(self._value, copy=True)
            upd = updates.reshape((flat.shape[0],) + new.shape[depth:])
            if mode == "update":
                new[key] = upd
            elif mode == "add":
                xp.add.at(new, key, upd)
            else:
                xp.subtract.at(new, key, upd)
            self._write(new)
        return self

    def scatter_nd_update(self, indices, updates, name=None):
        """Sets the elements/slices at ``indices`` (shape [..., depth]) to ``updates``."""
        return self._scatter_nd(indices, updates, "update", "ResourceScatterNdUpdate")

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter_nd(indices, updates, "add", "ResourceScatterNdAdd")

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter_nd(indices, updates, "sub", "ResourceScatterNdSub")

    def batch_scatter_update(self, sparse_delta, use_locking=False, name=None):
        """Assigns ``sparse_delta`` batch-wise (like ``batch_gather``).

        The leading ``indices.ndim - 1`` dimensions of the variable, of
        ``sparse_delta.indices`` and of ``sparse_delta.values`` are batch dimensions; each
        batch entry updates rows ``indices[b]`` of ``variable[b]`` (``values.shape ==
        indices.shape + variable.shape[indices.ndim:]``).
        """
        indices = sparse_delta.indices
        if indices.shape.rank is None or indices.shape.rank <= 1:
            return self.scatter_update(sparse_delta, use_locking, name)
        shape = indices.shape.as_list()
        if None in shape:
            raise errors.InvalidArgumentError(
                None, "batch_scatter_update", "batch_scatter_update on %s needs indices of "
                "a static shape, got %s." % (self._name, indices.shape))
        grid = np.indices(shape)[:-1]  # the batch coordinates of every index
        coords = [_ops.cast(convert_to_tensor(g), indices.dtype) for g in grid]
        nd = _ops.stack(coords + [indices], axis=-1)
        return self._scatter_nd(nd, sparse_delta.values, "update", "ResourceScatterNdUpdate")

    def sparse_read(self, indices, name=None):
        """Gathers rows ``indices`` of the variable's value (``gather(v, indices)``)."""
        return _ops.gather(self.read_value(), indices)

    def gather_nd(self, indices, name=None):
        """``gather_nd`` of the variable's value."""
        return _ops.gather_nd(self.read_value(), indices)

    # In-place operators would rebind the name to a new tensor and silently leave the
    # variable unchanged; TF refuses them, and so do we.
    def _no_inplace(self, *unused):
        raise RuntimeError("`variable += value` and other in-place operators are not "
                           "supported on eagerflow.Variable. Use variable.assign_add(value) "
                           "(or assign, assign_sub) to modify the variable, or "
                           "`out = variable + value` for a new tensor.")

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __ifloordiv__ = __imod__ = \
        __ipow__ = __imatmul__ = _no_inplace

    # -- misc ---------------------------------------------------------------------------------
    def __getitem__(self, key):
        return self.read_value()[key]

    def __len__(self):
        return len(self.read_value())

    def __iter__(self):
        return iter(self.read_value())

    def __bool__(self):
        return bool(self.read_value())

    def __float__(self):
        return float(self.read_value())

    def __int__(self):
        return int(self.read_value())

    def __index__(self):
        return self.read_value().__index__()

    def __hash__(self):
        return id(self)

    def ref(self):
        return _VariableRef(self)

    def experimental_ref(self):
        return self.ref()

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s, numpy=%s>" % (
            self._name, tuple(self._value.shape), self.dtype.name, numpy_text(self.numpy()))

    def __deepcopy__(self, memo):
        copy = Variable(wrap(self._value, self._device).numpy(), trainable=self._trainable,
                        name=self._name.split(":")[0], constraint=self._constraint,
                        synchronization=self._synchronization, aggregation=self._aggregation,
                        shape=self._shape)
        memo[id(self)] = copy
        return copy


class _VariableRef:
    __slots__ = ("_v",)

    def __init__(self, v):
        self._v = v

    def deref(self):
        return self._v

    def __eq__(self, other):
        return isinstance(other, _VariableRef) and other._v is self._v

    def __hash__(self):
        return id(self._v)


@contextlib.contextmanager
def _plain_device(device):
    """Creates values directly on ``device`` without an outer scope's copy."""
    token = context.push_device_scope(device.spec)
    try:
        yield
    finally:
        context.pop_device_scope(token)


class _Ops:
    """The op-library functions a variable's methods call.

    Variables sit below the op library (every op reads variables), so this module cannot
    import it; :mod:`eagerflow.ops.variable_ops` hands the functions down through
    :func:`install_ops` when the op library loads.
    """

    cast = copy_to_device = expand_dims = stack = gather = gather_nd = None
    tensor_scatter_nd = None  # {"update" | "add" | "sub" | "max" | "min": function}


_ops = _Ops()


def install_ops(**functions):
    """Sets the op-library functions variables call (see :class:`_Ops`)."""
    for name, fn in functions.items():
        if not hasattr(_Ops, name):
            raise TypeError("install_ops: variables call no op named %r" % name)
        setattr(_ops, name, fn)
