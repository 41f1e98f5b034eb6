"""The tracing rules of ``eagerflow.function``, one test per rule.

What retraces (new shapes, dtypes, Python values) and what does not; input signatures and
``reduce_retracing``; Python side effects happen at trace time only; variables may be created
on the first trace only; captures see the current value of variables; concrete functions
and their inspection; retrace reasons and the retrace warning; running eagerly for
debugging; nested functions and methods; Python control flow on symbolic tensors is refused
with an error naming the user's line; ``eagerflow.print`` runs when the graph runs; a
training step traced once matches the eager one; run-time errors name the user's line.
"""

import logging

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

HERE = __file__


def _line_of(text):
    """The 1-based line number of the first line of this file containing ``text``."""
    with open(HERE) as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return number
    raise AssertionError("%r not found in %s" % (text, HERE))


# -- what makes a function trace again ---------------------------------------------------------
def test_one_trace_per_shape_and_dtype():
    traces = []

    @ef.function
    def f(x):
        traces.append(x.shape)
        return x * 2.0

    assert f(ef.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    assert f(ef.constant([3.0, 4.0])).numpy().tolist() == [6.0, 8.0]  # same spec: no trace
    assert len(traces) == 1
    f(ef.constant([1.0, 2.0, 3.0]))  # new shape
    assert len(traces) == 2
    out = f(ef.constant([1.0, 2.0], ef.float64))  # new dtype
    assert out.dtype is ef.float64 and out.numpy().tolist() == [2.0, 4.0]
    assert len(traces) == 3
    f(ef.constant([5.0, 6.0]))  # back to the first spec: reuses the first trace
    f(ef.constant([[5.0]]))  # new rank
    assert len(traces) == 4
    assert f.experimental_get_tracing_count() == 4


def test_python_values_are_part_of_the_key():
    traces = []

    @ef.function
    def f(x, power, negate=False):
        traces.append((power, negate))
        y = x ** power
        return -y if negate else y

    x = ef.constant([2.0, 3.0])
    assert f(x, 2).numpy().tolist() == [4.0, 9.0]
    assert f(x, 2).numpy().tolist() == [4.0, 9.0]
    assert f(x, 3).numpy().tolist() == [8.0, 27.0]
    assert f(x, 3, negate=True).numpy().tolist() == [-8.0, -27.0]
    assert f(x, power=3, negate=True).numpy().tolist() == [-8.0, -27.0]  # same key by keyword
    assert traces == [(2, False), (3, False), (3, True)]
    # A Python value of another type is another key, even when equal (1 == 1.0 == True).
    f(x, 1)
    f(x, 1.0)
    assert f.experimental_get_tracing_count() == 5


def test_tuples_and_dicts_are_traced_as_structures():
    @ef.function
    def f(pair, named):
        return pair[0] * named["scale"] + pair[1]

    x = ef.constant([1.0, 2.0])
    assert f((x, x), {"scale": 3.0}).numpy().tolist() == [4.0, 8.0]
    assert f((x, ef.constant([0.0, 0.0])), {"scale": 3.0}).numpy().tolist() == [3.0, 6.0]
    assert f.experimental_get_tracing_count() == 1


def test_argument_order_is_parameter_order():
    """Tensors are matched to placeholders by parameter position, not by name."""

    @ef.function
    def f(y, x):
        return y - x

    one, five = ef.constant(1.0), ef.constant(5.0)
    assert float(f(one, five)) == -4.0
    assert float(f(one, five)) == -4.0  # the cached path too
    assert float(f(x=five, y=one)) == -4.0
    concrete = f.get_concrete_function(ef.TensorSpec([]), ef.TensorSpec([]))
    assert float(concrete(one, five)) == -4.0
    assert [n.name for n in concrete.graph.inputs] == ["y", "x"]


def test_variadic_arguments():
    @ef.function
    def total(*xs, **scales):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out * scales.get("scale", 1.0)

    a, b, c = ef.constant(1.0), ef.constant(2.0), ef.constant(4.0)
    assert float(total(a, b, c)) == 7.0
    assert float(total(a, b, c, scale=2.0)) == 14.0
    assert float(total(c, b, a)) == 7.0
    assert total.experimental_get_tracing_count() == 2


def test_unhashable_python_argument_is_a_clear_type_error():
    @ef.function
    def f(x, options):
        return x

    with pytest.raises(TypeError) as info:
        f(ef.constant(1.0), {1, 2})
    message = str(info.value)
    assert "`options`" in message and "unhashable" in message and "set" in message
    assert f.experimental_get_tracing_count() == 0


def test_numpy_arrays_are_traced_like_tensors():
    @ef.function
    def f(x):
        return x + 1.0

    assert f(np.array([1.0, 2.0], np.float32)).numpy().tolist() == [2.0, 3.0]
    assert f(np.array([5.0, 6.0], np.float32)).numpy().tolist() == [6.0, 7.0]
    assert f.experimental_get_tracing_count() == 1


# -- input signatures and relaxed shapes -------------------------------------------------------
def test_input_signature_with_none_dims_traces_once():
    traces = []

    @ef.function(input_signature=[ef.TensorSpec([None, 2], ef.float32)])
    def f(x):
        traces.append(x.shape.as_list())
        return ef.reduce_sum(x, axis=1)

    for n in (1, 3, 7):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_array_equal(f(ef.constant(x)).numpy(), x.sum(axis=1))
    assert traces == [[None, 2]]  # the body saw the signature's shape
    assert f.experimental_get_tracing_count() == 1
    assert f.input_signature == (ef.TensorSpec([None, 2], ef.float32),)
    # get_concrete_function() with no arguments uses the signature.
    concrete = f.get_concrete_function()
    assert concrete.structured_input_signature[0][0].shape.as_list() == [None, 2]


def test_input_signature_rejects_incompatible_calls():
    @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
    def f(x):
        return x + 1.0

    f(ef.constant([1.0]))
    # TypeError, as TF 2.21 raises ("Binding inputs to tf.function failed ...").
    with pytest.raises(TypeError, match="`x`.*float32\\[2, 2\\]"):
        f(ef.constant([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(TypeError, match="`x`.*int32"):
        f(ef.constant([1, 2]))
    with pytest.raises(TypeError, match="float32\\[1, 1\\]"):
        f([ef.constant([1.0])])
    assert f.experimental_get_tracing_count() == 1


def test_reduce_retracing_generalizes_shapes():
    traces = []

    @ef.function(reduce_retracing=True)
    def f(x):
        traces.append(x.shape)
        return x * 2.0

    for n in (1, 2, 3, 4, 5):
        assert f(ef.constant(np.ones(n, np.float32))).numpy().tolist() == [2.0] * n
    # The second shape generalizes the dimension; every later length reuses that trace.
    assert [s.as_list() for s in traces] == [[1], [None]]
    # A new rank generalizes to an unknown rank (as TF), which then accepts any shape.
    f(ef.constant(np.ones((2, 2), np.float32)))
    assert traces[-1].rank is None
    np.testing.assert_array_equal(f(ef.constant(np.ones((2, 1, 3), np.float32))).numpy(),
                                  np.full((2, 1, 3), 2.0))
    assert f.experimental_get_tracing_count() == 3


# -- Python side effects and variables ---------------------------------------------------------
def test_python_side_effects_happen_once_per_trace():
    log = []

    @ef.function
    def f(x):
        log.append("traced")
        return x + 1.0

    for _ in range(5):
        f(ef.constant(1.0))
    assert log == ["traced"]
    f(ef.constant([1.0]))
    assert log == ["traced", "traced"]


def test_variable_created_on_every_call_raises_tf_value_error():
    @ef.function
    def f(x):
        v = ef.Variable(2.0)
        return v * x

    # As TF: a first trace that creates variables is traced again; a function that makes a
    # new variable on every trace fails on its first call (it used to run once silently).
    with pytest.raises(ValueError) as info:
        f(ef.constant(3.0))
    message = str(info.value)
    assert "singleton tf.Variables created on the first call" in message
    assert "first" in message and "if self.v is None" in message
    assert "test_tracing.py:%d" % _line_of("v = ef.Variable(2.0)") in message


def test_variable_creation_guarded_by_an_attribute():
    class Scale(ef.Module):
        def __init__(self):
            super().__init__()
            self.v = None
            self.bias = None

        @ef.function
        def __call__(self, x):
            if self.v is None:
                self.v = ef.Variable(3.0)
                self.bias = ef.Variable(ef.zeros([2]) + 1.0)  # computed in the trace, lifted
            return self.v * x + self.bias

    m = Scale()
    np.testing.assert_array_equal(m(ef.constant([1.0, 2.0])).numpy(), [4.0, 7.0])
    np.testing.assert_array_equal(m(ef.constant([[1.0, 2.0]])).numpy(), [[4.0, 7.0]])
    assert m.__call__.experimental_get_tracing_count() == 2
    assert len(m.trainable_variables) == 2
    m.v.assign(10.0)
    np.testing.assert_array_equal(m(ef.constant([1.0, 2.0])).numpy(), [11.0, 21.0])


def test_variable_initial_value_from_an_input_is_refused():
    @ef.function
    def f(x):
        return ef.Variable(x * 2.0)

    with pytest.raises(ValueError, match="does not depend on the function's inputs"):
        f(ef.constant(1.0))


def test_captured_variables_are_read_when_the_graph_runs():
    v = ef.Variable([1.0, 2.0])

    @ef.function
    def f(x):
        return x * v

    x = ef.constant([3.0, 3.0])
    assert f(x).numpy().tolist() == [3.0, 6.0]
    v.assign([10.0, 20.0])  # updated outside the function
    assert f(x).numpy().tolist() == [30.0, 60.0]
    assert f.experimental_get_tracing_count() == 1
    concrete = f.get_concrete_function(ef.TensorSpec([2]))
    assert concrete.variables == (v,)


def test_captured_tensors_small_and_large():
    small = ef.constant([1.0, 2.0])  # embedded as a constant
    big_np = np.arange(1000, dtype=np.float32)
    big = ef.constant(big_np)  # captured: bound at call time

    @ef.function
    def f(x):
        return ef.reduce_sum(x * small) + ef.reduce_sum(big)

    assert float(f(ef.constant([1.0, 1.0]))) == 3.0 + float(big_np.sum())
    concrete = f.get_concrete_function(ef.TensorSpec([2]))
    assert any(c is big for c in concrete.captured_inputs)
    assert "Const([1., 2.])" in concrete.graph.pretty()


def test_function_assigns_variables():
    counter = ef.Variable(0)

    @ef.function
    def step(x):
        counter.assign_add(1)
        return x + ef.cast(counter, ef.float32)

    assert float(step(ef.constant(0.0))) == 1.0
    assert float(step(ef.constant(0.0))) == 2.0
    assert int(counter.numpy()) == 2


# -- concrete functions ------------------------------------------------------------------------
def test_get_concrete_function_with_specs_and_with_examples():
    @ef.function
    def f(x, y):
        return {"sum": x + y, "prod": x * y}

    concrete = f.get_concrete_function(ef.TensorSpec([None], ef.float32),
                                       ef.TensorSpec([None], ef.float32))
    assert f.experimental_get_tracing_count() == 1
    out = concrete(ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0]))
    assert out["sum"].numpy().tolist() == [4.0, 6.0]
    assert out["prod"].numpy().tolist() == [3.0, 8.0]
    # The same specs again: the same concrete function, no new trace.
    assert f.get_concrete_function(ef.TensorSpec([None]), ef.TensorSpec([None])) is concrete

    example = f.get_concrete_function(ef.constant([1.0]), ef.constant([2.0]))
    assert example is not concrete
    assert [i.shape.as_list() for i in example.inputs] == [[1], [1]]
    with pytest.raises(errors.InvalidArgumentError, match="expected float32\\[1\\]"):
        example(ef.constant([1.0, 2.0]), ef.constant([1.0, 2.0]))
    with pytest.raises(errors.InvalidArgumentError, match="takes 2 tensor arguments"):
        example(ef.constant([1.0]))


def test_concrete_function_inspection():
    w = ef.Variable(np.ones((3, 2), np.float32), name="w")

    @ef.function
    def layer(x):
        return ef.nn.relu(ef.matmul(x, w)), ef.reduce_sum(x)

    concrete = layer.get_concrete_function(ef.TensorSpec([None, 3], ef.float32, name="x"))
    text = concrete.graph.pretty()
    assert text.startswith("graph layer(x: float32[None, 3]) {")
    for op in ("ReadVariableOp", "MatMul", "Relu", "Sum"):
        assert op in text, text
    assert text.rstrip().endswith("}")
    assert [t.dtype for t in concrete.inputs] == [ef.float32]
    assert [t.shape.as_list() for t in concrete.outputs] == [[None, 2], []]
    relu, total = concrete.structured_outputs
    assert relu.shape.as_list() == [None, 2] and total.shape.as_list() == []
    assert concrete.variables == (w,) and concrete.trainable_variables == (w,)
    (spec,), kwargs = concrete.structured_input_signature
    assert spec.shape.as_list() == [None, 3] and spec.dtype is ef.float32 and kwargs == {}
    assert "layer(x: float32[None, 3])" in repr(concrete)
    out, s = concrete(ef.constant([[1.0, -2.0, 0.5]]))
    np.testing.assert_allclose(out.numpy(), [[0.0, 0.0]])
    assert float(s) == -0.5


def test_python_outputs_pass_through():
    @ef.function
    def f(x):
        return x + 1.0, "label", 3

    value, label, n = f(ef.constant(1.0))
    assert float(value) == 2.0 and label == "label" and n == 3


# -- retrace reasons and the warning -----------------------------------------------------------
def test_retrace_reasons_name_the_argument_and_how():
    @ef.function
    def f(x, mode):
        return x

    f(ef.constant([1.0]), "a")
    f(ef.constant([1.0, 2.0]), "a")
    f(ef.constant([1.0, 2.0], ef.float64), "a")
    f(ef.constant([1.0, 2.0], ef.float64), "b")
    reasons = f.experimental_retrace_reasons()
    assert len(reasons) == 3
    assert "`x`" in reasons[0] and "shape" in reasons[0] and "[1] -> [2]" in reasons[0]
    assert "`x`" in reasons[1] and "dtype" in reasons[1] and "float32 -> float64" in reasons[1]
    assert "`mode`" in reasons[2] and "'a' -> 'b'" in reasons[2]


def test_retrace_warning_after_five_traces(caplog):
    @ef.function
    def noisy(x):
        return x

    with caplog.at_level(logging.WARNING, logger="eagerflow.function"):
        for n in range(1, 5):
            noisy(ef.constant(np.ones(n, np.float32)))
        assert not [r for r in caplog.records if r.name == "eagerflow.function"]
        noisy(ef.constant(np.ones(5, np.float32)))
    records = [r for r in caplog.records if r.name == "eagerflow.function"]
    assert len(records) == 1
    message = records[0].getMessage()
    assert "noisy" in message and "5 times" in message and "`x`" in message
    assert "shape" in message and "input_signature" in message


# -- debugging: running eagerly ----------------------------------------------------------------
def test_run_functions_eagerly_runs_python_each_call():
    calls = []

    @ef.function
    def f(x):
        calls.append(x)
        return float(ef.reduce_sum(x).numpy()) + 1.0  # only possible eagerly

    ef.config.run_functions_eagerly(True)
    try:
        assert ef.config.functions_run_eagerly()
        assert f(ef.constant([1.0, 2.0])) == 4.0
        assert f(ef.constant([1.0, 2.0])) == 4.0
        assert len(calls) == 2 and all(type(c) is ef.Tensor for c in calls)
        assert f.experimental_get_tracing_count() == 0
    finally:
        ef.config.run_functions_eagerly(False)
    assert not ef.config.functions_run_eagerly()


# -- nesting and methods -----------------------------------------------------------------------
def test_nested_functions_inline_into_one_graph():
    @ef.function
    def inner(x):
        return ef.tanh(x) * 2.0

    @ef.function
    def outer(x):
        return inner(x) + inner(x * 3.0)

    x = np.array([0.1, -0.4], np.float32)
    np.testing.assert_allclose(outer(ef.constant(x)).numpy(),
                               np.tanh(x) * 2 + np.tanh(3 * x) * 2, rtol=1e-6)
    ops = [n.op for n in outer.get_concrete_function(ef.TensorSpec([2])).graph.nodes]
    assert ops.count("Tanh") == 2
    assert inner.experimental_get_tracing_count() == 0  # it ran as Python inside the trace
    assert np.allclose(inner(ef.constant(x)).numpy(), np.tanh(x) * 2)


def test_methods_bind_self_and_cache_per_instance():
    class Affine(ef.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale
            self.w = ef.Variable(float(scale))
            self.traces = 0

        @ef.function
        def __call__(self, x):
            self.traces += 1
            return x * self.w + self.scale

    a, b = Affine(2), Affine(3)
    x = ef.constant([1.0, 2.0])
    assert a(x).numpy().tolist() == [4.0, 6.0]
    assert b(x).numpy().tolist() == [6.0, 9.0]
    assert a(x).numpy().tolist() == [4.0, 6.0]
    assert (a.traces, b.traces) == (1, 1)
    assert a.__call__ is a.__call__ and a.__call__ is not b.__call__
    assert a.__call__.experimental_get_tracing_count() == 1
    assert Affine.__call__.experimental_get_tracing_count() == 0


# -- Python control flow on symbolic tensors ---------------------------------------------------
def _assert_not_allowed(fn, arg, line_text, *fragments):
    with pytest.raises(errors.OperatorNotAllowedInGraphError) as info:
        fn(arg)
    message = str(info.value)
    assert "test_tracing.py:%d" % _line_of(line_text) in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_python_if_on_a_tensor_is_refused_with_the_line():
    # autograph=False keeps the error; with AutoGraph on, this converts.
    @ef.function(autograph=False)
    def f(x):
        if ef.reduce_sum(x) > 0:  # the offending line
            return x
        return -x

    _assert_not_allowed(f, ef.constant([1.0]), "if ef.reduce_sum(x) > 0:  # the offending",
                        "eagerflow.cond", "eagerflow.while_loop")


def test_python_while_on_a_tensor_is_refused_with_the_line():
    # autograph=False keeps the error; with AutoGraph on, this converts.
    @ef.function(autograph=False)
    def f(x):
        while x < 10.0:  # python while on a tensor
            x = x * 2.0
        return x

    _assert_not_allowed(f, ef.constant(1.0), "while x < 10.0:  # python while",
                        "while_loop")


def test_bool_float_and_numpy_on_a_tensor_are_refused():
    @ef.function
    def as_bool(x):
        return bool(x)  # bool of a tensor

    @ef.function
    def as_float(x):
        return float(x)  # float of a tensor

    @ef.function
    def as_numpy(x):
        return x.numpy()  # numpy of a tensor

    _assert_not_allowed(as_bool, ef.constant(True), "return bool(x)  # bool", "cond")
    _assert_not_allowed(as_float, ef.constant(1.0), "return float(x)  # float", "float()")
    _assert_not_allowed(as_numpy, ef.constant(1.0), "return x.numpy()  # numpy",
                        "numpy()", "eagerflow.print")
    assert issubclass(errors.OperatorNotAllowedInGraphError, TypeError)


def test_python_for_over_range_unrolls():
    @ef.function
    def f(x):
        for _ in range(3):
            x = x * 2.0 + 1.0
        return x

    assert float(f(ef.constant(1.0))) == 15.0
    ops = [n.op for n in f.get_concrete_function(ef.TensorSpec([])).graph.nodes]
    assert ops.count("Mul") == 3 and ops.count("AddV2") == 3


def test_python_if_on_python_values_and_static_shapes_is_fine():
    @ef.function
    def f(x, training):
        if training:
            x = x * 0.5
        if x.shape[0] == 2:  # static shapes are Python values while tracing
            x = x + 1.0
        return x

    assert f(ef.constant([2.0, 4.0]), True).numpy().tolist() == [2.0, 3.0]
    assert f(ef.constant([2.0, 4.0]), False).numpy().tolist() == [3.0, 5.0]
    assert f(ef.constant([2.0]), False).numpy().tolist() == [2.0]


# -- eagerflow.print ---------------------------------------------------------------------------
def test_print_runs_when_the_graph_runs(capfd):
    @ef.function
    def f(x):
        ef.print("value:", x)
        return x + 1.0

    concrete = f.get_concrete_function(ef.TensorSpec([], ef.float32))
    assert "Print" in [n.op for n in concrete.graph.nodes]
    assert capfd.readouterr().err == ""  # tracing printed nothing
    for value in (1.5, 2.5, 3.5):
        f(ef.constant(value))
    err = capfd.readouterr().err
    assert err.splitlines() == ["value: 1.5", "value: 2.5", "value: 3.5"]


# -- a training step in one function -----------------------------------------------------------
def _mlp_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = (x @ rng.standard_normal((4, 1))).astype(np.float32)
    w1 = (rng.standard_normal((4, 8)) * 0.5).astype(np.float32)
    w2 = (rng.standard_normal((8, 1)) * 0.5).astype(np.float32)
    return x, y, w1, w2


def _make_step(params, lr=0.05):
    w1, b1, w2 = params

    def step(x, y):
        with ef.GradientTape() as tape:
            h = ef.tanh(ef.matmul(x, w1) + b1)
            loss = ef.reduce_mean(ef.square(ef.matmul(h, w2) - y))
        grads = tape.gradient(loss, [w1, b1, w2])
        for v, g in zip((w1, b1, w2), grads):
            v.assign_sub(lr * g)
        return loss

    return step


def test_training_step_in_one_function_matches_eager():
    x, y, w1, w2 = _mlp_data()

    def params():
        return ef.Variable(w1), ef.Variable(np.zeros(8, np.float32)), ef.Variable(w2)

    eager_params, traced_params = params(), params()
    eager_step = _make_step(eager_params)
    traced_step = ef.function(_make_step(traced_params))
    xs, ys = ef.constant(x), ef.constant(y)
    losses = []
    for _ in range(20):
        e = eager_step(xs, ys)
        t = traced_step(xs, ys)
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-5)
        losses.append(float(t))
    assert traced_step.experimental_get_tracing_count() == 1
    assert losses[-1] < 0.5 * losses[0]
    for ev, tv in zip(eager_params, traced_params):
        np.testing.assert_allclose(tv.numpy(), ev.numpy(), rtol=1e-5, atol=1e-6)
    graph_ops = [n.op for n in traced_step.get_concrete_function(xs, ys).graph.nodes]
    assert graph_ops.count("AssignSubVariableOp") == 3
    assert "MatMul" in graph_ops and "Tanh" in graph_ops


# -- run-time errors ---------------------------------------------------------------------------
def test_runtime_error_names_the_users_line():
    @ef.function
    def lookup(params, index):
        return ef.gather(params, index)  # the line that made the op

    params = ef.constant([1.0, 2.0, 3.0])
    assert float(lookup(params, ef.constant(2))) == 3.0
    with pytest.raises(errors.InvalidArgumentError) as info:
        lookup(params, ef.constant(7))
    message = str(info.value)
    assert "test_tracing.py:%d" % _line_of("return ef.gather(params, index)  # the line") \
        in message, message
    assert "7" in message


def test_trace_time_shape_error_names_the_users_line():
    @ef.function
    def f(a, b):
        return ef.matmul(a, b)  # incompatible inner dimensions

    with pytest.raises(errors.InvalidArgumentError) as info:
        f(ef.constant(np.ones((2, 3), np.float32)), ef.constant(np.ones((2, 3), np.float32)))
    assert "test_tracing.py:%d" % _line_of("return ef.matmul(a, b)  # incompatible") in \
        str(info.value)


# -- the bounded trace cache --------------------------------------------------------------------
def test_trace_cache_evicts_least_recently_used_with_one_warning(caplog):
    ef.config.experimental.set_function_trace_cache_size(3)
    try:
        traced = []

        @ef.function
        def f(x, k):
            traced.append(k)
            return x * k

        x = ef.constant(2.0)
        with caplog.at_level(logging.WARNING, logger="eagerflow.function"):
            for k in (1, 2, 3):
                f(x, k)
            f(x, 1)  # 1 is now the most recently used; 2 the least
            f(x, 4)  # evicts 2
            f(x, 5)  # evicts 3
            assert float(f(x, 1)) == 2.0 and float(f(x, 4)) == 8.0
            assert traced == [1, 2, 3, 4, 5]  # 1 and 4 were kept
            assert float(f(x, 2)) == 4.0  # dropped: traced again
            assert traced == [1, 2, 3, 4, 5, 2]
        evictions = [r for r in caplog.records if "keeps at most 3 traces" in r.getMessage()]
        assert len(evictions) == 1
        assert "set_function_trace_cache_size" in evictions[0].getMessage()
        assert len(f._concretes) == 3
    finally:
        ef.config.experimental.set_function_trace_cache_size(128)


def test_trace_cache_keeps_hot_fast_path_traces():
    # A trace used only through the fast path (positional tensors) counts as used.
    ef.config.experimental.set_function_trace_cache_size(2)
    try:
        traced = []

        @ef.function
        def f(x):
            traced.append(x.shape.as_list())
            return x + 1.0

        hot = ef.constant([1.0])
        for n in range(2, 8):
            f(hot)
            f(ef.constant(np.ones(n, np.float32)))
        assert traced.count([1]) == 1
    finally:
        ef.config.experimental.set_function_trace_cache_size(128)


def test_trace_cache_size_must_be_positive():
    for bad in (0, -1, 2.5, "3", None, True):
        with pytest.raises(ValueError, match="set_function_trace_cache_size"):
            ef.config.experimental.set_function_trace_cache_size(bad)
    assert ef.config.experimental.get_function_trace_cache_size() == 128
