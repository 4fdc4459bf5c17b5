"""One metrics run's sources and shared state: the real and fake image streams, the networks (each loaded once, on
first use), features already computed in this run, and the on-disk cache of the reals' statistics."""

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from ganforge import dist
from ganforge.errors import UserError
from ganforge.metrics import inception
from ganforge.metrics.features import (
    FeatureStats,
    cache_path,
    dataset_batches,
    dataset_subset,
    generator_batches,
    progress,
)
from ganforge.metrics.shapes import image_size
from ganforge.progress import Stage

INCEPTION_WORK = "Inception features"


@dataclasses.dataclass(frozen=True)
class MetricOptions:
    """How metrics are computed. Counts left at None keep each metric's own (its name says them)."""

    device: str | torch.device = "auto"  # auto: the generator's device, else CUDA when available, else CPU
    batch_size: int = 32  # images per forward pass of the generator and of the Inception network
    seed: int = 0  # fixes latents, labels, noise, real subsets, patch positions and KID subsets
    workers: int = 0  # DataLoader worker processes for reading images
    num_gen: int | None = None  # replaces each metric's number of fake images (tiny tests, quick looks)
    num_real: int | None = None  # caps each metric's number of real images
    inception: str | Path | None = None  # weights file; None searches (see inception.resolve_weights)
    vgg16: str | Path | None = None  # PPL's distance: NVlabs' vgg16.pt, given by the user (never downloaded)
    inception_classifier: str | Path | None = None  # IS's classifier: NVlabs' inception-2015-12-05.pt, given likewise
    cache_dir: str | Path | None = None  # None: $GANFORGE_CACHE or ~/.cache/ganforge
    progress: bool = True  # each stage shown while it runs: a bar on a terminal, lines in a log (progress.Stage)


def open_images(source, flag: str):
    """A dataset object as it is, or a path or URL opened with ganforge.data.open_dataset."""
    if not isinstance(source, str | Path):
        return source
    from ganforge.data import open_dataset
    from ganforge.data.remote import is_url

    if not is_url(str(source)) and not Path(source).exists():
        raise UserError(f"{flag}: no such file or folder: {source}")
    return open_dataset(source, what=flag)


