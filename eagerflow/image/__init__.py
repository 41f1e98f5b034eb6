"""``eagerflow.image``: image resizing, cropping, flipping and colour ops (``tf.image``).

Example:
    >>> import numpy as np, eagerflow as ef
    >>> ef.image.flip_left_right(np.arange(3.0).reshape(1, 3, 1)).numpy().ravel().tolist()
    [2.0, 1.0, 0.0]
"""

from eagerflow.image.image_ops import (  # noqa: F401
    ResizeMethod, adjust_brightness, adjust_contrast, adjust_saturation, central_crop,
    convert_image_dtype, crop_to_bounding_box, flip_left_right, flip_up_down,
    grayscale_to_rgb, hsv_to_rgb, pad_to_bounding_box, per_image_standardization,
    random_brightness, random_contrast, random_crop, random_flip_left_right,
    random_flip_up_down, resize, resize_with_crop_or_pad, rgb_to_grayscale, rgb_to_hsv,
)
from eagerflow.ops.io.image_codecs import (  # noqa: F401
    decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png,
)

__all__ = [n for n in dir() if not n.startswith("_")]
