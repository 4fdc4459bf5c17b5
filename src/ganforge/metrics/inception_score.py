"""Inception Score (Salimans et al. 2016, "Improved Techniques for Training GANs", Sec. 4), as the official
StyleGAN2-ADA metric is50k computes it: IS = exp(E_x KL(p(y|x) || p(y))) over 10 equal splits of 50,000 fakes,
reported as the mean and the (population) standard deviation over the splits.

p(y|x) are the 1008 class probabilities of the 2015-12-05 Inception graph that Salimans et al. used, from NVlabs'
TorchScript translation of it (`inception-2015-12-05.pt`, the official metrics' detector) given by the user: the
softmax taken without the output layer's bias (`no_output_bias=True`), as the original TF code takes it. The FID
feature file ganforge finds by itself (metrics/inception.py) has the pool features only, no classifier.
"""

import math

import torch

from ganforge import dist
from ganforge.errors import UserError
from ganforge.metrics.features import gather_rows
from ganforge.metrics.torchscript import load_user_script
from ganforge.numerics import fp32_math

CLASSES = 1008  # the 2015 graph's softmax: ImageNet's 1000 classes and 8 unused
NUM_SPLITS = 10
MAX_BYTES = 2**28  # NVlabs' file is about 95 MB; a file several times that is not it
FEATURE_NETWORK = "inception-2015-12-05-softmax"
PROTOCOL = "salimans2016-is: inception-2015-12-05 softmax without output bias, uint8 fakes, 10 splits, mean and std"
CLASSIFIER_FIX = (
    "pass NVlabs' inception-2015-12-05.pt, the official metrics' Inception TorchScript (--inception is FID's "
    "feature file, which has no classifier)"
)
_PROBE_SIDE = 32  # the network resizes any image to 299 px itself
_SUM_TOLERANCE = 1e-3  # how far from 1 a probe's probabilities may sum


class InceptionClassifier(torch.nn.Module):
    """uint8 [N, C, H, W] images (C = 1 or 3) -> float32 [N, 1008] class probabilities, called as the official IS
    calls NVlabs' file."""

    name = FEATURE_NETWORK

    def __init__(self, net: torch.jit.ScriptModule):
        super().__init__()
        self.net = net

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        assert images.dtype == torch.uint8 and images.ndim == 4, (images.dtype, images.shape)
        x = images.repeat(1, 3, 1, 1) if images.shape[1] == 1 else images
        with fp32_math(tf32=False):  # the protocol is IEEE fp32 on every GPU generation
            return self.net(x, no_output_bias=True)


def load_classifier(path, device) -> InceptionClassifier:
    """The file given as --inception-classifier on `device`, probed on two small images so that another file (FID's
    feature file, VGG16, anything else) is one clear error."""
    classifier = InceptionClassifier(
        load_user_script(path, "--inception-classifier", MAX_BYTES, CLASSIFIER_FIX, device)
    )
    probe = torch.zeros([2, 3, _PROBE_SIDE, _PROBE_SIDE], dtype=torch.uint8, device=device)
    try:
        out = classifier(probe)
    except (RuntimeError, TypeError, ValueError) as error:
        raise UserError(
            f"--inception-classifier {path}: does not take (uint8 images, no_output_bias=True) as NVlabs' Inception "
            f"file does ({str(error).splitlines()[0][:120]}); {CLASSIFIER_FIX}"
        ) from None
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, CLASSES) or not _are_probabilities(out):
        raise UserError(
            f"--inception-classifier {path}: does not give {CLASSES} class probabilities per image; {CLASSIFIER_FIX}"
        )
    return classifier


def _are_probabilities(out: torch.Tensor) -> bool:
    rows = out.double()
    return bool(rows.isfinite().all() and (rows >= 0).all() and ((rows.sum(1) - 1).abs() <= _SUM_TOLERANCE).all())


def inception_score(probs: torch.Tensor, num_splits: int = NUM_SPLITS) -> tuple[float, float]:
    """Mean and population standard deviation over `num_splits` consecutive splits (split i: rows i n / s to
    (i + 1) n / s, rounded down) of exp(mean over x of KL(p(y|x) || p(y))), p(y) the split's mean; float64.
    0 log 0 counts 0, so a class no image of a split gives probability adds nothing."""
    n = probs.shape[0]
    scores = []
    for i in range(num_splits):
        part = probs[i * n // num_splits : (i + 1) * n // num_splits].double()
        marginal = part.mean(dim=0, keepdim=True)
        kl = (torch.xlogy(part, part) - torch.xlogy(part, marginal)).sum(dim=1)  # KL(p(y|x) || p(y)) per image
        scores.append(math.exp(kl.mean().item()))
    values = torch.tensor(scores, dtype=torch.float64)
    return values.mean().item(), values.std(unbiased=False).item()


def prepare(ev, name: str) -> InceptionClassifier:
    """Check that `name` can run on this evaluator's sources and load its classifier (before any metric of the run)."""
    G = ev.generator
    if G is not None and G.c_dim > 0 and ev.real is None:
        raise UserError(
            f"--data: {name} of a conditional generator draws its labels from the dataset's, as the official metric "
            "does; pass the dataset it was trained on"
        )
    assert ev.options.inception_classifier is not None, "compute_metrics refuses IS without --inception-classifier"
    return ev.network("inception_classifier", lambda: load_classifier(ev.options.inception_classifier, ev.device))


def is_metric(ev, num_real, num_gen: int, name: str, num_splits: int = NUM_SPLITS) -> dict | None:
    """The Inception Score of the fakes (generated, or --fake images) (collective); None on ranks other than 0."""
    classifier = prepare(ev, name)
    count = ev.fake_count(num_gen)
    if count < num_splits:
        raise UserError(f"{name}: {count} fake images for {num_splits} splits; raise --num-gen to {num_splits} or more")
    images = ev.fake_images(count, "Inception class probabilities")
    local = [classifier(batch.to(ev.device)) for batch in images]
    local = torch.cat(local) if local else torch.zeros([0, CLASSES], device=ev.device)
    probs = gather_rows(local.float(), count)  # float32 rows summed with zeros: exact
    if not dist.is_main():
        return None
    mean, std = inception_score(probs, num_splits)
    return {"results": {"mean": mean, "std": std}, "extra": {"splits": num_splits}, "num_real": 0, "num_fake": count}
