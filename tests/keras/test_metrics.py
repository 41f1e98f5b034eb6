"""Keras metrics: accumulation across batches, weights, reset, and AUC against numpy."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import losses as L
from eagerflow.keras import metrics as M

RNG = np.random.default_rng(3)


def batches(n_batches=3, n=6, classes=4):
    out = []
    for _ in range(n_batches):
        labels = RNG.integers(0, classes, n)
        probs = RNG.dirichlet(np.ones(classes), n).astype(np.float32)
        weights = RNG.uniform(0.0, 2.0, n).astype(np.float32)
        out.append((labels, probs, weights))
    return out


def test_mean_and_sum_accumulate_and_reset():
    m, s = M.Mean(), M.Sum()
    values = [np.array([1.0, 2.0]), np.array([[3.0, 5.0], [0.0, 2.0]]), np.array(7.0)]
    for v in values:
        m.update_state(v)
        s.update_state(v)
    # Rank-2 values are averaged per sample first: samples 1, 2, 4, 1, 7.
    assert float(m.result()) == pytest.approx((1 + 2 + 4 + 1 + 7) / 5)
    assert float(s.result()) == pytest.approx(1 + 2 + 8 + 2 + 7)
    m.reset_state()
    s.reset_state()
    assert float(m.result()) == 0.0 and float(s.result()) == 0.0
    assert float(m([2.0, 4.0], sample_weight=[3.0, 1.0])) == pytest.approx(2.5)
    assert [v.name.split("/")[-1].split(":")[0].split("_")[0] for v in m.variables] == [
        "total", "count"]
    assert all(not v.trainable for v in m.variables)
    assert m.trainable_variables == ()


def test_metric_variables_sync_on_read_sum():
    v = M.Mean().variables[0]
    assert v.synchronization is ef.VariableSynchronization.ON_READ
    assert v.aggregation is ef.VariableAggregation.SUM


@pytest.mark.parametrize("cls,fn,kind", [
    (M.SparseCategoricalAccuracy, None, "sparse"),
    (M.CategoricalAccuracy, None, "onehot"),
    (M.SparseTopKCategoricalAccuracy, 2, "sparse"),
    (M.TopKCategoricalAccuracy, 2, "onehot"),
])
def test_accuracies_accumulate_with_weights(cls, fn, kind):
    metric = cls() if fn is None else cls(k=fn)
    hits, total = 0.0, 0.0
    for labels, probs, weights in batches():
        if fn is None:
            correct = probs.argmax(-1) == labels
        else:
            # True class in the top k (ties at the k-th value count as in).
            kth = np.sort(probs, -1)[:, -fn]
            correct = probs[np.arange(len(labels)), labels] >= kth
        y_true = labels if kind == "sparse" else np.eye(4, dtype=np.float32)[labels]
        metric.update_state(y_true, probs, sample_weight=weights)
        hits += (correct * weights).sum()
        total += weights.sum()
    assert float(metric.result()) == pytest.approx(hits / total, rel=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_binary_accuracy_threshold_and_shapes():
    m = M.BinaryAccuracy(threshold=0.7)
    m.update_state([[1], [0], [1]], [[0.8], [0.75], [0.6]])
    m.update_state([1, 0], [[0.9], [0.1]])  # [batch] labels, [batch, 1] predictions
    assert float(m.result()) == pytest.approx(3 / 5)
    acc = M.Accuracy()
    acc.update_state([1, 2, 3], [1, 2, 4])
    acc.update_state([[4]], [[4]])
    assert float(acc.result()) == pytest.approx(3 / 4)


def test_sparse_accuracy_with_column_labels_and_sequences():
    m = M.SparseCategoricalAccuracy()
    m.update_state(np.array([[1.0], [0.0]]), [[0.1, 0.9], [0.2, 0.8]])
    assert float(m.result()) == 0.5
    seq = M.SparseCategoricalAccuracy()
    labels = np.array([[0, 1, 1], [1, 1, 0]])
    probs = np.array([[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]],
                      [[0.3, 0.7], [0.1, 0.9], [0.5, 0.4]]], dtype=np.float32)
    seq.update_state(labels, probs, sample_weight=[1.0, 0.0])
    assert float(seq.result()) == pytest.approx(2 / 3)


def test_regression_metrics_accumulate():
    mse, mae, rmse = M.MeanSquaredError(), M.MeanAbsoluteError(), M.RootMeanSquaredError()
    se_sum, ae_sum, se_elems, n = 0.0, 0.0, 0.0, 0
    for _ in range(3):
        t = RNG.normal(size=(5, 2)).astype(np.float32)
        p = RNG.normal(size=(5, 2)).astype(np.float32)
        for m in (mse, mae, rmse):
            m.update_state(t, p)
        se_sum += ((t - p) ** 2).mean(-1).sum()
        ae_sum += np.abs(t - p).mean(-1).sum()
        se_elems += ((t - p) ** 2).sum()
        n += 5
    assert float(mse.result()) == pytest.approx(se_sum / n, rel=1e-5)
    assert float(mae.result()) == pytest.approx(ae_sum / n, rel=1e-5)
    assert float(rmse.result()) == pytest.approx(np.sqrt(se_elems / (2 * n)), rel=1e-5)
    # Integer predictions are not truncated.
    assert float(M.MeanSquaredError()([[0, 1]], [[1, 1]])) == 0.5


def test_probabilistic_metrics_equal_unreduced_losses():
    labels, probs, weights = batches(1)[0]
    m = M.SparseCategoricalCrossentropy()
    m.update_state(labels, probs, sample_weight=weights)
    per = L.sparse_categorical_crossentropy(labels, probs).numpy()
    assert float(m.result()) == pytest.approx((per * weights).sum() / weights.sum(), rel=1e-5)
    cos = M.CosineSimilarity()
    assert float(cos([[1.0, 0.0]], [[2.0, 0.0]])) == pytest.approx(1.0)


def confusion(y_true, y_pred, threshold, weights=None):
    w = np.ones_like(y_pred) if weights is None else weights
    pos, lab = y_pred > threshold, y_true.astype(bool)
    return ((pos & lab) * w).sum(), ((pos & ~lab) * w).sum(), ((~pos & ~lab) * w).sum(), \
        ((~pos & lab) * w).sum()


def test_confusion_counts_precision_recall():
    y_true = np.array([0, 1, 1, 1, 0, 0, 1, 0], dtype=np.float32)
    y_pred = np.array([0.1, 0.7, 0.4, 0.9, 0.6, 0.2, 0.55, 0.8], dtype=np.float32)
    w = np.array([1, 2, 1, 1, 3, 1, 1, 0.5], dtype=np.float32)
    metrics = [M.TruePositives(), M.FalsePositives(), M.TrueNegatives(), M.FalseNegatives(),
               M.Precision(), M.Recall()]
    for lo, hi in ((0, 3), (3, 8)):
        for m in metrics:
            m.update_state(y_true[lo:hi], y_pred[lo:hi], sample_weight=w[lo:hi])
    tp, fp, tn, fn = confusion(y_true, y_pred, 0.5, w)
    got = [float(m.result()) for m in metrics]
    assert got == pytest.approx([tp, fp, tn, fn, tp / (tp + fp), tp / (tp + fn)])
    multi = M.Precision(thresholds=[0.3, 0.65])
    multi.update_state(y_true, y_pred)
    want = []
    for t in (0.3, 0.65):
        tp, fp, _, _ = confusion(y_true, y_pred, t)
        want.append(tp / (tp + fp))
    np.testing.assert_allclose(multi.result().numpy(), want, rtol=1e-6)
    for m in metrics:
        m.reset_state()
    assert float(metrics[4].result()) == 0.0


def test_precision_recall_top_k_and_class_id():
    y_true = np.array([[0, 0, 1, 1], [1, 0, 0, 0]], dtype=np.float32)
    y_pred = np.array([[0.1, 0.4, 0.3, 0.2], [0.5, 0.3, 0.1, 0.1]], dtype=np.float32)
    p = M.Precision(top_k=2)
    p.update_state(y_true, y_pred)
    # Top 2: row 0 -> classes 1, 2 (one hit); row 1 -> classes 0, 1 (one hit).
    assert float(p.result()) == pytest.approx(0.5)
    r = M.Recall(class_id=2)
    r.update_state(y_true, y_pred)
    assert float(r.result()) == 0.0
    r.update_state(y_true, y_pred * 0 + 0.9)
    assert float(r.result()) == pytest.approx(0.5)


def np_auc_roc(y_true, y_pred, thresholds, weights=None, method="interpolation"):
    """Trapezoids (or rectangles) over the ROC points at the thresholds."""
    fpr, tpr = [], []
    for t in thresholds:
        tp, fp, tn, fn = confusion(y_true, y_pred, t, weights)
        tpr.append(tp / (tp + fn) if tp + fn else 0.0)
        fpr.append(fp / (fp + tn) if fp + tn else 0.0)
    fpr, tpr = np.array(fpr), np.array(tpr)
    if method == "interpolation":
        heights = (tpr[:-1] + tpr[1:]) / 2
    elif method == "minoring":
        heights = np.minimum(tpr[:-1], tpr[1:])
    else:
        heights = np.maximum(tpr[:-1], tpr[1:])
    return float(((fpr[:-1] - fpr[1:]) * heights).sum())


def keras_thresholds(n):
    return [-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7]


def test_auc_roc_against_numpy_trapezoids():
    y_true = (RNG.uniform(size=40) > 0.4).astype(np.float32)
    y_pred = np.clip(y_true * 0.3 + RNG.uniform(size=40) * 0.7, 0, 1).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, 40).astype(np.float32)
    for method in ("interpolation", "minoring", "majoring"):
        auc = M.AUC(num_thresholds=11, summation_method=method)
        for lo in range(0, 40, 10):
            auc.update_state(y_true[lo:lo + 10], y_pred[lo:lo + 10],
                             sample_weight=w[lo:lo + 10])
        want = np_auc_roc(y_true, y_pred, keras_thresholds(11), w, method)
        assert float(auc.result()) == pytest.approx(want, rel=1e-5), method
    # The default 200 thresholds approach the exact (Mann-Whitney) AUC.
    auc = M.AUC()
    auc.update_state(y_true, y_pred)
    pos, neg = y_pred[y_true == 1], y_pred[y_true == 0]
    exact = ((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    assert float(auc.result()) == pytest.approx(exact, abs=0.01)


def test_auc_small_case_and_explicit_thresholds():
    auc = M.AUC(num_thresholds=3)
    auc.update_state([0, 0, 1, 1], [0.0, 0.5, 0.3, 0.9])
    assert float(auc.result()) == pytest.approx(0.75)
    explicit = M.AUC(thresholds=[0.25, 0.5, 0.75])
    assert explicit.num_thresholds == 5 and explicit.thresholds[0] < 0
    explicit.update_state([0, 0, 1, 1], [0.1, 0.6, 0.35, 0.8])
    want = np_auc_roc(np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.35, 0.8]),
                      explicit.thresholds)
    assert float(explicit.result()) == pytest.approx(want, rel=1e-6)
    uneven = M.AUC(thresholds=[0.1, 0.2, 0.9])
    uneven.update_state([0, 0, 1, 1], [0.1, 0.6, 0.35, 0.8])
    want = np_auc_roc(np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.35, 0.8]),
                      uneven.thresholds)
    assert float(uneven.result()) == pytest.approx(want, rel=1e-6)


def test_auc_pr_interpolation_against_formula():
    y_true = np.array([0, 1, 1, 0, 1, 0, 1, 1], dtype=np.float32)
    y_pred = np.array([0.2, 0.9, 0.35, 0.4, 0.7, 0.1, 0.55, 0.3], dtype=np.float32)
    auc = M.AUC(num_thresholds=6, curve="PR")
    auc.update_state(y_true, y_pred)
    th = keras_thresholds(6)
    counts = np.array([confusion(y_true, y_pred, t) for t in th])
    tp, fp, fn = counts[:, 0], counts[:, 1], counts[:, 3]
    p = tp + fp
    total = 0.0
    for i in range(5):
        dtp, dp = tp[i] - tp[i + 1], p[i] - p[i + 1]
        slope = dtp / dp if dp > 0 else 0.0
        intercept = tp[i + 1] - slope * p[i + 1]
        ratio = p[i] / p[i + 1] if p[i] > 0 and p[i + 1] > 0 else 1.0
        denom = tp[i + 1] + fn[i + 1]
        total += slope * (dtp + intercept * np.log(ratio)) / denom if denom > 0 else 0.0
    assert float(auc.result()) == pytest.approx(total, rel=1e-5)
    majoring = M.AUC(num_thresholds=6, curve="PR", summation_method="majoring")
    majoring.update_state(y_true, y_pred)
    recall = tp / (tp + fn)
    precision = np.where(p > 0, tp / np.maximum(p, 1), 0.0)
    want = ((recall[:-1] - recall[1:]) * np.maximum(precision[:-1], precision[1:])).sum()
    assert float(majoring.result()) == pytest.approx(want, rel=1e-5)


def test_auc_multi_label_from_logits_and_label_weights():
    y_true = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=np.float32)
    logits = np.array([[2.0, -1.0], [-0.5, 0.3], [0.1, 1.5], [-2.0, 0.8]], dtype=np.float32)
    probs = 1 / (1 + np.exp(-logits))
    th = keras_thresholds(7)
    per_label = [np_auc_roc(y_true[:, j], probs[:, j], th) for j in range(2)]
    auc = M.AUC(num_thresholds=7, multi_label=True, from_logits=True)
    auc.update_state(y_true, logits)
    assert float(auc.result()) == pytest.approx(np.mean(per_label), rel=1e-5)
    weighted = M.AUC(num_thresholds=7, multi_label=True, label_weights=[1.0, 3.0])
    weighted.update_state(y_true, probs)
    assert float(weighted.result()) == pytest.approx(
        (per_label[0] + 3 * per_label[1]) / 4, rel=1e-5)
    flat = M.AUC(num_thresholds=7)
    flat.update_state(y_true, probs)
    assert float(flat.result()) == pytest.approx(
        np_auc_roc(y_true.ravel(), probs.ravel(), th), rel=1e-5)


def test_auc_validation_and_reset():
    with pytest.raises(ValueError, match="num_thresholds"):
        M.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="curve"):
        M.AUC(curve="XY")
    with pytest.raises(ValueError, match="summation"):
        M.AUC(summation_method="simpson")
    with pytest.raises(ValueError, match="Threshold values"):
        M.Precision(thresholds=[1.5])
    auc = M.AUC(num_thresholds=5)
    auc.update_state([0, 1], [0.2, 0.8])
    auc.reset_state()
    assert all(float(ef.reduce_sum(v)) == 0.0 for v in auc.variables)
    clone = M.deserialize(M.serialize(M.AUC(num_thresholds=9, curve="PR")))
    assert clone.num_thresholds == 9 and clone.curve == "PR"


def test_get_and_accuracy_choice():
    assert isinstance(M.get("accuracy"), M.Accuracy)
    assert isinstance(M.get("acc"), M.Accuracy)
    assert isinstance(M.get("mse"), M.MeanSquaredError)
    assert isinstance(M.get("auc"), M.AUC)
    assert isinstance(M.get("binary_accuracy"), M.BinaryAccuracy)
    assert isinstance(M.get("SparseTopKCategoricalAccuracy"), M.SparseTopKCategoricalAccuracy)
    assert M.get(M.binary_accuracy) is M.binary_accuracy
    with pytest.raises(ValueError, match="Could not interpret metric"):
        M.get("nope")
    choose = M.get_accuracy_for
    assert type(choose(loss="binary_crossentropy")) is M.BinaryAccuracy
    assert choose(loss=L.BinaryCrossentropy(from_logits=True)).threshold == 0.0
    assert type(choose(loss=L.SparseCategoricalCrossentropy())) is M.SparseCategoricalAccuracy
    assert type(choose(loss=L.categorical_crossentropy)) is M.CategoricalAccuracy
    assert type(choose(loss="mse", y_true=[8, 1], y_pred=[8, 1])) is M.BinaryAccuracy
    assert type(choose(y_true=[8, 1], y_pred=[8, 5])) is M.SparseCategoricalAccuracy
    assert type(choose(y_true=ef.zeros([8, 5]), y_pred=ef.zeros([8, 5]))) \
        is M.CategoricalAccuracy
    with pytest.raises(ValueError, match="cannot tell"):
        choose()
    m = M.get_for_compile("accuracy", loss="sparse_categorical_crossentropy")
    assert type(m) is M.SparseCategoricalAccuracy and m.name == "accuracy"
    ce = M.get_for_compile("ce", loss=L.CategoricalCrossentropy(from_logits=True))
    assert type(ce) is M.CategoricalCrossentropy
    wrapped = M.get_for_compile(L.mean_absolute_error)
    assert type(wrapped) is M.MeanMetricWrapper and wrapped.name == "mean_absolute_error"
    assert M.get_for_compile("mae").name == "mae"


def test_config_round_trips():
    for metric in (M.BinaryAccuracy(threshold=0.3), M.TopKCategoricalAccuracy(k=3),
                   M.Precision(thresholds=[0.2, 0.4], class_id=1), M.Recall(top_k=2),
                   M.MeanSquaredError(name="my_mse"), M.AUC(multi_label=True, num_labels=3)):
        clone = M.deserialize(M.serialize(metric))
        assert type(clone) is type(metric)
        assert clone.get_config() == metric.get_config()
    wrapper = M.MeanMetricWrapper(M.binary_accuracy, threshold=0.2)
    clone = M.MeanMetricWrapper.from_config(wrapper.get_config())
    assert float(clone([[1.0]], [[0.3]])) == 1.0


def test_custom_metric_and_free_form_name():
    class Maximum(M.Metric):
        def __init__(self, name="val/maximum", dtype=None):
            super().__init__(name=name, dtype=dtype)
            self.best = self.add_variable((), -100.0, name="best")

        def update_state(self, values):
            current = self.best.read_value()
            self.best.assign_add(ef.maximum(ef.reduce_max(values), current) - current)

        def result(self):
            return self.best.read_value()

    m = Maximum()
    assert m.name == "val/maximum"
    m.update_state([1.0, 5.0])
    m.update_state([3.0])
    assert float(m.result()) == 5.0


@pytest.mark.skipif(not hasattr(ef, "function"), reason="needs eagerflow.function")
def test_traced_updates_equal_eager():
    def make():
        return [M.AUC(num_thresholds=7), M.Precision(thresholds=[0.3, 0.6]), M.Recall(),
                M.SparseCategoricalAccuracy(), M.SparseTopKCategoricalAccuracy(k=2),
                M.CategoricalAccuracy(), M.RootMeanSquaredError(), M.BinaryAccuracy()]

    data = batches(3)
    results = []
    for traced in (False, True):
        ms = make()

        def update(labels, probs, weights, ms=ms):
            one_hot = ef.one_hot(labels, 4)
            binary = ef.cast(labels >= 2, ef.float32)
            ms[0].update_state(binary, probs[:, 3], sample_weight=weights)
            ms[1].update_state(binary, probs[:, 3])
            ms[2].update_state(binary, probs[:, 3], sample_weight=weights)
            ms[3].update_state(ef.expand_dims(labels, -1), probs, sample_weight=weights)
            ms[4].update_state(labels, probs)
            ms[5].update_state(one_hot, probs)
            ms[6].update_state(one_hot, probs, sample_weight=weights)
            ms[7].update_state(ef.expand_dims(binary, -1), probs[:, 3:])

        fn = ef.function(update) if traced else update
        for labels, probs, weights in data:
            fn(ef.constant(labels.astype(np.int32)), ef.constant(probs), ef.constant(weights))
        results.append([m.result().numpy() for m in ms])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_keras_mask_weights_metric_entries():
    layers_base = pytest.importorskip("eagerflow.keras.layers.base")
    labels = np.array([[0, 1, 1], [1, 1, 0]])
    probs = ef.constant(np.array([[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]],
                                  [[0.3, 0.7], [0.1, 0.9], [0.5, 0.4]]], dtype=np.float32))
    layers_base.set_keras_mask(probs, ef.constant([[True, True, False], [True, False, False]]))
    m = M.SparseCategoricalAccuracy()
    m.update_state(labels, probs)
    assert float(m.result()) == pytest.approx(1.0)  # the three unmasked entries are right
