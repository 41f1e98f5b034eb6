"""Keras optimizers against closed-form numpy updates; schedules; loss scaling."""

import math
import warnings

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import optimizers as O
from eagerflow.keras.optimizers import schedules as S

# Two variables (a vector and a matrix) and five steps of fixed, varied gradients.
W0 = [np.array([1.0, -2.0, 0.5]), np.array([[0.3, -0.7], [1.5, 0.0]])]
GRADS = [[np.array([0.1, -0.4, 2.0]) * (k + 1) * (-1) ** k,
          np.array([[0.5, 0.2], [-1.0, 3.0]]) / (k + 1)] for k in range(5)]
LR = 0.125  # exact in float32, so the float64 reference sees the same rate


def run(opt, steps=5, dtype=np.float64, grads=GRADS):
    vs = [ef.Variable(w.astype(dtype)) for w in W0]
    for k in range(steps):
        opt.apply_gradients([(ef.constant(g.astype(dtype)), v) for g, v in zip(grads[k], vs)])
    return [v.numpy() for v in vs]


# -- numpy references, one per algorithm, written from the Keras 3 update rules ----------------
def ref_sgd(momentum=0.0, nesterov=False, lr=LR, steps=5, wd=None, grads=GRADS):
    out = []
    for i, w in enumerate(W0):
        w = w.copy()
        m = np.zeros_like(w)
        for k in range(steps):
            g = grads[k][i]
            if wd is not None:
                w = w - w * wd * lr
            if momentum:
                m = momentum * m - lr * g
                w = w + (momentum * m - lr * g if nesterov else m)
            else:
                w = w - lr * g
        out.append(w)
    return out


def ref_adam(b1=0.9, b2=0.999, eps=1e-7, amsgrad=False, lr=LR, steps=5, wd=None):
    out = []
    for i, w in enumerate(W0):
        w, m, v, vh = w.copy(), np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
        for k in range(steps):
            g, t = GRADS[k][i], k + 1
            if wd is not None:
                w = w - w * wd * lr
            alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            if amsgrad:
                vh = np.maximum(vh, v)
                w = w - alpha * m / (np.sqrt(vh) + eps)
            else:
                w = w - alpha * m / (np.sqrt(v) + eps)
        out.append(w)
    return out


def ref_rmsprop(rho=0.9, momentum=0.0, eps=1e-7, centered=False, lr=LR, steps=5):
    out = []
    for i, w in enumerate(W0):
        w, v, mg, mom = w.copy(), np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
        for k in range(steps):
            g = GRADS[k][i]
            v = rho * v + (1 - rho) * g * g
            if centered:
                mg = rho * mg + (1 - rho) * g
                den = v - mg * mg + eps
            else:
                den = v + eps
            inc = lr * g / np.sqrt(den)
            if momentum > 0:
                mom = momentum * mom + inc
                w = w - mom
            else:
                w = w - inc
        out.append(w)
    return out


def ref_adagrad(init=0.1, eps=1e-7, lr=LR, steps=5):
    out = []
    for i, w in enumerate(W0):
        w, a = w.copy(), np.full_like(w, init)
        for k in range(steps):
            g = GRADS[k][i]
            a = a + g * g
            w = w - lr * g / np.sqrt(a + eps)
        out.append(w)
    return out


def ref_adadelta(rho=0.95, eps=1e-7, lr=LR, steps=5):
    out = []
    for i, w in enumerate(W0):
        w, eg, ex = w.copy(), np.zeros_like(w), np.zeros_like(w)
        for k in range(steps):
            g = GRADS[k][i]
            eg = rho * eg + (1 - rho) * g * g
            dx = -np.sqrt(ex + eps) * g / np.sqrt(eg + eps)
            ex = rho * ex + (1 - rho) * dx * dx
            w = w + lr * dx
        out.append(w)
    return out


