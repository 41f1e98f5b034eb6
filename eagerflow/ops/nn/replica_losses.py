"""Loss scaling for replicas: ``nn.compute_average_loss`` and ``scale_regularization_loss``.

Under a distribution strategy every replica computes the loss of its slice of the global
batch, and the optimizer *sums* the replicas' gradients; dividing each replica's summed
loss by the global batch size makes that sum the gradient of the global mean loss.
The strategy is read through ``framework.strategy_context`` (no import of distribute).

Example:
    >>> import eagerflow as ef
    >>> float(ef.nn.compute_average_loss(ef.constant([1.0, 2.0, 3.0, 6.0])))
    3.0
"""

from __future__ import annotations

from eagerflow.framework import strategy_context
from eagerflow.tensor import convert_to_tensor

EXPORTS = {"nn": ["compute_average_loss", "scale_regularization_loss"]}


def _in_cross_replica(what):
    entry = strategy_context.current()
    if entry is not None and entry[1] is None:
        raise RuntimeError("You are calling `%s` in cross replica context, while it was "
                           "expected to be called in replica context." % what)
    return entry


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """Sums ``per_example_loss`` (times ``sample_weight``) and divides by the global batch.

    Args:
        per_example_loss: Per-example losses, rank >= 1 (first dimension: examples).
        sample_weight: Optional weights broadcastable to ``per_example_loss``.
        global_batch_size: The global batch size; by default the replicas' batch sizes
            are summed across replicas (so a short or empty last batch on some replica
            still divides by the true number of examples, where TF's older rule of
            ``local size * replicas`` did not).

    Returns:
        A scalar tensor of the input's dtype.

    Raises:
        ValueError: For a scalar ``per_example_loss`` or a non-positive batch size.
        RuntimeError: In a strategy's cross-replica context.
    """
    from eagerflow.ops.math.cast import cast
    from eagerflow.ops.reduce.reductions import reduce_sum

    loss = convert_to_tensor(per_example_loss)
    dtype = loss.dtype
    if loss.shape.rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor "
                         "with at least rank 1, received: %s" % (loss,))
    if sample_weight is not None:
        loss = cast(loss * cast(convert_to_tensor(sample_weight), dtype), dtype)
    entry = _in_cross_replica("compute_average_loss")
    if global_batch_size is None:
        from eagerflow.ops.array.shape_ops import shape

        size = shape(loss, out_type="int64")[0]
        replica = entry[1] if entry is not None else None
        if replica is not None and replica.num_replicas_in_sync > 1:
            size = replica.all_reduce("SUM", size)
        global_batch_size = size
    else:
        if isinstance(global_batch_size, (int, float)):
            if int(global_batch_size) != global_batch_size or global_batch_size <= 0:
                raise ValueError("global_batch_size must be a positive integer, got %r."
                                 % (global_batch_size,))
        global_batch_size = convert_to_tensor(global_batch_size)
        if not global_batch_size.dtype.is_integer:
            raise ValueError("global_batch_size must be an integer.")
    return reduce_sum(loss) / cast(global_batch_size, dtype)


def scale_regularization_loss(regularization_loss):
    """Divides the summed regularization loss by the number of replicas in sync.

    Each replica adds the whole regularization loss to its share of the loss; the
    all-reduced gradient then counts it once.
    """
    from eagerflow.ops.math.cast import cast
    from eagerflow.ops.reduce.reductions import reduce_sum

    entry = _in_cross_replica("scale_regularization_loss")
    n = 1 if entry is None else entry[0].num_replicas_in_sync
    loss = reduce_sum(convert_to_tensor(regularization_loss))
    return loss / cast(convert_to_tensor(n), loss.dtype)