def _resolve_device(device, generator) -> torch.device:
    if str(device) != "auto":
        return torch.device(device)
    if generator is not None:
        return next(generator.parameters()).device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Evaluator:
    """Images and Inception features of the reals (`real`) and the fakes (`generator` or a `fake` image set).

    `real` may be None when only metrics that need no reals (the equivariance metrics) are computed.
    """

    def __init__(self, real, generator=None, fake=None, options: MetricOptions | None = None, capture_all=False):
        """`capture_all`: keep every feature vector from the start, when a later metric of the run will need them."""
        if (generator is None) == (fake is None):
            raise UserError("give exactly one source of fake images: --network SNAPSHOT or --fake DIR_OR_ZIP")
        self.options = options or MetricOptions()
        self.device = _resolve_device(self.options.device, generator)
        self.real = None if real is None else open_images(real, "--data/--real")  # None: generator-only metrics
        self.generator = generator
        self.fake = None if fake is None else open_images(fake, "--fake")
        # (C, H, W) of each side: a non-square dataset or generator is W x H, its `resolution` only the short side
        if self.real is not None:
            self.real_shape = (self.real.channels, self.real.height, self.real.width)
        if generator is not None:
            self.fake_shape = (generator.img_channels, *image_size(generator))
            if self.real is not None and generator.c_dim not in (0, self.real.label_dim):
                raise UserError(
                    f"--data: the generator is conditional on {generator.c_dim} classes but the dataset has "
                    f"{self.real.label_dim} label dimensions; use the dataset it was trained on"
                )
        else:
            self.fake_shape = (self.fake.channels, self.fake.height, self.fake.width)
        self.capture_all = capture_all
        self._net = None
        self._networks: dict[str, torch.nn.Module] = {}
        self._memo: dict[tuple[str, int], FeatureStats | None] = {}

    def check_comparable(self, name: str, same_size: bool) -> None:
        """UserError unless metric `name` can compare the reals with the fakes: images of the same (C, H, W) when
        `same_size` (SWD compares their pixels), else of the same aspect ratio (the Inception metrics resize every
        image to 299 x 299, which would distort images of two aspects differently, and the distance would measure
        that rather than the images; their channels and size may differ, as for square images)."""
        real, fake = self.real_shape, self.fake_shape
        if same_size and real != fake:
            why = "they must have the same channels and size"
        elif not same_size and real[1] * fake[2] != real[2] * fake[1]:
            why = "of another aspect ratio, which Inception's 299x299 resize would distort differently"
        else:
            return
        size = f"{fake[2]}x{fake[1]}"  # W x H
        if self.generator is not None:
            flag = str(fake[2]) if fake[1] == fake[2] else size  # as `dataset build --resolution` takes it
            fakes = "the generator's images"
            fix = f"use a dataset of {size} images (W x H), as it makes (dataset build --resolution {flag})"
        else:
            fakes, fix = "--fake's images", f"compare with real images of their size, {size} (W x H)"
        raise UserError(f"{name}: {fakes} are (C, H, W) = {fake} and the reals' (--data/--real) {real}: {why}; {fix}")

    def real_count(self, nominal: int | None) -> int:
        """Real images a metric uses: its nominal count (None: all), capped by --num-real and the dataset size."""
        caps = [len(self.real), nominal, self.options.num_real]
        return min(c for c in caps if c is not None)

    def fake_count(self, nominal: int) -> int:
        """Fake images a metric uses: --num-gen, else the nominal count; a fake image set caps it with a warning."""
        count = self.options.num_gen or nominal
        if self.fake is not None and len(self.fake) < count:
            message = f"--fake: {len(self.fake)} images, fewer than the {count} asked for; using them all"
            warnings.warn(message, stacklevel=2)
            count = len(self.fake)
        return count

    def real_images(self, count: int, work: str):
        """This rank's share of `count` real images, shown as a stage of `work` (what the caller does with them)."""
        indices, _ = dataset_subset(self.real, count, self.options.seed)
        batches = dataset_batches(self.real, indices, self.options.batch_size, self.options.workers)
        what = f"metrics: {count} real images, {work}"
        return progress(batches, count, what, self.options.progress, source="reading", work=work)

    def fake_images(self, count: int, work: str):
        """This rank's share of `count` fake images (generated, or read from --fake), shown as a stage of `work`."""
        opts = self.options
        if self.generator is None:
            indices, _ = dataset_subset(self.fake, count, opts.seed)
            batches = dataset_batches(self.fake, indices, opts.batch_size, opts.workers)
            what, source = f"metrics: {count} fake images, {work}", "reading"
        else:
            batches = generator_batches(self.generator, count, opts.batch_size, self.device, opts.seed, self.real)
            what, source = f"metrics: {count} generated images, {work}", "generating"
        return progress(batches, count, what, opts.progress, source=source, work=work)

    def stage(self, what: str, total: int | None = None, bar: bool = True) -> Stage:
        """A stage of this run's work (see progress.Stage), shown on the first rank when the options ask for it."""
        return Stage(what, total, enabled=self.options.progress and dist.is_main(), bar=bar)

    def inception(self) -> inception.InceptionFeatures:
        if self._net is None:
            # Rank 0 looks first, so that a download into a shared cache happens once; the others then find it.
            if not dist.is_main():
                dist.barrier()
            try:
                self._net = inception.load_inception(self.options.inception, self.device, self.options.cache_dir)
            finally:
                if dist.is_main():
                    dist.barrier()
        return self._net

    def network(self, name: str, load: Callable[[], torch.nn.Module]) -> torch.nn.Module:
        """The network `name` (PPL's VGG16, IS's classifier): `load()` on first use, then shared by the metrics."""
        if name not in self._networks:
            self._networks[name] = load()
        return self._networks[name]

    def _features(self, images, count: int, capture_all: bool) -> FeatureStats:
        net = self.inception()
        stats = FeatureStats(inception.FEATURE_DIM, capture_all, self.device)
        for batch in images:
            stats.append(net(batch.to(self.device)))
        return stats.finalize(count)

    def _memoized(self, which: str, count: int, capture_all: bool) -> FeatureStats | None:
        stats = self._memo.get((which, count))
        return stats if stats is not None and (stats.all is not None or not capture_all) else None

    def fake_features(self, nominal: int, capture_all: bool) -> FeatureStats:
        count, capture_all = self.fake_count(nominal), capture_all or self.capture_all
        stats = self._memoized("fake", count, capture_all)
        if stats is None:
            stats = self._features(self.fake_images(count, INCEPTION_WORK), count, capture_all)
            self._memo["fake", count] = stats
        return stats

    def real_features(self, nominal: int | None, capture_all: bool) -> FeatureStats | None:
        """The reals' statistics from this run, the disk cache or the images; None on other ranks after a cache hit."""
        count, capture_all = self.real_count(nominal), capture_all or self.capture_all
        # Rank 0 decides (memo, then disk cache) and tells the others, so that all ranks join the same computations.
        memo = self._memoized("real", count, capture_all) if dist.is_main() else None
        if dist.broadcast_object(memo is not None):
            return memo
        _, subset = dataset_subset(self.real, count, self.options.seed)
        key = {
            "content_hash": self.real.content_hash,
            "protocol": inception.PROTOCOL,
            "network": inception.INCEPTION_SHA256,
            "subset": subset,
            "count": count,
        }
        cache_dir = Path(self.options.cache_dir) if self.options.cache_dir else inception.default_cache_dir()
        path = cache_path(cache_dir, self.real.name, key)
        stats = FeatureStats.load(path, capture_all, self.device) if dist.is_main() and path.is_file() else None
        if not dist.broadcast_object(stats is not None):
            stats = self._features(self.real_images(count, INCEPTION_WORK), count, capture_all)
            if dist.is_main():
                stats.save(path, key)
        self._memo["real", count] = stats
        return stats
