"""Saving and restoring the position of a pass: each iterator writes its own state.

This is what ``tf.train.Checkpoint(iterator=iter(dataset))`` stores, as TF does it: every
iterator of a pipeline (one per transformation) writes the state it needs to continue
(a shuffle buffer and its generator's state, a repeat's epoch, a prefetch buffer, the
elements an interleave has opened) under its own prefix, and restoring a freshly built
iterator of the same pipeline hands each iterator its part back. Nothing is replayed
through user code, except that ``interleave`` and ``flat_map`` call their function again on
the saved input elements to rebuild the datasets they had open (TF does the same), and
TFRecord and CSV files and file caches are reopened and read past the records already
returned (regular files: this cannot block); text files seek to the saved byte offset.

Prefixes name the iterators by their ops from the root, ``Iterator::Batch::Shuffle::Range``
(TF names them the same way), so restoring into a pipeline of another shape fails with a
``NotFoundError`` naming the first iterator that does not match.

The state is a flat dict of numpy arrays, stored as one checksummed
:mod:`eagerflow.io.bundle` (plain numeric dtypes only, no pickle); the op of every prefix is
in its JSON metadata. Buffered elements are stored component by component: the values
concatenated, the shapes beside them, strings as their bytes and lengths, RaggedTensors and
SparseTensors as their component arrays, a ``window``'s datasets as their elements. A
state read back is untrusted input: every count, shape and length is checked against what
is present, and restored counts against their limits.

Example:
    >>> from eagerflow.data import Dataset
    >>> it = iter(Dataset.range(5).batch(2))
    >>> _ = next(it)
    >>> state = it._save_state()
    >>> fresh = iter(Dataset.range(5).batch(2))
    >>> fresh._restore_state(state)
    >>> [x.numpy().tolist() for x in fresh]
    [[2, 3], [4]]
"""

from __future__ import annotations

import warnings

import numpy as np

from eagerflow import errors
from eagerflow.data import structure
from eagerflow.io import bundle
from eagerflow.tensor import Tensor

__all__ = ["StatefulIterator", "UnaryIterator", "StateWriter", "StateReader", "op_name",
           "to_bytes", "from_bytes", "check_external_state", "KIND"]

KIND = "eagerflow.data.iterator"
ROOT = "Iterator"


def op_name(dataset):
    """The op of a dataset as TF names it in iterator prefixes (``ShuffleDataset`` -> Shuffle)."""
    if isinstance(dataset, str):
        return dataset
    name = type(dataset).__name__
    return name[:-len("Dataset")] if name.endswith("Dataset") and len(name) > 7 else name


def _unsupported(dataset, prefix, policy):
    hook = getattr(dataset, "_checkpoint_error", None)
    if hook is not None:
        return hook(prefix, _as_policy(policy))
    return errors.UnimplementedError(
        None, "SerializeIterator", "%s does not support checkpointing (in the iterator %s): "
        "its position cannot be saved. Checkpoint the model only, or build the pipeline "
        "from sources and transformations that save their state." % (
            dataset if isinstance(dataset, str) else type(dataset).__name__, prefix))


def _composite_helper(leaf):
    from eagerflow.data import ragged_elements, sparse_elements

    if ragged_elements.is_ragged(leaf):
        return ragged_elements
    if sparse_elements.is_sparse(leaf):
        return sparse_elements
    return None


def _not_found(prefix, what):
    return errors.NotFoundError(
        None, "DeserializeIterator", "Failed to restore dataset iterator from checkpoint: "
        "%s (%s). Make sure the dataset definition has not changed between the process "
        "that saved the checkpoint and the process that is restoring it." % (prefix, what))


class StatefulIterator:
    """Base of the iterators of one pass whose position can be saved.

    Subclasses implement ``__next__`` (raising StopIteration at the end), ``close``,
    ``save(writer)`` and ``restore(reader)``; ``_op`` names them in state prefixes.
    """

    __slots__ = ()
    _op = "Iterator"

    def __iter__(self):
        return self

    def __next__(self):
        raise NotImplementedError

    def close(self):
        pass

    def save(self, writer):
        raise NotImplementedError

    def restore(self, reader):
        raise NotImplementedError


