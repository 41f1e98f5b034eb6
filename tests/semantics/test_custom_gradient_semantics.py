"""custom_gradient with variables passed as arguments and with keyword calls."""

import pytest

import eagerflow as ef


@ef.custom_gradient
def _scale(x, factor=2.0):
    def grad(dy):
        return dy * 10.0
    return x * factor, grad


@ef.custom_gradient
def _square(v):
    def grad(dy):
        return dy * 100.0
    return v * v, grad


@pytest.mark.parametrize("traced", [False, True])
def test_keyword_call_applies_the_rule(traced):
    # TF 2.21 silently ignores the rule here (gradient 2.0); eagerflow applies it.
    def grad(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = _scale(x=x)
        return tape.gradient(y, x)

    fn = ef.function(grad) if traced else grad
    assert float(fn(ef.constant(3.0))) == 10.0


def test_positional_call_with_keyword_option():
    x = ef.constant(3.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = _scale(x, factor=3.0)
    assert float(y) == 9.0 and float(tape.gradient(y, x)) == 10.0


@pytest.mark.parametrize("traced", [False, True])
def test_variable_passed_as_argument_is_an_input(traced):
    v = ef.Variable(3.0)

    def grad():
        with ef.GradientTape() as tape:
            y = _square(v)
        return tape.gradient(y, v)

    fn = ef.function(grad) if traced else grad
    assert float(fn()) == 100.0  # as TF 2.21


def test_captured_variable_still_needs_variables_keyword():
    w = ef.Variable(2.0)

    @ef.custom_gradient
    def uses_w(x):
        def grad(dy):
            return dy
        return x * w, grad

    x = ef.constant(1.0)
    with pytest.raises(TypeError, match="variables"):
        with ef.GradientTape() as tape:
            tape.watch(x)
            uses_w(x)
