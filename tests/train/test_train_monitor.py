"""The observers in real tiny training runs: CPU telemetry per tick in stats.jsonl, TensorBoard and the status line;
an NVML error mid-run as one warning; `--profile 2` writing a trace and a summary, and leaving the checkpoints
byte-identical to those of a run without profiler and telemetry."""

import contextlib
import gzip
import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from train_helpers import make_dataset, tiny_args, tiny_options

from fake_nvml import FakeNvml, reading
from ganforge import checkpoint
from ganforge.cli import main
from ganforge.monitor import profiler, telemetry
from ganforge.monitor.readers import GpuReader
from ganforge.train import resolve, run


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("data") / "squares")


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]


def test_cpu_telemetry_reaches_stats_tensorboard_and_the_status_line(data, tmp_path):
    assert run(resolve(tiny_options(data, tmp_path, kimg=0.016, tick=0.008, snap=50, monitor_interval=0.02))) == 0
    (run_dir,) = tmp_path.iterdir()
    records = _records(run_dir)
    for record in records:
        for key in ("CPU/util", "CPU/util/max", "CPU/rss_gb", "CPU/avail_gb/min", "Timing/fwd_bwd_share",
                    "Timing/optimizer_share", "Timing/allreduce_share", "Loss/D_over_G"):  # fmt: skip
            assert key in record, key
        assert 0.01 < record["CPU/rss_gb"] < 64 and record["CPU/util/min"] <= record["CPU/util/max"]
        assert record["Loss/D_over_G"] == pytest.approx(record["Loss/D/main"] / record["Loss/G/main"])
        # the timed sections and the data wait are parts of the tick (which also holds snapshots and checkpoints)
        shares = sum(record[f"Timing/{name}_share"] for name in ("fwd_bwd", "optimizer", "allreduce", "data_wait"))
        assert 0.1 < shares <= 1.0 and record["Timing/fwd_bwd_share"] > record["Timing/allreduce_share"]
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert {"CPU/util", "CPU/rss_gb", "Loss/D_over_G", "Timing/fwd_bwd_share"} <= set(events.Tags()["scalars"])
    ticks = [line for line in (run_dir / "log.txt").read_text().splitlines() if line.startswith("tick ")]
    assert len(ticks) == 2 and all(" cpu " in line and " rss " in line for line in ticks)


def test_an_nvml_error_mid_run_is_one_warning_and_the_run_finishes(data, tmp_path, monkeypatch):
    nvml, ticks, tick = FakeNvml({"GPU-a": [reading(util=90)]}, repeat_last=True), [], telemetry.Monitor.tick

    @contextlib.contextmanager
    def fake_reader(device):
        yield GpuReader(nvml, ["GPU-a"]), None

    def lose_the_gpu_at_the_first_trained_tick(monitor, stats):
        nvml.lost = len(ticks) >= 1  # the readings taken so far are kept; every later one fails
        ticks.append(tick(monitor, stats))
        return ticks[-1]

    monkeypatch.setattr(telemetry, "open_reader", fake_reader)
    monkeypatch.setattr(telemetry.Monitor, "tick", lose_the_gpu_at_the_first_trained_tick)
    options = tiny_options(data, tmp_path, kimg=0.024, tick=0.008, snap=50, monitor_interval=0.01)
    assert run(resolve(options)) == 0
    run_dir = next(tmp_path.iterdir())
    log = (run_dir / "log.txt").read_text()
    assert log.count("warning: telemetry stopped (NVMLError: GPU is lost)") == 1
    records = _records(run_dir)
    assert records[0]["GPU0/util"] == 90 and records[0]["GPU0/temp/max"] == 70 and "gpu 90% 70C" in log
    assert len(records) == 3 and not any("GPU0/util" in r for r in records[1:])


def _label_rows(summary: str) -> dict[str, str]:
    """{label: its row} from summary.txt's "time per label" table."""
    table = summary.split("share of the window:")[1].split("top 20")[0]
    rows = [line.strip() for line in table.splitlines()[2:] if line.startswith("  ")]
    return {name: row for row in rows for name in (*profiler.LABELS, profiler.OTHER, "total") if row.startswith(name)}


def _share(row: str) -> float:
    return float(row.split("%")[0].split()[-1])


