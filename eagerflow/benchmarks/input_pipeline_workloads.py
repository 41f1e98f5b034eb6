"""Input pipeline throughput: PNG decode, resize and augmentation over a Dataset.

One pass over 256 encoded 64x64 RGB PNGs: decode, ``image.resize`` to 48x48 (bilinear),
a random horizontal flip, batches of 32; the eagerflow side is
``Dataset.map(num_parallel_calls=AUTOTUNE).batch(32).prefetch(AUTOTUNE)``, the floor the
same work as a plain numpy loop (Pillow decode, the same resize as two matrix products,
a flip, ``np.stack``). Images per second = 256 / time per pass.
"""

from __future__ import annotations

import io

import numpy as np

_N, _SIZE, _OUT, _BATCH = 256, 64, 48, 32


def _pngs():
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for _ in range(_N):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (_SIZE, _SIZE, 3), dtype=np.uint8)).save(
            buf, format="PNG")
        out.append(buf.getvalue())
    return out


def input_pipeline_png(_unused=None):
    import eagerflow as ef
    from eagerflow.image.resize_weights import linear_weights
    from PIL import Image

    pngs = _pngs()
    files = np.empty(len(pngs), dtype=object)
    files[:] = pngs

    def load(data):
        img = ef.image.resize(ef.io.decode_png(data, channels=3), [_OUT, _OUT])
        return ef.image.random_flip_left_right(img)

    def eagerflow_pass():
        ds = (ef.data.Dataset.from_tensor_slices(files)
              .map(load, num_parallel_calls=ef.data.AUTOTUNE)
              .batch(_BATCH).prefetch(ef.data.AUTOTUNE))
        for _ in ds:
            pass

    wy = linear_weights(_SIZE, _OUT, "bilinear", False).astype(np.float32)
    rng = np.random.default_rng(1)

    def numpy_pass():
        batch = []
        for data in pngs:
            img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), np.float32)
            img = (wy @ img.reshape(_SIZE, -1)).reshape(_OUT, _SIZE, 3)
            img = np.matmul(wy, img)  # [48, 48] @ [48, 64, 3] over the width
            if rng.random() < 0.5:
                img = img[:, ::-1]
            batch.append(img)
            if len(batch) == _BATCH:
                np.stack(batch)
                batch = []

    return {"eagerflow": eagerflow_pass, "numpy": numpy_pass}


def _register(Workload):  # noqa: N803 - the class is passed in
    try:
        import PIL  # noqa: F401
    except ImportError:
        return []
    return [Workload("input pipeline: 256 PNG 64x64 decode+resize 48x48+flip, b32",
                     input_pipeline_png, unit="epoch",
                     note="images/s = 256 / time; map(AUTOTUNE)+prefetch vs a numpy loop")]
