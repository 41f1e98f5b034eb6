"""Input ops (``tf.io``'s primitives): reading and writing files, parsing CSV.

* :mod:`eagerflow.ops.io.file_ops`: ``read_file`` / ``write_file`` (stateful primitives).
* :mod:`eagerflow.ops.io.csv_ops`: ``decode_csv``.
"""
