"""The metrics by name (a registry of small functions over streamed statistics), and computing them into result
records."""

import dataclasses
import time
import types
from collections.abc import Callable

from ganforge import dist
from ganforge.errors import UserError
from ganforge.metric_names import METRIC_COUNTS, METRIC_NAMES
from ganforge.metrics import equivariance, inception, swd
from ganforge.metrics.evaluator import Evaluator, MetricOptions
from ganforge.metrics.fid import fid
from ganforge.metrics.kid import kid
from ganforge.metrics.pr import pr


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """A named metric: `fn(evaluator, num_real, num_gen, **kwargs)`; num_real None means every real image."""

    name: str
    fn: Callable
    num_real: int | None
    num_gen: int
    protocol: str
    feature_network: str | None
    needs_all_features: bool = False  # KID and PR need every feature vector, FID only their moments
    kwargs: types.MappingProxyType = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))
    needs_real: bool = True  # False: measures the generator alone (equivariance)


def _inception_metric(name: str, fn: Callable, **kwargs) -> MetricSpec:
    protocol, network, needs_all = inception.PROTOCOL, inception.FEATURE_NETWORK, fn is not fid
    counts = METRIC_COUNTS[name]
    kwargs = types.MappingProxyType(kwargs)
    return MetricSpec(name, fn, counts.num_real, counts.num_gen, protocol, network, needs_all, kwargs)


def _generator_metric(name: str, fn: Callable) -> MetricSpec:
    counts = METRIC_COUNTS[name]
    return MetricSpec(name, fn, counts.num_real, counts.num_gen, equivariance.PROTOCOL, None, needs_real=False)


def _swd_metric(name: str) -> MetricSpec:
    counts = METRIC_COUNTS[name]
    return MetricSpec(name, swd.swd, counts.num_real, counts.num_gen, swd.PROTOCOL, None)


# The protocols' image counts are ganforge.metric_names' (one table, read by the help and the report too).
METRICS = types.MappingProxyType(
    {
        spec.name: spec
        for spec in (
            _inception_metric("fid50k_full", fid),
            _inception_metric("fid50k", fid),
            _inception_metric("fid10k", fid),
            _inception_metric("fid10k_full", fid),
            _inception_metric("kid50k_full", kid, num_subsets=100, subset_size=1000),
            _inception_metric("pr50k3_full", pr, k=3),
            _swd_metric("swd16k"),
            _generator_metric("eqt50k_int", equivariance.eqt_int),
            _generator_metric("eqt50k_frac", equivariance.eqt_frac),
            _generator_metric("eqr50k", equivariance.eqr),
        )
    }
)
assert tuple(METRICS) == METRIC_NAMES, "ganforge.metric_names lists every metric, in order"


def parse_names(names: str | list[str] | tuple[str, ...]) -> list[str]:
    """--metrics as a list of names: a comma-separated string (spaces around names allowed) or names already."""
    if isinstance(names, str):
        return [name.strip() for name in names.split(",") if name.strip()]
    return list(names)


def name_problems(names: list[str]) -> list[str]:
    """One message per unknown metric, or one when no metric is named; each lists the known ones."""
    known = ", ".join(METRICS)
    problems = [f"--metrics: unknown metric {n!r}; choose from {known}" for n in names if n not in METRICS]
    return problems if names else [f"--metrics: no metric named; choose from {known}"]


def check_names(names: list[str]) -> None:
    """One UserError naming every unknown metric and the known ones."""
    problems = name_problems(names)
    if problems:
        raise UserError(*problems)


def _record(spec: MetricSpec, out: dict, ev: Evaluator, seconds: float) -> dict:
    """The result record: values keyed by metric name (NVlabs' style), protocol, counts, seed, time."""
    if "value" in out:
        results = {spec.name: out["value"]}
    else:
        results = {f"{spec.name}_{key}": value for key, value in out["results"].items()}
    record = {"metric": spec.name, "results": results}
    if "value" in out:
        record["value"] = out["value"]
    record |= {"protocol": spec.protocol, "feature_network": spec.feature_network} | out.get("extra", {})
    record |= {"num_real": out["num_real"], "num_fake": out["num_fake"], "seed": ev.options.seed}
    record |= {"real": None if ev.real is None else str(ev.real.name)}
    record |= {"fake": "generator" if ev.fake is None else str(ev.fake.name)}
    return record | {"seconds": round(seconds, 3)}


def compute_metrics(names, generator=None, real=None, fake=None, **options) -> list[dict]:
    """Compute each named metric between `real` (dataset or path) and `generator` or `fake` (dataset or path).

    `names` is a list of names or one comma-separated string.
    Keyword options are MetricOptions fields (device, batch_size, seed, num_gen, num_real, inception, cache_dir, ...).
    Metrics share one Inception network and the features already computed. Every rank must call this (collective);
    every rank gets the same records.
    """
    names = parse_names(names)
    check_names(names)
    if real is None and any(METRICS[name].needs_real for name in names):
        raise UserError("--data/--real: the real images to compare with are required")
    capture_all = any(METRICS[name].needs_all_features for name in names)
    ev = Evaluator(real, generator=generator, fake=fake, options=MetricOptions(**options), capture_all=capture_all)
    records = []
    for name in names:
        spec = METRICS[name]
        start = time.monotonic()
        with ev.stage(f"metrics: {name}", bar=False):  # its stages (images, features, the maths) show their own
            out = spec.fn(ev, spec.num_real, spec.num_gen, **spec.kwargs)
        record = _record(spec, out, ev, time.monotonic() - start) if dist.is_main() else None
        records.append(dist.broadcast_object(record))
    return records


def compute_metric(name: str, generator=None, real=None, fake=None, **options) -> dict:
    """One metric's result record; see compute_metrics."""
    return compute_metrics([name], generator=generator, real=real, fake=fake, **options)[0]
