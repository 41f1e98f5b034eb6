"""The op registry: one declaration per primitive.

A :class:`Primitive` holds everything the system knows about an operation:

* ``forward``: a kernel factory ``forward(xp) -> kernel``. ``xp`` is a
  :class:`eagerflow.backend.Backend` (numpy on CPU, cupy on GPU, the same code for both);
  the kernel takes the input arrays positionally and attributes as keywords. The factory
  runs once per backend, so ``forward=lambda xp: xp.add`` costs nothing per call.
* ``shape_fn``: the abstract evaluation rule ``shape_fn(*avals, **attrs) -> aval(s)`` used by
  tracing; families supply defaults (broadcasting for elementwise ops).
* ``vjp`` and ``saves``: the gradient rule ``vjp(g, *inputs, out, **attrs)`` and the inputs
  (by index) and/or ``"out"`` it reads, which is all the tape keeps alive.
* ``reference`` and ``samples``: a numpy reference and a sample-input generator, driving the
  test sweeps.

Everything else (public functions, graph nodes, executor kernels, test sweeps) is derived
from this table.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors

__all__ = ["Primitive", "register", "get", "all_primitives", "AbstractValue", "defvjp"]

_REGISTRY = {}

ALL = frozenset(d.np_dtype for d in dtypes_lib.ALL_DTYPES if d.name != "bfloat16")


def dtype_set(dts):
    """A frozenset of numpy dtypes for a collection of DTypes (None means all dtypes)."""
    if dts is None:
        return ALL | _bfloat16_if_loaded()
    out = set()
    for d in dts:
        d = dtypes_lib.as_dtype(d)
        if d.name == "bfloat16":
            continue  # added lazily when ml_dtypes is first imported
        out.add(d.np_dtype)
    return frozenset(out)


def _bfloat16_if_loaded():
    np_dt = dtypes_lib.bfloat16._np
    return frozenset() if np_dt is None else frozenset([np_dt])


class AbstractValue:
    """The static description of a value during tracing: a shape (None dims allowed), a dtype.

    Attributes:
        shape: A tuple of ints/None, or None for unknown rank.
        dtype: A DType.
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = None if shape is None else tuple(shape)
        self.dtype = dtypes_lib.as_dtype(dtype)

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    def __eq__(self, other):
        return (isinstance(other, AbstractValue) and self.shape == other.shape
                and self.dtype is other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype.name))

    def __repr__(self):
        return "%s%s" % (self.dtype.name, list(self.shape) if self.shape is not None else "[?]")