class StateWriter:
    """Collects an iterator tree's state: arrays by key, and the op of every prefix."""

    __slots__ = ("prefix", "tensors", "ops", "policy")

    def __init__(self, prefix=ROOT, tensors=None, ops=None, policy=None):
        self.prefix = prefix
        self.tensors = {} if tensors is None else tensors
        self.ops = {prefix: ROOT} if ops is None else ops
        # The pipeline's experimental_external_state_policy (None: FAIL, as TF).
        self.policy = policy

    def _key(self, name):
        return self.prefix + "/" + name

    def int(self, name, value):
        self.tensors[self._key(name)] = np.asarray(int(value), np.int64)

    def ints(self, name, values):
        self.tensors[self._key(name)] = np.asarray(values, np.int64).reshape(-1)

    def array(self, name, value):
        self.tensors[self._key(name)] = np.ascontiguousarray(value)

    def block(self, name, block):
        """An index block: a slice (stored as start, stop, step) or an int64 array."""
        if isinstance(block, slice):
            self.ints(name + "/slice", (block.start, block.stop, block.step))
        else:
            self.ints(name + "/positions", block)

    def rng(self, name, generator):
        """A numpy Philox or PCG64 generator's exact state."""
        state = generator.bit_generator.state
        inner = state["state"]
        if state["bit_generator"] == "PCG64":
            words = [w for v in (inner["state"], inner["inc"])
                     for w in (v >> 64, v & 0xFFFFFFFFFFFFFFFF)]
            self.array(name + "/pcg64", np.asarray(words, np.uint64))
            self.ints(name + "/flags", (0, state["has_uint32"], state["uinteger"]))
            return
        self.array(name + "/counter", np.asarray(inner["counter"], np.uint64))
        self.array(name + "/key", np.asarray(inner["key"], np.uint64))
        self.array(name + "/buffer", np.asarray(state["buffer"], np.uint64))
        self.ints(name + "/flags", (state["buffer_pos"], state["has_uint32"],
                                    state["uinteger"]))

    def elements(self, name, elements, op):
        """A list of elements (each a structure of tensors), component by component."""
        self.int(name + "/n", len(elements))
        if not elements:
            return
        columns = list(zip(*[structure.flatten(e) for e in elements]))
        for index, column in enumerate(columns):
            self._column("%s/%d" % (name, index), column, op)

    def _column(self, name, column, op):
        if all(type(leaf) is Tensor for leaf in column):
            self._arrays(name, [np.asarray(structure.host_value(leaf)) for leaf in column])
            return
        if all(hasattr(leaf, "_items") and hasattr(leaf, "_elements") for leaf in column):
            # The small in-memory datasets of ``window``: each saved as its elements.
            for i, leaf in enumerate(column):
                self.elements("%s/%d" % (name, i), list(leaf._items), op)
            return
        helper = _composite_helper(column[0])
        if helper is None or not all(_composite_helper(leaf) is helper for leaf in column):
            raise errors.UnimplementedError(
                None, "SerializeIterator", "%s: saving buffered elements with %s "
                "components (in the iterator %s) is not supported; only tensors, "
                "RaggedTensors and SparseTensors can be saved."
                % (op, type(column[0]).__name__, self.prefix))
        parts = [helper.component_arrays(leaf) for leaf in column]
        if len({len(p) for p in parts}) != 1:
            raise errors.UnimplementedError(
                None, "SerializeIterator", "%s: the buffered RaggedTensors of one component "
                "have different ragged ranks (in the iterator %s)." % (op, self.prefix))
        for k in range(len(parts[0])):
            self._arrays("%s/%d" % (name, k), [np.asarray(p[k]) for p in parts])

    def _arrays(self, name, arrays):
        """Numpy arrays of one dtype (any shapes): values concatenated, shapes beside."""
        self.ints(name + "/ranks", [a.ndim for a in arrays])
        self.ints(name + "/dims", [d for a in arrays for d in a.shape])
        if arrays[0].dtype == object:
            raw = [s.encode("utf-8") if isinstance(s, str) else bytes(s)
                   for a in arrays for s in a.reshape(-1)]
            self.ints(name + "/lengths", [len(s) for s in raw])
            self.array(name + "/bytes", np.frombuffer(b"".join(raw), np.uint8))
        else:
            self.array(name + "/values", np.concatenate([a.reshape(-1) for a in arrays]))

    def save_input(self, slot, iterator, dataset):
        """Saves a child iterator under ``<prefix>::<op><slot>``.

        Raises:
            UnimplementedError: If the child's dataset cannot save its position.
        """
        prefix = "%s::%s%s" % (self.prefix, op_name(dataset), slot)
        if not isinstance(iterator, StatefulIterator):
            raise _unsupported(dataset, prefix, self.policy)
        self.ops[prefix] = iterator._op
        iterator.save(StateWriter(prefix, self.tensors, self.ops, self.policy))


