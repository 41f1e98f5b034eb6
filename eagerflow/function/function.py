"""``eagerflow.function``: trace Python into a graph once per signature, then run the graph.

Python runs only while tracing, so its side effects happen at trace time, as in TF. Each
call's arguments are turned into a cache key (see ``signature.py``); a new key traces again
and the function records, and after a few retraces logs, which argument caused it and how.

The traces kept per function are bounded (``eagerflow.config.experimental.
set_function_trace_cache_size``, 128 by default; TF keeps every trace, so a function called
with ever new Python values grows without end there). Past the bound the least recently
used trace is dropped, with one warning per function.

Threads may call one function at once: lookups of known traces take no lock; a miss takes
the function's lock, so a signature is traced once (its Python side effects happen once)
however many threads call with it first.

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def f(x, scale=2.0):
    ...     return ef.reduce_sum(x * scale)
    >>> float(f(ef.constant([1.0, 2.0])))
    6.0
    >>> f.experimental_get_tracing_count()
    1
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import threading
import weakref

import numpy as np

from eagerflow import nest
from eagerflow.framework import context
from eagerflow.function import signature as sig
from eagerflow.function.concrete import ConcreteFunction
from eagerflow.function.graph import Graph
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import Tracer, tracing
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["function", "Function"]

_log = logging.getLogger("eagerflow.function")
_VariableSpecKey = sig.VariableSpecKey
_state = context.state
# TF warns once a function has traced this many times; the log line names the argument.
RETRACE_WARNING_THRESHOLD = 5
# Orders lookups of traces, for least-recently-used eviction.
_tick = itertools.count(1).__next__


class Function:
    """A Python callable compiled to graphs, one per input signature.

    Use :func:`function` to make one.
    """

    def __init__(self, python_function, name=None, input_signature=None,
                 reduce_retracing=False, jit_compile=None, autograph=True):
        self._python_function = python_function
        self._autograph = bool(autograph)
        self._converted = None
        functools.update_wrapper(self, python_function)
        self._name = name or getattr(python_function, "__name__", "function")
        self._signature = inspect.signature(python_function)
        self._param_names = list(self._signature.parameters)
        self._input_signature = None if input_signature is None else tuple(
            nest.map_structure(_as_spec, tuple(input_signature)))
        self._reduce_retracing = bool(reduce_retracing)
        self._jit_compile = jit_compile
        self._concretes = []  # (key, ConcreteFunction), most recent last
        self._exact = {}
        self._trace_count = 0
        self._retrace_reasons = []
        self._warned = False
        self._evict_warned = False
        self._lock = threading.RLock()  # taken on cache misses (tracing, eviction)
        self._instances = weakref.WeakKeyDictionary()
        self._bound_instance = None
        # Calls with only positional eager tensors / simple Python values skip binding and
        # nested keys: (dtype, shape) per argument -> concrete function.
        self._fast = {}
        # Set when a variable argument is also reachable from the function's closure,
        # globals or instance: its reads cannot be told apart, so variables key by identity.
        self._variables_by_identity = False
        self._n_params = len(self._param_names)
        self._simple_params = all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in self._signature.parameters.values())

    # -- methods: each instance gets its own cache ----------------------------------------
    def __get__(self, instance, owner):
        if instance is None:
            return self
        try:
            bound = self._instances.get(instance)
        except TypeError:  # unhashable or no weakref support
            bound = None
        if bound is None:
            with self._lock:  # one bound function (one cache) per instance, whatever thread
                try:
                    bound = self._instances.get(instance)
                except TypeError:
                    bound = None
                if bound is None:
                    bound = Function(self._python_function.__get__(instance, owner),
                                     self._name, self._input_signature,
                                     self._reduce_retracing, self._jit_compile,
                                     self._autograph)
                    bound._bound_instance = weakref.ref(instance)
                    try:
                        self._instances[instance] = bound
                    except TypeError:
                        pass
        return bound

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def _traced_callable(self):
        """What a trace runs: the AutoGraph-converted function, or the original."""
        if not self._autograph:
            return self._python_function
        if self._converted is None:
            from eagerflow.function.autograph import conversion

            self._converted = conversion.convert(self._python_function)
        return self._converted

    def experimental_get_tracing_count(self):
        """How many times this function has traced."""
        return self._trace_count

    def pretty_printed_concrete_signatures(self, verbose=True):
        """The signature of every traced graph, one per paragraph (TF's method).

        Example:
            >>> import eagerflow as ef
            >>> f = ef.function(lambda x: x + 1.0)
            >>> _ = f(ef.constant(1.0))
            >>> "float32" in f.pretty_printed_concrete_signatures()
            True
        """
        return "\n\n".join(c.pretty_printed_signature() for _, c in self._concretes)

    def experimental_retrace_reasons(self):
        """One sentence per retrace, saying which argument changed and how."""
        return list(self._retrace_reasons)

    def experimental_capture_reasons(self):
        """One line per traced graph: its signature, whether its calls replay a captured
        CUDA graph and, if not, why (see ``ConcreteFunction.experimental_capture_status``).

        Example:
            >>> import eagerflow as ef
            >>> f = ef.function(lambda x: x + 1.0)
            >>> _ = f(ef.constant([1.0]))
            >>> print(f.experimental_capture_reasons()[0].split(": refused")[0])
            <lambda>(x: float32[1]) -> (float32[1])
        """
        lines = []
        for _, concrete in list(self._concretes):
            state, reasons = concrete.experimental_capture_status()
            lines.append("%s: %s%s" % (concrete.pretty_printed_signature(), state,
                                       "; " + "; ".join(reasons) if reasons else ""))
        return lines

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if context.config.run_functions_eagerly:
            return self._python_function(*args, **kwargs)
        if _state.trace is not None:
            # Inside another trace: inline the Python (nested functions fuse into one graph).
            return self._traced_callable()(*args, **kwargs)
        if not kwargs and len(args) == self._n_params and self._simple_params:
            fast_key = _fast_key(args, self._input_signature is not None)
            if fast_key is not None:
                concrete = self._fast.get(fast_key)
                if concrete is None:
                    concrete, flat = self._concrete_for_call(args, kwargs, fast_key)
                    return concrete._call_flat(flat)
                concrete._last_used = _tick()  # recency for eviction; about 30 ns
                return concrete._call_flat([a for a in args if a.__class__ is Tensor])
        concrete, flat = self._concrete_for_call(args, kwargs)
        return concrete._call_flat(flat)

    def _bind(self, args, kwargs):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError("%s(): %s" % (self._name, exc)) from None
        bound.apply_defaults()
        return bound.arguments

    def _concrete_for_call(self, args, kwargs, fast_key=None):
        arguments = self._bind(args, kwargs)
        if self._input_signature is not None:
            key, flat = sig.signature_key(self._input_signature, arguments, self._param_names)
        else:
            key, flat = sig.make_key(arguments)
            if self._variables_by_identity:
                key = sig.identity_key(key)
        concrete = self._exact.get(key)
        if concrete is None:
            with self._lock:
                concrete = self._lookup_or_trace(arguments, key)
        concrete._last_used = _tick()
        if fast_key is not None and len(self._fast) < 256:
            with self._lock:  # an eviction empties _fast under this lock
                if self._exact.get(key) is concrete:
                    self._fast[fast_key] = concrete
        traced = concrete._arg_variables
        if traced:  # the call's variables are the traced ones, or the trace is bound to them
            k = 0
            for leaf in key[1]:
                if leaf.__class__ is _VariableSpecKey:
                    if leaf.variable is not traced[k]:
                        concrete = concrete._bound_to(sig.key_variables(key))
                        break
                    k += 1
        return concrete, flat

    def _lookup_or_trace(self, arguments, key):
        """The trace for ``key`` (tracing a new one if none accepts it); holds the lock."""
        concrete = self._exact.get(key)  # another thread may have traced it meanwhile
        if concrete is not None:
            return concrete
        for known, candidate in reversed(self._concretes):
            if sig.key_accepts(known, key):
                self._remember(key, candidate)
                return candidate
        trace_key = key
        if self._reduce_retracing and self._concretes:
            for known, _ in reversed(self._concretes):
                relaxed = sig.relax(known, key)
                if relaxed is not None:
                    trace_key = relaxed
                    break
        concrete = self._trace(arguments, key, trace_key)
        if self._variables_by_identity:
            key = sig.identity_key(key)
        self._remember(key, concrete)
        return concrete

    def _remember(self, key, concrete):
        key = sig.weak_key(key)
        exact = self._exact
        if len(exact) >= 8 * _cache_size():  # only a lookup table over _concretes
            exact.clear()
        exact[key] = concrete

    def _evict(self):
        """Drops least recently used traces beyond the cache size; holds the lock."""
        limit = _cache_size()
        if len(self._concretes) <= limit:
            return
        keep = sorted(self._concretes, key=lambda kc: getattr(kc[1], "_last_used", 0))
        dropped = keep[:len(keep) - limit]
        gone = {id(c) for _, c in dropped}
        self._concretes = [kc for kc in self._concretes if id(kc[1]) not in gone]
        self._exact = {k: c for k, c in self._exact.items() if id(c) not in gone}
        self._fast = {k: c for k, c in self._fast.items() if id(c) not in gone}
        if not self._evict_warned:
            self._evict_warned = True
            _log.warning(
                "@function %s has traced %d times and keeps at most %d traces: the least "
                "recently used ones are dropped (and traced again if called again). Pass "
                "tensors instead of Python values or use input_signature to trace less, or "
                "raise the bound with "
                "eagerflow.config.experimental.set_function_trace_cache_size.",
                self._name, self._trace_count, limit)

    # -- tracing -------------------------------------------------------------------------------
    def _trace(self, arguments, key, trace_key):
        if self._concretes:
            reason = sig.describe_difference(self._concretes[-1][0], key)
            self._retrace_reasons.append(reason)
            if len(self._retrace_reasons) > 2 * _cache_size():
                del self._retrace_reasons[:-_cache_size()]
            if self._trace_count + 1 >= RETRACE_WARNING_THRESHOLD:
                _log.warning(
                    "@function %s traced %d times; the last retrace happened because %s. "
                    "Retracing is expensive: pass tensors instead of Python values, use "
                    "input_signature with None dimensions, or reduce_retracing=True.",
                    self._name, self._trace_count + 1, reason)
        first = self._trace_count == 0
        traced = self._traced_callable()
        concrete = self._trace_with_status(traced, arguments, trace_key, first)
        if first and concrete._tracer.created_variables:
            # As TF: a first trace that created variables is traced once more with creation
            # refused, so a function that makes a new variable on every call fails now (with
            # TF's ValueError) instead of silently reusing the first one; the singleton
            # pattern (`if self.v is None: self.v = Variable(...)`) traces cleanly.
            concrete = self._trace_with_status(traced, arguments, trace_key, False)
        self._trace_count += 1
        concrete._last_used = _tick()
        if concrete._arg_variables and not self._variables_by_identity and \
                _reachable_elsewhere(self._python_function, concrete._arg_variables):
            self._variables_by_identity = True
        if self._variables_by_identity:
            concrete._arg_variables = ()
            trace_key = sig.identity_key(trace_key)
        self._concretes.append((sig.weak_key(trace_key), concrete))
        self._evict()
        return concrete

    def _trace_with_status(self, traced, arguments, trace_key, allow_variables):
        from eagerflow.function.autograph import conversion

        # Library code that calls user code (a Keras layer's call) converts it only when
        # this trace has AutoGraph on.
        with conversion.active(self._autograph):
            return trace_function(traced, arguments, trace_key, self._name,
                                  allow_variables=allow_variables)

    def get_concrete_function(self, *args, **kwargs):
        """Traces (if needed) for TensorSpecs or example arguments; returns the graph function.

        Example:
            >>> import eagerflow as ef
            >>> f = ef.function(lambda x: x + 1.0)
            >>> cf = f.get_concrete_function(ef.TensorSpec([None], ef.float32))
            >>> cf(ef.constant([1.0, 2.0])).numpy().tolist()
            [2.0, 3.0]
        """
        if not args and not kwargs and self._input_signature is not None:
            args = self._input_signature
        arguments = self._bind(args, kwargs)
        key = _spec_key(arguments)
        if self._variables_by_identity:
            key = sig.identity_key(key)
        with self._lock:
            for known, candidate in self._concretes:
                if known == key:
                    candidate._last_used = _tick()
                    break
            else:
                candidate = self._trace(arguments, key, key)
        if candidate._arg_variables:
            candidate = candidate._bound_to(sig.key_variables(key))
        return candidate

    def __repr__(self):
        return "<eagerflow.Function %s>" % self._name


def _reachable_elsewhere(python_function, variables):
    """Whether one of ``variables`` (a trace's variable arguments) is also reachable from the
    function's closure, the globals its code names, its defaults or the attributes of its
    instance that its code names (up to six levels deep: a layer's weights in a model's
    list of layers).

    A read of such a variable in the graph may come from that path rather than from the
    argument, so the trace must not be rebound to other variables. A heuristic: it finds
    the usual ways (``self.v``, a module-level or enclosing variable, a layer's weights).
    """
    wanted = {id(v) for v in variables}
    roots, instances = [], []
    f = python_function
    while True:
        if inspect.ismethod(f):
            instances.append(f.__self__)
            f = f.__func__
        elif isinstance(f, functools.partial):
            roots.extend(f.args)
            roots.extend(f.keywords.values())
            f = f.func
        else:
            f = getattr(f, "__wrapped__", None) or f
            break
    code = getattr(f, "__code__", None)
    names = set()
    if code is not None:
        for cell in f.__closure__ or ():
            try:
                roots.append(cell.cell_contents)
            except ValueError:  # a cell not yet assigned
                pass
        stack = [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if inspect.iscode(k))
        g = getattr(f, "__globals__", {})
        roots.extend(g[n] for n in names if n in g)
        roots.extend(f.__defaults__ or ())
    for instance in instances:
        # Of the instance, only the attributes the code names (``self.v``): a variable
        # argument that is another attribute (``m.f(m.a)``) is read through the argument.
        attributes = getattr(instance, "__dict__", {})
        roots.extend(attributes[n] for n in names if n in attributes)
    seen = set()

    def visit(obj, depth):
        if id(obj) in wanted:
            return True
        if depth > 5 or id(obj) in seen or isinstance(obj, (type, str, bytes, int, float)) \
                or inspect.ismodule(obj) or inspect.isroutine(obj):
            return False
        if len(seen) > 20000:
            raise _Unknown  # too much to look through: assume it is reachable
        seen.add(id(obj))
        if isinstance(obj, (list, tuple, set, frozenset)):
            children = obj
        elif isinstance(obj, dict):
            children = obj.values()
        else:
            children = getattr(obj, "__dict__", None)
            children = children.values() if isinstance(children, dict) else ()
        return any(visit(c, depth + 1) for c in list(children))

    try:
        return any(visit(r, 0) for r in roots)
    except (_Unknown, RecursionError):
        return True


class _Unknown(Exception):
    pass


def _cache_size():
    return context.config.function_trace_cache_size


_SIMPLE = (int, float, bool, str, type(None))


def _fast_key(args, tensors_only=False):
    """A flat key for positional eager tensors and simple Python values, else None.

    With an input_signature (``tensors_only``), Python values are converted to tensors by
    the slow path, so only all-tensor calls take the fast one.
    """
    if len(args) == 1 and args[0].__class__ is Tensor:
        value = args[0]._value
        return ((value.dtype, value.shape),)
    key = []
    for a in args:
        cls = a.__class__
        if cls is Tensor:
            value = a._value
            key.append((value.dtype, value.shape))
        elif cls in _SIMPLE and not tensors_only:
            key.append((cls, a))
        else:
            return None
    return tuple(key)


def _as_spec(x):
    if isinstance(x, TensorSpec) or getattr(x, "_nest_composite", False) and hasattr(
            x, "is_compatible_with"):
        return x  # a TensorSpec, or a composite's spec (RaggedTensorSpec)
    if isinstance(x, Tensor):
        return TensorSpec.from_tensor(x)
    raise TypeError("input_signature must contain TensorSpecs (or RaggedTensorSpecs, "
                    "SparseTensorSpecs), got %r"
                    % (x,))


def _spec_key(arguments):
    """A cache key for arguments that may contain TensorSpecs (get_concrete_function)."""
    def leaf_items(path, leaf, flat):
        if isinstance(leaf, TensorSpec):
            return [(path, sig.TensorKey(leaf.dtype, tuple(leaf.shape.dims)
                                         if leaf.shape.rank is not None else None))]
        return [(path, sig._leaf_key(path, leaf, flat))]

    items, _ = sig.composite_items(arguments, leaf_items)
    leaves = tuple(k for _, k in items)
    sig.number_aliases(leaves)
    return tuple(p for p, _ in items), leaves


_RETURNED_AS_TENSORS = (bool, int, float, complex, np.ndarray, np.generic)


def trace_function(python_function, arguments, key, name, allow_variables=True):
    """Traces ``python_function`` for the tensor specs in ``key``; returns a ConcreteFunction."""
    from eagerflow.tape import GradientTape

    graph = Graph(name)
    tracer = Tracer(graph)
    tracer.allow_variable_creation = allow_variables
    structure, leaves = key
    tensor_keys = iter([k for k in leaves if isinstance(k, sig.TensorKey)])
    placeholders = []
    specs = []

    def to_placeholder(path, value):
        if isinstance(value, (Tensor, TensorSpec)) or (
                not getattr(value, "_is_variable", False) and _is_array(value)):
            k = next(tensor_keys)
            arg_name = "_".join(str(p) for p in path) or "arg"
            node = graph.add_placeholder(AbstractValue(k.shape, k.dtype), _identifier(arg_name))
            t = SymbolicTensor(graph, node, 0)
            placeholders.append(t)
            specs.append(TensorSpec(TensorShape(k.shape), k.dtype, arg_name))
            return t
        return value

    flat = sig.flatten_arguments(arguments)
    symbolic_leaves = [to_placeholder(path, value) for path, value in flat]
    # Bound arguments call back correctly whatever the parameter kinds (*args, **kwargs).
    symbolic_args = inspect.BoundArguments(inspect.signature(python_function),
                                           sig.pack_arguments(arguments, symbolic_leaves))
    tape = GradientTape(persistent=True)
    with tracing(tracer):
        with tape:
            tape.watch([p for p in placeholders if p.dtype.is_floating or p.dtype.is_complex])
            result = python_function(*symbolic_args.args, **symbolic_args.kwargs)
        output_map = []
        for leaf in nest.flatten(result, expand_composites=True):
            # As TF, Python numbers and numpy values returned become tensors (outputs of Const
            # nodes); None and other Python objects come back as they are.
            if isinstance(leaf, Tensor) or getattr(leaf, "_is_variable", False) or isinstance(
                    leaf, _RETURNED_AS_TENSORS):
                t = tracer.to_symbolic(leaf)
                graph.outputs.append((t._node, t._index))
                output_map.append(("out", len(graph.outputs) - 1))
            else:
                output_map.append(("py", leaf))
    concrete = ConcreteFunction(graph, result, output_map, specs, list(arguments), tape=tape,
                                function_name=name)
    concrete._tracer = tracer
    concrete._arg_variables = tuple(
        v for v in (sig.bindable_variable(value) for _, value in flat) if v is not None)
    concrete._input_ids = [p._tid for p in placeholders]
    concrete._output_ids = [_output_tid(graph, n, i, result) for n, i in graph.outputs]
    return concrete


def _output_tid(graph, node, index, result):
    for leaf in nest.flatten(result, expand_composites=True):
        if isinstance(leaf, SymbolicTensor) and leaf._node is node and leaf._index == index:
            return leaf._tid
    return 0


def _is_array(value):
    import numpy as np

    return isinstance(value, np.ndarray)


def _identifier(text):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return out or "arg"


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None, name=None):
    """Compiles a Python function into graphs (``tf.function``).

    The Python body runs once per new input signature (a trace); later calls with matching
    arguments run the traced graph. Tensor arguments key the cache by dtype and shape,
    Python values by value (they must be hashable), variables by dtype, shape, device and
    trainability (as TF: ``f(v1); f(v2)`` traces once and the graph runs on each call's
    variable) and Generators by algorithm and state. A variable argument the function can
    also reach otherwise (``self.v``, a global or enclosing variable) keys by identity.

    With ``autograph=True`` (the default, as TF) the function's Python ``if``/``while``/
    ``for``/``break``/``continue``/``return`` and ``and``/``or``/``not`` on tensors become
    ``eagerflow.cond`` / ``eagerflow.while_loop`` (see ``eagerflow.autograph``); on Python
    values they stay Python. With ``autograph=False`` a Python ``if`` on a tensor raises an
    error naming the line.

    Args:
        func: The function to compile (or None, to use as ``@function(...)``).
        input_signature: Optional list of TensorSpecs fixing the tensor arguments; None
            dimensions accept any size, so one trace serves all.
        autograph: Convert Python control flow on tensors to graph control flow (the
            conversion is cached per function). False runs the Python as written.
        jit_compile: Accepted for compatibility.
        reduce_retracing: When True, a retrace for new shapes generalizes the differing
            dimensions to None, so later shapes reuse it.
        experimental_relax_shapes: Deprecated alias of ``reduce_retracing``.
        name: Name of the function's graphs.

    Returns:
        A Function.

    Example:
        >>> import eagerflow as ef
        >>> @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
        ... def square(x):
        ...     return x * x
        >>> square(ef.constant([1.0, 2.0, 3.0])).numpy().tolist()
        [1.0, 4.0, 9.0]
    """
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(f):
        if isinstance(f, Function):
            return f
        return Function(f, name=name, input_signature=input_signature,
                        reduce_retracing=reduce_retracing, jit_compile=jit_compile,
                        autograph=autograph)

    if func is None:
        return decorate
    return decorate(func)


