"""Quick start: train a small Keras model on the bundled handwritten digits.

Run it with ``python tutorials/quickstart.py``. It loads the 1,797 8x8 digit images that ship
inside eagerflow, builds a 64-128-10 multilayer perceptron with ``keras.Sequential``, trains it
with Adam through ``model.fit`` (each training step runs as one traced graph), and prints the
test accuracy (about 97%) after a few seconds on a laptop CPU. The same program runs under
TensorFlow with ``import tensorflow as tf``.
"""

import time

from eagerflow import keras
from eagerflow.keras.datasets import digits


def main(epochs=30, batch_size=32, seed=0):
    keras.utils.set_random_seed(seed)
    (x_train, y_train), (x_test, y_test) = digits.load_data()
    # Pixels are 0..16: scale them to [0, 1].
    x_train, x_test = x_train / 16.0, x_test / 16.0

    model = keras.Sequential([
        keras.Input(shape=(8, 8)),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()

    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1,
              verbose=2)
    seconds = time.perf_counter() - start
    test_loss, test_accuracy = model.evaluate(x_test, y_test, verbose=0)
    print("trained %d epochs in %.1f s; test loss %.4f on %d images"
          % (epochs, seconds, test_loss, len(x_test)))
    print("test accuracy: %.4f" % test_accuracy)
    return test_accuracy


if __name__ == "__main__":
    main()