def ref_adamax(b1=0.9, b2=0.999, eps=1e-7, lr=LR, steps=5):
    out = []
    for i, w in enumerate(W0):
        w, m, u = w.copy(), np.zeros_like(w), np.zeros_like(w)
        for k in range(steps):
            g, t = GRADS[k][i], k + 1
            m = m + (g - m) * (1 - b1)
            u = np.maximum(b2 * u, np.abs(g))
            w = w - lr * m / ((1 - b1 ** t) * (u + eps))
        out.append(w)
    return out


def ref_nadam(b1=0.9, b2=0.999, eps=1e-7, lr=LR, steps=5):
    def mu(t):
        return b1 * (1 - 0.5 * 0.96 ** t)

    out = []
    for i, w in enumerate(W0):
        w, m, v, prod = w.copy(), np.zeros_like(w), np.zeros_like(w), 1.0
        for k in range(steps):
            g, t = GRADS[k][i], k + 1
            prod = prod * mu(t)
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            m_hat = mu(t + 1) * m / (1 - prod * mu(t + 1)) + (1 - mu(t)) * g / (1 - prod)
            v_hat = v / (1 - b2 ** t)
            w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(w)
    return out


def ref_lion(b1=0.9, b2=0.99, lr=LR, steps=5):
    out = []
    for i, w in enumerate(W0):
        w, m = w.copy(), np.zeros_like(w)
        for k in range(steps):
            g = GRADS[k][i]
            w = w - lr * np.sign(b1 * m + (1 - b1) * g)
            m = b2 * m + (1 - b2) * g
        out.append(w)
    return out


CASES = [
    ("sgd", lambda: O.SGD(LR), lambda: ref_sgd()),
    ("sgd_momentum", lambda: O.SGD(LR, momentum=0.9), lambda: ref_sgd(0.9)),
    ("sgd_nesterov", lambda: O.SGD(LR, momentum=0.5, nesterov=True),
     lambda: ref_sgd(0.5, True)),
    ("adam", lambda: O.Adam(LR), lambda: ref_adam()),
    ("adam_betas", lambda: O.Adam(LR, beta_1=0.5, beta_2=0.75, epsilon=1e-3),
     lambda: ref_adam(0.5, 0.75, 1e-3)),
    ("adam_amsgrad", lambda: O.Adam(LR, amsgrad=True), lambda: ref_adam(amsgrad=True)),
    ("adamw", lambda: O.AdamW(LR), lambda: ref_adam(wd=0.004)),
    ("adamw_amsgrad", lambda: O.AdamW(LR, weight_decay=0.25, amsgrad=True),
     lambda: ref_adam(wd=0.25, amsgrad=True)),
    ("rmsprop", lambda: O.RMSprop(LR), lambda: ref_rmsprop()),
    ("rmsprop_momentum", lambda: O.RMSprop(LR, momentum=0.5), lambda: ref_rmsprop(
        momentum=0.5)),
    ("rmsprop_centered", lambda: O.RMSprop(LR, centered=True, rho=0.8),
     lambda: ref_rmsprop(rho=0.8, centered=True)),
    ("rmsprop_centered_momentum", lambda: O.RMSprop(LR, centered=True, momentum=0.9),
     lambda: ref_rmsprop(momentum=0.9, centered=True)),
    ("adagrad", lambda: O.Adagrad(LR), lambda: ref_adagrad()),
    ("adagrad_init", lambda: O.Adagrad(LR, initial_accumulator_value=1.0, epsilon=1e-3),
     lambda: ref_adagrad(1.0, 1e-3)),
    ("adadelta", lambda: O.Adadelta(LR), lambda: ref_adadelta()),
    ("adadelta_rho", lambda: O.Adadelta(1.0, rho=0.5), lambda: ref_adadelta(0.5, lr=1.0)),
    ("adamax", lambda: O.Adamax(LR), lambda: ref_adamax()),
    ("nadam", lambda: O.Nadam(LR), lambda: ref_nadam()),
    ("nadam_betas", lambda: O.Nadam(LR, beta_1=0.5, beta_2=0.9),
     lambda: ref_nadam(0.5, 0.9)),
    ("lion", lambda: O.Lion(LR), lambda: ref_lion()),
    ("lion_betas", lambda: O.Lion(LR, beta_1=0.5, beta_2=0.5), lambda: ref_lion(0.5, 0.5)),
    ("sgd_weight_decay", lambda: O.SGD(LR, weight_decay=0.5), lambda: ref_sgd(wd=0.5)),
]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_update_matches_closed_form_float64(name, make, ref):
    got = run(make())
    for g, r in zip(got, ref()):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,make,ref", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_update_float32(name, make, ref):
    got = run(make(), dtype=np.float32)
    for g, r in zip(got, ref()):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5)


