import json
import multiprocessing

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.data import open_dataset
from ganforge.data.loader import to_uint8
from ganforge.errors import UserError
from ganforge.metrics import compute_metric
from ganforge.metrics.features import dataset_batches, generator_batches, position_rng
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot


def _tiny_generator(seed=0):
    torch.manual_seed(seed)
    return Generator(resolution=16, img_channels=3, z_dim=8, w_dim=8, channel_base=64, channel_max=16, mapping_layers=2)


def _folder(path, count, res=16, seed=0):
    rng = np.random.default_rng(seed)
    path.mkdir()
    for i in range(count):
        PIL.Image.fromarray(rng.integers(0, 256, (res, res, 3)).astype(np.uint8)).save(path / f"{i:03d}.png")
    return path


def test_real_images_of_the_fast_format_are_read_in_this_process_as_a_zip_is_by_workers(tmp_path):
    source = _folder(tmp_path / "src", 7, res=8)
    datasets = {}
    for name in ("x.zip", "x.gfd"):
        result = CliRunner().invoke(main, ["dataset", "build", str(source), str(tmp_path / name), "--resolution", "8"])
        assert result.exit_code == 0, result.output
        datasets[name] = open_dataset(tmp_path / name)
    indices = [6, 0, 3, 5]
    before = set(multiprocessing.active_children())
    read = {name: dataset_batches(ds, indices, 3, workers=2) for name, ds in datasets.items()}
    from_fast = [next(read["x.gfd"])]  # while it iterates, a loader's workers are alive
    assert set(multiprocessing.active_children()) - before == set()
    from_zip = [next(read["x.zip"])]
    assert len(set(multiprocessing.active_children()) - before) == 2
    from_fast, from_zip = torch.cat(from_fast + list(read["x.gfd"])), torch.cat(from_zip + list(read["x.zip"]))
    names = sorted(source.iterdir())
    expected = torch.stack([torch.from_numpy(np.array(PIL.Image.open(names[i]))) for i in indices])
    assert torch.equal(from_fast, expected.permute(0, 3, 1, 2)) and torch.equal(from_zip, from_fast)


def test_generated_images_depend_on_position_not_batching_and_leave_rng_alone():
    G = _tiny_generator().eval()
    rng_before = torch.get_rng_state()
    by_two = torch.cat(list(generator_batches(G, 5, 2, "cpu", seed=3)))
    by_five = torch.cat(list(generator_batches(G, 5, 5, "cpu", seed=3)))
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert by_two.dtype == torch.uint8 and by_two.shape == (5, 3, 16, 16)
    again = torch.cat(list(generator_batches(G, 5, 2, "cpu", seed=3)))
    assert torch.equal(by_two, again)
    other_seed = torch.cat(list(generator_batches(G, 5, 5, "cpu", seed=4)))
    assert not torch.equal(by_five, other_seed)
    # Only per-layer noise depends on the batching: the same latents give nearly the same images.
    assert (by_two.float() - by_five.float()).abs().mean() < 0.5 * (by_five.float() - other_seed.float()).abs().mean()


def test_to_uint8_rounds_like_saving_a_png():
    x = torch.tensor([-1.5, -1.0, -0.999, 0.0, 1.0, 2.0])
    assert to_uint8(x).tolist() == [0, 0, 0, 128, 255, 255]


def test_swd_of_a_generator_through_the_cli_appends_jsonl(tmp_path):
    run_dir = tmp_path / "00000-run"
    (run_dir / "snapshots").mkdir(parents=True)
    snapshot = run_dir / "snapshots" / "snapshot-000001.safetensors"
    save_snapshot(snapshot, _tiny_generator(), {"kimg": 1})
    data = _folder(tmp_path / "data", 6)
    args = ["metrics", "--network", str(snapshot), "--data", str(data), "--metrics", "swd16k", "--num-gen", "6"]
    args += ["--device", "cpu", "--workers", "0", "--cache", str(tmp_path / "cache")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "swd16k_avg" in result.output
    lines = (run_dir / "metric-swd16k.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    assert record["snapshot"] == str(snapshot) and record["num_fake"] == 6 and record["num_real"] == 6
    assert record["protocol"].startswith("laplacian") and np.isfinite(record["results"]["swd16k_avg"])
    result = CliRunner().invoke(main, args)
    lines = (run_dir / "metric-swd16k.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["results"] == record["results"]


@pytest.mark.parametrize(
    ("args", "messages"),
    [
        (["--metrics", "fid50k_full,nope"], ["give --network", "--data/--real", "unknown metric 'nope'"]),
        (["--network", "x.safetensors", "--fake", "f", "--data", "d"], ["not both"]),
        (["--real", "missing-dir", "--fake", "also-missing", "--metrics", "swd16k"], ["no such file or folder"]),
    ],
)
def test_bad_input_exits_2_listing_every_problem(args, messages, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["metrics", *args])
    assert result.exit_code == 2
    for message in messages:
        assert message in result.output
    assert "Traceback" not in result.output


def test_swd_needs_matching_resolutions(tmp_path):
    real, fake = _folder(tmp_path / "r", 4, res=16), _folder(tmp_path / "f", 4, res=32)
    with pytest.raises(Exception, match="same channels and size"):
        compute_metric("swd16k", real=real, fake=fake, num_gen=4, progress=False)


def test_conditional_generator_draws_labels_from_the_dataset(tmp_path):
    data = _folder(tmp_path / "data", 4)
    labels = [[f"{i:03d}.png", 1] for i in range(4)]  # every image is class 1 of 2
    (data / "dataset.json").write_text(json.dumps({"labels": labels, "label_names": ["a", "b"]}))
    torch.manual_seed(0)
    G = Generator(resolution=16, img_channels=3, c_dim=2, z_dim=8, w_dim=8, channel_base=64, channel_max=16,
                  mapping_layers=2).eval()  # fmt: skip
    from ganforge.data import open_dataset

    ds = open_dataset(data)
    images = torch.cat(list(generator_batches(G, 3, 2, "cpu", seed=0, labels=ds)))
    z = torch.stack([torch.randn(8, generator=position_rng(0, "z", p)) for p in range(3)])
    c = torch.tensor([[0.0, 1.0]] * 3)
    with torch.no_grad():
        expected = to_uint8(G(z, c, noise_mode="const"))
    assert (images.float() - expected.float()).abs().mean() < 2  # only the per-layer noise differs
    r = compute_metric("swd16k", generator=G, real=data, num_gen=4, progress=False)
    assert np.isfinite(r["results"]["swd16k_avg"])
    other = _folder(tmp_path / "unlabelled", 4)
    (other / "dataset.json").write_text(json.dumps({"labels": [[f"{i:03d}.png", i % 3] for i in range(4)]}))
    with pytest.raises(UserError, match="conditional on 2 classes"):
        compute_metric("swd16k", generator=G, real=other, num_gen=4, progress=False)
