"""Serialized graphs: every primitive survives the protobuf round trip, functions run in a
fresh process with no model code, attribute values round-trip exactly, bad bytes are refused.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes, errors
from eagerflow.function import serialize
from eagerflow.function.graph import Graph
from eagerflow.ops import load_all, registry
from eagerflow.ops.dispatch import execute
from eagerflow.tensor_shape import TensorShape

from tests.conftest import count

load_all()


def _sweep_dtypes(prim):
    if prim.sweep_dtypes is not None:
        return list(prim.sweep_dtypes)
    allowed = prim.dtypes if prim.dtypes is not None else dtypes.ALL_DTYPES
    picked = [d for d in (dtypes.float32, dtypes.int32, dtypes.bool) if d in allowed]
    return picked or [d for d in allowed if d.name != "bfloat16"][:1]


def _flat_args(prim, args):
    if prim.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return tuple(args)


def _assert_same_tensor(what, got, expected):
    got, expected = (np.asarray(t._value if t.dtype == ef.string else t.numpy())
                     for t in (got, expected))
    assert got.dtype == expected.dtype, "%s: dtype %s != eager %s" % (what, got.dtype,
                                                                      expected.dtype)
    assert got.shape == expected.shape, "%s: shape %s != eager %s" % (what, got.shape,
                                                                      expected.shape)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


def _same_value(a, b):
    """Equality that also requires equal types at every level (and NaN == NaN, -0.0 != 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                      math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and np.shape(a) == np.shape(b) and np.array_equal(
            a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, slice):
        return all(_same_value(getattr(a, k), getattr(b, k)) for k in ("start", "stop",
                                                                         "step"))
    return a == b


# -- (1) every primitive survives the round trip ---------------------------------------------
def test_every_primitive_round_trips():
    """Trace each stateless primitive on its samples, serialize, load, run: equal to eager."""
    failures = []
    prims = cases = 0
    for prim in registry.all_primitives():
        if prim.stateful or prim.samples is None:
            continue
        rng = np.random.default_rng(abs(hash(prim.name)) % 2**32)
        done = 0
        for dtype in _sweep_dtypes(prim):
            for args, attrs in prim.samples(rng, dtype)[:2]:
                flat = [ef.constant(a) for a in _flat_args(prim, args)]
                try:
                    expected = execute(prim, tuple(flat), attrs)
                except errors.OpError:
                    continue  # a sample meant for another dtype; the reference sweep owns it
                try:
                    _round_trip_one(prim, flat, attrs, expected)
                except Exception as exc:  # noqa: BLE001 - collect every failing primitive
                    failures.append("%s(%s, %r): %s: %s" % (
                        prim.name, dtype.name, attrs, type(exc).__name__, exc))
                done += 1
        if done:
            prims += 1
            cases += done
    assert not failures, "\n".join(failures)
    stateless = [p for p in registry.all_primitives() if not p.stateful and p.samples]
    assert prims == len(stateless), "some primitives had no usable sample"
    count("serialize sweep: primitives", prims)
    count("serialize sweep: cases", cases)


def _round_trip_one(prim, flat, attrs, expected):
    def apply(args):
        return execute(prim, tuple(args), attrs)

    specs = [ef.TensorSpec(t.shape, t.dtype) for t in flat]
    concrete = ef.function(apply).get_concrete_function(specs)
    data = serialize.serialize_concrete_function(concrete)
    loaded = serialize.load_function(data)
    node = next(n for n in loaded.graph.nodes if n.op == prim.name)
    assert node.prim is prim
    original = next(n for n in concrete.graph.nodes if n.op == prim.name)
    assert _same_value(node.attrs, original.attrs), (node.attrs, original.attrs)
    got = loaded(flat)
    if prim.single:
        _assert_same_tensor(prim.name, got, expected)
    else:
        assert isinstance(got, tuple) and len(got) == len(expected)
        for k, (g, e) in enumerate(zip(got, expected)):
            _assert_same_tensor("%s output %d" % (prim.name, k), g, e)


# -- (2) a fresh process runs the graph with no model code -----------------------------------
def _mlp():
    rng = np.random.default_rng(0)
    w1 = ef.Variable(rng.normal(size=(4, 8)).astype(np.float32), name="dense/kernel")
    b1 = ef.Variable(rng.normal(size=(8,)).astype(np.float32), name="dense/bias")
    w2 = ef.Variable(rng.normal(size=(8, 3)).astype(np.float32), name="out/kernel")
    b2 = ef.Variable(np.zeros(3, np.float32), name="out/bias", trainable=False)

    def forward(x):
        hidden = ef.tanh(ef.matmul(x, w1) + b1)
        logits = ef.matmul(hidden, w2) + b2
        return {"probs": ef.nn.softmax(logits), "extra": (logits, hidden[:, :2]),
                "tag": "mlp"}

    traced = ef.function(forward, input_signature=[ef.TensorSpec([None, 4], ef.float32)])
    traced.eager = forward
    return traced, (w1, b1, w2, b2)


def _counter():
    step = ef.Variable(0, name="step")
    offset = ef.constant(np.linspace(-1.0, 1.0, 80).astype(np.float32))  # captured, not embedded

    @ef.function
    def count_and_print(x):
        step.assign_add(1)
        ef.print("step", step, "sum", ef.reduce_sum(x), output_stream=sys.stdout)
        return ef.reduce_sum(x * 2.0) + ef.reduce_sum(offset)

    return count_and_print, step


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import eagerflow as ef
    from eagerflow.function import serialize

    models = [m for m in sys.modules if m.startswith("tests")]
    mlp = serialize.load(sys.argv[1])
    out = mlp(ef.constant(np.load(sys.argv[3])))
    np.savez(sys.argv[4], probs=out["probs"].numpy(), logits=out["extra"][0].numpy(),
             hidden=out["extra"][1].numpy())
    counter = serialize.load(sys.argv[2], variable_values={"step:0": np.int32(10)})
    sys.stdout.flush()
    first = counter(ef.constant([1.0, 2.0]))
    second = counter(ef.constant([3.0]))
    sys.stdout.flush()
    print(json.dumps({"tag": out["tag"], "first": float(first), "second": float(second),
                      "step": int(counter.variables[0].numpy()), "models": models,
                      "shapes": [list(n.avals[0].shape) for n in mlp.graph.inputs]}))
""")


def test_fresh_process_runs_saved_functions(tmp_path, capsys):
    forward, _ = _mlp()
    x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    expected = forward(ef.constant(x))
    mlp_path = serialize.save_graph(tmp_path / "mlp.efg", forward.get_concrete_function(),
                                    embed_variables=True)
    counter, step = _counter()
    cf = counter.get_concrete_function(ef.TensorSpec([None], ef.float32))
    serialize.save_graph(tmp_path / "counter.efg", cf)  # the variable's value is not stored
    step.assign(10)
    capsys.readouterr()
    eager_first = counter(ef.constant([1.0, 2.0]))
    eager_second = counter(ef.constant([3.0]))
    eager_printed = capsys.readouterr().out
    np.save(tmp_path / "x.npy", x)

    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(ef.__file__)))
    env["PYTHONPATH"] = package_root
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(mlp_path), str(tmp_path / "counter.efg"),
         str(tmp_path / "x.npy"), str(tmp_path / "out.npz")],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert "\n".join(lines[:-1]) + "\n" == eager_printed  # Print ran in the child, in order
    assert eager_printed.startswith("step 11 sum 3") and "step 12 sum 3" in eager_printed
    assert report["models"] == []
    assert report["tag"] == "mlp"
    assert report["shapes"] == [[None, 4]]
    assert report["first"] == pytest.approx(float(eager_first))
    assert report["second"] == pytest.approx(float(eager_second))
    assert report["step"] == 12 == int(step.numpy())
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_allclose(out["probs"], expected["probs"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(out["logits"], expected["extra"][0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(out["hidden"], expected["extra"][1].numpy(), rtol=1e-6)
    assert out["probs"].dtype == np.float32 and out["probs"].shape == (5, 3)


def test_import_does_not_load_protobuf():
    code = "import sys, eagerflow; print(any(m.startswith('google.protobuf') for m in sys.modules))"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(ef.__file__)))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_loaded_function_in_process():
    forward, (w1, b1, w2, b2) = _mlp()
    cf = forward.get_concrete_function()
    x = ef.constant(np.ones((2, 4), np.float32))
    with pytest.raises(errors.FailedPreconditionError, match=r"0 \(dense/kernel"):
        serialize.load_function(serialize.serialize_concrete_function(cf))
    # Supplying the live variables shares them; supplying arrays makes new ones.
    shared = serialize.load_function(serialize.serialize_concrete_function(cf),
                                     variable_values={0: w1, 1: b1, 2: w2, 3: b2})
    assert shared.variables == (w1, b1, w2, b2)
    assert shared.trainable_variables == (w1, b1, w2)
    _assert_same_tensor("shared", shared(x)["probs"], forward(x)["probs"])
    copies = serialize.load_function(
        serialize.serialize_concrete_function(cf),
        variable_values={w1.name: w1.numpy(), 1: b1.numpy(), 2: w2.numpy(),
                         3: b2.numpy()})
    assert copies.variables[0] is not w1 and not copies.variables[3].trainable
    _assert_same_tensor("copies", copies(x)["probs"], forward(x)["probs"])
    # Gradients flow through a loaded function (it replays under a tape).
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(shared(x)["extra"][0])
    with ef.GradientTape() as tape2:
        loss2 = ef.reduce_sum(forward.eager(x)["extra"][0])
    grads = tape.gradient(loss, [w1, b1])
    expected = tape2.gradient(loss2, [w1, b1])
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)
    # Inside another function it is inlined.
    outer = ef.function(lambda t: shared(t)["probs"] * 2.0)
    _assert_same_tensor("inlined", outer(x), forward(x)["probs"] * 2.0)
    with pytest.raises(errors.InvalidArgumentError, match="argument"):
        shared(ef.ones([2, 5]))


def test_graph_and_external_captures():
    big = ef.constant(np.arange(100, dtype=np.float64))
    f = ef.function(lambda x: x + ef.reduce_sum(big))
    cf = f.get_concrete_function(ef.TensorSpec([], ef.float64))
    message = serialize.graph_to_proto(cf.graph, embed_captures=False)
    assert [c.external for c in message.signature.capture] == [0]
    data = serialize.proto_to_bytes(message)
    with pytest.raises(errors.FailedPreconditionError, match="capture"):
        serialize.load_function(data)
    loaded = serialize.load_function(data, capture_values=[np.ones(100)])
    assert float(loaded(ef.constant(1.0, ef.float64))) == 101.0  # a bare Graph's single output
    graph = serialize.proto_to_graph(serialize.graph_to_proto(cf))
    assert isinstance(graph, Graph) and not graph.captures
    assert [n.op for n in graph.nodes].count("Const") == 1
    assert "= capture" not in graph.pretty()


def test_save_graph_is_atomic(tmp_path, monkeypatch):
    f = ef.function(lambda x: x * 3.0)
    cf = f.get_concrete_function(ef.TensorSpec([2]))
    path = tmp_path / "f.efg"
    path.write_bytes(b"old contents")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        serialize.save_graph(path, cf)
    monkeypatch.undo()
    assert path.read_bytes() == b"old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.efg"]  # no temp file left
    serialize.save_graph(str(path), cf)
    assert serialize.load(path)(ef.constant([1.0, 2.0])).numpy().tolist() == [3.0, 6.0]
    assert serialize.serialize_concrete_function(cf) == path.read_bytes()  # deterministic


def test_control_flow_round_trips():
    """cond and while_loop sub-graphs travel in the library and run the same when loaded."""
    big = ef.constant(np.arange(100, dtype=np.float32))
    scale = ef.Variable(2.0, name="scale")

    @ef.function
    def f(x, n):
        y = ef.cond(ef.reduce_sum(x) > 0, lambda: x * scale, lambda: x - ef.reduce_sum(big))

        def body(i, acc):
            return i + 1, acc + ef.cond(i > 1, lambda: y + 1.0, lambda: y * 2.0)

        return ef.while_loop(lambda i, acc: i < n, body, (0, ef.zeros_like(x)))

    cf = f.get_concrete_function(ef.TensorSpec([3]), ef.TensorSpec([], ef.int32))
    message = serialize.graph_to_proto(cf, embed_variables=True)
    assert len(message.graph.library.function) == len(cf.graph.library) == 6
    loaded = serialize.load_function(serialize.proto_to_bytes(message))
    assert sorted(loaded.graph.library) == sorted(cf.graph.library)
    for x in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]):
        for n in (0, 1, 4):
            by_name = {"n": ef.constant(n), "x": ef.constant(x)}
            args = [by_name[node.name] for node in cf.graph.inputs]  # flat, in graph order
            want, got = cf(*args), loaded(*args)
            assert isinstance(got, tuple) and len(got) == 2
            for g, w in zip(got, want):
                _assert_same_tensor("while(n=%d)" % n, g, w)
    with ef.GradientTape():  # a recording tape: runs as one op, no error
        _assert_same_tensor("taped", loaded(*args)[1], cf(*args)[1])


@pytest.mark.gpu
def test_gpu_placed_graph_round_trips():
    with ef.device("/GPU:0"):
        w = ef.Variable(np.linspace(-1, 1, 12).reshape(3, 4).astype(np.float32))

        @ef.function
        def f(x):
            return ef.nn.softmax(ef.tanh(ef.matmul(x, w)))

        x = ef.constant(np.ones((2, 3), np.float32))
        cf = f.get_concrete_function(ef.TensorSpec([None, 3]))
        expected = cf(x)
    assert "GPU" in expected.device
    loaded = serialize.load_function(serialize.serialize_concrete_function(
        cf, embed_variables=True))
    got = loaded(x)
    assert "GPU" in loaded.variables[0].device and "GPU" in got.device
    _assert_same_tensor("gpu", got, expected)
    on_cpu = serialize.load_function(serialize.serialize_concrete_function(
        cf, embed_variables=True), clear_devices=True)
    assert "CPU" in on_cpu.variables[0].device
    np.testing.assert_allclose(on_cpu(x).numpy(), expected.numpy(), rtol=1e-5)


# -- (3) attribute values round-trip exactly -------------------------------------------------
def _attr_values():
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    leaves = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
        st.text(max_size=8), st.binary(max_size=8), st.just(Ellipsis),
        st.sampled_from([d for d in dtypes.ALL_DTYPES] + [dtypes.string]),
        st.sampled_from([np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)]),
        st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 9)), max_size=4))
        .map(TensorShape),
        hnp.arrays(st.sampled_from([np.float32, np.int64, np.bool_, np.complex64, np.uint8]),
                   hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)),
        st.builds(np.float32, st.floats(width=32)), st.builds(np.int16, st.integers(-5, 5)),
        st.builds(slice, st.none() | st.integers(-3, 3), st.none() | st.integers(-3, 3),
                  st.none() | st.integers(1, 3)),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
            st.dictionaries(st.one_of(st.text(max_size=4), st.integers(), st.booleans()),
                            inner, max_size=4)),
        max_leaves=12)


def test_attr_values_round_trip():
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings

    pb = serialize.codec._pb()

    @settings(max_examples=100, deadline=None, derandomize=True)
    @given(_attr_values())
    def check(value):
        message = serialize.attr_to_proto(value)
        parsed = pb.AttrValue.FromString(message.SerializeToString())
        back = serialize.proto_to_attr(parsed)
        if isinstance(value, TensorShape):
            assert back == value and back.dims == value.dims
        else:
            assert _same_value(back, value), (value, back)

    check()
    count("hypothesis: attribute round trips", 100)


def test_attr_edge_cases_and_graph_attrs():
    for value in (2**63 - 1, -2**63, 2**64, -2**200, -0.0, float("inf"), "\ud800x", "ünï",
                  (), [], {}, ((),), {"template": ("x is", None)}, slice(None), True, 0):
        back = serialize.proto_to_attr(serialize.attr_to_proto(value))
        assert _same_value(back, value), (value, back)
    with pytest.raises(errors.InvalidArgumentError, match="object"):
        serialize.attr_to_proto(object())
    with pytest.raises(errors.InvalidArgumentError):
        serialize.attr_to_proto({1, 2})
    # A node attribute of an unsupported type names the node; private ones are dropped.
    f = ef.function(lambda x: ef.tanh(x))
    cf = f.get_concrete_function(ef.TensorSpec([2]))
    node = next(n for n in cf.graph.nodes if n.op == "Tanh")
    node.attrs["_pass_note"] = object()
    graph = serialize.proto_to_graph(serialize.graph_to_proto(cf))
    assert graph.node_by_name(node.name).attrs == {}
    node.attrs["bad"] = object()
    with pytest.raises(errors.InvalidArgumentError, match="tanh"):
        serialize.graph_to_proto(cf)


def test_sub_graphs_in_the_library():
    """Graphs referenced from attrs and the library round-trip, sharing one definition."""
    f = ef.function(lambda x: ef.tanh(x) * 2.0)
    inner = f.get_concrete_function(ef.TensorSpec([3])).graph
    g = ef.function(lambda x: ef.exp(x))
    cf = g.get_concrete_function(ef.TensorSpec([3]))
    # On a Placeholder: a primitive's node may only carry attributes its kernel declares.
    node = next(n for n in cf.graph.nodes if n.op == "Placeholder")
    cf.graph.library["body"] = inner
    node.attrs["_branches"] = (inner, inner)
    message = serialize.graph_to_proto(cf)
    assert [fd.signature.name for fd in message.graph.library.function] == [inner.name]
    graph = serialize.proto_to_graph(message)
    loaded_inner = graph.library["body"]
    assert graph.node_by_name(node.name).attrs["_branches"] == (loaded_inner, loaded_inner)
    assert [n.op for n in loaded_inner.nodes] == [n.op for n in inner.nodes]
    del cf.graph.library["body"]


# -- (4) bad bytes and unknown ops ----------------------------------------------------------
def _sample_bytes():
    w = ef.Variable(np.eye(3, dtype=np.float32), name="w")
    f = ef.function(lambda x: ef.nn.softmax(ef.matmul(x, w)))
    return serialize.serialize_concrete_function(f.get_concrete_function(
        ef.TensorSpec([None, 3])), embed_variables=True)


def test_truncated_and_corrupted_bytes():
    data = _sample_bytes()
    assert serialize.load_function(data)(ef.ones([1, 3])).shape == (1, 3)
    refused = 0
    for cut in sorted({0, 1, 2, 5, 10, 30, len(data) // 2, len(data) - 5, len(data) - 1}):
        with pytest.raises(errors.DataLossError, match="(?i)truncated|empty|parse|format"):
            serialize.load_function(data[:cut])
        refused += 1
    rng = np.random.default_rng(0)
    for position in rng.choice(len(data), size=25, replace=False):
        corrupted = bytearray(data)
        corrupted[position] ^= 0x5A
        with pytest.raises(errors.DataLossError):
            serialize.load_function(bytes(corrupted))
        refused += 1
    with pytest.raises(errors.DataLossError):
        serialize.load_function(bytes(rng.integers(0, 256, size=200, dtype=np.uint8)))
    with pytest.raises(errors.DataLossError, match="format"):
        serialize.load_function(serialize.codec._pb().SavedFunctionFile(
            format="something else").SerializeToString())
    count("serialize: truncated or corrupted byte strings refused", refused)


def _edited(mutate):
    message = serialize.bytes_to_proto(_sample_bytes())
    mutate(message)
    return serialize.proto_to_bytes(message)


def test_unknown_op_and_inconsistent_graphs():
    def rename(message):
        next(n for n in message.graph.node if n.op == "MatMul").op = "FancyMatMul"

    with pytest.raises(errors.NotFoundError, match="FancyMatMul") as info:
        serialize.load_function(_edited(rename))
    assert "MatMul" in str(info.value)  # the registry's close match is named

    def dangle(message):
        next(n for n in message.graph.node if n.op == "MatMul").input[0] = "nowhere:0"

    with pytest.raises(errors.DataLossError, match="nowhere"):
        serialize.load_function(_edited(dangle))

    def bad_index(message):
        message.signature.output[0] = message.signature.output[0].split(":")[0] + ":7"

    with pytest.raises(errors.DataLossError, match="output 7"):
        serialize.load_function(_edited(bad_index))

    def short_tensor(message):
        message.variable[0].initial_value.content = b"\0" * 7

    with pytest.raises(errors.DataLossError, match="7 bytes"):
        serialize.load_function(_edited(short_tensor))

    def future(message):
        message.graph.versions.min_consumer = serialize.FORMAT_VERSION + 1

    with pytest.raises(errors.UnimplementedError, match="newer"):
        serialize.load_function(_edited(future))

    def bad_dtype(message):
        message.signature.input[0].dtype = 99

    with pytest.raises(errors.DataLossError, match="dtype"):
        serialize.load_function(_edited(bad_dtype))


def test_a_fused_region_loads_and_runs_in_a_fresh_interpreter(tmp_path):
    # The executor step of a fused region is registered by the optimizer passes; a process
    # that only loads a graph (a parameter server) has never imported them.
    from eagerflow.function import passes
    from tests.fresh_interpreter import run_python

    f = ef.function(lambda x: ef.tanh(x) * 2.0 + ef.exp(x))
    graph = passes.optimize(f.get_concrete_function(ef.TensorSpec([4])).graph)
    assert "FusedElementwise" in [n.op for n in graph.nodes]
    path = tmp_path / "fused.efg"
    path.write_bytes(serialize.proto_to_bytes(serialize.graph_to_proto(graph)))
    x = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)
    out = run_python("""
        import sys
        import numpy as np
        import eagerflow as ef
        from eagerflow.function import serialize
        assert "eagerflow.function.passes" not in sys.modules
        from eagerflow.function.executor import Executor
        graph = serialize.proto_to_graph(serialize.bytes_to_proto(open(sys.argv[1], "rb").read()))
        # As a task that is sent a graph runs it: straight into an executor.
        out, = Executor(graph).run([np.array([-1.0, 0.0, 0.5, 2.0], np.float32)], [])
        print(repr(np.asarray(out).tolist()))
    """, str(path))
    np.testing.assert_allclose(eval(out), np.tanh(x) * 2.0 + np.exp(x), rtol=1e-6)  # noqa: S307