def _checkpoint_bytes(run_dir: Path, tag: str) -> dict[str, bytes]:
    folder = run_dir / "checkpoints" / f"ckpt-{tag}"
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_profile_writes_trace_and_summary_and_a_profiled_run_resumes_bitwise_and_monitoring_may_change(
    data, tmp_path, capfd
):
    profiled, plain = tmp_path / "profiled", tmp_path / "plain"
    steps = {"tick": 0.032, "snap": 50, "monitor_interval": 0.05}  # 4 steps of warm-up, then steps 4 and 5 (with G reg)
    assert run(resolve(tiny_options(data, profiled, kimg=0.048, profile=2, **steps))) == 0
    err = capfd.readouterr().err
    assert "USDT" not in err and "profiler_start" not in err and "CPUAllocator" not in err
    run_dir = next(profiled.iterdir())
    with gzip.open(run_dir / "profile" / profiler.TRACE_NAME, "rt") as file:
        trace = json.load(file)
    names = {event.get("name") for event in trace["traceEvents"]}
    assert {"step", "data", "G main", "G reg", "D main", "all-reduce", "EMA"} <= names
    assert not any("Input Dims" in event.get("args", {}) for event in trace["traceEvents"])  # no shapes by default
    summary = (run_dir / "profile" / "summary.txt").read_text()
    assert summary.startswith(
        "ganforge profile: 2 steps (2 asked; D reg did not run: the run ended first) from 0.032 kimg"
    )
    rows = _label_rows(summary)
    labelled = sum(_share(rows[name]) for name in profiler.LABELS if name != "D reg")
    rounding = 0.05 * len(profiler.LABELS)  # each share is printed with one decimal
    assert 85 < labelled <= 100 + rounding and _share(rows["total"]) == pytest.approx(100, abs=0.05)
    assert _share(rows["G main"]) > 0 and _share(rows["G reg"]) > 0 and _share(rows["D main"]) > 0
    # R1 runs every 16 steps: the run ended (step 6) before the window could reach one, and the summary says so.
    assert rows["D reg"] == "D reg        not run in these 2 steps: it runs every 16 steps; the run ended first"
    assert "top 20 operators by self time" in summary and "aten::" in summary
    log = (run_dir / "log.txt").read_text()
    assert "profile of 2 steps (2 asked; D reg did not run: the run ended first)" in log

    # The checkpoint after the profiled steps is the one a run without profiler and telemetry writes, byte for byte,
    # so resuming from it continues exactly.
    assert run(resolve(tiny_options(data, plain, kimg=0.048, tick=0.032, snap=50, monitor_interval=0))) == 0
    plain_dir = next(plain.iterdir())
    assert _checkpoint_bytes(run_dir, "000000048") == _checkpoint_bytes(plain_dir, "000000048")
    record = _records(plain_dir)[-1]  # telemetry off: no hardware columns, the loss ratio stays
    assert not any(k.startswith(("CPU/", "GPU", "Timing/fwd")) for k in record) and "Loss/D_over_G" in record

    # The monitoring settings are no training maths: changing them on resume continues the same run.
    assert (
        run(resolve(tiny_options(data, plain, kimg=0.056, tick=0.032, snap=50, monitor_interval=0.05, profile=1))) == 0
    )
    assert [p.name for p in plain.iterdir()] == [plain_dir.name]
    log = (plain_dir / "log.txt").read_text()
    assert "resuming at 0.048 kimg" in log and "warning: the profiler did not start" in log
    assert checkpoint.load_latest(plain_dir / "checkpoints")["loop"]["cur_nimg"] == 56


def test_monitoring_flags_reach_the_run_config_and_a_profile_that_cannot_start_is_refused(data, tmp_path):
    def dry_run(**flags):
        return CliRunner().invoke(main, tiny_args(data, tmp_path, dry_run=True, **flags))

    default = json.loads(dry_run().stdout)["run"]
    assert default["monitor_interval"] == 2.0 and default["profile"] == 0
    given = json.loads(dry_run(monitor_interval=0.5, profile=3).stdout)["run"]
    assert given["monitor_interval"] == 0.5 and given["profile"] == 3 and not given["profile_detail"]
    assert json.loads(dry_run(profile=3, profile_detail=True).stdout)["run"]["profile_detail"]
    alone = dry_run(profile_detail=True)
    assert alone.exit_code == 2 and "error: --profile-detail: only with --profile STEPS" in alone.output
    for detail in (False, True):  # the switch reaches the run's profiler
        cfg = resolve(tiny_options(data, tmp_path, profile=3, profile_detail=detail))
        assert telemetry.Monitor(cfg, torch.device("cpu"), tmp_path, 0, print).profiler.detail is detail
    refused = dry_run(kimg=0.016, tick=0.016, profile=3)
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "error: --profile 3: the profiler starts after the first tick (--tick 0.016 kimg" in refused.output
    assert dry_run(monitor_interval=-1).exit_code == 2 and dry_run(profile=-1).exit_code == 2
