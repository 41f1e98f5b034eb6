"""Quick start: train a small network on the bundled handwritten digits with a GradientTape.

Run it with ``python tutorials/quickstart.py``. It loads the 1,797 8x8 digit images that ship
inside eagerflow, trains a 64-128-10 multilayer perceptron with a hand-written Adam update,
and prints the test accuracy (about 97%) in a few seconds on a laptop CPU.
"""

import time

import numpy as np

import eagerflow as tf
from eagerflow.keras.datasets import digits


def init_params(sizes, seed=0):
    """Glorot-uniform weights and zero biases for consecutive layer sizes."""
    tf.random.set_seed(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6.0 / (n_in + n_out))
        params.append(tf.Variable(tf.random.uniform([n_in, n_out], -limit, limit), name="w"))
        params.append(tf.Variable(tf.zeros([n_out]), name="b"))
    return params


def forward(params, x):
    """Dense layers with ReLU between them; returns the logits."""
    for i in range(0, len(params) - 2, 2):
        x = tf.nn.relu(x @ params[i] + params[i + 1])
    return x @ params[-2] + params[-1]


class Adam:
    """The Adam update rule, written with eagerflow ops on the variables themselves."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-7):
        self.params = params
        self.lr, self.b1, self.b2, self.eps = learning_rate, beta1, beta2, epsilon
        self.m = [tf.zeros_like(p) for p in params]
        self.v = [tf.zeros_like(p) for p in params]
        self.t = 0

    def apply(self, grads):
        self.t += 1
        lr = self.lr * np.sqrt(1 - self.b2 ** self.t) / (1 - self.b1 ** self.t)
        for i, (p, g) in enumerate(zip(self.params, grads)):
            self.m[i] = self.b1 * self.m[i] + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * g * g
            p.assign_sub(lr * self.m[i] / (tf.sqrt(self.v[i]) + self.eps))


def accuracy(params, x, y):
    predictions = tf.argmax(forward(params, x), axis=1)
    return float(tf.reduce_mean(tf.cast(tf.equal(predictions, y), tf.float32)))


def main(epochs=40, batch_size=64, seed=0):
    (x_train, y_train), (x_test, y_test) = digits.load_data()
    # Pixels are 0..16: scale to [0, 1] and flatten the 8x8 images.
    x_train = tf.constant(x_train.reshape(-1, 64) / 16.0, dtype=tf.float32)
    x_test = tf.constant(x_test.reshape(-1, 64) / 16.0, dtype=tf.float32)
    y_train, y_test = tf.constant(y_train), tf.constant(y_test)

    params = init_params([64, 128, 10], seed=seed)
    optimizer = Adam(params, learning_rate=3e-3)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    n = int(x_train.shape[0])
    for epoch in range(epochs):
        order = tf.constant(rng.permutation(n))
        for lo in range(0, n, batch_size):
            idx = order[lo:lo + batch_size]
            xb, yb = tf.gather(x_train, idx), tf.gather(y_train, idx)
            with tf.GradientTape() as tape:
                logits = forward(params, xb)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits))
            optimizer.apply(tape.gradient(loss, params))
        if epoch % 10 == 9 or epoch == epochs - 1:
            print("epoch %3d  loss %.4f  train accuracy %.4f"
                  % (epoch + 1, float(loss), accuracy(params, x_train, y_train)))
    test_accuracy = accuracy(params, x_test, y_test)
    print("test accuracy: %.4f  (%d test images, %.1f s of training)"
          % (test_accuracy, int(x_test.shape[0]), time.perf_counter() - start))
    return test_accuracy


if __name__ == "__main__":
    main()
