"""AutoGraph: Python control flow in @function bodies, traced equal to eager."""

import inspect

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function.autograph import conversion

F64 = ef.float64


def _line_of(fragment):
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    hits = [i + 1 for i, line in enumerate(lines)
            if fragment in line and "_line_of(" not in line]
    assert len(hits) == 1, (fragment, hits)
    return hits[0]


def _ops(fn, *args):
    graph = fn.get_concrete_function(*args).graph
    names = set()
    stack = [graph]
    while stack:
        g = stack.pop()
        names.update(n.op for n in g.nodes)
        stack.extend(getattr(g, "library", {}).values())
    return names


def _traced_equals_eager(python_fn, *arg_lists):
    traced = ef.function(python_fn)
    for args in arg_lists:
        want = python_fn(*args)  # eagerly: plain Python on eager tensors
        got = traced(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# -- if / elif / else ------------------------------------------------------------------------
def classify(x):
    if ef.reduce_sum(x) > 10.0:
        y = x * 3.0
    elif ef.reduce_sum(x) > 0.0:
        y = x + 1.0
    else:
        y = -x
    return y


def test_if_elif_else_on_tensors_traced_equal_eager():
    _traced_equals_eager(classify, [ef.constant([5.0, 6.0])], [ef.constant([1.0, 2.0])],
                         [ef.constant([-1.0, -2.0])])
    f = ef.function(classify)
    f(ef.constant([5.0, 6.0]))
    f(ef.constant([-5.0, 6.0]))
    assert f.experimental_get_tracing_count() == 1  # one graph serves every branch
    assert "If" in _ops(f, ef.constant([1.0, 2.0]))


def early_return(x):
    if x > 0.0:
        return x * 2.0
    return -x


def test_return_inside_if():
    _traced_equals_eager(early_return, [ef.constant(3.0)], [ef.constant(-4.0)])


def test_python_condition_stays_python():
    printed = []

    def scaled(x, double):
        printed.append("trace")  # trace-time Python runs once per trace
        if double:
            x = x * 2.0
        return x

    f = ef.function(scaled)
    assert float(f(ef.constant(1.0), True)) == 2.0
    assert float(f(ef.constant(1.0), False)) == 1.0
    assert float(f(ef.constant(5.0), True)) == 10.0
    assert f.experimental_get_tracing_count() == 2
    assert printed == ["trace", "trace"]
    assert "If" not in _ops(f, ef.constant(1.0), True)


def test_python_loop_over_range_unrolls():
    def f(x):
        for _ in range(3):
            x = x * 2.0
        return x

    traced = ef.function(f)
    assert float(traced(ef.constant(1.0))) == 8.0
    assert "While" not in _ops(traced, ef.constant(1.0))


# -- while / for / break / continue ---------------------------------------------------------
def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def test_while_on_a_tensor_traced_equal_eager():
    _traced_equals_eager(collatz, [ef.constant(6)], [ef.constant(27)], [ef.constant(1)])
    assert "While" in _ops(ef.function(collatz), ef.constant(6))


def filtered_sum(x):
    total = ef.constant(0.0)
    for v in x:
        if v < 0.0:
            continue
        if v > 10.0:
            break
        total += v
    return total


def test_for_over_a_tensor_with_break_and_continue():
    _traced_equals_eager(filtered_sum, [ef.constant([1.0, -2.0, 3.0, 20.0, 5.0])],
                         [ef.constant([1.0, 2.0])], [ef.constant([30.0])])


def first_above(x, limit):
    for v in x:
        if v > limit:
            return v
    return ef.constant(-1.0)


def test_return_inside_a_tensor_loop():
    _traced_equals_eager(first_above, [ef.constant([1.0, 3.0, 5.0]), ef.constant(2.0)],
                         [ef.constant([1.0, 0.0]), ef.constant(2.0)])


def range_loop(n):
    acc = ef.constant(1)
    for i in ef.range(n):
        acc = acc * 2 + i
    return acc


def test_for_over_eagerflow_range_and_range_of_a_tensor():
    _traced_equals_eager(range_loop, [ef.constant(0)], [ef.constant(5)])

    def builtin_range(n):
        total = 0
        for i in range(n):
            total += i
        return total

    f = ef.function(builtin_range)
    assert int(f(ef.constant(5))) == 10
    assert "While" in _ops(f, ef.constant(5))


def nested(x):
    out = ef.constant(0.0)
    for row in x:
        for v in row:
            if v > 2.0:
                break
            out += v
    return out


def test_nested_loops_break_only_the_inner_one():
    _traced_equals_eager(nested, [ef.constant([[1.0, 3.0, 1.0], [0.5, 0.5, 9.0]])])


def test_and_or_not_on_tensors():
    def logic(x, y):
        if (x > 0.0 and y > 0.0) or not (x < -5.0):
            r = x + y
        else:
            r = x - y
        return r

    _traced_equals_eager(logic, [ef.constant(1.0), ef.constant(2.0)],
                         [ef.constant(-1.0), ef.constant(2.0)],
                         [ef.constant(-6.0), ef.constant(2.0)])
    assert "If" in _ops(ef.function(logic), ef.constant(1.0), ef.constant(1.0))

    def ternary(x):
        return x * 2.0 if x > 0.0 else x * 3.0

    _traced_equals_eager(ternary, [ef.constant(2.0)], [ef.constant(-2.0)])


def test_called_user_functions_are_converted():
    def helper(x):
        if x > 0.0:
            return x
        return -x

    @ef.function
    def f(x):
        return helper(x) + 1.0

    assert float(f(ef.constant(-3.0))) == 4.0
    assert float(f(ef.constant(3.0))) == 4.0


def test_methods_are_converted():
    class Counter(ef.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        @ef.function
        def __call__(self, n):
            total = ef.constant(0.0)
            i = 0
            while i < n:
                total += self.scale
                i += 1
            return total

    c = Counter()
    assert float(c(ef.constant(4))) == 8.0


# -- gradients ------------------------------------------------------------------------------
def _loss(x, n):
    y = x
    for _ in ef.range(n):
        if ef.reduce_sum(y) > 50.0:
            break
        y = y * x + ef.sin(y)
    return ef.reduce_sum(y * y)


def test_gradient_through_a_converted_loop_matches_finite_differences():
    traced = ef.function(_loss)
    x0 = np.array([0.7, -0.4, 1.1])
    n = ef.constant(4)
    x = ef.constant(x0, dtype=F64)
    with ef.GradientTape() as tape:
        tape.watch(x)
        value = traced(x, n)
    grad = tape.gradient(value, x).numpy()
    np.testing.assert_allclose(float(value), float(_loss(x, n)), rtol=1e-12)
    eps = 1e-6
    direction = np.array([0.3, -0.5, 0.8])
    plus = float(_loss(ef.constant(x0 + eps * direction, dtype=F64), n))
    minus = float(_loss(ef.constant(x0 - eps * direction, dtype=F64), n))
    np.testing.assert_allclose(grad @ direction, (plus - minus) / (2 * eps), rtol=1e-6)


def test_gradient_inside_the_function_through_converted_if():
    @ef.function
    def grad_of(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            if x > 0.0:
                y = x * x * x
            else:
                y = -x
        return tape.gradient(y, x)

    assert float(grad_of(ef.constant(2.0, F64))) == pytest.approx(12.0)
    assert float(grad_of(ef.constant(-2.0, F64))) == pytest.approx(-1.0)


# -- TF's rules and errors, at the user's line ------------------------------------------------
def test_variable_set_in_one_branch_only_is_an_error_at_the_if():
    @ef.function
    def f(x):
        if x > 0.0:  # the one-branch if
            y = x
        return y

    with pytest.raises(ValueError) as info:
        f(ef.constant(1.0))
    message = str(info.value)
    assert "'y' must also be initialized in the else branch" in message
    assert "test_autograph.py:%d" % _line_of("if x > 0.0:  # the one-branch if") in message


def test_branch_local_temporaries_are_fine():
    def f(x):
        if x > 0.0:
            t = x * 2.0
            y = t + 1.0
        else:
            y = x
        return y

    _traced_equals_eager(f, [ef.constant(1.0)], [ef.constant(-1.0)])


def test_loop_variable_must_be_defined_before_the_loop():
    @ef.function
    def f(n):
        for i in ef.range(n):
            last = i
        return last

    with pytest.raises(ValueError, match="'last' must be defined before the loop"):
        f(ef.constant(3))


def test_loop_variable_changing_dtype_or_shape():
    @ef.function
    def dtype_change(n):
        x = 0
        for _ in ef.range(n):
            x = ef.cast(x, ef.float32) + 0.5
        return x

    with pytest.raises(TypeError, match="'x' has dtype int32 before the loop, but dtype "
                       "float32 after one iteration"):
        dtype_change(ef.constant(2))

    @ef.function
    def shape_change(n):
        x = ef.zeros([1])
        for _ in ef.range(n):
            x = ef.concat([x, x], 0)
        return x

    with pytest.raises(ValueError, match="set_loop_options"):
        shape_change(ef.constant(2))

    @ef.function
    def with_invariant(n):
        x = ef.zeros([1])
        for _ in ef.range(n):
            ef.autograph.experimental.set_loop_options(
                shape_invariants=[(x, ef.TensorShape([None]))])
            x = ef.concat([x, x], 0)
        return x

    assert with_invariant(ef.constant(3)).shape.as_list() == [8]


def test_python_list_grown_in_a_tensor_loop_points_to_tensor_array():
    @ef.function
    def f(x):
        out = []
        for v in x:
            out.append(v * 2.0)
        return out

    with pytest.raises(ValueError, match="TensorArray"):
        f(ef.constant([1.0, 2.0]))

    @ef.function
    def unrolled(x):
        out = []
        for i in range(2):  # a Python loop: the list grows at trace time
            out.append(x[i] * 2.0)
        return ef.stack(out)

    assert unrolled(ef.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]


def test_errors_inside_converted_code_point_at_the_user_line():
    @ef.function
    def f(x, w):
        if ef.reduce_sum(x) > 0.0:
            y = ef.matmul(x, w)  # the bad matmul
        else:
            y = x
        return y

    with pytest.raises(errors.InvalidArgumentError) as info:
        f(ef.ones([2, 3]), ef.ones([4, 5]))
    assert "test_autograph.py:%d" % _line_of("y = ef.matmul(x, w)  # the bad") in str(
        info.value)
    # The traceback's innermost user frame is the original line, in the original file.
    frames = [fr for fr in __import__("traceback").extract_tb(info.tb)
              if fr.filename.endswith("test_autograph.py")]
    assert frames[-1].lineno == _line_of("y = ef.matmul(x, w)  # the bad")
    assert "ag__" not in (frames[-1].line or "")


def test_python_bool_of_a_tensor_in_a_python_loop_condition_is_clear():
    @ef.function
    def f(x):
        i = 0
        while i < 3:
            i = i + x  # i becomes a tensor: the Python loop cannot go on
        return i

    with pytest.raises(NotImplementedError, match="Python value when the loop started"):
        f(ef.constant(1))


# -- switches and the API ---------------------------------------------------------------------
def test_autograph_false_keeps_the_error():
    @ef.function(autograph=False)
    def f(x):
        if x > 0.0:
            return x
        return -x

    with pytest.raises(errors.OperatorNotAllowedInGraphError, match="eagerflow.cond"):
        f(ef.constant(1.0))


def test_do_not_convert():
    @ef.autograph.experimental.do_not_convert
    def raw(x):
        if x > 0.0:
            return x
        return -x

    @ef.function
    def f(x):
        return raw(x)

    with pytest.raises(errors.OperatorNotAllowedInGraphError):
        f(ef.constant(1.0))
    with pytest.raises(errors.OperatorNotAllowedInGraphError):
        ef.function(raw)(ef.constant(1.0))


def test_to_code_and_to_graph():
    code = ef.autograph.to_code(classify)
    assert "ag__.if_stmt" in code and "def classify(x):" in code
    compile(code, "<to_code>", "exec")
    converted = ef.autograph.to_graph(collatz)
    assert int(ef.function(converted, autograph=False)(ef.constant(6))) == 8
    assert converted(6) == 8  # eagerly, plain Python
    with pytest.raises(ef.autograph.experimental.ConversionError):
        ef.autograph.to_graph(len)


def test_conversion_is_cached_per_function():
    conversion.convert(collatz)
    code = conversion._CACHE[collatz.__code__]
    f1, f2 = ef.function(collatz), ef.function(collatz)
    f1(ef.constant(6))
    f2(ef.constant(6))
    assert f1._traced_callable().__code__ is code
    assert f2._traced_callable().__code__ is code


def test_closures_see_later_rebinding():
    scale = 2.0

    def f(x):
        if x > 0.0:
            x = x * scale
        return x

    converted = conversion.convert(f)
    scale = 5.0  # noqa: F841 - read through the shared closure cell
    assert float(ef.function(converted, autograph=False)(ef.constant(1.0))) == 5.0


def test_tensor_array_written_in_a_branch_of_a_converted_if():
    @ef.function
    def g(x):
        ta = ef.TensorArray(ef.float32, size=2)
        if ef.reduce_sum(x) > 0:
            ta = ta.write(0, x)
        else:
            ta = ta.write(1, x)
        return ta.stack()

    assert g(ef.constant([1.0, 2.0])).numpy().tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert g(ef.constant([-1.0, -2.0])).numpy().tolist() == [[0.0, 0.0], [-1.0, -2.0]]


def test_keras_layer_call_is_converted_inside_a_function():
    class Gate(ef.keras.layers.Layer):
        def call(self, x):
            if ef.reduce_sum(x) > 0.0:
                return x * 2.0
            return -x

    layer = Gate()
    f = ef.function(lambda x: layer(x))
    assert f(ef.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    assert f(ef.constant([-1.0, -2.0])).numpy().tolist() == [1.0, 2.0]
    plain = ef.function(lambda x: layer(x), autograph=False)
    with pytest.raises(errors.OperatorNotAllowedInGraphError):
        plain(ef.constant([1.0, 2.0]))