def test_clipnorm_is_per_variable():
    def clip(g, c):
        n = np.sqrt((g * g).sum())
        return g * c / max(n, c)

    clipped = [[clip(g, 1.0) for g in step] for step in GRADS]
    got = run(O.SGD(LR, clipnorm=1.0))
    for g, r in zip(got, ref_sgd(grads=clipped)):
        np.testing.assert_allclose(g, r, rtol=1e-12)


def test_global_clipnorm_scales_all_gradients_together():
    clipped = []
    for step in GRADS:
        n = np.sqrt(sum((g * g).sum() for g in step))
        clipped.append([g * 2.0 / max(n, 2.0) for g in step])
    got = run(O.SGD(LR, momentum=0.9, global_clipnorm=2.0))
    for g, r in zip(got, ref_sgd(0.9, grads=clipped)):
        np.testing.assert_allclose(g, r, rtol=1e-12)


def test_clipvalue_is_elementwise():
    clipped = [[np.clip(g, -0.5, 0.5) for g in step] for step in GRADS]
    got = run(O.SGD(LR, clipvalue=0.5))
    for g, r in zip(got, ref_sgd(grads=clipped)):
        np.testing.assert_allclose(g, r, rtol=1e-12)


def test_only_one_clipping_option():
    with pytest.raises(ValueError, match="Only one of `clipnorm`"):
        O.SGD(clipnorm=1.0, clipvalue=1.0)


def test_unknown_argument_and_bad_momentum():
    with pytest.raises(ValueError, match="not recognized"):
        O.Adam(lr=0.1)
    with pytest.raises(ValueError, match="momentum"):
        O.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="weight_decay"):
        O.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="learning_rate"):
        O.SGD(learning_rate="fast")


def test_iterations_and_variable_order():
    opt = O.Adam(LR, name="adam_order")
    assert opt.iterations.dtype == ef.int64 and not opt.iterations.trainable
    vs = [ef.Variable(w, name=n) for w, n in zip(W0, ["first", "second"])]
    for k in range(3):
        opt.apply_gradients(zip([ef.constant(g) for g in GRADS[k]], vs))
    assert int(opt.iterations) == 3
    names = [v.name.split(":")[0] for v in opt.variables]
    assert names[:2] == ["adam_order/iteration", "adam_order/learning_rate"]
    # Slots grouped by kind, in variable order (Keras' order), created once.
    assert [n.split("/")[1].split("_", 1)[1] for n in names[2:]] == [
        "momentum", "momentum", "velocity", "velocity"]
    assert opt.get_slot(vs[1], "velocity") is opt.variables[5]
    assert opt.trainable_variables == ()
    with pytest.raises(KeyError, match="No slot"):
        opt.get_slot(vs[0], "velocity_hat")


def test_slots_made_lazily_for_new_variables():
    opt = O.SGD(LR, momentum=0.9)
    a, b = ef.Variable([1.0]), ef.Variable([2.0])
    opt.apply_gradients([(ef.constant([1.0]), a)])
    assert len(opt.variables) == 3
    opt.apply_gradients([(ef.constant([1.0]), a), (ef.constant([1.0]), b)])
    assert len(opt.variables) == 4
    assert opt.get_slot(b, "momentum").numpy().tolist() == [-LR]