class Primitive:
    """One primitive operation. See the module docstring for the fields.

    Args:
        name: The op type name used in graphs, e.g. ``"AddV2"``.
        forward: Kernel factory ``forward(xp) -> kernel``.
        dtypes: DTypes accepted for the inputs of ``dtype_group`` (None: any).
        dtype_group: Indices of inputs that must share one dtype; ``"all"`` (default) means
            every input, ``()`` none. Python scalars in the group take the group's dtype.
        num_outputs: Number of outputs (1, n, or a callable of the attrs).
        shape_fn: Abstract evaluation rule; None uses the family default or evaluates the
            kernel on zero-strided dummies.
        vjp: Gradient rule, or None for a non-differentiable primitive.
        saves: What the VJP reads: input indices and/or ``"out"``. Default: all inputs.
        reference: numpy reference implementation (tests).
        samples: ``samples(rng, dtype) -> list of (args, attrs)`` for the test sweeps.
        sweep_dtypes: DTypes the sweep tries (defaults to float32/float64 ∩ ``dtypes``).
        family: The family module's short name ("math", "array", ...).
        stateful: True for ops with side effects or hidden state (random, prints).
        variadic: True when the inputs are a list of any length (add_n, concat).
        hint: Extra advice appended to error messages.
        tolerance: ``{dtype_name: (rtol, atol)}`` overrides for the sweeps.
        bad_samples: ``bad_samples(rng) -> list of (args, attrs, exception class)``: inputs
            that must be rejected with that eagerflow error (the bad-input sweep adds dtype
            and shape mismatches on its own).
        grad_samples: ``grad_samples(rng) -> list of (args, attrs)`` in float64 for the
            gradient check, when ``samples`` would hit non-smooth points or bad domains.
        vjp_skips: True when the gradient rule accepts ``skip=(bool, ...)``, marking inputs
            whose gradient nobody needs, so it can avoid computing them (a matmul's gradient
            for a constant operand is a whole matmul).
        elementwise: True for a single-output op applied value by value (the unary and
            binary families, cast, the per-string ops): it runs on a RaggedTensor's flat
            values (see ``ops.composite``). Set after declaration, like ``domain``.
        static_kernel: Optional ``static_kernel(xp, avals, attrs) -> kernel or None``: a
            kernel for inputs of these abstract values (ranks known, dimensions possibly
            None), with the attrs bound (called with the inputs only), or None when the
            general kernel is needed. The graph executor asks for it once per node, so
            checks and shape arithmetic happen at compile time. It must compute exactly what
            the general kernel computes.
        gpu_expr: Optional ``(dtype_names, template)``: the op as a scalar C expression, for
            generated elementwise GPU kernels (fused regions). ``{0}``, ``{1}``.. are the
            operands, ``{T}`` the C type of the dtype group's operands, ``{O}`` the result's,
            ``{attr}`` a numeric attr; ``dtype_names`` the operand dtypes it is written for.
            A template of None asks the fusion pass to write it per target dtype (Cast).
            Without one, the op runs its own kernel inside a fused region on a GPU.
        gpu_reduce: Optional ``(dtype_names, reduce_expr, identity, post_map)``: a reduction
            over ``axis`` (attrs ``axis`` and ``keepdims``) as the fields of a
            ``cupy.ReductionKernel``, so that a fused elementwise region on a GPU whose
            result only this reduction reads runs as one kernel. ``reduce_expr`` combines
            two partial values ``a`` and ``b``; ``identity`` starts each reduction
            (``{inf}`` is +infinity in the reduced type); ``post_map`` writes the reduced
            value ``a`` into ``out0`` (``{R}``: the reduced C type; cupy's ``_in_ind`` and
            ``_out_ind`` count the input and output elements). ``dtype_names``: the dtypes
            it is written for. Nothing of a graph's attrs enters these texts.
        cost: Optional ``cost(in_avals, out_avals, attrs) -> flops``, the estimate the
            cost-based placer simulates with; None: the larger of the input and output
            element counts (right for elementwise ops and reductions).
        shape_only: Indices of the inputs the op reads for their shape and dtype only
            (``Shape``, ``ZerosLike``): constant folding evaluates it on a stand-in of that
            shape, so it folds while those inputs are still computed at run time.
        host_sync: Why the kernel reads values on the host (its output shape depends on
            the values, it checks them, it runs on numpy), or None when it only launches
            device work. A CUDA graph cannot hold a host read, so a ``@function`` with
            such a node on a GPU is not captured (``function/capture.py``) and this text
            is the reason it gives. A callable ``host_sync(in_avals, attrs)`` returns the
            text or None, for an op that reads the host for some dtypes only.
        capture_forward: Optional kernel factory for a captured step, for an op whose
            kernel reads the host only to check its inputs: the same values without the
            check (an invalid input then gives what TF's GPU kernel gives, NaN, not an
            error). The op is then captured despite ``host_sync``.
    """

    __slots__ = (
        "name", "forward", "kernels", "dtypes", "accepts", "dtype_group", "num_outputs",
        "shape_fn", "vjp", "saves", "saves_inputs", "saves_out", "reference", "samples",
        "sweep_dtypes", "family", "stateful", "variadic", "hint", "tolerance", "fast",
        "single", "doc", "bad_samples", "grad_samples", "domain", "vjp_skips", "static_kernel",
        "gpu_expr", "gpu_reduce", "cost", "elementwise", "shape_only", "host_sync",
        "capture_forward", "__weakref__",
    )

    def __init__(self, name, forward, *, dtypes=None, dtype_group="all", num_outputs=1,
                 shape_fn=None, vjp=None, saves=None, reference=None, samples=None,
                 sweep_dtypes=None, family="", stateful=False, variadic=False, hint="",
                 tolerance=None, doc="", bad_samples=None, grad_samples=None, vjp_skips=False,
                 static_kernel=None, gpu_expr=None, gpu_reduce=None, cost=None,
                 shape_only=(), host_sync=None, capture_forward=None):
        self.name = name
        self.forward = forward
        self.kernels = [None, None]
        self.dtypes = dtypes
        self.accepts = dtype_set(dtypes)
        self.dtype_group = dtype_group
        self.num_outputs = num_outputs
        self.single = num_outputs == 1
        self.shape_fn = shape_fn
        self.reference = reference
        self.samples = samples
        self.sweep_dtypes = sweep_dtypes
        self.family = family
        self.stateful = stateful
        self.variadic = variadic
        self.hint = hint
        self.tolerance = tolerance or {}
        self.doc = doc
        self.bad_samples = bad_samples
        self.grad_samples = grad_samples
        self.domain = None  # value range of elementwise families, for property-based tests
        self.elementwise = False
        self.vjp_skips = vjp_skips
        self.static_kernel = static_kernel
        self.gpu_expr = gpu_expr
        self.gpu_reduce = gpu_reduce
        self.cost = cost
        self.shape_only = tuple(shape_only)
        self.host_sync = host_sync
        self.capture_forward = capture_forward
        # The eager fast path handles prims whose every input shares one dtype.
        self.fast = dtype_group == "all" and not variadic
        self.set_vjp(vjp, saves)

    def set_vjp(self, vjp, saves=None):
        """Sets the gradient rule and what it reads (see ``defvjp``)."""
        self.vjp = vjp
        if saves is None:
            saves = ("all",)
        self.saves = tuple(saves)
        self.saves_out = "out" in self.saves
        self.saves_inputs = "all" if "all" in self.saves else tuple(
            s for s in self.saves if s != "out")

    def host_sync_reason(self, in_avals, attrs):
        """Why a node of this op reads values on the host (see ``host_sync``), or None."""
        reason = self.host_sync
        if callable(reason):
            reason = reason(in_avals, attrs)
        return reason

    @property
    def differentiable(self):
        return self.vjp is not None

    def kernel(self, backend):
        """The kernel for ``backend``, built on first use and cached."""
        k = self.kernels[backend.index]
        if k is None:
            k = self.forward(backend)
            self.kernels[backend.index] = k
        return k

    def outputs_count(self, attrs):
        n = self.num_outputs
        return n(attrs) if callable(n) else n

    def allows_dtype(self, np_dtype):
        if np_dtype in self.accepts:
            return True
        if np_dtype.name == "bfloat16" and (
                self.dtypes is None or dtypes_lib.bfloat16 in self.dtypes):
            return True
        return False

    def __repr__(self):
        return "<Primitive %s>" % self.name


