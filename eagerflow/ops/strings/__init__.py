"""String ops (``tf.strings``): element-wise transforms, joins, parsing, formatting, splits.

* :mod:`eagerflow.ops.strings.string_ops`: the element-wise, join, parsing and formatting ops.
* :mod:`eagerflow.ops.strings.string_split_ops`: the ops that split strings into pieces (they
  return RaggedTensors).
"""
