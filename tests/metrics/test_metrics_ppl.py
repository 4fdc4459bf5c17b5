"""Perceptual path length: each variant against a slow, obvious float64 reference (a loop over paths, the other
slerp formula, the crop by explicit rows and columns, percentiles by sorted index) on a tiny generator whose noise
matters, with a stand-in for NVlabs' VGG16 file (a TorchScript of a fixed random convolution); the 256 px block
average; determinism and rank independence; StyleGAN3; conditional labels; the refusals; the CLI."""

import copy
import json
import math

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner
from lpips_helpers import StandInLPIPS, save_stand_in

from ganforge import dist
from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.metrics import compute_metric, compute_metrics, ppl
from ganforge.metrics.features import gather_rows, position_rng
from ganforge.metrics.ppl import lpips_pixels, trimmed_mean
from ganforge.nets import Generator, StyleGAN3Generator
from ganforge.snapshot import save_snapshot
from ganforge.train import loop

EPS = 1e-4


@pytest.fixture(scope="module")
def vgg16(tmp_path_factory):
    return save_stand_in(tmp_path_factory.mktemp("vgg") / "vgg16.pt")


def _generator(c_dim=0, noise=0.5):
    """A tiny StyleGAN2 whose per-layer noise has a visible strength (it starts at 0)."""
    torch.manual_seed(0)
    G = Generator(resolution=8, img_channels=3, c_dim=c_dim, z_dim=8, w_dim=8, channel_base=64, channel_max=16,
                  mapping_layers=2).eval()  # fmt: skip
    with torch.no_grad():
        for name, parameter in G.named_parameters():
            if name.endswith("noise_strength"):
                parameter.fill_(noise)
    return G


def _slerp64(a, b, t):
    """Spherical interpolation of unit vectors by the sine formula (Shoemake 1985), float64."""
    a, b = a / a.norm(), b / b.norm()
    theta = torch.acos(torch.dot(a, b))
    return (torch.sin((1 - t) * theta) * a + torch.sin(t * theta) * b) / torch.sin(theta)


def _percentile_index(q, n, rounding):
    return rounding(q / 100 * (n - 1))


