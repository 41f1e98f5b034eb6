"""Keras fit under ParameterServerStrategy: steps_per_epoch is required; each epoch's steps
are scheduled on the workers and the epoch's metrics are read from the ps."""

import sys

import numpy as np

import eagerflow as ef
from eagerflow import keras

resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    ef.distribute.Server(resolver).join(timeout=120)
    sys.exit(0)

keras.utils.set_random_seed(0)
(x_train, y_train), (x_test, y_test) = keras.datasets.digits.load_data()
x_train, x_test = (x_train / 16.0).astype("float32"), (x_test / 16.0).astype("float32")
strategy = ef.distribute.experimental.ParameterServerStrategy(resolver)
with strategy.scope():
    model = keras.Sequential([keras.Input(shape=(8, 8)), keras.layers.Flatten(),
                              keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
try:
    model.fit(x_train, y_train, epochs=1)
except ValueError as exc:
    assert "steps_per_epoch" in str(exc), exc
else:
    raise AssertionError("fit without steps_per_epoch did not raise")
dataset = ef.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(
    2000, seed=0).repeat().batch(32)
history = model.fit(dataset, epochs=4, steps_per_epoch=60, verbose=0)
losses = history.history["loss"]
assert len(losses) == 4 and losses[-1] < losses[0] / 2, history.history
assert history.history["accuracy"][-1] > 0.85, history.history
assert int(model.optimizer.iterations.numpy()) == 240, model.optimizer.iterations.numpy()
accuracy = np.mean(np.argmax(model.predict(x_test, verbose=0), axis=1) == y_test)
assert accuracy > 0.9, accuracy
print("chief OK losses=%s accuracy=%.3f" % (np.round(losses, 3).tolist(), accuracy))
