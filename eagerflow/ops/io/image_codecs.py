"""PNG and JPEG decoding and encoding (``tf.io.decode_png`` ...), through Pillow.

Pillow is an optional dependency (``pip install eagerflow[image]``), imported on first use;
without it these functions raise ``UnimplementedError`` saying how to install it. Image
bytes are untrusted: the declared size is checked against a pixel limit before any pixel
is decoded, and a corrupt file raises ``InvalidArgumentError``.

Example:
    >>> import numpy as np, eagerflow as ef
    >>> png = ef.io.encode_png(np.zeros((2, 3, 3), np.uint8))
    >>> ef.io.decode_png(png).shape
    TensorShape([2, 3, 3])
"""

from __future__ import annotations

import io

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.tensor import convert_to_tensor

__all__ = ["decode_png", "encode_png", "decode_jpeg", "encode_jpeg", "decode_image"]

# The most pixels one image may declare (Pillow's own bomb limit is similar); checked from
# the header, before decoding.
MAX_PIXELS = 1 << 28


def _pil(op):
    try:
        from PIL import Image
    except ImportError:
        raise errors.UnimplementedError(
            None, op, "%s needs Pillow: pip install pillow (or eagerflow[image])." % op
        ) from None
    return Image


def _bytes(contents, op):
    if hasattr(contents, "numpy"):
        contents = contents.numpy()
    if isinstance(contents, np.ndarray) and contents.ndim == 0:
        contents = contents[()]
    if not isinstance(contents, (bytes, bytearray)):
        raise errors.InvalidArgumentError(
            None, op, "%s needs a scalar string of encoded image bytes, got %s."
            % (op, type(contents).__name__))
    return bytes(contents)


_MODES = {0: None, 1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _decode(contents, channels, dtype, op, formats):
    Image = _pil(op)
    data = _bytes(contents, op)
    if channels not in _MODES:
        raise errors.InvalidArgumentError(
            None, op, "%s: channels must be 0, 1, 2, 3 or 4, got %r." % (op, channels))
    try:
        img = Image.open(io.BytesIO(data), formats=formats)
        w, h = img.size
        if w * h > MAX_PIXELS:
            raise errors.InvalidArgumentError(
                None, op, "%s: the image declares %dx%d pixels, more than the limit of %d."
                % (op, w, h, MAX_PIXELS))
        img.load()
    except errors.OpError:
        raise
    except Exception as exc:  # noqa: BLE001 - any decoder failure is bad input
        raise errors.InvalidArgumentError(
            None, op, "%s: the bytes are not a valid %s image: %s"
            % (op, "/".join(formats or ["PNG/JPEG/GIF/BMP"]), exc)) from None
    mode = _MODES[channels]
    sixteen = img.mode in ("I;16", "I;16B", "I;16L", "I")
    if mode is None:
        mode = {"L": "L", "LA": "LA", "RGB": "RGB", "RGBA": "RGBA", "P": "RGBA"
                if "transparency" in img.info else "RGB", "1": "L"}.get(img.mode, "RGB")
        if sixteen:
            mode = "I"
    if sixteen and mode in ("L", "I") and dtype is d.uint16:
        arr = np.asarray(img, dtype=np.uint16)
    else:
        arr = np.asarray(img.convert(mode) if img.mode != mode else img)
        if dtype is d.uint16:
            arr = arr.astype(np.uint16) * 257  # TF scales 8-bit data into 16 bits
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return convert_to_tensor(np.ascontiguousarray(arr.astype(dtype.np_dtype, copy=False)))


def decode_png(contents, channels=0, dtype=d.uint8, name=None):
    """Decodes a PNG into a ``[height, width, channels]`` uint8/uint16 tensor."""
    return _decode(contents, int(channels), d.as_dtype(dtype), "DecodePng", ["PNG"])


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                name=None):
    """Decodes a JPEG into a ``[height, width, channels]`` uint8 tensor.

    Pixel values can differ from TF's by a small amount: JPEG decoders may round the
    inverse DCT differently (libjpeg-turbo's methods differ among themselves too).
    """
    return _decode(contents, int(channels), d.uint8, "DecodeJpeg", ["JPEG"])


def decode_image(contents, channels=None, dtype=d.uint8, name=None, expand_animations=True):
    """Decodes a PNG, JPEG, GIF or BMP by its content (``tf.io.decode_image``).

    A float ``dtype`` scales to [0, 1] as ``convert_image_dtype`` does.
    """
    dtype = d.as_dtype(dtype)
    raw = d.uint16 if dtype is d.uint16 else d.uint8
    out = _decode(contents, int(channels or 0), raw, "DecodeImage", None)
    if dtype.is_floating:
        scale = 1.0 / (65535.0 if raw is d.uint16 else 255.0)
        return convert_to_tensor((np.asarray(out.numpy(), np.float64) * scale).astype(
            dtype.np_dtype))
    return out


def _image_array(image, op):
    arr = np.asarray(image.numpy() if hasattr(image, "numpy") else image)
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4):
        raise errors.InvalidArgumentError(
            None, op, "%s needs a [height, width, channels] image with 1-4 channels, got "
            "shape %s." % (op, list(arr.shape)))
    return arr


def encode_png(image, compression=-1, name=None):
    """Encodes a uint8/uint16 ``[height, width, channels]`` image as PNG bytes."""
    Image = _pil("EncodePng")
    arr = _image_array(image, "EncodePng")
    if arr.dtype not in (np.uint8, np.uint16):
        raise errors.InvalidArgumentError(
            None, "EncodePng", "encode_png needs uint8 or uint16, got %s." % arr.dtype)
    channels = arr.shape[2]
    if arr.dtype == np.uint16:
        if channels != 1:
            raise errors.UnimplementedError(
                None, "EncodePng", "encode_png of uint16 supports 1 channel here, got %d."
                % channels)
        img = Image.fromarray(arr[:, :, 0].astype("<u2"), mode="I;16")
    else:
        img = Image.fromarray(arr[:, :, 0] if channels == 1 else arr,
                              mode=_MODES[channels])
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=6 if compression < 0 else int(compression))
    return convert_to_tensor(np.array(buf.getvalue(), dtype=object))


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """Encodes a uint8 ``[height, width, 1 or 3]`` image as JPEG bytes."""
    Image = _pil("EncodeJpeg")
    arr = _image_array(image, "EncodeJpeg")
    if arr.dtype != np.uint8 or arr.shape[2] not in (1, 3):
        raise errors.InvalidArgumentError(
            None, "EncodeJpeg", "encode_jpeg needs uint8 with 1 or 3 channels, got %s with %d."
            % (arr.dtype, arr.shape[2]))
    img = Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=int(quality), progressive=bool(progressive),
             optimize=bool(optimize_size), subsampling=2 if chroma_downsampling else 0)
    return convert_to_tensor(np.array(buf.getvalue(), dtype=object))
