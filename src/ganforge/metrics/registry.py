"""The metrics by name (a registry of small functions over streamed statistics), and computing them into result
records."""

import dataclasses
import time
import types
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ganforge import dist
from ganforge.errors import UserError
from ganforge.metric_names import METRIC_COUNTS, METRIC_NAMES
from ganforge.metrics import equivariance, inception, inception_score, ppl, swd
from ganforge.metrics.evaluator import Evaluator, MetricOptions
from ganforge.metrics.fid import fid
from ganforge.metrics.kid import kid
from ganforge.metrics.pr import pr
from ganforge.nets.growth import stage_of


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
    needs_real: bool = True  # False: measures the fakes alone (equivariance, PPL, IS)
    # A file the user must give, as the MetricOptions field that names it (NEEDED_FILES), and `prepare(ev)`: checks
    # the sources (that reals and fakes are comparable, for the metrics between them) and loads the file's network,
    # for every metric of a run before the first one runs.
    needs_file: str | None = None
    prepare: Callable | None = None


def _inception_metric(name: str, fn: Callable, **kwargs) -> MetricSpec:
    protocol, network, needs_all = inception.PROTOCOL, inception.FEATURE_NETWORK, fn is not fid
    counts = METRIC_COUNTS[name]
    kwargs, prepare = types.MappingProxyType(kwargs), partial(Evaluator.check_comparable, name=name, same_size=False)
    return MetricSpec(name, fn, counts.num_real, counts.num_gen, protocol, network, needs_all, kwargs, prepare=prepare)


def _generator_metric(name: str, fn: Callable) -> MetricSpec:
    counts = METRIC_COUNTS[name]
    return MetricSpec(name, fn, counts.num_real, counts.num_gen, equivariance.PROTOCOL, None, needs_real=False)


def _swd_metric(name: str) -> MetricSpec:
    counts, prepare = METRIC_COUNTS[name], partial(Evaluator.check_comparable, name=name, same_size=True)
    return MetricSpec(name, swd.swd, counts.num_real, counts.num_gen, swd.PROTOCOL, None, prepare=prepare)


def _ppl_metric(name: str, space: str, sampling: str) -> MetricSpec:
    kwargs = types.MappingProxyType({"space": space, "sampling": sampling, "name": name})
    protocol, prepare = ppl.protocol(space, sampling), partial(ppl.prepare, name=name)
    return MetricSpec(
        name,
        ppl.ppl,
        0,
        METRIC_COUNTS[name].num_gen,
        protocol,
        ppl.FEATURE_NETWORK,
        kwargs=kwargs,
        needs_real=False,
        needs_file="vgg16",
        prepare=prepare,
    )


def _is_metric(name: str) -> MetricSpec:
    kwargs, prepare = types.MappingProxyType({"name": name}), partial(inception_score.prepare, name=name)
    return MetricSpec(
        name,
        inception_score.is_metric,
        0,
        METRIC_COUNTS[name].num_gen,
        inception_score.PROTOCOL,
        inception_score.FEATURE_NETWORK,
        kwargs=kwargs,
        needs_real=False,
        needs_file="inception_classifier",
        prepare=prepare,
    )


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
            _ppl_metric("ppl_zfull", "z", "full"),
            _ppl_metric("ppl_wfull", "w", "full"),
            _ppl_metric("ppl_zend", "z", "end"),
            _ppl_metric("ppl_wend", "w", "end"),
            _is_metric("is50k"),
        )
    }
)
assert tuple(METRICS) == METRIC_NAMES, "ganforge.metric_names lists every metric, in order"

# The files metrics need that ganforge neither ships nor downloads (NVlabs' TorchScript networks, which the user
# fetches): the MetricOptions field that names one -> what to pass. Its flag is the field's name with dashes, in every
# command.
NEEDED_FILES = types.MappingProxyType(
    {
        "vgg16": "NVlabs' vgg16.pt, the VGG16 LPIPS TorchScript of the official projector and PPL",
        "inception_classifier": "NVlabs' inception-2015-12-05.pt, the official metrics' Inception TorchScript with "
        "its class probabilities (not --inception, FID's feature file)",
    }
)


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


def file_flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def file_problems(names: list[str], **files: str | Path | None) -> list[str]:
    """One message per file (a MetricOptions field of NEEDED_FILES, given as keyword) that a named metric needs and
    that is not given or not a file; unknown names are name_problems' to report."""
    problems = []
    for field, wanted in NEEDED_FILES.items():
        users = [name for name in names if name in METRICS and METRICS[name].needs_file == field]
        path = files.get(field)
        if users and path is None:
            problems.append(
                f"--metrics {','.join(users)}: needs {file_flag(field)} PATH, {wanted}; ganforge does not download it"
            )
        elif users and not Path(path).is_file():
            problems.append(f"{file_flag(field)} {path}: no such file; pass {wanted}")
    return problems


def unused_files(names: list[str], **files: str | Path | None) -> list[str]:
    """The flags of the given files that no named metric uses (they have no effect)."""
    used = {METRICS[name].needs_file for name in names if name in METRICS}
    return [file_flag(field) for field in NEEDED_FILES if files.get(field) is not None and field not in used]


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
    stage = stage_of(ev.generator)
    record |= {"stage": stage} if stage else {}  # a generator measured while it grew: at that resolution and fade
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
    files = {field: options.get(field) for field in NEEDED_FILES}
    problems = file_problems(names, **files)
    if real is None and any(METRICS[name].needs_real for name in names):
        problems.append("--data/--real: the real images to compare with are required")
    if problems:
        raise UserError(*problems)
    capture_all = any(METRICS[name].needs_all_features for name in names)
    ev = Evaluator(real, generator=generator, fake=fake, options=MetricOptions(**options), capture_all=capture_all)
    for name in names:  # every metric's own sources and files checked before hours go into the first one
        if METRICS[name].prepare is not None:
            METRICS[name].prepare(ev)
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
