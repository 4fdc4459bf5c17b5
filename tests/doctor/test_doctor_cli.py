"""`ganforge doctor` end to end on this (CPU) machine, through the real command line."""

import json
import shutil
import subprocess
import sys

import numpy as np
from click.testing import CliRunner
from PIL import Image

from ganforge import memory
from ganforge.cli import main
from ganforge.data.build import BuildOptions, build
from ganforge.doctor import functional, system
from ganforge.doctor import report as r


def _doctor(*args):
    return subprocess.run(
        [sys.executable, "-m", "ganforge", "doctor", "--quick", *args], capture_output=True, text=True, timeout=120
    )


def _tiny_dataset(folder, count=6, size=8, seed=0):
    folder.mkdir()
    rng = np.random.default_rng(seed)
    for i in range(count):
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    return folder


def test_cpu_path_json_only_with_data(tmp_path):
    data = _tiny_dataset(tmp_path / "images")
    proc = _doctor("--json", "--data", str(data), "--outdir", str(tmp_path / "runs" / "new"))
    document = json.loads(proc.stdout)  # --json prints nothing but the document
    checks = {check["id"]: check for check in document["checks"]}
    assert proc.returncode == document["summary"]["exit_code"], proc.stderr
    assert document["options"]["precision"] == "auto"  # train's default, resolved as train resolves it
    assert set(document["options"]) == {"data", "outdir", "quick", "precision"}  # what was checked, not --json
    assert "(auto: " in checks["functional.precision"]["value"], checks["functional.precision"]
    for cid in ["environment.torch", "functional.stylegan2", "functional.gloo_all_reduce", "data.open", "data.read"]:
        assert checks[cid]["status"] == "ok", checks[cid]
    assert checks["system.disk"]["data"]["path"] == str(tmp_path)  # nearest existing folder of a new --outdir
    assert checks["data.open"]["data"]["images"] == 6 and checks["data.open"]["data"]["resolution"] == 8
    assert checks["functional.gloo_all_reduce"]["data"]["bus_bandwidth_gbs"] > 0
    if checks["gpu.visible"]["data"]["torch"] == 0:
        # without a GPU: said plainly, once, as a warning; no per-GPU lines; everything else still ran
        assert checks["gpu.visible"]["status"] == "warning"
        assert "no CUDA GPU visible" in checks["gpu.visible"]["value"]
        assert not [cid for cid in checks if cid.startswith("gpu.") and cid != "gpu.visible"]
        assert proc.returncode == 1
        assert {c["status"] for c in document["checks"] if c["status"] != "ok"} <= {"warning", "skipped"}


def test_bad_data_path_fails_with_exit_2_and_a_clear_message(tmp_path, monkeypatch):
    # the slow process-spawning checks are covered above; here only the CLI's handling of a bad --data matters
    monkeypatch.setattr(functional, "functional_checks", lambda gpus, precision, quick, auto_reason: [])
    result = CliRunner().invoke(main, ["doctor", "--quick", "--data", str(tmp_path / "missing")])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.splitlines()
    [line] = [line for line in lines if line.startswith("FAIL")]
    assert "dataset" in line and "missing does not exist" in line
    assert "fix: pass a folder of images" in lines[lines.index(line) + 1]
    assert lines[-1].endswith("-> exit 2")


def test_data_checks_on_a_tiny_dataset_and_a_bad_one(tmp_path):
    data = _tiny_dataset(tmp_path / "images", count=3)
    (tmp_path / "classes").mkdir()
    for seed, label in enumerate(("cat", "dog")):
        _tiny_dataset(tmp_path / "classes" / label, count=2, seed=seed)
    opened, rate = system.data_checks(data, quick=True)
    assert opened.status == r.OK and "3 images, 3x8x8" in opened.value
    assert rate.data["images"] == 3 and rate.data["images_per_second"] > 0
    # labelled archives made with the data helper's own builder, in both of its formats
    for fmt in ("zip", "fast"):
        archive = tmp_path / f"labelled.{fmt}"
        build(data.parent / "classes", archive, BuildOptions(resolution=8, labels="folders", format=fmt, workers=0))
        opened, rate = system.data_checks(archive, quick=True)
        assert opened.status == r.OK and opened.data["label_dim"] == 2 and opened.data["images"] == 4, opened
        assert rate.status in (r.OK, r.WARNING) and rate.data["images"] == 4
    (tmp_path / "not-images.txt").write_text("hello")
    [bad] = system.data_checks(tmp_path / "not-images.txt", quick=True)
    assert bad.status == r.FAILURE and bad.value.startswith("--data:")
    empty = tmp_path / "empty"
    empty.mkdir()
    [none] = system.data_checks(empty, quick=True)
    assert none.status == r.FAILURE


def test_system_rules(tmp_path):
    assert system.cores_check(2, 2, 0).status == r.OK
    assert system.cores_check(8, 64, 4).status == r.WARNING
    assert system.cores_check(32, 64, 8).status == r.OK
    meminfo = memory.parse_meminfo("MemTotal:       16318480 kB\nMemAvailable:    1000000 kB\nHugePages_Total: 0\n")
    assert meminfo == {"MemTotal": 16318480 * 1024, "MemAvailable": 1000000 * 1024, "HugePages_Total": 0}
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:       16318480 kB\nMemAvailable:    1000000 kB\n")
    assert system.memory_check(fake).status == r.WARNING
    assert system.memory_check(tmp_path / "nope").status == r.SKIPPED
    assert system.shm_check(tmp_path / "nope").status == r.SKIPPED
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert system.disk_check(a_file).status == r.FAILURE
    assert system.disk_check(tmp_path / "a" / "b").data["path"] == str(tmp_path)


def test_small_shm_is_a_warning(tmp_path, monkeypatch):
    usage = shutil._ntuple_diskusage(64 * 2**20, 0, 64 * 2**20)  # Docker's default /dev/shm
    monkeypatch.setattr(system.shutil, "disk_usage", lambda path: usage)
    check = system.shm_check(tmp_path)
    assert check.status == r.WARNING and "--shm-size" in check.fix
