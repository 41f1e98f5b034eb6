"""The Layer base class: naming, lazy build, weights, freezing, losses, training propagation,
input specs, dtype policies, masks and configs."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers, mixed_precision
from eagerflow.keras.layers import base


class Scale(layers.Layer):
    def build(self, input_shape):
        self.seen_shape = input_shape
        self.w = self.add_weight("w", shape=(input_shape[-1],), initializer="ones")
        self.count = self.add_weight("count", shape=(), initializer="zeros", trainable=False)

    def call(self, inputs):
        return inputs * self.w


class Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.first = layers.Dense(3)
        self.norm = layers.BatchNormalization()
        self.second = layers.Dense(2)

    def call(self, inputs, training=None):
        self.seen_training = training
        return self.second(self.norm(self.first(inputs)))


def test_names_are_snake_case_and_unique():
    base.reset_name_uids()
    assert [layers.Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]
    assert layers.Conv2D(1, 1).name == "conv2d"
    assert layers.BatchNormalization().name == "batch_normalization"
    assert layers.SimpleRNN(1).name == "simple_rnn"
    assert layers.ReLU().name == "re_lu"
    assert layers.Dense(1, name="mine").name == "mine"
    assert base.to_snake_case("GlobalAveragePooling2D") == "global_average_pooling2d"
    with pytest.raises(ValueError, match="/"):
        layers.Dense(1, name="a/b")


def test_lazy_build_with_tensor_shape():
    layer = Scale()
    assert not layer.built and layer.weights == []
    y = layer(np.ones((2, 3), np.float32))
    assert layer.built
    assert isinstance(layer.seen_shape, ef.TensorShape) and layer.seen_shape.as_list() == [2, 3]
    assert y.shape.as_list() == [2, 3]
    assert [w.name for w in layer.weights] == ["scale/w:0", "scale/count:0"]
    assert layer.count_params() == 4


def test_nested_sublayers_weight_order_and_names():
    base.reset_name_uids()
    block = Block(name="blk")
    block(np.ones((4, 5), np.float32))
    names = [w.name for w in block.weights]
    assert names == ["blk/dense/kernel:0", "blk/dense/bias:0",
                     "blk/batch_normalization/gamma:0", "blk/batch_normalization/beta:0",
                     "blk/dense_1/kernel:0", "blk/dense_1/bias:0",
                     "blk/batch_normalization/moving_mean:0",
                     "blk/batch_normalization/moving_variance:0"]
    assert len(block.trainable_weights) == 6 and len(block.non_trainable_weights) == 2
    assert block.layers == [block.first, block.norm, block.second]
    assert set(map(id, block.trainable_variables)) == set(map(id, block.trainable_weights))


def test_freezing_moves_weights_to_non_trainable():
    block = Block()
    block(np.ones((4, 5), np.float32))
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 8
    assert not block.first.trainable
    block.first.trainable = True
    assert len(block.trainable_weights) == 0  # the parent is still frozen
    block.trainable = True
    assert len(block.trainable_weights) == 6


def test_get_set_weights_and_errors():
    d = layers.Dense(2, name="dd")
    d.build((None, 3))
    w, b = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0])
    d.set_weights([w, b])
    got = d.get_weights()
    np.testing.assert_array_equal(got[0], w)
    assert got[0].dtype == np.float32
    with pytest.raises(ValueError, match="length 1.*expecting 2"):
        d.set_weights([w])
    with pytest.raises(ValueError, match=r"dd.*\(3, 2\).*\(2, 3\)"):
        d.set_weights([w.T, b])


def test_initial_weights_kwarg():
    w, b = np.ones((3, 2)), np.zeros(2)
    d = layers.Dense(2, weights=[w, b])
    d(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(d.kernel.numpy(), w)


def test_add_weight_goes_through_variable_creator_scope():
    created = []

    def creator(next_creator, **kwargs):
        created.append(kwargs["name"])
        return next_creator(**kwargs)

    with ef.variable_creator_scope(creator):
        layers.Dense(2)(np.ones((1, 3), np.float32))
    assert created == ["kernel", "bias"]


def test_add_weight_validation():
    layer = layers.Layer()
    with pytest.raises(ValueError, match="unknown shape"):
        layer.add_weight("w", shape=(None, 2))
    with pytest.raises(ValueError, match="ON_READ"):
        layer.add_weight("w", shape=(2,), trainable=True,
                         synchronization=ef.VariableSynchronization.ON_READ)
    v = layer.add_weight("i", shape=(2,), dtype="int32")
    assert v.dtype == ef.int32 and v.numpy().tolist() == [0, 0]


def test_losses_reset_per_outermost_call_and_callables():
    class Lossy(layers.Layer):
        def call(self, inputs):
            self.add_loss(ef.reduce_sum(inputs))
            return inputs

    class Outer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = Lossy()

        def call(self, inputs):
            return self.inner(self.inner(inputs))

    outer = Outer()
    outer(ef.ones([2]))
    assert [float(x) for x in outer.losses] == [2.0, 2.0]
    outer(ef.ones([3]))
    assert [float(x) for x in outer.losses] == [3.0, 3.0]
    v = ef.Variable(2.0)
    outer.add_loss(lambda: v * 3.0)
    v.assign(5.0)
    assert [float(x) for x in outer.losses] == [15.0, 3.0, 3.0]


def test_call_losses_of_other_models_survive_and_none_pending_skips_the_walk(monkeypatch):
    class Lossy(layers.Layer):
        def call(self, inputs):
            self.add_loss(ef.reduce_sum(inputs))
            return inputs

    a, b = Lossy(), Lossy()
    a(ef.ones([2]))
    b(ef.ones([4]))
    a(ef.ones([3]))  # clears a's losses only
    assert [float(x) for x in a.losses] == [3.0] and [float(x) for x in b.losses] == [4.0]
    a._clear_losses()
    b._clear_losses()
    assert not base._PENDING_CALL_LOSSES
    calls = []
    original = base.Layer._flatten_layers

    def counting(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(base.Layer, "_flatten_layers", counting)
    layers.Dense(2)(ef.ones([1, 3]))
    assert calls == []  # nothing pending: the outermost call did not walk the sublayers


def test_activity_regularizer_adds_loss():
    d = layers.Dense(2, activity_regularizer="l2", kernel_initializer="ones")
    y = d(np.ones((1, 3), np.float32))
    np.testing.assert_allclose(float(d.losses[0]), 0.01 * np.sum(y.numpy() ** 2), rtol=1e-6)
    assert d.get_config()["activity_regularizer"]["class_name"] == "L2"


def test_training_propagates_from_outer_call():
    block = Block()
    x = np.ones((4, 5), np.float32)
    block(x, training=True)
    assert block.seen_training is True
    assert block.norm.moving_mean.numpy().any()  # inner BN ran in training mode
    before = block.norm.moving_mean.numpy()
    block(x)
    assert block.seen_training is None
    np.testing.assert_array_equal(block.norm.moving_mean.numpy(), before)

    class DefaultTrue(layers.Layer):
        def call(self, inputs, training=True):
            self.got = training
            return inputs

    layer = DefaultTrue()
    layer(ef.ones([1]))
    assert layer.got is True
    layer(ef.ones([1]), training=False)
    assert layer.got is False


def test_input_spec_errors_name_layer_and_shape():
    layer = layers.Layer(name="checked")
    layer.input_spec = layers.InputSpec(ndim=3)
    with pytest.raises(ValueError, match=r'"checked".*ndim=3.*ndim=2.*\(2, 3\)'):
        layer(ef.ones([2, 3]))
    layer.input_spec = layers.InputSpec(max_ndim=2)
    with pytest.raises(ValueError, match="max_ndim=2"):
        layer(ef.ones([1, 2, 3]))
    layer.input_spec = layers.InputSpec(dtype="int32")
    with pytest.raises(ValueError, match="dtype=int32"):
        layer(ef.ones([1]))
    layer.input_spec = [layers.InputSpec(ndim=1), layers.InputSpec(ndim=1)]
    with pytest.raises(ValueError, match="expects 2 input"):
        layer(ef.ones([1]))
    with pytest.raises(TypeError, match="InputSpec"):
        layer.input_spec = "bad"


def test_unknown_kwargs_and_input_shape_kwarg():
    with pytest.raises(TypeError, match="not understood.*foo"):
        layers.Dense(2, foo=1)
    d = layers.Dense(2, input_shape=(4,))
    assert d.batch_input_shape == (None, 4)
    assert d.get_config()["batch_input_shape"] == (None, 4)
    assert layers.Dense(2, input_dim=3, batch_size=8).batch_input_shape == (8, 3)


def test_dtype_policies():
    d = layers.Dense(2, dtype="float64")
    assert d.dtype == d.compute_dtype == "float64"
    y = d(np.ones((1, 3), np.float32))
    assert y.dtype == ef.float64 and d.kernel.dtype == ef.float64
    mixed_precision.set_global_policy("mixed_float16")
    try:
        m = layers.Dense(2)
        assert m.compute_dtype == "float16" and m.variable_dtype == "float32"
        y = m(np.ones((1, 3), np.float32))
        assert y.dtype == ef.float16 and m.kernel.dtype == ef.float32
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(ef.cast(m(np.ones((1, 3), np.float32)), ef.float32))
        assert tape.gradient(loss, m.kernel).dtype == ef.float32
        bn = layers.BatchNormalization()
        assert bn(ef.ones([4, 2], dtype=ef.float16), training=True).dtype == ef.float16
        assert bn.moving_mean.dtype == ef.float32
        assert m.get_config()["dtype"]["config"]["name"] == "mixed_float16"
        assert layers.Dense.from_config(m.get_config()).compute_dtype == "float16"
    finally:
        mixed_precision.set_global_policy(None)
    assert layers.Dense(2).dtype_policy.name == "float32"
    with pytest.raises(ValueError, match="floating-point"):
        mixed_precision.set_global_policy("int32")
    with pytest.raises(ValueError, match="mixed precision DTypePolicy"):
        mixed_precision.DTypePolicy("nonsense")


def test_masks_propagate_through_mask_aware_layers():
    emb = layers.Embedding(5, 3, mask_zero=True)
    x = emb(ef.constant([[1, 2, 0]]))
    y = layers.Dense(2)(x)
    np.testing.assert_array_equal(layers.get_keras_mask(y).numpy(), [[True, True, False]])
    z = layers.Flatten()(x)
    assert layers.get_keras_mask(z) is None
    pooled = layers.GlobalAveragePooling1D()(x)
    np.testing.assert_allclose(pooled.numpy(), x.numpy()[:, :2].mean(axis=1), rtol=1e-6)


def test_compute_output_shape_default_and_numpy_inputs():
    with pytest.raises(NotImplementedError, match="compute_output_shape"):
        Scale().compute_output_shape((None, 3))
    y = layers.Activation("relu")(np.array([[-1.0, 2.0]], np.float32))
    assert isinstance(y, ef.Tensor)
    with pytest.raises(TypeError, match="without inputs"):
        layers.Activation("relu")()


def test_symbolic_call_handler_hook():
    class Symbolic:
        _is_keras_symbolic = True
        shape = ef.TensorShape([None, 3])
        dtype = ef.float32

    calls = []
    base.set_symbolic_call_handler(lambda layer, inputs, args, kwargs: calls.append(
        (layer.name, inputs)) or "symbolic-out")
    try:
        d = layers.Dense(2, name="sym")
        assert d(Symbolic()) == "symbolic-out"
        assert calls[0][0] == "sym"
        d.maybe_build(calls[0][1].shape)
        assert d.kernel.shape.as_list() == [3, 2]
    finally:
        base.set_symbolic_call_handler(None)


def test_serialize_deserialize_and_get():
    d = layers.Dense(3, name="x")
    clone = layers.deserialize(layers.serialize(d))
    assert isinstance(clone, layers.Dense) and clone.name == "x"
    with pytest.raises(ValueError, match="Unknown layer"):
        layers.deserialize({"class_name": "Nope", "config": {}})
    assert isinstance(layers.deserialize({"class_name": "Scale", "config": {}},
                                         custom_objects={"Scale": Scale}), Scale)
    assert isinstance(layers.get("Flatten"), layers.Flatten)


def test_cyclic_references_do_not_loop_and_get_config_needs_override():
    outer = Block()
    outer.first.owner = outer  # a back-reference
    outer(np.ones((2, 5), np.float32))
    assert len(outer.weights) == 8 and len(outer.first.weights) == 8
    assert len(outer.losses) == 0

    class WithArgs(layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

    with pytest.raises(NotImplementedError, match=r"\['units'\].*get_config"):
        WithArgs(3).get_config()
    assert Scale(name="s").get_config()["name"] == "s"


# One instance of every exported layer class; the check below insists the list is complete.
_EVERY_LAYER = [
    lambda: layers.Activation("tanh"), lambda: layers.Add(), lambda: layers.Average(),
    lambda: layers.AveragePooling1D(), lambda: layers.AveragePooling2D(),
    lambda: layers.AveragePooling3D(), lambda: layers.BatchNormalization(),
    lambda: layers.Bidirectional(layers.GRU(2)), lambda: layers.Concatenate(),
    lambda: layers.Conv1D(2, 3), lambda: layers.Conv1DTranspose(2, 3),
    lambda: layers.Conv2D(2, 3), lambda: layers.Conv2DTranspose(2, 3),
    lambda: layers.Conv3D(2, 3), lambda: layers.Conv3DTranspose(2, 3),
    lambda: layers.Cropping1D(), lambda: layers.Cropping2D(),
    lambda: layers.Dense(2), lambda: layers.DepthwiseConv2D(3), lambda: layers.Dot(1),
    lambda: layers.Dropout(0.1), lambda: layers.ELU(), lambda: layers.EinsumDense(
        "ab,bc->ac", 2), lambda: layers.Embedding(3, 2), lambda: layers.Flatten(),
    lambda: layers.GRU(2), lambda: layers.GRUCell(2), lambda: layers.GaussianDropout(0.1),
    lambda: layers.GaussianNoise(0.1), lambda: layers.GlobalAveragePooling1D(),
    lambda: layers.GlobalAveragePooling2D(), lambda: layers.GlobalAveragePooling3D(),
    lambda: layers.GlobalMaxPooling1D(), lambda: layers.GlobalMaxPooling2D(),
    lambda: layers.GlobalMaxPooling3D(), lambda: layers.GroupNormalization(2),
    lambda: layers.Identity(), lambda: layers.InputLayer(input_shape=(3,)),
    lambda: layers.LSTM(2), lambda: layers.LSTMCell(2), lambda: layers.Lambda(ef.abs),
    lambda: layers.Layer(), lambda: layers.LayerNormalization(), lambda: layers.LeakyReLU(),
    lambda: layers.Masking(), lambda: layers.MaxPooling1D(), lambda: layers.MaxPooling2D(),
    lambda: layers.MaxPooling3D(), lambda: layers.Maximum(), lambda: layers.Minimum(),
    lambda: layers.MultiHeadAttention(2, 3), lambda: layers.Multiply(),
    lambda: layers.PReLU(), lambda: layers.RNN(layers.SimpleRNNCell(2)),
    lambda: layers.ReLU(), lambda: layers.RepeatVector(2), lambda: layers.Permute((1,)),
    lambda: layers.Reshape((2,)), lambda: layers.SeparableConv2D(2, 3),
    lambda: layers.SimpleRNN(2), lambda: layers.SimpleRNNCell(2), lambda: layers.Softmax(),
    lambda: layers.SpatialDropout1D(0.1), lambda: layers.SpatialDropout2D(0.1),
    lambda: layers.SpatialDropout3D(0.1),
    lambda: layers.StackedRNNCells([layers.LSTMCell(2)]), lambda: layers.Subtract(),
    lambda: layers.TimeDistributed(layers.Dense(2)), lambda: layers.UpSampling1D(),
    lambda: layers.UpSampling2D(), lambda: layers.ZeroPadding1D(),
    lambda: layers.ZeroPadding2D(), lambda: layers.ZeroPadding3D(),
]


def test_every_exported_layer_round_trips_its_config():
    made = [make() for make in _EVERY_LAYER]
    covered = {type(layer).__name__ for layer in made}
    exported = {name for name, obj in vars(layers).items() if isinstance(obj, type)
                and issubclass(obj, layers.Layer) and obj.__name__ == name
                and obj is not layers.Wrapper}
    assert exported - covered == set()
    for layer in made:
        clone = layers.deserialize(layers.serialize(layer))
        assert type(clone) is type(layer)
        assert clone.get_config() == layer.get_config(), type(layer).__name__
