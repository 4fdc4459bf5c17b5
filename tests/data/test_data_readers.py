import json
import pickle

import numpy as np
import pytest
import torch
from data_testfiles import png, write_folder, write_nvlabs_zip
from PIL import Image

from ganforge.data import fastformat, open_dataset
from ganforge.errors import UserError


def arrays(count, channels=3, size=8):
    rng = np.random.default_rng(0)
    shape = (size, size) if channels == 1 else (size, size, channels)
    return [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(count)]


def chw(array):
    return torch.from_numpy((array[:, :, None] if array.ndim == 2 else array).transpose(2, 0, 1).copy())


@pytest.mark.parametrize("channels", [1, 3])
def test_nvlabs_zip_images_and_one_hot_labels(tmp_path, channels):
    source = arrays(5, channels)
    ds = open_dataset(write_nvlabs_zip(tmp_path / "x.zip", source, [0, 2, 1, 2, 0]))
    assert (len(ds), ds.resolution, ds.channels, ds.label_dim, ds.format, ds.name) == (5, 8, channels, 3, "zip", "x")
    image, label = ds[1]
    assert image.dtype == torch.uint8 and torch.equal(image, chw(source[1]))
    assert label.tolist() == [0.0, 0.0, 1.0]
    assert ds.label_names == ["0", "1", "2"]


def test_zip_dataset_pickles_without_an_open_zipfile(tmp_path):
    ds = open_dataset(write_nvlabs_zip(tmp_path / "x.zip", arrays(3), None))
    ds[0]  # opens the zip in this process
    clone = pickle.loads(pickle.dumps(ds))
    assert torch.equal(clone[2][0], ds[2][0])
    assert ds[0][1].shape == (0,)


def test_mirror_doubles_with_flipped_copies(tmp_path):
    ds = open_dataset(write_nvlabs_zip(tmp_path / "x.zip", arrays(3), [0, 1, 0]), mirror=True)
    assert len(ds) == 6
    for i in range(3):
        assert torch.equal(ds[i + 3][0], ds[i][0].flip(-1))
        assert torch.equal(ds[i + 3][1], ds[i][1])


def test_folder_with_dataset_json_labels(tmp_path):
    write_folder(tmp_path, {"b/1.png": png(1, 8), "a/2.png": png(2, 8)})
    (tmp_path / "dataset.json").write_text(json.dumps({"labels": [["a/2.png", 1], ["b/1.png", 0]]}))
    ds = open_dataset(tmp_path)
    assert (len(ds), ds.format, ds.label_dim) == (2, "folder", 2)
    assert ds[0][1].tolist() == [0.0, 1.0]  # a/2.png sorts first
    assert torch.equal(ds[1][0], chw(np.array(Image.open(tmp_path / "b/1.png"))))


def test_folder_image_of_another_size_is_a_user_error(tmp_path):
    ds = open_dataset(write_folder(tmp_path, {"a.png": png(1, 8), "b.png": png(2, 16)}))
    with pytest.raises(UserError, match=r"b\.png: size 16x16, larger than the 8x8 this dataset's images may be"):
        ds[1]


def test_fast_file_round_trip(tmp_path):
    source = np.random.default_rng(1).integers(0, 256, (4, 3, 8, 8), dtype=np.uint8)
    writer = fastformat.FastWriter(tmp_path / "x.gfd", channels=3, height=8, width=8)
    for array in source:
        writer.add(array)
    writer.finish(np.array([1, 0, 1, 1]), {"label_names": ["cat", "dog"], "content_hash": "ab" * 32, "build": {}})
    ds = open_dataset(tmp_path / "x.gfd")
    assert (len(ds), ds.format, ds.label_names, ds.content_hash) == (4, "fast", ["cat", "dog"], "ab" * 32)
    assert all(torch.equal(ds[i][0], torch.from_numpy(source[i])) for i in range(4))
    assert ds[0][1].tolist() == [0.0, 1.0]
    assert torch.equal(pickle.loads(pickle.dumps(ds))[3][0], torch.from_numpy(source[3]))


def test_truncated_fast_file_is_a_user_error(tmp_path):
    writer = fastformat.FastWriter(tmp_path / "x.gfd", channels=1, height=4, width=4)
    writer.add(np.zeros((1, 4, 4), np.uint8))
    writer.finish(None, {"label_names": [], "content_hash": "ab" * 32, "build": {}})
    data = (tmp_path / "x.gfd").read_bytes()
    (tmp_path / "y.gfd").write_bytes(data[:-20])
    with pytest.raises(UserError, match="damaged fast dataset"):
        open_dataset(tmp_path / "y.gfd")


def test_missing_and_foreign_paths_are_user_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UserError, match="does not exist"):
        open_dataset(tmp_path / "nope.zip")
    with pytest.raises(UserError, match="not a folder, a zip"):
        open_dataset(tmp_path / "notes.txt")
    with pytest.raises(UserError, match="no images"):
        open_dataset(tmp_path)


def test_content_hash_is_stable_and_tracks_content(tmp_path):
    first = open_dataset(write_nvlabs_zip(tmp_path / "a.zip", arrays(3), None)).content_hash
    assert first == open_dataset(write_nvlabs_zip(tmp_path / "b.zip", arrays(3), None)).content_hash
    assert first != open_dataset(write_nvlabs_zip(tmp_path / "c.zip", arrays(4), None)).content_hash
    assert len(first) == 64
