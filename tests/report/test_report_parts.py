"""The report's parts against obvious references: run status from log lines, curve downsampling and selection,
grid thinning and thumbnails, alert and skipped-step tables."""

import base64
import io
import os
import time
from pathlib import Path

import numpy as np
import PIL.Image
import pytest

from ganforge.report import images, tables
from ganforge.report.curves import MAX_POINTS, downsample, plots, ratio_curve, stats_curve
from ganforge.report.protocols import protocol
from ganforge.report.rundata import Run, StoredFile, name_runs, snapshot_kimg
from ganforge.report.status import STALE_AFTER_S, Status, run_status


@pytest.mark.parametrize(
    ("lines", "state"),
    [
        ([], "running"),
        (["starting at 0 kimg in runs/x"], "running"),
        (["starting at 0 kimg in runs/x", "tick 1 ...", "done: 4 kimg; results in runs/x"], "finished"),
        (["done: 4 kimg; results in runs/x", "resuming at 4 kimg in runs/x"], "running"),  # continued with --kimg
        (
            [
                "done: 4 kimg; results in runs/x",
                "resuming at 4 kimg in runs/x",
                "already at 4 kimg; nothing to do (raise --kimg to continue)",
            ],
            "finished",
        ),  # the same command again
        (["starting at 0 kimg", "stopping on signal after 2 kimg; rerun the same command to resume"], "preempted"),
        (["starting at 0 kimg", "error: training diverged: 20 optimizer steps in a row ..."], "diverged"),
        (["starting at 0 kimg", "interrupted"], "stopped"),
        (["starting at 0 kimg", "error: --data: not a folder or zip: x"], "failed"),
        (["starting at 0 kimg", "Traceback (most recent call last):", '  File "x.py"', "RuntimeError: boom"], "failed"),
    ],
)
def test_status_is_decided_by_the_last_start_or_end_line(lines, state, tmp_path):
    (tmp_path / "log.txt").write_text("\n".join(lines))
    assert run_status(lines, [], tmp_path).state == state


def test_a_silent_run_is_stalled_only_well_after_its_slowest_tick(tmp_path):
    (tmp_path / "log.txt").write_text("starting at 0 kimg\n")
    written = time.time()
    os.utime(tmp_path / "log.txt", (written, written))
    stats = [{"Timing/total_s": 100.0}, {"Timing/total_s": 1100.0}, {"Timing/total_s": 50.0}]  # resumed: 0 again
    assert run_status(["starting at 0 kimg"], stats, tmp_path, now=written + STALE_AFTER_S - 1).state == "running"
    assert run_status(["starting at 0 kimg"], stats, tmp_path, now=written + 4999).state == "running"  # 5 x 1000 s
    stalled = run_status(["starting at 0 kimg"], stats, tmp_path, now=written + 5001)
    assert stalled.state == "stalled" and "1.4 h" in stalled.detail


def test_downsample_averages_consecutive_points_like_a_loop():
    xs, ys = list(range(1001)), [float(i * i) for i in range(1001)]
    got_x, got_y = downsample(xs, ys, max_points=100)
    size = 11  # ceil(1001 / 100)
    expected = [(sum(xs[i : i + size]) / len(xs[i : i + size]), sum(ys[i : i + size]) / len(ys[i : i + size]))
                for i in range(0, 1001, size)]  # fmt: skip
    assert got_x == pytest.approx([x for x, _ in expected]) and got_y == pytest.approx([y for _, y in expected])
    assert len(got_x) == 91  # 1001 points = 91 runs of 11
    assert downsample([1.0, 2.0], [3.0, 4.0], max_points=2) == ([1.0, 2.0], [3.0, 4.0])


def test_curves_skip_missing_and_non_finite_values_and_stay_short():
    stats = [{"kimg": i / 10, "Loss/G/main": 1.0, "Loss/D/main": 2.0} for i in range(5000)]
    stats[3]["Loss/G/main"] = float("nan")
    del stats[4]["Loss/G/main"]
    curve = stats_curve(stats, "Loss/G/main", "G")
    assert MAX_POINTS / 2 < len(curve.kimg) <= MAX_POINTS and all(v == 1.0 for v in curve.values)
    assert ratio_curve(stats[:3]).values == [2.0, 2.0, 2.0]
    recorded = [{"kimg": 1.0, "Loss/D_over_G": 7.0, "Loss/D/main": 2.0, "Loss/G/main": 1.0}]
    assert ratio_curve(recorded).values == [7.0]  # the loop's own ratio wins when it records one


def _run(stats=(), log=(), metrics=None, name="00000-x") -> Run:
    status = Status("running", "")
    return Run(Path(name), None, None, list(stats), 0, metrics or {}, list(log), [], None, [], [], status)


def test_runs_are_named_by_number_in_legends_and_by_folder_where_names_collide():
    a, b = _run(name="runs/00000-x"), _run(name="runs/00003-y")
    assert [(r.heading, r.label) for r in name_runs([a, b])] == [("00000-x", "00000"), ("00003-y", "00003")]
    c = _run(name="other/00000-x")
    assert [(r.heading, r.label) for r in name_runs([a, c])] == [("runs/00000-x", "runs/00000-x"),
                                                                 ("other/00000-x", "other/00000-x")]  # fmt: skip
    d = _run(name="runs/best-run")
    assert [r.label for r in name_runs([a, d])] == ["00000-x", "best-run"]