def test_none_gradient_skipped_with_warning_naming_variable():
    a, b = ef.Variable([1.0], name="has_grad"), ef.Variable([2.0], name="no_grad_var")
    opt = O.SGD(0.5)
    with pytest.warns(UserWarning, match="no_grad_var"):
        opt.apply_gradients([(ef.constant([1.0]), a), (None, b)])
    assert a.numpy().tolist() == [0.5] and b.numpy().tolist() == [2.0]
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, b)])


def test_learning_rate_variable_setter_and_float():
    opt = O.SGD(0.5)
    assert isinstance(opt.learning_rate, ef.Variable)
    opt.learning_rate = 0.25
    assert float(opt.learning_rate) == 0.25 and float(opt.lr) == 0.25
    w = ef.Variable(1.0)
    opt.apply_gradients([(ef.constant(1.0), w)])
    assert float(w) == 0.75
    user_lr = ef.Variable(0.5)
    opt2 = O.SGD(user_lr)
    assert opt2.learning_rate is user_lr and user_lr in opt2.variables
    user_lr.assign(0.125)
    opt2.apply_gradients([(ef.constant(1.0), w)])
    assert float(w) == 0.625


def test_schedule_is_called_with_iterations():
    sched = S.ExponentialDecay(0.5, decay_steps=1, decay_rate=0.5)
    opt = O.SGD(sched)
    w = ef.Variable(np.array(0.0))
    for _ in range(4):
        opt.apply_gradients([(ef.constant(np.array(1.0)), w)])
    assert float(w) == pytest.approx(-(0.5 + 0.25 + 0.125 + 0.0625))
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.1
    opt.learning_rate = S.PolynomialDecay(1.0, 10)
    assert isinstance(opt.get_config()["learning_rate"], dict)


def test_callable_learning_rate():
    opt = O.SGD(lambda: 0.25)
    w = ef.Variable(1.0)
    opt.apply_gradients([(ef.constant(1.0), w)])
    assert float(w) == 0.75


def test_minimize_callable_and_tape():
    w = ef.Variable(3.0)
    opt = O.SGD(0.25)
    opt.minimize(lambda: w * w, [w])
    assert float(w) == 1.5
    with ef.GradientTape() as tape:
        loss = w * w
    opt.minimize(loss, [w], tape=tape)
    assert float(w) == 0.75
    with pytest.raises(ValueError, match="`tape` is required"):
        opt.minimize(w * w, [w])


def test_constraint_applied_after_update():
    w = ef.Variable([1.0, -1.0], constraint=lambda v: ef.maximum(v, 0.0))
    O.SGD(1.0).apply_gradients([(ef.constant([2.0, 2.0]), w)])
    assert w.numpy().tolist() == [0.0, 0.0]


def test_exclude_from_weight_decay():
    opt = O.SGD(0.5, weight_decay=0.5)
    kernel, bias = ef.Variable(1.0, name="kernel"), ef.Variable(1.0, name="dense_bias")
    opt.exclude_from_weight_decay(var_names=["bias"])
    opt.apply_gradients([(ef.constant(0.0), kernel), (ef.constant(0.0), bias)])
    assert float(kernel) == 0.75 and float(bias) == 1.0
    with pytest.raises(ValueError, match="before the optimizer is built"):
        opt.exclude_from_weight_decay(var_names=["x"])


def test_ema_with_overwrite_frequency():
    opt = O.SGD(1.0, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=3)
    w = ef.Variable(np.array(0.0))
    ws, avg = 0.0, 0.0
    for k in range(4):
        opt.apply_gradients([(ef.constant(np.array(-1.0)), w)])
        ws += 1.0
        avg = ws if k == 0 else 0.5 * avg + 0.5 * ws
        if (k + 1) % 3 == 0:
            ws = avg
        assert float(w) == pytest.approx(ws)
        assert float(opt.get_slot(w, "average")) == pytest.approx(avg)
    opt.finalize_variable_values([w])
    assert float(w) == pytest.approx(avg)