class StateReader:
    """Reads what a :class:`StateWriter` collected, checking every key and shape."""

    __slots__ = ("prefix", "tensors", "ops")

    def __init__(self, tensors, ops, prefix=ROOT):
        self.prefix = prefix
        self.tensors = tensors
        self.ops = ops

    def _get(self, name):
        key = self.prefix + "/" + name
        value = self.tensors.get(key)
        if value is None:
            raise _not_found(self.prefix, "no saved %r" % name)
        return value

    def has(self, name):
        return self.prefix + "/" + name in self.tensors

    def int(self, name):
        value = self._get(name)
        if value.shape != () or value.dtype != np.int64:
            raise _not_found(self.prefix, "%r is not an int64 scalar" % name)
        return int(value)

    def count(self, name, limit=None):
        """A saved count: an int in ``[0, limit]`` (a hostile state cannot make a finite
        pass endless or index past its data)."""
        value = self.int(name)
        if value < 0 or (limit is not None and value > limit):
            raise _not_found(self.prefix, "saved %s %d is outside [0, %s]" % (
                name, value, "inf" if limit is None else limit))
        return value

    def ints(self, name, length=None):
        value = self._get(name)
        if value.ndim != 1 or value.dtype != np.int64 or (
                length is not None and len(value) != length):
            raise _not_found(self.prefix, "%r is not an int64 vector%s" % (
                name, "" if length is None else " of %d" % length))
        return value

    def array(self, name):
        return self._get(name)

    def block(self, name):
        if self.has(name + "/slice"):
            start, stop, step = (int(v) for v in self.ints(name + "/slice", 3))
            if start < 0 or step < 1:
                raise _not_found(self.prefix, "bad saved slice")
            return slice(start, stop, step)
        positions = np.array(self.ints(name + "/positions"))
        if len(positions) and int(positions.min()) < 0:
            raise _not_found(self.prefix, "negative saved positions")
        return positions

    def rng(self, name):
        flags = self.ints(name + "/flags", 3)
        if self.has(name + "/pcg64"):
            words = self._get(name + "/pcg64")
            if words.shape != (4,) or words.dtype != np.uint64:
                raise _not_found(self.prefix, "bad saved generator state")
            w = [int(v) for v in words]
            bit = np.random.PCG64()
            bit.state = {"bit_generator": "PCG64",
                         "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
                         "has_uint32": int(flags[1]) & 1,
                         "uinteger": int(flags[2]) & 0xFFFFFFFF}
            return np.random.Generator(bit)
        counter = self._get(name + "/counter")
        key = self._get(name + "/key")
        buf = self._get(name + "/buffer")
        if counter.shape != (4,) or key.shape != (2,) or buf.shape != (4,) or not all(
                a.dtype == np.uint64 for a in (counter, key, buf)) or not 0 <= flags[0] <= 4:
            raise _not_found(self.prefix, "bad saved generator state")
        bit = np.random.Philox()
        bit.state = {"bit_generator": "Philox",
                     "state": {"counter": np.array(counter), "key": np.array(key)},
                     "buffer": np.array(buf), "buffer_pos": int(flags[0]),
                     "has_uint32": int(flags[1]) & 1, "uinteger": int(flags[2]) & 0xFFFFFFFF}
        return np.random.Generator(bit)

    def elements(self, name, spec):
        """The list of elements saved under ``name``, packed in ``spec``'s structure."""
        n = self.int(name + "/n")
        if n < 0:
            raise _not_found(self.prefix, "negative element count")
        if n == 0:
            return []
        leaves = structure.flatten(spec)
        columns = [self._column("%s/%d" % (name, j), n, s) for j, s in enumerate(leaves)]
        if self.has("%s/%d/ranks" % (name, len(leaves))) or self.has(
                "%s/%d/0/ranks" % (name, len(leaves))):
            raise _not_found(self.prefix, "the saved elements have more components")
        pack = structure.packer(spec)
        return [pack([c[i] for c in columns]) for i in range(n)]

    def _column(self, name, n, spec):
        from eagerflow.data import ragged_elements, sparse_elements

        if isinstance(spec, structure.DatasetSpec):
            from eagerflow.data.windowing import ElementsDataset

            return [ElementsDataset(self.elements("%s/%d" % (name, i), spec.element_spec),
                                    spec.element_spec) for i in range(n)]
        if sparse_elements.is_sparse_spec(spec):
            helper, count = sparse_elements, 3
        elif ragged_elements.is_ragged_spec(spec) and spec.ragged_rank:
            helper, count = ragged_elements, ragged_elements.component_count(spec)
        else:
            return [structure.wrap_array(a) for a in self._arrays(name, n)]
        parts = [self._arrays("%s/%d" % (name, k), n) for k in range(count)]
        try:
            return [helper.from_component_arrays([p[i] for p in parts]) for i in range(n)]
        except (errors.InvalidArgumentError, ValueError) as exc:
            raise _not_found(self.prefix, "inconsistent saved %s in %r: %s" % (
                type(spec).__name__, name, str(exc)[:200])) from None

    def _arrays(self, name, n):
        ranks = self.ints(name + "/ranks", n)
        dims = self.ints(name + "/dims")
        if np.any(ranks < 0) or int(ranks.sum()) != len(dims) or np.any(dims < 0):
            raise _not_found(self.prefix, "inconsistent saved shapes in %r" % name)
        shapes, at = [], 0
        for r in ranks.tolist():
            shapes.append(tuple(dims[at:at + r].tolist()))
            at += r
        sizes = [int(np.prod(s, dtype=object)) for s in shapes]
        total = sum(sizes)
        if self.has(name + "/bytes"):
            lengths = self.ints(name + "/lengths", total)
            data = self._get(name + "/bytes")
            if data.dtype != np.uint8 or np.any(lengths < 0) or int(lengths.sum()) != len(data):
                raise _not_found(self.prefix, "inconsistent saved strings in %r" % name)
            raw, cut = data.tobytes(), 0
            strings = []
            for length in lengths.tolist():
                strings.append(raw[cut:cut + length])
                cut += length
            flat = np.empty(total, object)
            flat[:] = strings
        else:
            flat = self._get(name + "/values").reshape(-1)
            if len(flat) != total:
                raise _not_found(self.prefix, "%r holds %d values for shapes of %d"
                                 % (name, len(flat), total))
        out, at = [], 0
        for shape, size in zip(shapes, sizes):
            value = flat[at:at + size].reshape(shape).copy()
            value.flags.writeable = False
            out.append(value)
            at += size
        return out

    def restore_input(self, slot, iterator, dataset):
        """Restores a child iterator saved by :meth:`StateWriter.save_input`.

        Raises:
            NotFoundError: If the checkpoint has no iterator of this op at this place.
            UnimplementedError: If the child cannot restore a position.
        """
        prefix = "%s::%s%s" % (self.prefix, op_name(dataset), slot)
        if not isinstance(iterator, StatefulIterator):
            raise _unsupported(dataset, prefix, None)
        saved = self.ops.get(prefix)
        if saved is None:
            raise _not_found(prefix, "the checkpoint has no iterator there")
        if saved != iterator._op:
            raise _not_found(prefix, "saved by a %s iterator, restored into a %s one"
                             % (saved, iterator._op))
        iterator.restore(StateReader(self.tensors, self.ops, prefix))