def register(prim):
    """Adds a primitive to the registry; a name can be declared only once."""
    if prim.name in _REGISTRY:
        raise errors.InternalError(None, prim.name, "Primitive %r is declared twice" % prim.name)
    _REGISTRY[prim.name] = prim
    return prim


def add_dtypes(prim, dts):
    """Lets ``prim`` accept more dtypes (string tensors for ops that only move elements)."""
    prim.dtypes = tuple(prim.dtypes) + tuple(dtypes_lib.as_dtype(x) for x in dts)
    prim.accepts = prim.accepts | frozenset(dtypes_lib.as_dtype(x).np_dtype for x in dts)


def primitive(name, forward, **kwargs):
    """Declares and registers a primitive in one call; returns it."""
    return register(Primitive(name, forward, **kwargs))


def defvjp(prim, saves=None):
    """Decorator that attaches a gradient rule to ``prim``.

    Example:
        >>> # @defvjp(TANH, saves=("out",))
        >>> # def _(g, x, out): return g * (1 - out * out)
    """

    def attach(fn):
        prim.set_vjp(fn, saves)
        return fn

    return attach


def get(name):
    """Looks up a primitive by op name; NotFoundError names close matches."""
    prim = _REGISTRY.get(name)
    if prim is None:
        import difflib

        close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
        raise errors.NotFoundError(
            None, name, "Op type not registered: %r.%s" % (
                name, " Did you mean %s?" % ", ".join(close) if close else ""))
    return prim


def find(name):
    """The primitive named ``name``, or None (``get`` raises instead)."""
    return _REGISTRY.get(name)


def all_primitives():
    """All registered primitives, in declaration order."""
    return list(_REGISTRY.values())


def zero_avals_eval(prim, avals, attrs):
    """Default abstract evaluation: run the numpy kernel on zero-strided dummy arrays.

    ``np.broadcast_to`` of a 0-d zero costs no memory whatever the shape, so this is
    cheap. Unknown dimensions are evaluated as 1, and again as another size: an output
    dimension that differs between the two runs depends on them and is None. (When the
    second run fails, e.g. a None dimension broadcast against a known one, the first
    run's shape stands.)
    """
    out = _eval_on_dummies(prim, avals, attrs, 1)
    if any(None in aval.shape for aval in avals):
        try:
            other = _eval_on_dummies(prim, avals, attrs, _PROBE_SIZE)
        except Exception:  # noqa: BLE001 - the probe size is not valid for this op
            other = None
        if other is not None and len(other) == len(out):
            out = tuple(AbstractValue(_merge_probed(a.shape, b.shape), a.dtype)
                        for a, b in zip(out, other))
    return out


# A size no sample or common shape uses, so a dimension that follows it is recognized.
_PROBE_SIZE = 13


def _merge_probed(shape, probed):
    if len(shape) != len(probed):
        return None
    return tuple(d if d == e else None for d, e in zip(shape, probed))


def _eval_on_dummies(prim, avals, attrs, unknown):
    from eagerflow.backend import numpy_backend

    dummies = []
    for aval in avals:
        if aval.shape is None:
            raise errors.InvalidArgumentError(
                None, prim.name, "%s needs inputs of known rank to trace." % prim.name)
        shape = tuple(unknown if d is None else d for d in aval.shape)
        # A string dummy holds b"" (an object array's zeros() would hold the int 0).
        zero = np.array(b"", dtype=object) if aval.dtype is dtypes_lib.string else \
            np.zeros((), aval.dtype.np_dtype)
        dummies.append(np.broadcast_to(zero, shape))
    kernel = prim.kernel(numpy_backend)
    with np.errstate(all="ignore"):
        out = kernel(*dummies, **attrs)
    if prim.single:
        out = (out,)
    return tuple(AbstractValue(np.shape(o), dtypes_lib.from_numpy(np.asarray(o).dtype))
                 for o in out)
