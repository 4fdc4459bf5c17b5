"""`ganforge doctor`: is this machine ready to train? Versions, driver, GPUs, distributed backends, disk and data.

`run(Options(...))` returns a `Report`; every line is ok, warning or failure (or skipped, with the reason), and the
report's exit code is 0 when all is ok, 1 with warnings, 2 with failures. The JSON form is documented in
docs/doctor.md. The names are loaded on first use: `ganforge --help` imports `ganforge.doctor.options` (and so
this file), and must not pay for importing torch.
"""

from ganforge import names_on_first_use

_HOMES = {
    "Check": "ganforge.doctor.report",
    "Options": "ganforge.doctor.options",
    "Report": "ganforge.doctor.report",
    "run": "ganforge.doctor.command",
    "train_precision": "ganforge.doctor.command",
}

__all__ = ["Check", "Options", "Report", "run"]


__getattr__ = names_on_first_use(__name__, _HOMES)
