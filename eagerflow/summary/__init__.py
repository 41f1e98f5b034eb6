"""``eagerflow.summary``: TensorBoard summaries (``tf.summary`` of TF 2).

Event files are written in TensorBoard's own format (TFRecord-framed ``Event`` protos with
masked CRC32C checksums), so ``tensorboard --logdir`` shows them. Summary ops write eagerly;
see :mod:`eagerflow.summary.summary_ops` for the limitation inside ``@function``.

Example:
    >>> import tempfile, eagerflow as ef
    >>> writer = ef.summary.create_file_writer(tempfile.mkdtemp())
    >>> with writer.as_default(step=0):
    ...     _ = ef.summary.scalar("loss", 0.5)
    ...     _ = ef.summary.histogram("weights", ef.random.normal([64]))
"""

from eagerflow.summary import experimental  # noqa: F401
from eagerflow.summary.summary_ops import (  # noqa: F401
    flush, graph, histogram, image, record_if, scalar, should_record_summaries, text,
    trace_export, trace_off, trace_on, write,
)
from eagerflow.summary.writer import (  # noqa: F401
    SummaryWriter, create_file_writer, create_noop_writer,
)

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "scalar", "histogram",
           "image", "text", "graph", "write", "trace_on", "trace_off", "trace_export",
           "record_if", "should_record_summaries", "flush", "experimental"]
