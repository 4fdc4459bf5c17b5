"""Inception Score: against a hand computation (loops, math.log) on a stand-in for NVlabs' inception-2015-12-05.pt
whose probabilities are fixed per image (a table row picked by the image's first pixel), with uneven splits; the
refusals of a missing or wrong file and of too few images; a generator through the CLI; the report's best value."""

import json
import math
import types
import warnings

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner
from torch import nn

from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.metrics import compute_metric
from ganforge.metrics.features import generator_batches
from ganforge.metrics.inception_score import _are_probabilities, load_classifier
from ganforge.nets import Generator
from ganforge.report import tables
from ganforge.report.protocols import protocol
from ganforge.snapshot import save_snapshot

CLASSES = 1008
PIXELS = [3, 250, 17, 3, 99, 140, 17, 201, 66, 3, 250, 12, 180, 77, 99, 5, 230, 41, 150, 3, 88, 17, 121]  # 23 fakes


def _table() -> torch.Tensor:
    """[256, 1008] class probabilities, one row per value of an image's first pixel, some rows nearly one class."""
    logits = torch.randn([256, CLASSES], generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3
    logits[::7, 5] += 12
    return logits.softmax(dim=1).float()


class StandInClassifier(nn.Module):
    """Called as NVlabs' Inception file is: uint8 [N, 3, H, W] -> [N, 1008] probabilities; the official IS asks for
    the softmax without the output bias, any other call gets other probabilities."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", _table())

    def forward(
        self, img: torch.Tensor, return_features: bool = False, use_fp16: bool = False, no_output_bias: bool = False
    ) -> torch.Tensor:
        assert img.dtype == torch.uint8 and img.shape[1] == 3
        probs = self.table[img[:, 0, 0, 0].long()]
        sharper = probs.square() / probs.square().sum(dim=1, keepdim=True)  # a class permutation would keep the IS
        return probs if no_output_bias else sharper


class NotProbabilities(StandInClassifier):
    def forward(
        self, img: torch.Tensor, return_features: bool = False, use_fp16: bool = False, no_output_bias: bool = False
    ) -> torch.Tensor:
        return self.table[img[:, 0, 0, 0].long()] * 2


def _script(module: nn.Module, path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is the official file's format
        torch.jit.script(module).save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return _script(StandInClassifier(), tmp_path_factory.mktemp("inception") / "inception-2015-12-05.pt")


def _fakes(path, pixels=PIXELS, channels=3):
    path.mkdir()
    for i, value in enumerate(pixels):
        image = np.full((8, 8, channels), value, dtype=np.uint8)
        PIL.Image.fromarray(image.squeeze(2) if channels == 1 else image).save(path / f"{i:03d}.png")
    return path


def hand_inception_score(rows: list[list[float]], splits: int) -> tuple[float, float]:
    """exp of the mean over a split's images of sum_y p(y|x) log(p(y|x) / p(y)), p(y) the split's mean; mean and
    population standard deviation of the splits' scores (split i: images i n / s to (i + 1) n / s, rounded down)."""
    n, scores = len(rows), []
    for i in range(splits):
        part = rows[i * n // splits : (i + 1) * n // splits]
        marginal = [sum(row[y] for row in part) / len(part) for y in range(CLASSES)]
        kl = [sum(p * math.log(p / q) for p, q in zip(row, marginal, strict=True) if p > 0) for row in part]
        scores.append(math.exp(sum(kl) / len(kl)))
    mean = sum(scores) / splits
    return mean, math.sqrt(sum((s - mean) ** 2 for s in scores) / splits)


def _rows(first_pixels) -> list[list[float]]:
    table = _table().double()
    return [table[int(v)].tolist() for v in first_pixels]


@pytest.mark.parametrize("channels", [3, 1])
def test_is_equals_the_hand_computation_over_ten_uneven_splits(classifier, tmp_path, channels):
    fakes = _fakes(tmp_path / "fakes", channels=channels)
    record = compute_metric("is50k", fake=fakes, inception_classifier=classifier, device="cpu", num_gen=23,
                            batch_size=4, progress=False)  # fmt: skip
    mean, std = hand_inception_score(_rows(PIXELS), 10)
    assert record["results"] == {"is50k_mean": pytest.approx(mean, rel=1e-6), "is50k_std": pytest.approx(std, rel=1e-5)}
    assert std > 0.1 and record["num_fake"] == 23 and record["num_real"] == 0 and record["splits"] == 10
    assert record["protocol"].startswith("salimans2016-is: inception-2015-12-05 softmax without output bias")
    assert record["feature_network"] == "inception-2015-12-05-softmax"


def test_every_split_of_identical_images_scores_one(classifier, tmp_path):
    record = compute_metric("is50k", fake=_fakes(tmp_path / "same", [40] * 20), inception_classifier=classifier,
                            device="cpu", num_gen=20, progress=False)  # fmt: skip
    assert record["results"]["is50k_mean"] == pytest.approx(1.0, abs=1e-6) and record["results"]["is50k_std"] < 1e-6


def test_without_the_classifier_or_with_another_file_it_refuses(classifier, tmp_path):
    fakes = _fakes(tmp_path / "fakes")
    options = dict(fake=fakes, device="cpu", num_gen=23, progress=False)
    with pytest.raises(UserError, match=r"--metrics is50k: needs --inception-classifier PATH, NVlabs' incep"):
        compute_metric("is50k", **options)
    with pytest.raises(UserError, match="--inception-classifier .*nothing.pt: no such file"):
        compute_metric("is50k", inception_classifier=tmp_path / "nothing.pt", **options)
    wrong = _script(NotProbabilities(), tmp_path / "features.pt")
    with pytest.raises(UserError, match="does not give 1008 class probabilities per image"):
        compute_metric("is50k", inception_classifier=wrong, **options)
    vgg_like = _script(torch.nn.Identity(), tmp_path / "identity.pt")  # takes no no_output_bias
    with pytest.raises(UserError, match=r"does not take \(uint8 images, no_output_bias=True\)"):
        compute_metric("is50k", inception_classifier=vgg_like, **options)
    with pytest.raises(UserError, match="is50k: 5 fake images for 10 splits; raise --num-gen to 10 or more"):
        compute_metric("is50k", **{**options, "num_gen": 5}, inception_classifier=classifier)
    result = CliRunner().invoke(main, ["metrics", "--fake", str(fakes), "--metrics", "is50k", "--device", "cpu"])
    assert result.exit_code == 2 and "needs --inception-classifier PATH" in result.output
    assert "Traceback" not in result.output


def test_grey_images_are_classified_as_their_three_channel_copies_and_probabilities_may_be_exactly_zero(classifier):
    net = load_classifier(classifier, torch.device("cpu"))
    grey = torch.tensor([3, 250], dtype=torch.uint8)[:, None, None, None].expand(2, 1, 4, 4).contiguous()
    torch.testing.assert_close(net(grey), net(grey.repeat(1, 3, 1, 1)))
    one_hot = torch.zeros(2, CLASSES)
    one_hot[:, 5] = 1  # a confident classifier: every other probability 0, still probabilities
    negative = one_hot.clone()
    negative[0, 5], negative[0, 6] = 1.5, -0.5  # sums to 1, yet no probabilities
    assert _are_probabilities(one_hot) and not _are_probabilities(negative)


def test_as_many_fakes_as_splits_score_one_and_a_conditional_generator_without_data_is_refused(classifier, tmp_path):
    """One image per split: each split's marginal is its image's own distribution, so every split scores exp(0)."""
    record = compute_metric("is50k", fake=_fakes(tmp_path / "ten", PIXELS[:10]), inception_classifier=classifier,
                            device="cpu", num_gen=10, progress=False)  # fmt: skip
    assert record["results"]["is50k_mean"] == pytest.approx(1.0, abs=1e-6)
    G = Generator(resolution=8, img_channels=3, z_dim=8, w_dim=8, c_dim=1, channel_base=64, channel_max=16,
                  mapping_layers=2).eval()  # fmt: skip
    with pytest.raises(UserError, match="draws its labels from the dataset's"):
        compute_metric("is50k", generator=G, inception_classifier=classifier, device="cpu", num_gen=10,
                       progress=False)  # fmt: skip


def test_a_generator_through_the_cli_appends_mean_and_std(classifier, tmp_path):
    torch.manual_seed(0)
    G = Generator(resolution=8, img_channels=3, z_dim=8, w_dim=8, channel_base=64, channel_max=16,
                  mapping_layers=2).eval()  # fmt: skip
    run_dir = tmp_path / "00000-run"
    (run_dir / "snapshots").mkdir(parents=True)
    snapshot = run_dir / "snapshots" / "network-snapshot-000001.safetensors"
    save_snapshot(snapshot, G, {"kimg": 1})
    args = ["metrics", "--network", str(snapshot), "--metrics", "is50k", "--inception-classifier", classifier]
    result = CliRunner().invoke(main, [*args, "--num-gen", "12", "--batch", "5", "--device", "cpu", "--seed", "2"])
    assert result.exit_code == 0, result.output
    (line,) = (run_dir / "metric-is50k.jsonl").read_text().splitlines()
    record = json.loads(line)
    images = torch.cat(list(generator_batches(G, 12, 5, "cpu", seed=2)))
    mean, std = hand_inception_score(_rows(images[:, 0, 0, 0]), 10)
    assert record["results"] == {"is50k_mean": pytest.approx(mean, rel=1e-6), "is50k_std": pytest.approx(std, rel=1e-5)}
    assert record["protocol"].startswith("salimans2016-is") and record["num_fake"] == 12
    assert protocol("is50k", {"num_fake": 50_000, "num_real": 0}).full


def test_the_report_takes_the_highest_mean_as_the_best():
    records = [
        {"results": {"is50k_mean": mean, "is50k_std": std}, "kimg": kimg, "num_fake": 50_000, "num_real": 0}
        for kimg, mean, std in [(1.0, 2.5, 0.1), (2.0, 4.0, 0.3), (3.0, 3.0, 0.2)]
    ]
    best = {
        key: (value, kimg)
        for key, value, kimg, _ in tables.best_metrics(types.SimpleNamespace(metrics={"is50k": records}))
    }
    assert best["is50k_mean"] == (4.0, 2.0)
