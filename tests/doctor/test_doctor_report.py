import json

import pytest

from ganforge.doctor import report as r
from ganforge.errors import UserError


def _report(*statuses):
    checks = []
    for i, status in enumerate(statuses):
        if status == r.OK:
            checks.append(r.ok(f"system.c{i}", "system", f"check {i}", "fine", figure=1.5))
        elif status == r.WARNING:
            checks.append(r.warning(f"system.c{i}", "system", f"check {i}", "meh", "do this"))
        elif status == r.FAILURE:
            checks.append(r.failure(f"system.c{i}", "system", f"check {i}", "broken", "do that"))
        else:
            checks.append(r.skipped(f"system.c{i}", "system", f"check {i}", "does not apply"))
    return r.Report(checks, {"quick": True}, "9.9.9")


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        ((r.OK, r.OK), 0),
        ((r.OK, r.SKIPPED), 0),
        ((), 0),
        ((r.OK, r.WARNING, r.SKIPPED), 1),
        ((r.WARNING, r.FAILURE, r.OK), 2),
        ((r.FAILURE,), 2),
    ],
)
def test_exit_code_is_worst_status(statuses, code):
    assert _report(*statuses).exit_code == code


def test_json_schema_is_stable_and_documented():
    document = json.loads(_report(r.OK, r.WARNING, r.FAILURE, r.SKIPPED).to_json())
    assert list(document) == [
        "schema",
        "schema_version",
        "ganforge_version",
        "created",
        "options",
        "summary",
        "checks",
    ]
    assert document["schema"] == "ganforge-doctor" and document["schema_version"] == 1
    assert document["summary"] == {"ok": 1, "warning": 1, "failure": 1, "skipped": 1, "exit_code": 2}
    for check in document["checks"]:
        assert list(check) == ["id", "section", "title", "status", "value", "fix", "data"]
        assert (check["fix"] is not None) == (check["status"] in ("warning", "failure"))
    assert document["checks"][0]["data"] == {"figure": 1.5}
    assert document["options"] == {"quick": True}
    # docs/doctor.md documents every key the JSON has
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "doctor.md").read_text()
    for key in [*document, *document["checks"][0], *document["summary"]]:
        assert f"`{key}`" in doc, key


def test_table_shows_every_line_and_fixes():
    text = _report(r.OK, r.WARNING, r.FAILURE, r.SKIPPED).render_table()
    assert "WARN" in text and "FAIL" in text and "skip" in text
    assert "fix: do this" in text and "fix: do that" in text and "does not apply" in text
    assert text.rstrip().endswith("-> exit 2")


def test_a_non_ok_line_without_a_fix_is_a_programming_error():
    with pytest.raises(AssertionError):
        r.Check("system.x", "system", "x", r.WARNING, "meh")
    with pytest.raises(AssertionError):
        r.Check("system.x", "nowhere", "x", r.OK, "fine")


def test_guarded_turns_exceptions_into_failures():
    def boom():
        raise RuntimeError("CUDA error: no kernel image is available")

    def user():
        raise UserError("--data: first", "--data: second")

    [line] = r.guarded("gpu.0.matmul", "gpu", "matmul", "reinstall", boom)
    assert line.status == r.FAILURE and "RuntimeError: CUDA error" in line.value and line.fix == "reinstall"
    [line] = r.guarded("data.open", "data", "dataset", "pass a folder", user)
    assert line.value == "--data: first; --data: second"
    fine = [r.ok("a.b", "gpu", "t", "v")]
    assert r.guarded("a.b", "gpu", "t", "f", lambda: fine) == fine


def test_json_is_strict_even_with_non_finite_figures():
    line = r.failure("functional.stylegan2", "functional", "t", "nan", "fp32", loss=float("nan"), g=[float("inf")])
    text = r.Report([line], {}, "1").to_json()

    def refuse(constant):
        raise ValueError(constant)

    data = json.loads(text, parse_constant=refuse)["checks"][0]["data"]
    assert data == {"loss": "nan", "g": ["inf"]}
