"""A custom_gradient survives a SavedModel round trip: the backward rule is a sub-graph of
the saved function (a CustomGradient node names it), and a loaded function's gradient,
eager or inside a new trace, is that rule."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.saved_model import _format

# Recorded with TensorFlow 2.21 (tests/conformance, saving.saved_model_custom_gradient):
# the gradient of sum(x**3) with the rule 0.5 * x, at x = [3, -1.2, -9].
X = [3.0, -1.2, -9.0]
TF_GRADIENT = [1.5, -0.6, -4.5]


@ef.custom_gradient
def cube_with_rule(x):
    def grad(upstream):
        return upstream * 0.5 * x

    return x * x * x, grad


class Cube(ef.Module):
    @ef.function(input_signature=[ef.TensorSpec([3], ef.float32)])
    def f(self, x):
        return ef.reduce_sum(cube_with_rule(x))


def _gradient(fn, x):
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x)


def _traced_gradient(fn):
    @ef.function
    def step(x):
        return _gradient(fn, x)

    return step


@pytest.fixture
def saved(tmp_path):
    module = Cube()
    ef.saved_model.save(module, str(tmp_path))
    return module, tmp_path


def test_loaded_gradient_is_the_rule_eager_and_traced(saved):
    module, path = saved
    x = ef.constant(X)
    before = _gradient(module.f, x).numpy()
    loaded = ef.saved_model.load(str(path))
    after = _gradient(loaded.f, x).numpy()
    traced = _traced_gradient(loaded.f)(x).numpy()
    np.testing.assert_allclose(before, TF_GRADIENT, rtol=1e-6)
    np.testing.assert_array_equal(after, before)
    np.testing.assert_array_equal(traced, before)
    # The forward value is unchanged, and the true derivative 3x^2 is not what came back.
    assert float(loaded.f(x)) == pytest.approx(float(np.sum(np.array(X) ** 3)), rel=1e-6)
    assert not np.allclose(after, 3 * np.array(X) ** 2)


def test_the_rule_is_in_the_saved_graph(saved):
    _, path = saved
    model = _format.read_model(str(path))
    ops = [[n.op for n in entry.function.graph.node] for entry in model.function]
    assert any("CustomGradient" in o for o in ops)
    libraries = [[f.signature.name for f in entry.function.graph.library.function]
                 for entry in model.function]
    assert any(any(name.startswith("custom_gradient_grad") for name in lib)
               for lib in libraries)


def test_float64_finite_differences_match_the_rule_not_the_derivative(tmp_path):
    """The forward is sin(x) * x; the rule is the derivative of h(x) = cos(x)**2 / 2 (not
    of the forward). A random-direction finite-difference check in float64 of h matches
    the loaded gradient; one of the forward does not."""

    @ef.custom_gradient
    def forward_with_h_rule(x):
        def grad(upstream):
            return upstream * -ef.cos(x) * ef.sin(x)  # d/dx cos(x)^2 / 2

        return ef.sin(x) * x, grad

    class M(ef.Module):
        @ef.function(input_signature=[ef.TensorSpec([None], ef.float64)])
        def f(self, x):
            return forward_with_h_rule(x)

    ef.saved_model.save(M(), str(tmp_path))
    loaded = ef.saved_model.load(str(tmp_path))
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=5)
    u = rng.normal(size=5)  # output cotangent
    d = rng.normal(size=5)  # input direction
    x = ef.constant(x0)
    for fn in (lambda x: _vjp(loaded.f, x, u), _traced_vjp(loaded.f, u)):
        g = fn(x).numpy()
        assert g.dtype == np.float64

        def h(v):
            return np.cos(v) ** 2 / 2

        eps = 1e-6
        fd_rule = u @ (h(x0 + eps * d) - h(x0 - eps * d)) / (2 * eps)
        fd_forward = u @ (np.sin(x0 + eps * d) * (x0 + eps * d)
                          - np.sin(x0 - eps * d) * (x0 - eps * d)) / (2 * eps)
        assert g @ d == pytest.approx(fd_rule, rel=1e-7, abs=1e-9)
        assert abs(g @ d - fd_forward) > 1e-3


def _vjp(fn, x, u):
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x, output_gradients=ef.constant(u))


def _traced_vjp(fn, u):
    cot = ef.constant(u)

    @ef.function
    def step(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x, output_gradients=cot)

    return step


class WithVariables(ef.Module):
    """A rule for a variable argument and one for a variable read (``variables=``)."""

    def __init__(self):
        super().__init__()
        self.a = ef.Variable([1.0, 2.0])
        self.w = ef.Variable(3.0)

    @ef.function(input_signature=[ef.TensorSpec([2], ef.float32)])
    def f(self, x):
        @ef.custom_gradient
        def combine(v, x):
            def grad(upstream, variables=None):
                # Rules with values no derivative would give: 7 for v, -1 for x, 100 for w.
                return ([upstream * 7.0, upstream * -1.0],
                        [ef.reduce_sum(upstream) * 100.0])

            return v * x * self.w, grad

        return ef.reduce_sum(combine(self.a, x))


def test_custom_gradient_with_variable_arguments_survives(tmp_path):
    module = WithVariables()
    x = ef.constant([0.5, -2.0])

    def grads(m):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = m.f(x)
        return [g.numpy() for g in tape.gradient(y, [m.a, x, m.w])]

    before = grads(module)
    ef.saved_model.save(module, str(tmp_path))
    loaded = ef.saved_model.load(str(tmp_path))
    after = grads(loaded)

    @ef.function
    def traced(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = loaded.f(x)
        return tape.gradient(y, [loaded.a, x, loaded.w])

    in_trace = [g.numpy() for g in traced(x)]
    expected = [[7.0, 7.0], [-1.0, -1.0], 200.0]
    for got in (before, after, in_trace):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e)
    assert float(loaded.f(x)) == pytest.approx((0.5 * 1.0 - 2.0 * 2.0) * 3.0)


def test_optimized_forward_has_no_custom_gradient_node(saved):
    """Running the graph is unchanged: the optimizer forwards the node's inputs, and with
    the optimizer off the executor forwards them itself."""
    from eagerflow.function import passes

    module, _ = saved
    graph = module.f.get_concrete_function().graph
    assert "CustomGradient" in [n.op for n in graph.nodes]
    assert "CustomGradient" not in [n.op for n in passes.optimize(graph).nodes]
    unoptimized = passes.optimize(graph, {"disable_meta_optimizer": True})
    assert "CustomGradient" in [n.op for n in unoptimized.nodes]
    from eagerflow.function.executor import Executor

    out = Executor(unoptimized).run([np.array(X, np.float32)], [])
    assert out[0] == pytest.approx(np.sum(np.array(X, np.float32) ** 3), rel=1e-6)


def test_truncated_saved_model_raises_data_loss(saved):
    _, path = saved
    f = path / "saved_model.pb"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(errors.DataLossError, match="saved_model.pb"):
        ef.saved_model.load(str(path))


def _custom_gradient_node(model):
    for entry in model.function:
        for node in entry.function.graph.node:
            if node.op == "CustomGradient":
                return entry.function, node
    raise AssertionError("no CustomGradient node saved")


def _rewrite(path, edit):
    model = _format.read_model(str(path))
    edit(model, *_custom_gradient_node(model))
    (path / "saved_model.pb").write_bytes(_format.model_to_bytes(model))
    _format.write_manifest(str(path))  # past the checksums: the graph's own checks must hold


def _drop_gradient_output(model, function, node):
    library = function.graph.library.function
    grad = next(f for f in library if f.signature.name.startswith("custom_gradient_grad"))
    grad.signature.output.append(grad.signature.output[0])


def _missing_gradient_function(model, function, node):
    node.attr["grad"].s = b"no_such_function"


def _bad_mask(model, function, node):
    node.attr["has_grad"].tuple.value.add().b = True


def _bad_source_count(model, function, node):
    node.attr["n_sources"].i = 99


@pytest.mark.parametrize("edit,pattern", [
    (_drop_gradient_output, "gradient function .* returns 2 gradients"),
    (_missing_gradient_function, "not in the function library"),
    (_bad_mask, "gradient mask"),
    (_bad_source_count, "for 99 sources"),
])
def test_garbled_custom_gradient_raises_data_loss(saved, edit, pattern):
    _, path = saved
    _rewrite(path, edit)
    with pytest.raises(errors.DataLossError, match=pattern):
        ef.saved_model.load(str(path))


def test_second_order_through_a_loaded_rule(tmp_path):
    """The rule's sub-graph is differentiated by an outer tape: for the rule sin(x), the
    second derivative is cos(x), before and after loading."""

    @ef.custom_gradient
    def identity_with_sin_rule(x):
        return x * 1.0, lambda dy: dy * ef.sin(x)

    class M(ef.Module):
        @ef.function(input_signature=[ef.TensorSpec([], ef.float64)])
        def g(self, x):
            return identity_with_sin_rule(x)

    module = M()
    ef.saved_model.save(module, str(tmp_path))
    loaded = ef.saved_model.load(str(tmp_path))
    for fn in (module.g, loaded.g):
        x = ef.constant(0.7, ef.float64)
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                y = fn(x)
            g1 = inner.gradient(y, x)
        assert float(g1) == pytest.approx(np.sin(0.7), rel=1e-12)
        assert float(outer.gradient(g1, x)) == pytest.approx(np.cos(0.7), rel=1e-12)
