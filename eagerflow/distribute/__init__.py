"""``eagerflow.distribute``: distribution strategies (TF 2's ``tf.distribute``).

``MirroredStrategy`` (several devices of one process), ``OneDeviceStrategy``, the default
strategy and ``MultiWorkerMirroredStrategy`` (processes launched by ``mpirun``), built on a
small Communicator interface (``communicator``; over MPI in ``mpi_communicator``). See
``distribute_lib`` for the contexts.

Example:
    >>> import eagerflow as ef
    >>> ef.distribute.has_strategy()
    False
"""

from eagerflow.distribute.communicator import Communicator, LocalCommunicator  # noqa: F401
from eagerflow.distribute.distribute_lib import (  # noqa: F401
    ReduceOp, ReplicaContext, Strategy, StrategyExtended, experimental_set_strategy,
    get_cross_replica_context, get_replica_context, get_strategy, has_strategy,
    in_cross_replica_context,
)
from eagerflow.distribute.mirrored_strategy import (  # noqa: F401
    MirroredStrategy, OneDeviceStrategy,
)
from eagerflow.distribute.values import (  # noqa: F401
    DistributedValues, Mirrored, MirroredVariable, PerReplica, SyncOnReadVariable,
)
from eagerflow.distribute import cluster_resolver, experimental  # noqa: F401
from eagerflow.distribute.multi_worker_mirrored_strategy import (  # noqa: F401
    MultiWorkerMirroredStrategy,
)
from eagerflow.distribute.cluster import (  # noqa: F401
    Server, experimental_connect_to_cluster,
)
from eagerflow.distribute.parameter_server_strategy import (  # noqa: F401,E402
    ParameterServerStrategy,
)
from eagerflow.distribute import coordinator  # noqa: F401,E402
