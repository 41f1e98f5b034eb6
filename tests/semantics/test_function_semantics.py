"""@function behaviour TF programs rely on (checked against TF 2.21)."""

import numpy as np
import pytest

import eagerflow as ef


def test_python_numbers_returned_become_tensors():
    @ef.function
    def f(x):
        return 3, x, None, 2.5, np.array([1, 2]), True, "label"

    three, x, none, half, array, flag, label = f(ef.constant(1.0))
    assert isinstance(three, ef.Tensor) and three.dtype == ef.int32 and int(three) == 3
    assert float(x) == 1.0 and none is None and label == "label"
    assert half.dtype == ef.float32 and float(half) == 2.5
    assert array.dtype == ef.int64 and array.numpy().tolist() == [1, 2]
    assert flag.dtype == ef.bool and bool(flag)


def test_gradient_of_a_variable_with_respect_to_itself_is_ones():
    v = ef.Variable([2.0, 3.0])
    with ef.GradientTape() as tape:
        pass
    assert tape.gradient(v, v).numpy().tolist() == [1.0, 1.0]


def test_variable_on_every_call_raises_and_singleton_works():
    @ef.function
    def fresh(x):
        return ef.Variable(1.0) + x

    with pytest.raises(ValueError, match="singleton tf.Variables"):
        fresh(ef.constant(1.0))

    class Scale(ef.Module):
        def __init__(self):
            super().__init__()
            self.v = None

        @ef.function
        def __call__(self, x):
            if self.v is None:
                self.v = ef.Variable(2.0)
            return self.v * x

    m = Scale()
    assert float(m(ef.constant(3.0))) == 6.0 and float(m(ef.constant(4.0))) == 8.0
    assert len(m.variables) == 1


def test_input_signature_violation_is_a_type_error():
    @ef.function(input_signature=[ef.TensorSpec([2], ef.float32)])
    def f(x):
        return x

    with pytest.raises(TypeError, match="input_signature"):
        f(ef.constant([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="int32"):
        f(ef.constant([1, 2]))
