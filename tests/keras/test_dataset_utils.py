"""keras.utils dataset helpers: directories of images and texts, time series windows,
pad_sequences, split_dataset and get_file without a network."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import utils


def _image_tree(root, n=3):
    for k, name in enumerate(["cats", "dogs"]):
        (root / name).mkdir()
        for i in range(n):
            img = np.full((6 + i, 5, 3), 40 * k + i, np.uint8)
            (root / name / ("%d.png" % i)).write_bytes(ef.io.encode_png(img).numpy())
    return root


def test_image_dataset_from_directory(tmp_path):
    root = _image_tree(tmp_path)
    ds = utils.image_dataset_from_directory(str(root), image_size=(4, 4), batch_size=4,
                                            shuffle=False, verbose=False)
    assert ds.class_names == ["cats", "dogs"]
    batches = list(ds)
    assert [b[0].shape.as_list() for b in batches] == [[4, 4, 4, 3], [2, 4, 4, 3]]
    labels = np.concatenate([b[1].numpy() for b in batches]).tolist()
    assert labels == [0, 0, 0, 1, 1, 1]
    assert batches[0][0].dtype is ef.float32
    assert float(batches[1][0].numpy()[-1, 0, 0, 0]) == pytest.approx(42.0)
    train = utils.image_dataset_from_directory(str(root), image_size=(4, 4), batch_size=None,
                                               validation_split=0.5, subset="training",
                                               seed=1, verbose=False, label_mode="binary")
    val = utils.image_dataset_from_directory(str(root), image_size=(4, 4), batch_size=None,
                                             validation_split=0.5, subset="validation",
                                             seed=1, verbose=False, label_mode="binary")
    assert len(train.file_paths) == 3 and len(val.file_paths) == 3
    assert not set(train.file_paths) & set(val.file_paths)


def test_text_dataset_from_directory(tmp_path):
    for label, texts in (("neg", ["bad", "awful film"]), ("pos", ["good", "great fun"])):
        (tmp_path / label).mkdir()
        for i, t in enumerate(texts):
            (tmp_path / label / ("%d.txt" % i)).write_text(t)
    ds = utils.text_dataset_from_directory(str(tmp_path), batch_size=8, shuffle=False,
                                           verbose=False)
    texts, labels = next(iter(ds))
    assert texts.numpy().tolist() == [b"bad", b"awful film", b"good", b"great fun"]
    assert labels.numpy().tolist() == [0, 0, 1, 1]


def test_timeseries_pad_split_get_file(tmp_path):
    ds = utils.timeseries_dataset_from_array(np.arange(10), np.arange(10) * 10, 4,
                                             sequence_stride=3, batch_size=2)
    (x1, y1), (x2, y2) = list(ds)
    assert x1.numpy().tolist() == [[0, 1, 2, 3], [3, 4, 5, 6]] and y1.numpy().tolist() == \
        [0, 30]
    assert x2.numpy().tolist() == [[6, 7, 8, 9]]
    assert utils.pad_sequences([[1, 2, 3], [4]], maxlen=2, padding="post",
                               truncating="post").tolist() == [[1, 2], [4, 0]]
    left, right = utils.split_dataset(np.arange(10), left_size=0.8)
    assert [int(x) for x in left] == list(range(8)) and [int(x) for x in right] == [8, 9]
    with pytest.raises(ef.errors.UnavailableError, match="does not download"):
        utils.get_file("x.zip", "https://example.com/x.zip", cache_dir=str(tmp_path))
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "x.zip").write_bytes(b"abc")
    assert utils.get_file("x.zip", "https://example.com/x.zip", cache_dir=str(tmp_path),
                          file_hash="900150983cd24fb0d6963f7d28e17f72").endswith("x.zip")
