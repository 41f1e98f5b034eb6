"""``eagerflow.keras.utils``: progress bars, label encoding, data packing, seeding and
custom-object registration.

Example:
    >>> from eagerflow.keras import utils
    >>> utils.to_categorical([1, 0]).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
"""

from eagerflow.keras.saving import (  # noqa: F401
    CustomObjectScope, custom_object_scope, deserialize_keras_object, get_custom_objects,
    get_registered_name, get_registered_object, register_keras_serializable,
    serialize_keras_object,
)
from eagerflow.keras.utils.data_utils import (  # noqa: F401
    PyDataset, Sequence, normalize, pack_x_y_sample_weight, set_random_seed, to_categorical,
    unpack_x_y_sample_weight,
)
from eagerflow.keras.utils.dataset_utils import (  # noqa: F401
    get_file, image_dataset_from_directory, pad_sequences, split_dataset,
    text_dataset_from_directory, timeseries_dataset_from_array,
)
from eagerflow.keras.utils.progbar import Progbar  # noqa: F401

__all__ = ["Progbar", "to_categorical", "normalize", "unpack_x_y_sample_weight",
           "pack_x_y_sample_weight", "set_random_seed", "PyDataset", "Sequence",
           "register_keras_serializable", "get_registered_name", "get_registered_object",
           "get_custom_objects", "custom_object_scope", "CustomObjectScope",
           "serialize_keras_object", "deserialize_keras_object", "get_file",
           "image_dataset_from_directory", "text_dataset_from_directory",
           "timeseries_dataset_from_array", "pad_sequences", "split_dataset"]