def test_gradient_accumulation_updates_every_n_steps():
    opt = O.SGD(0.5, momentum=0.5, gradient_accumulation_steps=2)
    w = ef.Variable(np.array(1.0))
    opt.apply_gradients([(ef.constant(np.array(1.0)), w)])
    assert float(w) == 1.0 and int(opt.iterations) == 0
    opt.apply_gradients([(ef.constant(np.array(3.0)), w)])
    # Mean gradient 2: m = -0.5 * 2 = -1, w = 0.
    assert float(w) == 0.0 and int(opt.iterations) == 1
    assert float(opt.get_slot(w, "gradient_accumulator")) == 0.0
    opt.apply_gradients([(ef.constant(np.array(1.0)), w)])
    assert float(w) == 0.0 and float(opt.get_slot(w, "momentum")) == -1.0


def test_loss_scale_factor_divides_gradients():
    opt = O.SGD(1.0, loss_scale_factor=4.0)
    assert float(opt.scale_loss(ef.constant(2.0))) == 8.0
    w = ef.Variable(1.0)
    opt.apply_gradients([(ef.constant(4.0), w)])
    assert float(w) == 0.0


def test_indexed_slices_gradient():
    w = ef.Variable([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(ef.gather(w, [0, 2, 2]))
    grad = tape.gradient(loss, w)
    O.SGD(0.5).apply_gradients([(grad, w)])
    assert w.numpy().tolist() == [[0.5, 0.5], [1.0, 1.0], [0.0, 0.0]]


def test_float16_and_mixed_gradient_dtype():
    w = ef.Variable(np.array([1.0, 2.0], dtype=np.float16))
    O.Adam(0.125).apply_gradients([(ef.constant(np.array([1.0, -1.0], np.float32)), w)])
    assert w.dtype == ef.float16
    np.testing.assert_allclose(w.numpy(), [0.875, 2.125], atol=4e-3)  # float16 spacing


def test_custom_optimizer_with_own_build_rejects_unknown_variable():
    class Custom(O.Optimizer):
        def build(self, var_list):
            if self.built:
                return
            super().build(var_list)
            self.acc = [self.add_variable_from_reference(v, "acc") for v in var_list]

        def update_step(self, gradient, variable, learning_rate):
            acc = self.acc[self._get_variable_index(variable)]
            acc.assign_add(gradient)
            variable.assign_sub(acc * ef.cast(learning_rate, variable.dtype))

    a, b = ef.Variable(1.0), ef.Variable(1.0)
    opt = Custom(learning_rate=0.5)
    opt.apply([ef.constant(1.0)], [a])
    opt.apply([ef.constant(1.0)], [a])
    assert float(a) == 1.0 - 0.5 - 1.0
    with pytest.raises(ValueError, match="Unknown variable"):
        opt.apply([ef.constant(1.0)], [b])


def test_config_round_trip_and_get():
    opt = O.Adam(0.5, beta_1=0.8, amsgrad=True, clipnorm=2.0, name="my_adam")
    config = opt.get_config()
    assert config["learning_rate"] == 0.5 and config["epsilon"] == 1e-7
    clone = O.Adam.from_config(config)
    assert clone.get_config() == config
    again = O.deserialize(O.serialize(opt))
    assert isinstance(again, O.Adam) and again.beta_1 == 0.8 and again.amsgrad
    sched = O.SGD(S.CosineDecay(0.1, 100, warmup_target=1.0, warmup_steps=5))
    restored = O.deserialize(O.serialize(sched))
    assert isinstance(restored._learning_rate, S.CosineDecay)
    assert restored._learning_rate.warmup_steps == 5
    for name, cls in [("adam", O.Adam), ("SGD", O.SGD), ("RMSprop", O.RMSprop),
                      ("adamw", O.AdamW), ("nadam", O.Nadam), ("lion", O.Lion),
                      ("adagrad", O.Adagrad), ("adadelta", O.Adadelta),
                      ("adamax", O.Adamax)]:
        assert type(O.get(name)) is cls
    assert O.get(opt) is opt and O.get(None) is None
    with pytest.raises(ValueError, match="Could not interpret optimizer"):
        O.get("nope")
    assert O.SGD().get_config()["learning_rate"] == pytest.approx(0.01)
    assert O.Adam().name == "adam" and O.SGD().name == "SGD"


def test_set_and_get_weights():
    opt = O.SGD(0.1, momentum=0.9)
    w = ef.Variable([1.0, 2.0])
    opt.apply_gradients([(ef.constant([1.0, 1.0]), w)])
    weights = opt.get_weights()
    opt2 = O.SGD(0.1, momentum=0.9)
    opt2.build([w])
    opt2.set_weights(weights)
    assert int(opt2.iterations) == 1
    np.testing.assert_allclose(opt2.get_slot(w, "momentum").numpy(), [-0.1, -0.1])


# -- loss scaling --------------------------------------------------------------------------
def test_loss_scale_skips_non_finite_step_and_halves():
    inner = O.Adam(0.1)
    opt = O.LossScaleOptimizer(inner, initial_scale=8.0, dynamic_growth_steps=3)
    w = ef.Variable([1.0, 2.0])
    opt.apply_gradients([(ef.constant([8.0, 8.0]), w)])  # finite: unscaled grad 1
    after_one = w.numpy().copy()
    m = inner.get_slot(w, "momentum").numpy().copy()
    assert int(opt.iterations) == 1 and float(opt.dynamic_scale) == 8.0
    for bad in (float("inf"), float("nan")):
        opt.apply_gradients([(ef.constant([1.0, bad]), w)])
        np.testing.assert_array_equal(w.numpy(), after_one)
        np.testing.assert_array_equal(inner.get_slot(w, "momentum").numpy(), m)
        assert int(opt.iterations) == 1 and int(opt.step_counter) == 0
    assert float(opt.dynamic_scale) == 2.0
    ref = O.Adam(0.1)
    wr = ef.Variable([1.0, 2.0])
    ref.apply_gradients([(ef.constant([1.0, 1.0]), wr)])
    np.testing.assert_allclose(after_one, wr.numpy())


def test_loss_scale_doubles_after_growth_steps():
    opt = O.LossScaleOptimizer(O.SGD(1.0), initial_scale=4.0, dynamic_growth_steps=2)
    w = ef.Variable(0.0)
    scales = []
    for _ in range(5):
        opt.apply_gradients([(opt.scale_loss(ef.constant(1.0)), w)])
        scales.append(float(opt.dynamic_scale))
    assert scales == [4.0, 8.0, 8.0, 16.0, 16.0]
    assert float(w) == -5.0  # every step unscaled to gradient 1


def test_loss_scale_tf2_workflow_and_minimize():
    opt = O.LossScaleOptimizer(O.SGD(0.5), initial_scale=16.0)
    w = ef.Variable(2.0)
    with ef.GradientTape() as tape:
        scaled = opt.get_scaled_loss(w * w)
    assert float(scaled) == 64.0
    grads = opt.get_unscaled_gradients(tape.gradient(scaled, [w]))
    assert float(grads[0]) == 4.0
    opt.apply_gradients(zip(grads, [w]))  # not divided a second time
    assert float(w) == 0.0
    w.assign(2.0)
    opt.minimize(lambda: w * w, [w])
    assert float(w) == 0.0
    assert [float(g) for g in opt.get_scaled_gradients([ef.constant(1.0)])] == [16.0]


def test_loss_scale_config_and_validation():
    opt = O.LossScaleOptimizer(O.RMSprop(0.5), initial_scale=32.0, dynamic_growth_steps=7)
    clone = O.deserialize(O.serialize(opt))
    assert isinstance(clone.inner_optimizer, O.RMSprop)
    assert clone.initial_scale == 32.0 and clone.dynamic_growth_steps == 7
    assert float(clone.learning_rate) == 0.5
    with pytest.raises(ValueError, match="dynamic=False"):
        O.LossScaleOptimizer(O.SGD(), dynamic=False)
    with pytest.raises(TypeError, match="inner_optimizer"):
        O.LossScaleOptimizer("sgd")


# -- schedules -----------------------------------------------------------------------------
def _lr(schedule, step):
    return float(schedule(step))


def test_exponential_decay():
    s = S.ExponentialDecay(0.5, decay_steps=10, decay_rate=0.3)
    for step in (0, 1, 7, 25):
        assert _lr(s, step) == pytest.approx(0.5 * 0.3 ** (step / 10), rel=1e-6)
    st = S.ExponentialDecay(0.5, decay_steps=10, decay_rate=0.3, staircase=True)
    assert [_lr(st, k) for k in (9, 10, 25)] == pytest.approx([0.5, 0.15, 0.045], rel=1e-6)
    with pytest.raises(ValueError, match="decay_steps"):
        S.ExponentialDecay(0.1, 0, 0.5)


def test_piecewise_constant():
    s = S.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    got = [_lr(s, k) for k in (0, 10, 11, 20, 21, 100)]
    assert got == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.1, 0.1])
    assert _lr(s, ef.Variable(15, dtype=ef.int64)) == 0.5
    with pytest.raises(ValueError, match="1 less than"):
        S.PiecewiseConstantDecay([1, 2], [1.0, 0.5])