def to_bytes(writer):
    """The collected state as the bytes of one bundle."""
    return bundle.write_bytes(writer.tensors, metadata={"kind": KIND, "ops": writer.ops},
                              name="iterator state")


def from_bytes(data):
    """A :class:`StateReader` over state bytes, verified (checksums, sizes, dtypes).

    Raises:
        DataLossError: If the bytes are not a valid iterator state.
    """
    reader = bundle.BundleReader("<iterator state>", data=data)
    meta = reader.metadata
    ops = meta.get("ops")
    if meta.get("kind") != KIND or not isinstance(ops, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in ops.items()):
        raise errors.DataLossError(None, "DeserializeIterator",
                                   "The saved iterator state is not an eagerflow iterator "
                                   "state (kind %r)." % (meta.get("kind"),))
    return StateReader(reader.read_all(), ops)


# -- functions with external state ----------------------------------------------------------


def _as_policy(value):
    from eagerflow.data.options import ExternalStatePolicy

    return ExternalStatePolicy.FAIL if value is None else ExternalStatePolicy(int(value))


def _stateful_op(func, in_spec):
    """The first stateful op of ``func`` traced on ``in_spec``, or why it cannot be traced."""
    from eagerflow.function.function import function as ef_function

    specs = structure.flatten(in_spec)
    try:
        concrete = ef_function(lambda *flat: structure.call_with_element(
            func, structure.pack(in_spec, list(flat)))).get_concrete_function(*specs)
    except Exception as exc:  # noqa: BLE001 - an untraceable function is Python state
        return "a Python function that cannot be traced (%s: %s)" % (
            type(exc).__name__, str(exc).split("\n")[0][:200])
    for node in concrete.graph.nodes:
        if node.stateful:
            return node.op
    return None


