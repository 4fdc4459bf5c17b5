"""The doctor's verdict model: one `Check` per line, a `Report` that renders as a table or as stable JSON.

The JSON layout is documented in docs/doctor.md; `SCHEMA_VERSION` changes whenever a key is renamed or removed.
"""

import dataclasses
import datetime
import json
import math
from collections.abc import Callable
from typing import Any

from ganforge.errors import UserError
from ganforge.urls import public_text

SCHEMA = "ganforge-doctor"
SCHEMA_VERSION = 1

OK, WARNING, FAILURE, SKIPPED = "ok", "warning", "failure", "skipped"
STATUSES = (OK, WARNING, FAILURE, SKIPPED)
SECTIONS = ("environment", "gpu", "functional", "system", "data")

_TABLE_STATUS = {OK: "ok", WARNING: "WARN", FAILURE: "FAIL", SKIPPED: "skip"}


@dataclasses.dataclass(frozen=True)
class Check:
    """One line of the report.

    `id` is a stable dotted key (`gpu.0.matmul`), `value` the human-readable finding, `fix` one line saying what to
    do (present exactly on warnings and failures), `data` the
    machine-readable measurements behind the finding (numbers, strings, booleans or None). A skipped line did not
    run because it does not apply here; its `value` says why.
    """

    id: str
    section: str
    title: str
    status: str
    value: str
    fix: str | None = None
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        assert self.section in SECTIONS, self.section
        assert self.status in STATUSES, self.status
        assert bool(self.fix) == (self.status in (WARNING, FAILURE)), f"{self.id}: warnings and failures need a fix"


def ok(id: str, section: str, title: str, value: str, **data) -> Check:
    return Check(id, section, title, OK, value, None, data)


def warning(id: str, section: str, title: str, value: str, fix: str, **data) -> Check:
    return Check(id, section, title, WARNING, value, fix, data)


def failure(id: str, section: str, title: str, value: str, fix: str, **data) -> Check:
    return Check(id, section, title, FAILURE, value, fix, data)


def skipped(id: str, section: str, title: str, reason: str) -> Check:
    return Check(id, section, title, SKIPPED, reason)


def guarded(id: str, section: str, title: str, fix: str, measure: Callable[[], list[Check]]) -> list[Check]:
    """Run one check; an exception becomes a failure line that names it instead of ending the report.

    A health report has to survive the very breakage it is looking for (a CUDA kernel missing for this GPU, a
    process group that cannot form), so every exception is caught here, once, and reported with its type and text.
    """
    try:
        return measure()
    except UserError as error:
        return [failure(id, section, title, "; ".join(error.problems), fix)]
    except Exception as error:  # noqa: BLE001 -- reported as a failure line, never swallowed
        return [failure(id, section, title, public_text(f"{type(error).__name__}: {error}".strip()), fix)]


def exit_code(checks: list[Check]) -> int:
    """0 when every line is ok (or skipped), 1 when the worst line is a warning, 2 when any line is a failure."""
    statuses = {check.status for check in checks}
    if FAILURE in statuses:
        return 2
    return 1 if WARNING in statuses else 0


def _json_safe(value: Any) -> Any:
    """Non-finite floats (a NaN loss) as the strings 'nan', 'inf', '-inf': strict JSON has no such numbers."""
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@dataclasses.dataclass(frozen=True)
class Report:
    """All checks of one doctor run plus the options it ran with."""

    checks: list[Check]
    options: dict[str, Any]
    ganforge_version: str
    created: str = dataclasses.field(
        default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    )

    @property
    def exit_code(self) -> int:
        return exit_code(self.checks)

    def summary(self) -> dict[str, int]:
        counts = {status: sum(check.status == status for check in self.checks) for status in STATUSES}
        return {**counts, "exit_code": self.exit_code}

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "ganforge_version": self.ganforge_version,
            "created": self.created,
            "options": self.options,
            "summary": self.summary(),
            "checks": [_json_safe(dataclasses.asdict(check)) for check in self.checks],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    def render_table(self) -> str:
        """A fixed-width table, one line per check, each non-ok line followed by its fix."""
        width = max([len(check.title) for check in self.checks] + [5])
        lines = [f"ganforge doctor {self.ganforge_version}  {self.created}", ""]
        lines.append(f"{'status':<6}  {'check':<{width}}  finding")
        for check in self.checks:
            lines.append(f"{_TABLE_STATUS[check.status]:<6}  {check.title:<{width}}  {check.value}")
            if check.fix:
                lines.append(f"{'':<6}  {'':<{width}}  fix: {check.fix}")
        counts = self.summary()
        lines.append("")
        lines.append(
            f"{counts[OK]} ok, {counts[WARNING]} warning(s), {counts[FAILURE]} failure(s), {counts[SKIPPED]} skipped"
            f" -> exit {self.exit_code}"
        )
        return "\n".join(lines)
