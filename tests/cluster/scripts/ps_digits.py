"""Asynchronous ParameterServerStrategy training of the quick start's model on the digits.

Prints "chief OK accuracy=A steps=N" when the model reaches the quick start's accuracy.
"""

import sys
import time

import numpy as np

import eagerflow as ef
from eagerflow import keras

resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    ef.distribute.Server(resolver).join(timeout=120)
    sys.exit(0)

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 600
keras.utils.set_random_seed(0)
(x_train, y_train), (x_test, y_test) = keras.datasets.digits.load_data()
x_train, x_test = (x_train / 16.0).astype("float32"), (x_test / 16.0).astype("float32")

strategy = ef.distribute.experimental.ParameterServerStrategy(resolver)
coordinator = ef.distribute.experimental.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    model = keras.Sequential([
        keras.Input(shape=(8, 8)),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ])
    optimizer = keras.optimizers.Adam(learning_rate=3e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
tasks = sorted({v._task for v in model.trainable_variables})
assert tasks == ["/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"], tasks


def dataset_fn():
    return ef.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(
        2000, seed=1).repeat().batch(32)


per_worker_iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))


@ef.function
def train_step(iterator):
    x, y = next(iterator)
    with ef.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


start = time.perf_counter()
losses = [coordinator.schedule(train_step, args=(per_worker_iterator,))
          for _ in range(STEPS)]
coordinator.join()
seconds = time.perf_counter() - start
assert int(optimizer.iterations.numpy()) == STEPS, optimizer.iterations.numpy()
first, last = np.mean([v.fetch() for v in losses[:20]]), np.mean(
    [v.fetch() for v in losses[-20:]])
assert last < first / 4, (first, last)
predictions = np.argmax(model(x_test).numpy(), axis=1)
accuracy = float(np.mean(predictions == y_test))
assert accuracy >= 0.95, accuracy
print("chief OK accuracy=%.4f steps=%d steps/s=%.1f" % (accuracy, STEPS, STEPS / seconds))