def check_external_state(writer, dataset, func, in_spec, method):
    """Applies the dataset's ``experimental_external_state_policy`` to a user function.

    The policy is the whole pipeline's (``writer.policy``, from the options of the dataset
    iterated). As TF: a function with stateful ops (random ops, variable reads, Python functions)
    cannot be saved by default (FAIL); WARN saves the position with a warning, IGNORE
    silently; the function's state itself is never saved. The verdict is cached on the
    dataset.

    Raises:
        FailedPreconditionError: Under FAIL, naming the op and the transformation.
    """
    from eagerflow.data.options import ExternalStatePolicy

    policy = _as_policy(writer.policy)
    if policy == ExternalStatePolicy.IGNORE:
        return
    reason = getattr(dataset, "_external_state", False)
    if reason is False:
        reason = dataset._external_state = _stateful_op(func, in_spec)
    if reason is None:
        return
    message = ("Dataset.%s: %s is stateful, so the iterator's position cannot be saved "
               "exactly (its state is not saved). If restarting it from the saved position "
               "is what you want, set tf.data.Options().experimental_external_state_policy "
               "to tf.data.experimental.ExternalStatePolicy.IGNORE (or WARN) with "
               "dataset.with_options(options)." % (method, reason))
    if policy == ExternalStatePolicy.WARN:
        warnings.warn(message, stacklevel=4)
        return
    raise errors.FailedPreconditionError(None, "SerializeIterator", message)


class UnaryIterator(StatefulIterator):
    """An iterator over one input pass (``dataset._inputs[0]``), saving it as its child.

    Subclasses add their own fields in ``_save``/``_restore``.
    """

    __slots__ = ("_dataset", "_input")

    def __init__(self, dataset):
        self._dataset = dataset
        self._input = dataset._inputs[0]._elements()

    def close(self):
        self._input.close()

    def _save(self, writer):
        pass

    def _restore(self, reader):
        pass

    def save(self, writer):
        self._save(writer)
        writer.save_input("", self._input, self._dataset._inputs[0])

    def restore(self, reader):
        self._restore(reader)
        reader.restore_input("", self._input, self._dataset._inputs[0])
