"""Keras losses against numpy formulas: values, reductions, sample weights, gradients."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import losses as L

EPS = 1e-7
RNG = np.random.default_rng(7)
Y_TRUE = RNG.uniform(0.0, 2.0, (4, 3)).astype(np.float32)
Y_PRED = RNG.uniform(0.1, 2.0, (4, 3)).astype(np.float32)
PROB_TRUE = (RNG.uniform(size=(4, 3)) > 0.5).astype(np.float32)
PROB_PRED = RNG.uniform(0.01, 0.99, (4, 3)).astype(np.float32)
ONE_HOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
SOFT = RNG.uniform(0.05, 1.0, (4, 3)).astype(np.float32)
LOGITS = RNG.normal(size=(4, 3)).astype(np.float32)
SW = np.array([0.5, 2.0, 0.0, 1.0], dtype=np.float32)


def np_mse(t, p):
    return ((t - p) ** 2).mean(-1)


def np_mae(t, p):
    return np.abs(t - p).mean(-1)


def np_mape(t, p):
    return 100 * np.abs((t - p) / np.maximum(np.abs(t), EPS)).mean(-1)


def np_msle(t, p):
    return ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2).mean(-1)


def np_huber(t, p, delta=1.0):
    e = np.abs(p - t)
    return np.where(e <= delta, 0.5 * e ** 2, delta * e - 0.5 * delta ** 2).mean(-1)


def np_logcosh(t, p):
    return np.log(np.cosh(p - t)).mean(-1)


def np_poisson(t, p):
    return (p - t * np.log(p + EPS)).mean(-1)


def np_kld(t, p):
    t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
    return (t * np.log(t / p)).sum(-1)


def np_cosine(t, p):
    tn = t / np.linalg.norm(t, axis=-1, keepdims=True)
    pn = p / np.linalg.norm(p, axis=-1, keepdims=True)
    return -(tn * pn).sum(-1)


def np_hinge(t, p):
    t = 2 * t - 1 if np.isin(t, [0, 1]).all() else t
    return np.maximum(1 - t * p, 0).mean(-1)


def np_squared_hinge(t, p):
    t = 2 * t - 1 if np.isin(t, [0, 1]).all() else t
    return (np.maximum(1 - t * p, 0) ** 2).mean(-1)


def np_categorical_hinge(t, p):
    return np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0)


def np_bce(t, p, smoothing=0.0):
    t = t * (1 - smoothing) + 0.5 * smoothing
    p = np.clip(p, EPS, 1 - EPS)
    return -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(-1)


def np_bce_logits(t, z):
    return (np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))).mean(-1)


def np_cce(t, p, smoothing=0.0):
    t = t * (1 - smoothing) + smoothing / t.shape[-1]
    p = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return -(t * np.log(p)).sum(-1)


def np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_scce(labels, p):
    logp = np.log(np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS))
    return -np.take_along_axis(np_log_softmax(logp), labels[:, None], -1)[:, 0]


PAIRS = [
    (L.MeanSquaredError, L.mean_squared_error, np_mse, Y_TRUE, Y_PRED),
    (L.MeanAbsoluteError, L.mean_absolute_error, np_mae, Y_TRUE, Y_PRED),
    (L.MeanAbsolutePercentageError, L.mean_absolute_percentage_error, np_mape, Y_TRUE,
     Y_PRED),
    (L.MeanSquaredLogarithmicError, L.mean_squared_logarithmic_error, np_msle, Y_TRUE,
     Y_PRED),
    (L.Huber, L.huber, np_huber, Y_TRUE, Y_PRED),
    (L.LogCosh, L.log_cosh, np_logcosh, Y_TRUE, Y_PRED),
    (L.Poisson, L.poisson, np_poisson, Y_TRUE, Y_PRED),
    (L.KLDivergence, L.kl_divergence, np_kld, SOFT, PROB_PRED),
    (L.CosineSimilarity, L.cosine_similarity, np_cosine, Y_TRUE, Y_PRED - 1.0),
    (L.Hinge, L.hinge, np_hinge, PROB_TRUE, LOGITS),
    (L.SquaredHinge, L.squared_hinge, np_squared_hinge, PROB_TRUE, LOGITS),
    (L.CategoricalHinge, L.categorical_hinge, np_categorical_hinge, ONE_HOT, LOGITS),
    (L.BinaryCrossentropy, L.binary_crossentropy, np_bce, PROB_TRUE, PROB_PRED),
    (L.CategoricalCrossentropy, L.categorical_crossentropy, np_cce, ONE_HOT, SOFT),
]
IDS = [p[0].__name__ for p in PAIRS]


@pytest.mark.parametrize("cls,fn,ref,t,p", PAIRS, ids=IDS)
def test_function_per_sample_values(cls, fn, ref, t, p):
    got = fn(t, p)
    assert got.shape == (4,)
    np.testing.assert_allclose(got.numpy(), ref(t.astype(np.float64), p.astype(np.float64)),
                               rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("cls,fn,ref,t,p", PAIRS, ids=IDS)
def test_class_reductions_and_sample_weight(cls, fn, ref, t, p):
    per = ref(t.astype(np.float64), p.astype(np.float64))
    checks = {
        "sum_over_batch_size": (None, per.mean()),
        "sum": (None, per.sum()),
        "mean": (SW, (per * SW).mean()),
        "mean_with_sample_weight": (SW, (per * SW).sum() / SW.sum()),
        "none": (SW, per * SW),
        None: (None, per),
    }
    for reduction, (sw, want) in checks.items():
        loss = cls(reduction=reduction)
        got = loss(t, p, sample_weight=sw)
        assert got.dtype == ef.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-6,
                                   err_msg=str(reduction))
    # Default reduction with a sample weight: weighted sum over the batch size.
    got = cls()(t, p, sample_weight=SW)
    np.testing.assert_allclose(float(got), (per * SW).sum() / 4, rtol=2e-5, atol=2e-6)
    # A scalar weight scales the loss.
    np.testing.assert_allclose(float(cls()(t, p, sample_weight=2.0)), 2 * per.mean(),
                               rtol=2e-5, atol=2e-6)


def test_huber_delta_and_config():
    loss = L.Huber(delta=0.3)
    np.testing.assert_allclose(float(loss(Y_TRUE, Y_PRED)),
                               np_huber(Y_TRUE.astype(float), Y_PRED.astype(float), 0.3).mean(),
                               rtol=1e-5)
    clone = L.Huber.from_config(loss.get_config())
    assert clone.get_config()["delta"] == 0.3 and clone.name == "huber_loss"


def test_binary_crossentropy_options():
    t, p = PROB_TRUE.astype(float), PROB_PRED.astype(float)
    smooth = L.BinaryCrossentropy(label_smoothing=0.2)
    np.testing.assert_allclose(float(smooth(PROB_TRUE, PROB_PRED)), np_bce(t, p, 0.2).mean(),
                               rtol=1e-5)
    logits = L.BinaryCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(logits(PROB_TRUE, LOGITS)),
                               np_bce_logits(t, LOGITS.astype(float)).mean(), rtol=1e-5)
    # Probabilities of exactly 0 and 1 are clipped to [1e-7, 1 - 1e-7], not infinite.
    edge = L.binary_crossentropy([[1.0, 0.0]], [[0.0, 1.0]]).numpy()
    assert np.isfinite(edge).all()
    lo, hi = np.float32(EPS), np.float32(1) - np.float32(EPS)  # float32 clip bounds
    want = -(np.log(lo) + np.log(np.float32(1) - hi)) / 2
    np.testing.assert_allclose(edge, [want], rtol=1e-6)
    # [batch] labels against [batch, 1] predictions line up (expand, not broadcast).
    col = L.BinaryCrossentropy(reduction="none")(PROB_TRUE[:, 0], PROB_PRED[:, :1])
    np.testing.assert_allclose(col.numpy(), np_bce(t[:, :1], p[:, :1]), rtol=1e-5)
    with pytest.raises(ValueError, match="same shape"):
        L.binary_crossentropy(np.ones((2, 3)), np.ones((2, 2)) * 0.5)


def test_categorical_crossentropy_options():
    t, p = ONE_HOT.astype(float), SOFT.astype(float)
    np.testing.assert_allclose(float(L.CategoricalCrossentropy(label_smoothing=0.1)(
        ONE_HOT, SOFT)), np_cce(t, p, 0.1).mean(), rtol=1e-5)
    want = -(t * np_log_softmax(LOGITS.astype(float))).sum(-1).mean()
    np.testing.assert_allclose(float(L.CategoricalCrossentropy(from_logits=True)(
        ONE_HOT, LOGITS)), want, rtol=1e-5)
    # Class axis 0 equals the transposed problem.
    np.testing.assert_allclose(L.categorical_crossentropy(ONE_HOT.T, SOFT.T, axis=0).numpy(),
                               np_cce(t, p), rtol=1e-5)
    with pytest.raises(ValueError, match="axis"):
        L.categorical_crossentropy(ONE_HOT, SOFT, axis=True)
    with pytest.warns(SyntaxWarning, match="binary_crossentropy"):
        L.categorical_crossentropy([[1.0]], [[0.5]])


def test_sparse_categorical_crossentropy():
    labels = np.array([0, 2, 1, 2])
    p = SOFT.astype(float)
    got = L.SparseCategoricalCrossentropy()(labels, SOFT)
    np.testing.assert_allclose(float(got), np_scce(labels, p).mean(), rtol=1e-5)
    # [batch, 1] labels and float labels behave the same.
    np.testing.assert_allclose(float(L.SparseCategoricalCrossentropy()(
        labels[:, None].astype(np.float32), SOFT)), float(got), rtol=1e-6)
    logits = L.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(labels,
                                                                                LOGITS)
    want = -np.take_along_axis(np_log_softmax(LOGITS.astype(float)), labels[:, None], -1)[:, 0]
    np.testing.assert_allclose(logits.numpy(), want, rtol=1e-5)
    # Equals categorical cross-entropy on the one-hot labels.
    np.testing.assert_allclose(float(got), float(L.CategoricalCrossentropy()(ONE_HOT, SOFT)),
                               rtol=1e-5)


def test_sparse_categorical_crossentropy_ignore_class():
    labels = np.array([0, -1, 1, 2])
    per = np_scce(np.array([0, 0, 1, 2]), SOFT.astype(float))
    valid = labels != -1
    loss = L.SparseCategoricalCrossentropy(ignore_class=-1)
    # The average runs over the three valid entries only.
    np.testing.assert_allclose(float(loss(labels, SOFT)), per[valid].mean(), rtol=1e-5)
    none = L.SparseCategoricalCrossentropy(ignore_class=-1, reduction="none")(labels, SOFT)
    np.testing.assert_allclose(none.numpy(), np.where(valid, per, 0.0), rtol=1e-5)
    summed = L.SparseCategoricalCrossentropy(ignore_class=-1, reduction="sum")
    np.testing.assert_allclose(float(summed(labels, SOFT, sample_weight=SW)),
                               (per * valid * SW).sum(), rtol=1e-5)
    fn = L.sparse_categorical_crossentropy(labels, SOFT, ignore_class=-1)
    np.testing.assert_allclose(fn.numpy(), np.where(valid, per, 0.0), rtol=1e-5)


def test_sample_weight_shapes():
    loss = L.MeanSquaredError(reduction="sum")
    per = np_mse(Y_TRUE.astype(float), Y_PRED.astype(float))
    np.testing.assert_allclose(float(loss(Y_TRUE, Y_PRED, sample_weight=SW[:, None])),
                               (per * SW).sum(), rtol=1e-5)
    # Per-timestep losses [batch, time] with [batch] weights broadcast over time.
    t3, p3 = Y_TRUE[:, :, None], Y_PRED[:, :, None]
    np.testing.assert_allclose(
        L.MeanSquaredError(reduction="none")(t3, p3, sample_weight=SW).numpy(),
        (Y_TRUE - Y_PRED) ** 2 * SW[:, None], rtol=1e-5)


def test_dtype_and_inputs():
    loss = L.MeanSquaredError(dtype="float64")
    out = loss(Y_TRUE, Y_PRED)
    assert out.dtype == ef.float64
    assert L.MeanSquaredError()(np.ones((2, 2)), ef.constant([[0, 0], [0, 0]])).dtype \
        == ef.float32
    assert float(L.MeanSquaredError()([[1, 2]], [[1, 2]])) == 0.0


def test_cosine_similarity_zero_vector_and_axis():
    got = L.cosine_similarity([[0.0, 0.0], [1.0, 0.0]], [[1.0, 1.0], [2.0, 0.0]])
    np.testing.assert_allclose(got.numpy(), [0.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(L.CosineSimilarity(axis=0, reduction="none")(
        Y_TRUE.T, Y_PRED.T).numpy(), np_cosine(Y_TRUE.astype(float), Y_PRED.astype(float)),
        rtol=1e-5)


def test_hinge_keeps_signed_labels():
    signed = 2 * PROB_TRUE - 1
    np.testing.assert_allclose(L.hinge(signed, LOGITS).numpy(),
                               np_hinge(PROB_TRUE.astype(float), LOGITS.astype(float)),
                               rtol=1e-5)


def test_invalid_reduction():
    with pytest.raises(ValueError, match="reduction"):
        L.MeanSquaredError(reduction="avg")


@pytest.mark.parametrize("make", [
    lambda: L.BinaryCrossentropy(), lambda: L.BinaryCrossentropy(from_logits=True),
    lambda: L.CategoricalCrossentropy(label_smoothing=0.1), lambda: L.Huber(delta=0.5),
    lambda: L.LogCosh(), lambda: L.KLDivergence(), lambda: L.MeanSquaredLogarithmicError(),
], ids=["bce", "bce_logits", "cce", "huber", "logcosh", "kld", "msle"])
def test_gradient_matches_finite_differences(make):
    loss = make()
    loss._dtype = ef.float64  # compute in float64 for a tight check
    t = PROB_TRUE.astype(np.float64) * 0.8 + 0.1
    p0 = PROB_PRED.astype(np.float64)
    p = ef.Variable(p0)
    with ef.GradientTape() as tape:
        value = loss(t, p, sample_weight=SW.astype(np.float64))
    grad = tape.gradient(value, p).numpy()
    direction = RNG.normal(size=p0.shape)
    h = 1e-6
    plus = float(loss(t, p0 + h * direction, sample_weight=SW.astype(np.float64)))
    minus = float(loss(t, p0 - h * direction, sample_weight=SW.astype(np.float64)))
    np.testing.assert_allclose((grad * direction).sum(), (plus - minus) / (2 * h),
                               rtol=1e-6, atol=1e-9)


def test_get_serialize_deserialize():
    assert L.get("mse") is L.mean_squared_error
    assert L.get("mean_absolute_error") is L.mean_absolute_error
    assert L.get("bce") is L.binary_crossentropy
    assert isinstance(L.get("CategoricalCrossentropy"), L.CategoricalCrossentropy)
    loss = L.BinaryCrossentropy(from_logits=True, label_smoothing=0.1)
    assert L.get(loss) is loss and L.get(None) is None
    back = L.get(L.serialize(loss))
    assert isinstance(back, L.BinaryCrossentropy)
    assert back.get_config() == loss.get_config()
    assert L.deserialize(L.serialize(L.mean_squared_error)) is L.mean_squared_error
    with pytest.raises(ValueError, match="Could not interpret loss"):
        L.get("nope")
    config = L.SparseCategoricalCrossentropy(ignore_class=3).get_config()
    assert config == {"name": "sparse_categorical_crossentropy",
                      "reduction": "sum_over_batch_size", "from_logits": False,
                      "ignore_class": 3}


def test_custom_loss_subclass_and_wrapper():
    class Cubed(L.Loss):
        def call(self, y_true, y_pred):
            return ef.reduce_mean((y_true - y_pred) ** 3, axis=-1)

    loss = Cubed()
    assert loss.name == "cubed"
    np.testing.assert_allclose(float(loss([[2.0, 2.0]], [[1.0, 0.0]])), 4.5)
    wrapped = L.LossFunctionWrapper(L.huber, delta=0.5, reduction="sum")
    clone = L.LossFunctionWrapper.from_config(wrapped.get_config())
    assert float(clone([[0.0]], [[2.0]])) == float(wrapped([[0.0]], [[2.0]])) == 0.875


@pytest.mark.skipif(not hasattr(ef, "function"), reason="needs eagerflow.function")
def test_traced_losses_equal_eager():
    labels = ef.constant([0, -1, 1, 2])
    cases = [
        (L.SparseCategoricalCrossentropy(ignore_class=-1), labels, SOFT),
        (L.CategoricalCrossentropy(label_smoothing=0.1), ONE_HOT, SOFT),
        (L.BinaryCrossentropy(from_logits=True), PROB_TRUE, LOGITS),
        (L.Hinge(), PROB_TRUE, LOGITS),
        (L.Huber(reduction="sum"), Y_TRUE, Y_PRED),
        (L.CosineSimilarity(), Y_TRUE, Y_PRED),
    ]
    for loss, t, p in cases:
        traced = ef.function(lambda a, b, w, loss=loss: loss(a, b, sample_weight=w))
        eager = loss(t, p, sample_weight=SW)
        got = traced(ef.convert_to_tensor(t), ef.constant(p), ef.constant(SW))
        np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=1e-6, err_msg=loss.name)


def test_keras_mask_on_predictions_limits_the_average():
    layers_base = pytest.importorskip("eagerflow.keras.layers.base")
    t = ef.constant(Y_TRUE[:, :, None])
    p = ef.constant(Y_PRED[:, :, None])
    mask = ef.constant([[True, True, False]] * 4)
    layers_base.set_keras_mask(p, mask)
    got = L.MeanSquaredError()(t, p)
    want = ((Y_TRUE - Y_PRED) ** 2)[:, :2].mean()
    np.testing.assert_allclose(float(got), want, rtol=1e-5)


def test_tf2_reduction_names():
    assert L.MeanSquaredError(reduction=L.Reduction.AUTO).reduction == "sum_over_batch_size"
    got = L.MeanSquaredError(reduction=L.Reduction.NONE)(Y_TRUE, Y_PRED)
    np.testing.assert_allclose(got.numpy(), np_mse(Y_TRUE, Y_PRED), rtol=1e-6)
