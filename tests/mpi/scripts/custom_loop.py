"""Custom training loop on the bundled digits: run with mpirun -n N, or plain python.

Prints "rank R OK" and, on rank 0, one JSON line with the losses and final weights'
checksums; the test compares them with a single-process run of the same global batch.
Usage: custom_loop.py OUT.json [--traced] [--compression fp16] [--shard] [--ckpt DIR]

``--shard`` shards the optimizer updates across workers. With ``--ckpt DIR`` every rank
then reads the optimizer's variables (all-gathered where sharded), writes a checkpoint
(rank 0's under DIR, the others' to scratch), restores it into zeroed slots and checks
that the restore gave back the same values.
"""

import json
import os
import sys
import tempfile

import eagerflow as ef
import numpy as np

out_path = sys.argv[1]
traced = "--traced" in sys.argv
compression = sys.argv[sys.argv.index("--compression") + 1] if "--compression" in sys.argv \
    else None
ckpt_dir = sys.argv[sys.argv.index("--ckpt") + 1] if "--ckpt" in sys.argv else None
GLOBAL_BATCH = 64
STEPS = 12

strategy = ef.distribute.MultiWorkerMirroredStrategy(
    communication_options=ef.distribute.experimental.CommunicationOptions(
        bytes_per_pack=16 << 10, compression=compression,
        shard_optimizer_updates="--shard" in sys.argv))
(x, y), _ = ef.keras.datasets.digits.load_data()
x = (x.reshape(-1, 64) / 16.0).astype(np.float32)[:GLOBAL_BATCH * STEPS]
y = y[:GLOBAL_BATCH * STEPS]
ds = ef.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
dist_ds = strategy.experimental_distribute_dataset(ds)

with strategy.scope():
    ef.random.set_seed(strategy.cluster_resolver.task_id + 1)  # rank 0's weights must win
    model = ef.keras.Sequential([ef.keras.layers.Dense(32, activation="relu"),
                                 ef.keras.layers.Dense(10)])
    model.build((None, 64))
    # A scalar variable too: sharded updates give it to one worker whole.
    temperature = ef.Variable(1.0, name="temperature")
    optimizer = ef.keras.optimizers.Adam(1e-2)
trained = list(model.trainable_variables) + [temperature]
loss_fn = ef.keras.losses.SparseCategoricalCrossentropy(
    from_logits=True, reduction=ef.keras.losses.Reduction.NONE)


def replica_step(xb, yb):
    with ef.GradientTape() as tape:
        per_example = loss_fn(yb, model(xb) * temperature)
        loss = ef.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
    grads = tape.gradient(loss, trained)
    optimizer.apply_gradients(zip(grads, trained))
    return loss


def step(xb, yb):
    per_replica = strategy.run(replica_step, args=(xb, yb))
    return strategy.reduce(ef.distribute.ReduceOp.SUM, per_replica, axis=None)


if traced:
    step = ef.function(step)
losses = []
for xb, yb in dist_ds:
    losses.append(float(step(xb, yb)))
collective_nodes = merged_nodes = 0
if traced:  # the all-reduce inside @function is a graph node
    from eagerflow.function import passes

    graph = step.get_concrete_function(xb, yb).graph
    collective_nodes = sum(n.op == "CollectiveReduce" for n in graph.nodes)
    # The loss all-reduce joins the gradients' in the graph that runs: one per step.
    merged_nodes = sum(n.op == "CollectiveReduce" for n in passes.optimize(graph).nodes)
weights = [v.numpy() for v in trained]
rank = strategy.cluster_resolver.task_id
result = {"losses": losses, "weights": [w.ravel().tolist() for w in weights],
          "collective_nodes": collective_nodes, "merged_nodes": merged_nodes}
if ckpt_dir is not None:
    # Every rank reads the slots (a collective when they are sharded) and saves.
    slots = [v.numpy() for v in optimizer.variables]
    ckpt = ef.train.Checkpoint(model=model, optimizer=optimizer)
    prefix = os.path.join(ckpt_dir if rank == 0 else tempfile.mkdtemp(), "ckpt")
    path = ckpt.write(prefix)
    for v in optimizer.variables[2:]:
        v.assign(ef.zeros_like(v))
    ckpt.read(path)
    again = [v.numpy() for v in optimizer.variables]
    assert all(np.array_equal(a, b) for a, b in zip(slots, again)), "restore differs"
    result["slots"] = [s.ravel().tolist() for s in slots]
    result["slot_names"] = [v.name for v in optimizer.variables]
    result["sharded"] = type(optimizer.variables[-1]).__name__
    result["checkpoint"] = path
if rank == 0:
    with open(out_path, "w") as f:
        json.dump(result, f)
print("rank %d OK" % rank, flush=True)
