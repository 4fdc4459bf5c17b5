"""The checks of `ganforge doctor`, run in order into one report (`run`), and the precision train would pick here."""

from ganforge import __version__
from ganforge.config import AUTO_PRECISION
from ganforge.devices import cpu_flags, pick_precision
from ganforge.doctor import benchmark, environment, functional, gpu, nvml, system
from ganforge.doctor import report as r
from ganforge.doctor.options import Options
from ganforge.doctor.report import Report
from ganforge.monitor import nvml as nvml_reader
from ganforge.urls import public_url


def train_precision(precision: str, gpus: list[gpu.GpuProps]) -> tuple[str, str]:
    """(mode, why --precision auto chose it, else "") as `ganforge train` would run here: on the first GPU, or the
    CPU when there is none."""
    if precision != AUTO_PRECISION:
        return precision, ""
    if gpus:
        return pick_precision("cuda", (gpus[0].major, gpus[0].minor), frozenset())
    return pick_precision("cpu", None, cpu_flags())


def run(options: Options) -> Report:
    """Run every check and return the report (nothing is printed)."""
    with nvml_reader.session() as (handle, problem):
        checks = environment.version_checks()
        checks += environment.driver_checks(nvml.read_driver(handle, problem))
        inventory, gpus = gpu.inventory(handle, problem)
    checks += inventory
    for props in gpus:
        checks += benchmark.gpu_benchmarks(props, options.quick)
    precision, why = train_precision(options.precision, gpus)
    checks += functional.functional_checks(gpus, precision, options.quick, auto_reason=why)
    checks += system.system_checks(options.outdir, len(gpus))
    if options.data is not None:
        fix = "pass a folder of images, an image zip, or an archive made by `ganforge dataset build`"
        checks += r.guarded(
            "data.open", "data", "dataset", fix, lambda: system.data_checks(options.data, options.quick)
        )
    settings = {**options.settings(), "data": options.data and public_url(str(options.data))}
    settings["outdir"] = str(options.outdir)
    return Report(checks, settings, __version__)
