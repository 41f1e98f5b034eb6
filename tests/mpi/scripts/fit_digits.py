"""Keras fit on the bundled digits under MultiWorkerMirroredStrategy (mpirun -n N or python).

Rank 0 writes the per-epoch losses and the final weights to OUT.json; every rank prints
"rank R OK". Usage: fit_digits.py OUT.json [--shard] (--shard: sharded optimizer updates)
"""

import json
import sys

import eagerflow as ef
import numpy as np

strategy = ef.distribute.MultiWorkerMirroredStrategy(
    communication_options=ef.distribute.experimental.CommunicationOptions(
        shard_optimizer_updates="--shard" in sys.argv))
rank = strategy.cluster_resolver.task_id
(x, y), _ = ef.keras.datasets.digits.load_data()
x = (x.reshape(-1, 64) / 16.0).astype(np.float32)[:600]
y = y[:600]
with strategy.scope():
    ef.random.set_seed(rank + 7)  # different per rank: rank 0's initial weights must win
    model = ef.keras.Sequential([ef.keras.Input((64,)),
                                 ef.keras.layers.Dense(32, activation="relu"),
                                 ef.keras.layers.Dense(10)])
    model.compile(optimizer=ef.keras.optimizers.Adam(1e-2),
                  loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
history = model.fit(x, y, batch_size=64, epochs=3, shuffle=False, verbose=0)
evaluated = model.evaluate(x[:200], y[:200], batch_size=64, verbose=0)
predicted = model.predict(x[:100], batch_size=64, verbose=0)
assert predicted.shape == (100, 10), predicted.shape  # every worker gets all rows back
if rank == 0:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": history.history["loss"],
                   "accuracy": history.history["accuracy"],
                   "evaluate": [float(v) for v in evaluated],
                   "predict": predicted.ravel().tolist(),
                   "weights": [w.ravel().tolist() for w in model.get_weights()],
                   "slots": type(model.optimizer.variables[-1]).__name__}, f)
print("rank %d OK" % rank, flush=True)
