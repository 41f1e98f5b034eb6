"""Which examples each worker sees, per AutoShardPolicy, and that uneven data ends together.

Every rank prints "rank R OK" after its checks; the per-step agreement is what lets a rank
whose share ran out keep joining the collectives with an empty batch.
"""

import eagerflow as ef
import numpy as np
from eagerflow.data.options import AutoShardPolicy

strategy = ef.distribute.MultiWorkerMirroredStrategy()
rank, size = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync


def seen(policy, n, batch):
    ds = ef.data.Dataset.range(n).batch(batch)
    if policy is not None:
        opts = ef.data.Options()
        opts.experimental_distribute.auto_shard_policy = policy
        ds = ds.with_options(opts)
    steps, mine = 0, []
    for xb in strategy.experimental_distribute_dataset(ds):
        local = strategy.experimental_local_results(xb)[0]
        mine.append(local.numpy().tolist())
        # A collective every step, as training does: uneven shares must not hang here.
        total = strategy.reduce("SUM", ef.reduce_sum(ef.cast(local, ef.float32)), axis=None)
        steps += 1
    everyone = strategy.gather(ef.constant([steps]), axis=0).numpy().tolist()
    assert everyone == [steps] * size, everyone  # the same number of steps everywhere
    return steps, mine, float(total)


# DATA: the union of the workers' k-th batches is the k-th global batch.
steps, mine, _ = seen(AutoShardPolicy.DATA, 10 * size, 2 * size)
assert steps == 5, steps
assert mine == [[k * 2 * size + rank + size * j for j in range(2)] for k in range(5)], mine

# DATA with uneven data: 2 * size + 1 elements in batches of 2 * size: the last step has
# one element, on rank 0; the others get empty batches but still take part.
steps, mine, last_total = seen(AutoShardPolicy.DATA, 2 * size + 1, 2 * size)
assert steps == 2 and last_total == 2 * size, (steps, last_total)
assert mine[1] == ([2 * size] if rank == 0 else []), mine

# OFF: every worker reads the global batch and keeps its slice (ceil(B / workers) rows).
steps, mine, _ = seen(AutoShardPolicy.OFF, 7, 4)
per = -(-4 // size)
want = [[x for x in b[rank * per:(rank + 1) * per]] for b in ([0, 1, 2, 3], [4, 5, 6])]
assert steps == 2 and mine == want, (mine, want)

# AUTO on a pipeline without files is DATA; FILE there is an error naming the fix.
assert seen(None, 4 * size, 2 * size)[1] == seen(AutoShardPolicy.DATA, 4 * size, 2 * size)[1]
if size > 1:  # (one worker reads everything: nothing to shard)
    try:
        seen(AutoShardPolicy.FILE, 4 * size, 2 * size)
        raise AssertionError("FILE on a pipeline without files must fail")
    except ef.errors.InvalidArgumentError as e:
        assert "AutoShardPolicy.FILE" in str(e) and "DATA or OFF" in str(e), e

# FILE: a dataset of "file names" read by interleave: each worker reads its own files.
files = ef.data.Dataset.from_tensor_slices(np.arange(2 * size, dtype=np.int64))
reads = files.interleave(lambda f: ef.data.Dataset.range(3).map(lambda i: f * 10 + i),
                         cycle_length=1)
opts = ef.data.Options()
opts.experimental_distribute.auto_shard_policy = AutoShardPolicy.FILE
got = [strategy.experimental_local_results(b)[0].numpy().tolist()
       for b in strategy.experimental_distribute_dataset(reads.batch(size).with_options(opts))]
flat = sorted(x for b in got for x in b)
assert flat == sorted(f * 10 + i for f in (rank, rank + size) for i in range(3)), got
print("rank %d OK" % rank, flush=True)
