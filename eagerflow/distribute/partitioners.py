"""``tf.distribute.experimental.partitioners``: how a ParameterServerStrategy splits a
variable into shards.

Example:
    >>> import eagerflow as ef
    >>> ef.distribute.experimental.partitioners.FixedShardsPartitioner(2)([5, 3], "float32")
    [2, 1]
"""

from eagerflow.distribute.sharded_variable import (  # noqa: F401
    FixedShardsPartitioner, MaxSizePartitioner, MinSizePartitioner, Partitioner,
)
