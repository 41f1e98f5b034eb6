"""Module tracking: variables and sub-modules in attributes and containers, in TF's order."""

import pytest

import eagerflow as ef


class Dense(ef.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        self.w = ef.Variable(ef.ones([n_in, n_out]), name="w")
        self.b = ef.Variable(ef.zeros([n_out]), name="b")

    def __call__(self, x):
        return x @ self.w + self.b


class Net(ef.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Dense(2, 3, name="first"), Dense(3, 1, name="second")]
        self.extra = {"z": ef.Variable(1.0, name="z", trainable=False),
                      "a": ef.Variable(2.0, name="a")}
        self.shared = self.blocks[0]


def test_variables_in_deterministic_order():
    net = Net()
    names = [v.name.split(":")[0].split("_")[0] for v in net.variables]
    # Own attributes sorted (blocks, extra{a, z}), then sub-modules' variables (b before w).
    assert names == ["a", "z", "b", "w", "b", "w"]
    assert len(net.trainable_variables) == 5
    assert len(net.non_trainable_variables) == 1


def test_submodules_deduplicated():
    net = Net()
    assert [m.name for m in net.submodules] == ["first", "second"]


def test_default_name_and_validation():
    assert Net().name == "net"
    with pytest.raises(ValueError):
        Dense(1, 1, name="not valid!")


def test_with_name_scope():
    class Scoped(ef.Module):
        @ef.Module.with_name_scope
        def build(self):
            self.v = ef.Variable(1.0, name="v")

    m = Scoped(name="scoped_module_test")
    m.build()
    assert m.v.name.startswith("scoped_module_test/v")


def test_module_trains_with_tape():
    layer = Dense(2, 1)
    x = ef.constant([[1.0, 2.0]])
    with ef.GradientTape() as tape:
        y = ef.reduce_sum(layer(x))
    grads = tape.gradient(y, layer.trainable_variables)
    assert [g.shape for g in grads] == [(1,), (2, 1)]