def test_polynomial_decay_with_and_without_cycle():
    s = S.PolynomialDecay(1.0, 10, end_learning_rate=0.1, power=2.0)
    for step in (0, 3, 10, 15):
        p = min(step, 10) / 10
        assert _lr(s, step) == pytest.approx(0.9 * (1 - p) ** 2 + 0.1, rel=1e-6)
    c = S.PolynomialDecay(1.0, 10, end_learning_rate=0.0, cycle=True)
    for step in (0, 5, 10, 15, 20):
        ds = 10 * (1 if step == 0 else math.ceil(step / 10))
        assert _lr(c, step) == pytest.approx(1 - step / ds, abs=1e-7)


def test_inverse_time_decay():
    s = S.InverseTimeDecay(1.0, decay_steps=2, decay_rate=0.5)
    st = S.InverseTimeDecay(1.0, decay_steps=2, decay_rate=0.5, staircase=True)
    for step in (0, 1, 3, 8):
        assert _lr(s, step) == pytest.approx(1 / (1 + 0.5 * step / 2), rel=1e-6)
        assert _lr(st, step) == pytest.approx(1 / (1 + 0.5 * (step // 2)), rel=1e-6)


def test_cosine_decay_and_warmup():
    s = S.CosineDecay(1.0, decay_steps=10, alpha=0.1)
    for step in (0, 3, 10, 20):
        c = 0.5 * (1 + math.cos(math.pi * min(step, 10) / 10))
        assert _lr(s, step) == pytest.approx(0.9 * c + 0.1, rel=1e-6, abs=1e-7)
    w = S.CosineDecay(0.1, decay_steps=10, alpha=0.0, warmup_target=1.0, warmup_steps=4)
    for step in (0, 2, 4, 9, 14, 30):
        if step < 4:
            want = 0.1 + 0.9 * step / 4
        else:
            want = 0.5 * (1 + math.cos(math.pi * min(step - 4, 10) / 10))
        assert _lr(w, step) == pytest.approx(want, rel=1e-6, abs=1e-7)


def test_cosine_decay_restarts():
    s = S.CosineDecayRestarts(1.0, first_decay_steps=4, t_mul=2.0, m_mul=0.5, alpha=0.1)

    def ref(step):
        frac = step / 4
        i = math.floor(math.log(1 - frac * (1 - 2.0)) / math.log(2.0))
        frac = (frac - (1 - 2.0 ** i) / (1 - 2.0)) / 2.0 ** i
        return 0.9 * 0.5 * 0.5 ** i * (1 + math.cos(math.pi * frac)) + 0.1

    for step in (0, 1, 3, 4, 7, 12, 13):
        assert _lr(s, step) == pytest.approx(ref(step), rel=1e-5, abs=1e-6)


def test_schedule_serialize_deserialize():
    for s in (S.ExponentialDecay(0.1, 5, 0.5, staircase=True),
              S.PiecewiseConstantDecay([3], [1.0, 0.5]), S.PolynomialDecay(1.0, 7, cycle=True),
              S.InverseTimeDecay(0.2, 3, 0.1), S.CosineDecay(1.0, 9, alpha=0.2),
              S.CosineDecayRestarts(1.0, 4)):
        d = S.serialize(s)
        assert d["module"] == "keras.optimizers.schedules"
        back = S.deserialize(d)
        assert type(back) is type(s) and back.get_config() == s.get_config()
        for step in (0, 3, 11):
            assert _lr(back, step) == _lr(s, step)
    with pytest.raises(ValueError, match="Unknown learning rate schedule"):
        S.deserialize({"class_name": "Nope", "config": {}})


def test_no_warnings_on_clean_step():
    w = ef.Variable([1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        O.Nadam(0.1).apply_gradients([(ef.constant([1.0]), w)])


@pytest.mark.skipif(not hasattr(ef, "function"), reason="needs eagerflow.function")
@pytest.mark.parametrize("make", [
    lambda: O.SGD(0.1, momentum=0.9, nesterov=True), lambda: O.Adam(0.1, amsgrad=True),
    lambda: O.Nadam(0.1), lambda: O.RMSprop(0.1, centered=True, momentum=0.5),
    lambda: O.AdamW(0.1, global_clipnorm=1.0), lambda: O.Adagrad(0.1, clipvalue=0.5),
    lambda: O.Adadelta(1.0), lambda: O.Adamax(0.1), lambda: O.Lion(0.1),
    lambda: O.SGD(S.CosineDecay(0.1, 10, warmup_target=0.2, warmup_steps=2)),
    lambda: O.SGD(0.1, gradient_accumulation_steps=2, use_ema=True, ema_overwrite_frequency=2),
    lambda: O.LossScaleOptimizer(O.Adam(0.1), initial_scale=4.0, dynamic_growth_steps=2),
], ids=["sgd", "adam", "nadam", "rmsprop", "adamw", "adagrad", "adadelta", "adamax", "lion",
        "schedule", "accumulate_ema", "loss_scale"])
def test_traced_step_equals_eager(make):
    grads = [np.array([0.5, -1.0], np.float32), np.array([np.inf, 1.0], np.float32),
             np.array([2.0, 0.25], np.float32), np.array([-1.0, 3.0], np.float32)]
    results = []
    for traced in (False, True):
        w = ef.Variable(np.array([1.0, -2.0], np.float32))
        opt = make()
        opt.build([w])

        def step(g, opt=opt, w=w):
            if isinstance(opt, O.LossScaleOptimizer):
                g = opt.scale_loss(g)
            else:  # non-finite gradients only make sense with loss scaling
                g = ef.where(ef.math.is_finite(g), g, ef.zeros_like(g))
            opt.apply_gradients([(g, w)])

        fn = ef.function(step) if traced else step
        for g in grads:
            fn(ef.constant(g))
        results.append((w.numpy(), [v.numpy() for v in opt.variables]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-7)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_optimizer_variables_go_through_creator_scope():
    made = []

    def creator(next_creator, **kwargs):
        made.append(kwargs.get("name"))
        return next_creator(**kwargs)

    w = ef.Variable([1.0, 2.0], name="w_creator")
    with ef.variable_creator_scope(creator):
        opt = O.Adam(0.1, name="adam_creator")
        opt.build([w])
    assert made == ["iteration", "learning_rate", "w_creator_momentum", "w_creator_velocity"]
    assert opt.iterations.aggregation is ef.VariableAggregation.ONLY_FIRST_REPLICA
