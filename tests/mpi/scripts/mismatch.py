"""Rank 1 builds a different model. Usage: mismatch.py variables|gradients.

variables: rank 1's second layer has 33 units: the initial-value broadcast fails, naming it.
gradients: same variables, but rank 1 computes gradients for one variable fewer: the
first-step plan check fails on every rank, naming the counts.
"""

import sys

import eagerflow as ef
import numpy as np

mode = sys.argv[1]
strategy = ef.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
units = 33 if (rank == 1 and mode == "variables") else 32
with strategy.scope():
    model = ef.keras.Sequential([ef.keras.layers.Dense(16), ef.keras.layers.Dense(units)])
    model.build((None, 8))
    opt = ef.keras.optimizers.SGD(0.1)


def step(x):
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(model(x))
    variables = model.trainable_variables
    if rank == 1:
        variables = variables[:-1]
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))


strategy.run(step, args=(ef.constant(np.ones((4, 8), np.float32)),))
print("rank %d OK" % rank)
