"""``tf.distribute.experimental``: communication options and the older strategy names.

Example:
    >>> import eagerflow as ef
    >>> ef.distribute.experimental.CommunicationOptions(bytes_per_pack=1 << 20).bytes_per_pack
    1048576
"""

from eagerflow.distribute.collective_util import (  # noqa: F401
    CollectiveCommunication, CommunicationImplementation, CommunicationOptions,
)
from eagerflow.distribute.multi_worker_mirrored_strategy import (  # noqa: F401
    MultiWorkerMirroredStrategy,
)
from eagerflow.distribute.parameter_server_strategy import (  # noqa: F401
    ParameterServerStrategy,
)
from eagerflow.distribute import coordinator, partitioners  # noqa: F401,E402
