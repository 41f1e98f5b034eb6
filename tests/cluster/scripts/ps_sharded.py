"""A sharded embedding model trained synchronously (schedule + join per step) equals the
same model trained by plain SGD in one process; the embedding lookups gather on the ps."""

import sys

import numpy as np

import eagerflow as ef
from eagerflow import keras

resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    ef.distribute.Server(resolver).join(timeout=120)
    sys.exit(0)

VOCAB, DIM, STEPS = 23, 4, 12
rng = np.random.default_rng(0)
ids = rng.integers(0, VOCAB, size=(STEPS, 8, 3)).astype("int32")
targets = rng.normal(size=(STEPS, 8, 1)).astype("float32")


def build():
    keras.utils.set_random_seed(0)
    return keras.Sequential([
        keras.Input(shape=(3,), dtype="int32"),
        keras.layers.Embedding(VOCAB, DIM),
        keras.layers.Flatten(),
        keras.layers.Dense(1),
    ])


partitioner = ef.distribute.experimental.partitioners.FixedShardsPartitioner(2)
strategy = ef.distribute.experimental.ParameterServerStrategy(
    resolver, variable_partitioner=partitioner)
coordinator = ef.distribute.experimental.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    model = build()
    optimizer = keras.optimizers.SGD(learning_rate=0.1)
table = model.layers[0].embeddings
assert getattr(table, "_is_sharded_variable", False), table
assert [list(v.shape) for v in table.variables] == [[12, DIM], [11, DIM]]
assert sorted(v._task for v in table.variables) == ["/job:ps/replica:0/task:0",
                                                    "/job:ps/replica:0/task:1"]
# Every variable with rows is split (the Dense kernel too); the model sees the shards.
assert [list(v.shape) for v in model.trainable_variables] == [
    [12, DIM], [11, DIM], [6, 1], [6, 1], [1]], model.trainable_variables

reference = build()
reference.set_weights([np.asarray(v.numpy()) for v in model.weights[:0]] + [
    table.numpy(), model.layers[2].kernel.numpy(), model.layers[2].bias.numpy()])
ref_optimizer = keras.optimizers.SGD(learning_rate=0.1)


def make_step(net, opt):
    @ef.function
    def train_step(x, y):
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(net(x) - y))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        return loss
    return train_step


step, ref_step = make_step(model, optimizer), make_step(reference, ref_optimizer)
for k in range(STEPS):
    loss = coordinator.schedule(step, args=(ef.constant(ids[k]), ef.constant(targets[k])))
    coordinator.join()  # synchronous: one step at a time
    ref_loss = ref_step(ef.constant(ids[k]), ef.constant(targets[k]))
    np.testing.assert_allclose(loss.fetch(), ref_loss.numpy(), rtol=1e-5, atol=1e-6)
for got, want in ((table.numpy(), reference.layers[0].embeddings.numpy()),
                  (model.layers[2].kernel.numpy(), reference.layers[2].kernel.numpy()),
                  (model.layers[2].bias.numpy(), reference.layers[2].bias.numpy())):
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
assert not np.allclose(table.numpy(), build().layers[0].embeddings.numpy())  # it trained

# Each shard's rows were gathered on its own ps: the ps partitions hold the GatherV2 nodes.
executor = next(iter(coordinator._workers[0]._executors.values()))[1]
ops = {p.task: {n.op for n in p.graph.nodes} for p in executor.partitioned.partitions}
for task in ("/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"):
    assert "GatherV2" in ops[task], ops
# A checkpoint stores each sharded variable whole: it restores into 3 shards, or into none.
import tempfile  # noqa: E402

path = ef.train.Checkpoint(model=model).save(tempfile.mkdtemp() + "/ckpt")
assert ("model/_stack/0/embeddings/.ATTRIBUTES/VARIABLE_VALUE", [VOCAB, DIM]) in \
    ef.train.list_variables(path), ef.train.list_variables(path)
three = ef.distribute.experimental.ParameterServerStrategy(
    resolver, variable_partitioner=ef.distribute.experimental.partitioners.
    FixedShardsPartitioner(3))
with three.scope():
    model3 = build()
assert [list(v.shape) for v in model3.layers[0].embeddings.variables] == [[8, DIM], [8, DIM],
                                                                         [7, DIM]]
ef.train.Checkpoint(model=model3).restore(path).assert_consumed()
local = build()
ef.train.Checkpoint(model=local).restore(path).assert_consumed()
for a, b, c in zip(model.weights[:0] + [table, model.layers[2].kernel, model.layers[2].bias],
                   [model3.layers[0].embeddings, model3.layers[2].kernel, model3.layers[2].bias],
                   [local.layers[0].embeddings, local.layers[2].kernel, local.layers[2].bias]):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy(), c.numpy())
print("chief OK")