def test_plots_group_telemetry_by_signal_and_overlay_runs():
    a = _run([{"kimg": 1.0, "GPU0/util": 90.0, "GPU1/util": 80.0, "CPU/rss_gb": 3.0, "CPU/rss_gb/max": 3.5,
               "node1/GPU0/util": 70.0, "Loss/G/main": 1.0, "CPU/util": 50.0}])  # fmt: skip
    b = _run([{"kimg": 1.0, "Loss/G/main": 2.0}], name="00001-y")
    found = {p.title: p for p in plots(name_runs([a, b]))}
    assert [(run, c.label) for run, c in found["GPU utilisation (%)"].curves] == [("00000", "GPU0"), ("00000", "GPU1"),
                                                                                ("00000", "node1/GPU0")]  # fmt: skip
    assert [c.label for _, c in found["Process memory, resident (GB)"].curves] == ["CPU mean", "CPU max"]
    assert [c.label for _, c in found["CPU use of the training process (% of one core)"].curves] == ["CPU"]
    assert not any(title.endswith(("/max", "/min")) for title in found)
    assert [(run, c.values) for run, c in found["Losses"].curves] == [("00000", [1.0]), ("00001", [2.0])]
    assert "Adaptive augmentation" not in found  # no data, no figure


def test_pick_grids_spreads_evenly_and_keeps_first_and_last():
    picked = images.pick_grids(list(range(100)), limit=10)
    assert picked == [0, 11, 22, 33, 44, 55, 66, 77, 88, 99]
    assert images.pick_grids([1, 2, 3], limit=10) == [1, 2, 3]


def test_large_grids_become_small_thumbnails(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "fakes000100.png"
    PIL.Image.fromarray(rng.integers(0, 256, (1024, 2048, 3), dtype=np.uint8)).save(path)
    uri, width = images.grid_data_uri(path, images.THUMB_WIDTH)
    image = PIL.Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert width == image.width == 256 and image.height == 128
    assert len(uri) < path.stat().st_size / 20
    small = tmp_path / "small.png"
    PIL.Image.fromarray(np.zeros((8, 16), np.uint8)).save(small)
    uri, width = images.grid_data_uri(small, images.THUMB_WIDTH)
    assert width == 16 and uri.startswith("data:image/png;base64,")  # never upscaled; PNG is smaller when flat


def test_alerts_and_skipped_steps_tables():
    stats = [{"kimg": 4.0, "alerts": ["temperature 86 C: check cooling"], "Skipped/D_main": 0.0},
             {"kimg": 8.0, "alerts": "data-bound", "Skipped/G_main": 2.0, "Skipped/D_reg": 1.0}]  # fmt: skip
    run = _run(stats, ["tick 1", "warning: checkpoint ckpt-1 skipped: bad manifest"])
    assert tables.alerts(run) == [("4", "temperature 86 C: check cooling"), ("8", "data-bound"),
                                  ("", "warning: checkpoint ckpt-1 skipped: bad manifest")]  # fmt: skip
    assert tables.skipped_steps(run) == [("8", "D_reg", "1"), ("8", "G_main", "2")]


def test_file_names_sizes_and_kimg():
    assert snapshot_kimg("runs/a/snapshots/network-snapshot-000012.safetensors") == 12.0
    assert snapshot_kimg("network-snapshot-000000.016.safetensors") == 0.016 and snapshot_kimg(None) is None
    assert [tables.size_text(n) for n in (0, 1023, 1536, 5 * 2**20, 3 * 2**40)] == [
        "0 B", "1023 B", "1.5 KB", "5.0 MB", "3072.0 GB"]  # fmt: skip
    run = _run()
    run.checkpoints.append(StoredFile("ckpt-000004000", 4.0, 2048))
    assert tables.file_rows(run) == [("checkpoint", "ckpt-000004000", "4", "2.0 KB")]


def test_a_result_is_on_the_full_protocol_exactly_when_it_has_its_metrics_counts():
    from ganforge.metrics import METRICS

    for name, spec in METRICS.items():
        reals = (spec.num_real or 70_000) if spec.needs_real else 0  # a "_full" metric: all of a 70k dataset
        full = protocol(name, {"num_fake": spec.num_gen, "num_real": reals})
        assert full.full and full.text == full.counts, name
        assert not protocol(name, {"num_fake": spec.num_gen - 1, "num_real": reals}).full, name
        if spec.needs_real:
            assert not protocol(name, {"num_fake": spec.num_gen, "num_real": (spec.num_real or 1) - 1}).full, name
    assert protocol("swd16k", {"num_fake": 16384, "num_real": 16384}).counts == "16,384 fakes / 16,384 reals"
    assert protocol("fid10k", {"num_fake": 5000, "num_real": 10_000}).text == (
        "5k fakes / 10k reals, not the full protocol of 10k fakes / 10k reals"
    )
    assert not protocol("fid50k_full", {}).full and not protocol("mine", {"num_fake": 10**6, "num_real": 10}).full
