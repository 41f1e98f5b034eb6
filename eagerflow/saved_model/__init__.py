"""SavedModel: an object's traced functions, variables and signatures in one directory.

``save(obj, export_dir, signatures=...)`` writes protobuf metadata (``saved_model.pb``),
raw variable bytes (``variables/``) and a checksummed manifest (``fingerprint.pb``)
atomically; ``load(export_dir)`` rebuilds the object in any process without the Python
classes that defined it. ``python -m eagerflow.saved_model_cli`` inspects and runs one.

Example:
    >>> import os, tempfile, eagerflow as ef
    >>> m = ef.Module()
    >>> m.f = ef.function(lambda x: x * 2.0, input_signature=[ef.TensorSpec([None])])
    >>> path = os.path.join(tempfile.mkdtemp(), "model", "1")
    >>> ef.saved_model.save(m, path)
    >>> ef.saved_model.contains_saved_model(path)
    True
    >>> ef.saved_model.load(path).f(ef.constant([1.0, 2.0])).numpy().tolist()
    [2.0, 4.0]
"""

from eagerflow.saved_model.load import LoadOptions, contains_saved_model, load
from eagerflow.saved_model.save import SaveOptions, save
from eagerflow.saved_model.signatures import DEFAULT_SERVING_SIGNATURE_DEF_KEY

SERVING = "serve"

__all__ = ["save", "load", "SaveOptions", "LoadOptions", "contains_saved_model",
           "DEFAULT_SERVING_SIGNATURE_DEF_KEY", "SERVING"]
