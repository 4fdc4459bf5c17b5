"""The hostile-input harness itself: it runs cases in a limited worker and its checks can fail."""

from hostile_harness import Case, Outcome, rejection_problems, run_cases


def _outcome(**changes) -> Outcome:
    fields = dict(name="c", exit_code=2, stdout="", stderr="error: x.pkl: not a network pickle\n", seconds=0.1,
                  peak_rss_mb=300.0, exception=None)  # fmt: skip
    return Outcome(**(fields | changes))


def test_each_check_fails_on_what_it_guards(tmp_path):
    case = Case("c", ("generate",), absent=("out.png",))
    assert rejection_problems(case, _outcome(), tmp_path) == []
    assert rejection_problems(case, _outcome(exit_code=1), tmp_path) == ["exit 1, not 2"]
    assert "printed a traceback" in rejection_problems(case, _outcome(stderr="Traceback (most recent call last)"),
                                                       tmp_path)  # fmt: skip
    assert rejection_problems(case, _outcome(stderr="error: a\nerror: b\n"), tmp_path) == ["2 error lines, not 1"]
    assert rejection_problems(case, _outcome(seconds=11.0), tmp_path) == ["took 11.0 s (> 10 s)"]
    assert rejection_problems(case, _outcome(stderr="error: " + "x" * 1000), tmp_path)[0].startswith("a message of")
    assert rejection_problems(case, _outcome(exception="Traceback ... MemoryError"), tmp_path)[0].startswith("escaped")
    (tmp_path / "out.png").write_bytes(b"")
    assert rejection_problems(case, _outcome(), tmp_path) == ["left out.png"]


def test_the_worker_runs_a_table_in_one_limited_process(tmp_path):
    cases = [
        Case("missing dataset", ("dataset", "info", str(tmp_path / "missing.zip"))),
        Case("no such option", ("dataset", "info", "--no-such-option")),
    ]
    outcomes = run_cases(cases, tmp_path)
    assert [o.name for o in outcomes] == ["missing dataset", "no such option"]
    assert all(o.exit_code == 2 and o.exception is None for o in outcomes), outcomes
    assert "missing.zip" in outcomes[0].stderr and 0 < outcomes[0].peak_rss_mb < 3 * 1024
    assert rejection_problems(cases[0], outcomes[0], tmp_path) == []