def reference_ppl(G, count, pairs, seed, space, sampling, c=None):
    """The official protocol one path at a time in float64 (the generator itself runs in float32, as it must); `c`
    [count, c_dim]: each path's label."""
    G = copy.deepcopy(G)
    distance = StandInLPIPS().double()
    noise = [buffer for name, buffer in G.named_buffers() if name.endswith(".noise_const")]
    labels = torch.zeros(count, G.c_dim) if c is None else c
    values = []
    for p in range(count):
        if p % pairs == 0:  # one noise draw per batch of `pairs` paths, from (seed, batch)
            gen = position_rng(seed, "ppl-noise", p // pairs)
            for buffer in noise:
                buffer.copy_(torch.randn(buffer.shape, generator=gen))
        gen = position_rng(seed, "ppl", p)
        z = torch.randn([2, G.z_dim], generator=gen).double()
        t = float(torch.rand([], generator=gen, dtype=torch.float64)) if sampling == "full" else 0.0
        c = labels[p : p + 1]
        with torch.no_grad():  # both ends of the step in one call: they share the batch's noise
            if space == "z":
                ends = torch.stack([_slerp64(z[0], z[1], t), _slerp64(z[0], z[1], t + EPS)])
                w = G.mapping(ends.float(), torch.cat([c, c]))
            else:
                w0, w1 = G.mapping(z.float(), torch.cat([c, c])).double()
                w = torch.stack([w0 + t * (w1 - w0), w0 + (t + EPS) * (w1 - w0)]).float()
            images = G.synthesis(w, noise_mode="const", force_fp32=True).double()
        side = images.shape[-1]
        rows, cols = range(3 * side // 8, 7 * side // 8), range(2 * side // 8, 6 * side // 8)
        crops = torch.stack([torch.stack([images[:, :, y, x] for x in cols], dim=-1) for y in rows], dim=-2)
        features = distance((crops + 1) * 255 / 2)
        values.append(float(((features[0] - features[1]) ** 2).sum()) / EPS**2)
    ordered = sorted(values)
    low = ordered[_percentile_index(1, count, math.floor)]
    high = ordered[_percentile_index(99, count, math.ceil)]
    kept = [v for v in values if low <= v <= high]
    return sum(kept) / len(kept), len(kept)


# Above 101 paths the 1st and 99th percentiles leave samples out: one variant has that many, the others are quick.
@pytest.mark.parametrize(("name", "count"), [("ppl_zfull", 104), ("ppl_wfull", 24), ("ppl_zend", 24), ("ppl_wend", 24)])
def test_each_variant_equals_the_float64_reference(name, count, vgg16):
    G = _generator()
    before = {key: value.clone() for key, value in G.state_dict().items()}
    space, sampling = name[4], name.split("_")[1][1:]
    record = compute_metric(name, generator=G, device="cpu", num_gen=count, batch_size=16, seed=5, vgg16=vgg16,
                            progress=False)  # fmt: skip
    expected, kept = reference_ppl(G, count, pairs=8, seed=5, space=space, sampling=sampling)
    assert kept < count or count < 102
    assert record["value"] == pytest.approx(expected, rel=2e-3)
    assert record["results"] == {name: record["value"]} and record["num_fake"] == count and record["num_real"] == 0
    path = "slerp of unit z" if space == "z" else "lerp of w"
    assert path in record["protocol"] and "vgg16-lpips squared / eps^2" in record["protocol"]
    assert "face crop" in record["protocol"] and "non-square" not in record["protocol"]
    assert record["feature_network"] == "vgg16-lpips"
    assert all(torch.equal(value, before[key]) for key, value in G.state_dict().items()), "G's noise given back"


def test_trimmed_mean_keeps_the_lower_1st_to_the_higher_99th_percentile():
    values = torch.tensor([float(v) for v in range(1, 201)] + [1e9, -1e9])  # 202 samples: two outliers
    low, high = _percentile_index(1, 202, math.floor), _percentile_index(99, 202, math.ceil)
    ordered = sorted(values.tolist())
    kept = [v for v in ordered if ordered[low] <= v <= ordered[high]]
    assert len(kept) == 198 and trimmed_mean(values) == pytest.approx(sum(kept) / len(kept), rel=1e-12)
    assert trimmed_mean(torch.tensor([3.0] * 5 + [4.0])) == pytest.approx(19 / 6)  # too few samples to trim


def test_slerp_of_nearly_parallel_or_opposite_latents_stays_finite_and_on_the_arc():
    """Latents about 1e-4 apart in direction (or from each other's antipode): their cosine rounds past +-1 in float32
    for some of these 64 rows, and the arc is still followed (float32 resolves such angles to about 3e-4 only); near
    the antipode the direction orthogonal to a is mostly rounding, and the point is still of unit length."""
    gen = torch.Generator().manual_seed(0)
    a, nudge = torch.randn(64, 8, generator=gen), 3e-4 * torch.randn(64, 8, generator=gen)
    t = torch.rand(64, 1, generator=gen)
    unit_a = a.double() / a.double().norm(dim=1, keepdim=True)
    near = ppl.slerp(a, a + nudge, t)
    pairs = zip(a.double(), (a + nudge).double(), t.double(), strict=True)
    expected = torch.stack([_slerp64(x, y, float(s)) for x, y, s in pairs])
    torch.testing.assert_close(near.double(), expected, rtol=0, atol=1e-3)
    opposite = ppl.slerp(a, nudge - a, t).double()  # the nudge picks the great circle to the antipode
    torch.testing.assert_close(opposite.norm(dim=1), torch.ones(64, dtype=torch.float64), rtol=0, atol=1e-6)
    torch.testing.assert_close((opposite * unit_a).sum(dim=1), torch.cos(math.pi * t[:, 0]).double(), rtol=0, atol=1e-3)


def test_large_frames_are_averaged_over_blocks_to_256_px_after_the_face_crop():
    images = torch.rand([2, 3, 512, 512], dtype=torch.float64) * 2 - 1
    out = lpips_pixels(images, 512)
    assert out.shape == (2, 3, 128, 128)  # the 256 x 256 crop of a 512 frame, halved
    for n, c, y, x in [(0, 0, 0, 0), (1, 2, 37, 101), (0, 1, 127, 127), (1, 0, 5, 64)]:
        block = images[n, c, 192 + 2 * y : 194 + 2 * y, 128 + 2 * x : 130 + 2 * x]
        assert float(out[n, c, y, x]) == pytest.approx((float(block.mean()) + 1) * 127.5, rel=1e-12)
    assert lpips_pixels(images[:, :, :256, :256], 256).shape == (2, 3, 128, 128)  # 256 px: cropped only


def test_deterministic_by_seed_and_independent_of_the_number_of_ranks(vgg16, monkeypatch):
    G = _generator()
    options = dict(generator=G, device="cpu", num_gen=7, batch_size=4, vgg16=vgg16, progress=False)
    first = compute_metrics(["ppl_zfull", "ppl_wend"], seed=3, **options)
    again = compute_metrics(["ppl_zfull", "ppl_wend"], seed=3, **options)
    other = compute_metrics(["ppl_zfull", "ppl_wend"], seed=4, **options)
    assert [r["value"] for r in first] == [r["value"] for r in again]
    assert all(a["value"] != b["value"] for a, b in zip(first, other, strict=True))
    # Each of 3 ranks alone: its gathered distances hold its own batches (zeros elsewhere, where the all-reduce
    # would add the other ranks'); together they are one process's distances, bit for bit.
    gathered = []
    monkeypatch.setattr(
        ppl, "gather_rows", lambda local, total: gathered.append(gather_rows(local, total)) or gathered[-1]
    )
    compute_metric("ppl_zfull", seed=3, **options)
    monkeypatch.setattr(dist, "world_size", lambda: 3)
    for rank in range(3):
        monkeypatch.setattr(dist, "rank", lambda rank=rank: rank)
        compute_metric("ppl_zfull", seed=3, **options)
    one, *ranks = (rows.flatten()[:7] for rows in gathered)  # [batch, path of the batch] -> 7 paths in order
    assert one.abs().min() > 0 and torch.equal(sum(ranks), one)
    assert [int((part != 0).sum()) for part in ranks] == [3, 2, 2]  # 4 batches of 2 paths (the last 1): 0 and 3, 1, 2


def test_a_batch_of_one_image_measures_one_path_per_pass_with_its_own_noise(vgg16):
    """--batch 1 still generates both ends of a path in each pass: one path per batch, each with its noise draw."""
    G = _generator()
    record = compute_metric("ppl_wfull", generator=G, device="cpu", num_gen=3, batch_size=1, seed=2, vgg16=vgg16,
                            progress=False)  # fmt: skip
    expected, _ = reference_ppl(G, 3, pairs=1, seed=2, space="w", sampling="full")
    assert record["value"] == pytest.approx(expected, rel=2e-3) and record["num_fake"] == 3


def test_stylegan3_has_no_noise_buffers_and_still_has_a_path_length(vgg16):
    torch.manual_seed(0)
    G = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=4).eval()
    record = compute_metric("ppl_wfull", generator=G, device="cpu", num_gen=6, batch_size=4, vgg16=vgg16,
                            progress=False)  # fmt: skip
    expected, _ = reference_ppl(G, 6, pairs=2, seed=0, space="w", sampling="full")
    assert record["value"] == pytest.approx(expected, rel=2e-3) and record["value"] > 0


def _labelled_folder(path):
    path.mkdir()
    rng = np.random.default_rng(0)
    for i in range(4):
        PIL.Image.fromarray(rng.integers(0, 256, (8, 8, 3)).astype(np.uint8)).save(path / f"{i}.png")
    labels = [[f"{i}.png", i % 2] for i in range(4)]  # images 0 and 2 are class 0 of 2, images 1 and 3 class 1
    (path / "dataset.json").write_text(json.dumps({"labels": labels, "label_names": ["a", "b"]}))
    return path


@pytest.fixture
def one_thread():
    """One intra-op thread, as `make test` runs: with more, the float32 generator's images differ in their last bits
    between a batch of 4 and one image (the threads split the reductions differently), and PPL, which divides
    distances by eps^2 = 1e-8, moves by about 0.2% for it (1.3010 against 1.2979 with this machine's 2 threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_a_conditional_generator_takes_the_datasets_labels_and_needs_the_dataset(vgg16, tmp_path, one_thread):
    G, data = _generator(c_dim=2), _labelled_folder(tmp_path / "data")
    options = dict(generator=G, device="cpu", num_gen=5, batch_size=4, vgg16=vgg16, progress=False)
    record = compute_metric("ppl_wend", real=data, **options)
    picks = [int(torch.randint(4, (), generator=position_rng(0, "c", p))) for p in range(5)]  # as generator_batches
    assert 0 < sum(i % 2 for i in picks) < 5, picks  # both classes among the paths
    labels = torch.nn.functional.one_hot(torch.tensor(picks) % 2, 2).float()
    expected, _ = reference_ppl(G, 5, pairs=2, seed=0, space="w", sampling="end", c=labels)
    assert record["value"] == pytest.approx(expected, rel=2e-3)
    with pytest.raises(UserError, match="--data: ppl_wend of a conditional generator draws its labels"):
        compute_metric("ppl_wend", **options)
    with pytest.raises(UserError, match="--data: ppl_wend of a conditional generator draws its labels"):
        compute_metric("ppl_wend", **options | {"generator": _generator(c_dim=1)})  # one class is a label too


def test_without_the_vgg16_file_it_refuses_before_any_work(vgg16, tmp_path, monkeypatch):
    G = _generator()
    with pytest.raises(UserError, match=r"--metrics ppl_zend,ppl_wend: needs --vgg16 PATH, NVlabs' vgg16.pt") as error:
        compute_metrics(["ppl_zend", "ppl_wend"], generator=G, device="cpu", num_gen=4, progress=False)
    assert len(error.value.problems) == 1
    not_torchscript = tmp_path / "vgg16.pt"
    not_torchscript.write_bytes(b"not a network")
    with pytest.raises(UserError, match="--vgg16 .*: not a TorchScript file"):
        compute_metric("ppl_wend", generator=G, device="cpu", num_gen=4, vgg16=not_torchscript, progress=False)
    fakes = _labelled_folder(tmp_path / "fakes")
    with pytest.raises(UserError, match="ppl_wend measures a generator"):
        compute_metric("ppl_wend", fake=fakes, device="cpu", num_gen=4, vgg16=vgg16, progress=False)
    monkeypatch.chdir(tmp_path)
    save_snapshot(tmp_path / "g.safetensors", G, {})
    args = ["metrics", "--network", "g.safetensors", "--metrics", "swd16k,ppl_wfull", "--device", "cpu"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--metrics ppl_wfull: needs --vgg16 PATH" in result.output and "--data/--real" in result.output
    result = CliRunner().invoke(main, [*args[:4], "ppl_wfull", "--vgg16", "missing.pt", "--device", "cpu"])
    assert result.exit_code == 2 and "--vgg16 missing.pt: no such file" in result.output


def test_the_cli_appends_a_record_with_its_protocol(vgg16, tmp_path):
    run_dir = tmp_path / "00000-run"
    (run_dir / "snapshots").mkdir(parents=True)
    snapshot = run_dir / "snapshots" / "network-snapshot-000001.safetensors"
    save_snapshot(snapshot, _generator(), {"kimg": 1})
    args = ["metrics", "--network", str(snapshot), "--metrics", "ppl_wend", "--vgg16", vgg16, "--num-gen", "6"]
    result = CliRunner().invoke(main, [*args, "--device", "cpu", "--batch", "4"])
    assert result.exit_code == 0, result.output
    (line,) = (run_dir / "metric-ppl_wend.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["snapshot"] == str(snapshot) and record["num_fake"] == 6 and record["seed"] == 0
    assert record["protocol"].startswith("karras2019-ppl: lerp of w, t=0, eps 1e-4, vgg16-lpips")
    assert record["results"]["ppl_wend"] == record["value"] > 0


def test_train_refuses_ppl_and_is_without_their_files_and_passes_them_to_each_snapshots_metrics(
    vgg16, tmp_path, monkeypatch
):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(8):
        pixels = np.random.default_rng(i).integers(0, 256, (8, 8, 3), dtype=np.uint8)
        PIL.Image.fromarray(pixels).save(data / f"{i}.png")
    args = ["train", "--data", str(data), "--outdir", str(tmp_path / "runs"), "--cfg", "tiny", "--kimg", "0.008",
            "--batch", "8", "--tick", "0.008", "--workers", "0", "--device", "cpu", "--aug", "noaug", "--no-report",
            "--metrics", "ppl_wend,is50k"]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--dry-run"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--metrics ppl_wend: needs --vgg16 PATH" in result.output
    assert "--metrics is50k: needs --inception-classifier PATH" in result.output
    classifier = tmp_path / "inception-2015-12-05.pt"
    classifier.write_bytes(b"only its path reaches the metrics here")
    asked = []
    monkeypatch.setattr(loop, "compute_metrics", lambda names, **options: asked.append((names, options)) or [])
    monkeypatch.chdir(tmp_path)  # a relative path is recorded absolute, as --data is: a rerun from elsewhere finds it
    result = CliRunner().invoke(main, [*args, "--vgg16", vgg16, "--inception-classifier", classifier.name])
    assert result.exit_code == 0, result.output
    assert len(asked) == 2  # the snapshots at 0 and 8 images
    for names, options in asked:
        assert names == ("ppl_wend", "is50k") and options["vgg16"] == vgg16
        assert options["inception_classifier"] == str(classifier)
