"""Hostile values and destinations for the commands that write outputs (generate, report, export, metrics): numbers
that are NaN, infinite or out of range, requests that do not fit in memory, typed values too long to repeat, and
destinations that are not regular files, in unwritable folders or on a full disk. Each is one `error:` line, exit 2,
in bounded time and memory, with nothing written; a damaged run folder is reported (exit 0) with warnings."""

import io
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hostile_harness import Case, assert_all_rejected

from ganforge.metrics.features import FeatureStats
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

TINY = dict(z_dim=8, w_dim=8, mapping_layers=2, channel_max=2)


def _snapshot(path: Path, resolution: int) -> str:
    """A generator with 1-2 channels per layer: a few hundred KB at 256 px, and fast."""
    torch.manual_seed(0)
    save_snapshot(path, Generator(resolution=resolution, channel_base=resolution, **TINY), {})
    return str(path)


def _run_folder(folder: Path) -> str:
    """A run folder as train leaves one (the files report reads)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"preset": "tiny", "schedule": {"kimg": 0.016}}))
    (folder / "log.txt").write_text("starting at 0 kimg\ndone: 0.016 kimg\n")
    (folder / "stats.jsonl").write_text(json.dumps({"kimg": 0.008, "Loss/G/main": 1.0}) + "\n")
    return str(folder)


def _special(path: Path, kind: str) -> str:
    """A FIFO, a device node (root only: /dev/full's numbers, made here, so no real device is at risk), a folder, a
    symbolic link or a file standing where an output goes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        os.mknod(path, 0o20600, os.makedev(1, 7))
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink":
        path.symlink_to(path.with_name("target-of-link"))
    return str(path)


def _generate(net: str, out: str, *args: str) -> tuple[str, ...]:
    return ("generate", "--network", net, "--outdir", out, "--device", "cpu", *args)


def _generate_cases(tmp: Path) -> list[Case]:
    net16, net256 = _snapshot(tmp / "g16.safetensors", 16), _snapshot(tmp / "g256.safetensors", 256)
    (tmp / "file").write_text("a regular file")
    _special(tmp / "fifo-out" / "seed0000001.png", "fifo")
    _special(tmp / "link-out" / "grid.png", "symlink")
    # the first case of the worker also pays for importing torch and the generate modules
    cases = [Case(f"generate --trunc {v}", _generate(net16, "g", "--seeds", "1", "--trunc", v), absent=("g",),
                  seconds=30.0 if v == "nan" else 10.0) for v in ("nan", "inf", "-inf", "1e300")]  # fmt: skip
    cases += [
        Case("generate --rotate nan", _generate(net16, "g", "--seeds", "1", "--rotate", "nan"), absent=("g",)),
        Case(
            "generate --fps nan",
            _generate(net16, "g", "--seeds", "1,2", "--interp", "2", "--fps", "nan"),
            absent=("g",),
        ),
        Case(
            "generate --translate inf,0", _generate(net16, "g", "--seeds", "1", "--translate", "inf,0"), absent=("g",)
        ),  # fmt: skip
        Case(
            "generate --grid 1000x1000 at 256 px",
            _generate(net256, "g", "--seeds", "0-999999", "--grid", "1000x1000"),
            absent=("g",),
        ),  # fmt: skip
        Case(
            "generate --interp held in memory",
            _generate(net256, "g", "--seeds", "0-3", "--interp", "200000", "--interp-format", "webp"),
            absent=("g",),
        ),  # fmt: skip
        Case(
            "generate --batch beyond memory",
            _generate(net256, "g", "--seeds", "0-99999", "--batch", "100000"),
            absent=("g",),
        ),  # fmt: skip
        Case("generate --seeds 5000 digits", _generate(net16, "g", "--seeds", "9" * 5000), absent=("g",)),
        Case(
            "generate --seeds 10^5 bad parts",
            _generate(net16, "g", "--seeds", ",".join(["x"] * 100_000)),
            absent=("g",),
        ),  # fmt: skip
        Case("generate --seeds negative", _generate(net16, "g", "--seeds", "-5"), absent=("g",)),
        Case(
            "generate --seeds above 2^32-1", _generate(net16, "g", "--seeds", "4294967290-4294967296"), absent=("g",)
        ),  # fmt: skip
        Case("generate --seeds empty", _generate(net16, "g", "--seeds", ""), absent=("g",)),
        Case("generate --seeds huge range", _generate(net16, "g", "--seeds", "0-4294967295"), absent=("g",)),
        Case(
            "generate --style-mix huge table", _generate(net16, "g", "--style-mix", "0-2000", "0-2000"), absent=("g",)
        ),  # fmt: skip
        Case(
            "generate --grid 5000 digits",
            _generate(net16, "g", "--seeds", "1", "--grid", "1" * 5000 + "x2"),
            absent=("g",),
        ),  # fmt: skip
        Case(
            "generate --interp 10^30", _generate(net16, "g", "--seeds", "1,2", "--interp", str(10**30)), absent=("g",)
        ),  # fmt: skip
        Case("generate --batch 10^30", _generate(net16, "g", "--seeds", "1", "--batch", str(10**30)), absent=("g",)),
        Case(
            "generate --trunc-cutoff 10^30",
            _generate(net16, "g", "--seeds", "1", "--trunc-cutoff", str(10**30)),
            absent=("g",),
        ),
        Case("generate --class 10^30", _generate(net16, "g", "--seeds", "1", "--class", str(10**30)), absent=("g",)),
        Case("generate --outdir under a file", _generate(net16, str(tmp / "file" / "out"), "--seeds", "1")),
        Case(
            "generate output is a FIFO",
            _generate(net16, "fifo-out", "--seeds", "0-1"),
            absent=("fifo-out/seed0000000.png",),
        ),  # fmt: skip
        Case(
            "generate output is a symlink",
            _generate(net16, "link-out", "--seeds", "0", "--grid", "1x1"),
            absent=("link-out/target-of-link",),
        ),  # fmt: skip
    ]
    if os.geteuid() == 0:
        _special(tmp / "device-out" / "grid.png", "device")
        cases.append(Case("generate output is a device", _generate(net16, "device-out", "--seeds", "0", "--grid",
                                                                   "1x1")))  # fmt: skip
    return cases


def _report_cases(tmp: Path) -> list[Case]:
    run = _run_folder(tmp / "runs" / "00000-x")
    cases = []
    for kind in ("fifo", "symlink", "folder") + (("device",) if os.geteuid() == 0 else ()):
        out = _special(tmp / f"report-{kind}" / "page.html", kind)
        cases.append(Case(f"report --out {kind}", ("report", run, "--out", out), absent=(f"{run}/report.html",)))
    cases += [
        Case("report --out under a file", ("report", run, "--out", str(tmp / "file" / "page.html"))),
        Case("report --out in a missing folder", ("report", run, "--out", str(tmp / "missing" / "page.html"))),
        Case("report RUN not a run", ("report", str(tmp / "file"))),
    ]
    damaged = Path(_run_folder(tmp / "runs" / "00001-damaged"))
    (damaged / "config.json").write_text("[]")
    (damaged / "stats.jsonl").write_bytes(b"garbage\n" + b"[" * 100_000 + b"\n" + b'{"kimg": ' + b"9" * 5000 + b"}\n")
    (damaged / "metric-fid50k_full.jsonl").write_bytes(b'{"results": [1]}\n' + os.urandom(2000))
    (damaged / "fakes000000.008.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(100))
    _special(damaged / "env.json", "fifo")
    cases.append(Case("report of a damaged run", ("report", str(damaged)), exit_code=0, seconds=60.0))
    huge = Path(_run_folder(tmp / "runs" / "00002-huge"))
    for name in ("config.json", "stats.jsonl", "log.txt", "metric-fid50k_full.jsonl", "fakes000000.008.png"):
        with open(huge / name, "ab") as f:  # sparse: gigabytes that take no disk
            f.truncate(2**31)
    cases.append(Case("report of a run of huge files", ("report", str(huge)), exit_code=0, seconds=60.0))
    return cases


def _export_cases(tmp: Path) -> list[Case]:
    net = str(tmp / "g16.safetensors")
    out = str(tmp / "exp" / "G.pt2")
    (tmp / "exp").mkdir()
    fifo = _special(tmp / "exp-fifo" / "G.pt2", "fifo")
    _special(tmp / "exp-link" / "G.pt2.json", "symlink")

    def export(*args: str) -> tuple[str, ...]:
        return ("export", "--network", net, "--format", "pt2", *args)

    return [
        Case("export --trunc nan", export("--out", out, "--trunc", "nan"), absent=(out,)),
        Case("export --max-abs-diff nan", export("--out", out, "--max-abs-diff", "nan"), absent=(out,)),
        Case("export --max-fid-delta inf", export("--out", out, "--max-fid-delta", "inf"), absent=(out,)),
        Case("export --batch 5000 digits", export("--out", out, "--batch", "9" * 5000), absent=(out,)),
        Case("export --check 10^30", export("--out", out, "--check", str(10**30)), absent=(out,)),
        Case("export --seed 2^64", export("--out", out, "--seed", str(2**64)), absent=(out,)),
        Case("export --check-fid 10^30", export("--out", out, "--check-fid", str(10**30)), absent=(out,)),
        Case("export --calib 10^30", export("--out", out, "--calib", str(10**30)), absent=(out,)),
        Case("export --qat-kimg nan", export("--out", out, "--qat-kimg", "nan"), absent=(out,)),
        Case("export --out FIFO", export("--out", fifo)),
        Case(
            "export card is a symlink",
            export("--out", str(tmp / "exp-link" / "G.pt2")),
            absent=("exp-link/G.pt2", "exp-link/target-of-link"),
        ),  # fmt: skip
        Case("export --out under a file", export("--out", str(tmp / "file" / "G.pt2"))),
    ]


def _metrics_cases(tmp: Path) -> list[Case]:
    (tmp / "reals").mkdir()
    _special(tmp / "metrics-fifo" / "metric-fid50k_full.jsonl", "fifo")
    sources = ("metrics", "--fake", str(tmp / "reals"), "--real", str(tmp / "reals"), "--metrics", "fid50k_full")
    return [
        Case("metrics result file is a FIFO", (*sources, "--outdir", str(tmp / "metrics-fifo"))),
        Case("metrics --outdir under a file", (*sources, "--outdir", str(tmp / "file" / "out"))),
    ]


def test_hostile_output_options_and_destinations_are_one_line_each(tmp_path):
    cases = _generate_cases(tmp_path) + _report_cases(tmp_path) + _export_cases(tmp_path) + _metrics_cases(tmp_path)
    outcomes = assert_all_rejected(cases, tmp_path)
    by_name = {o.name: o for o in outcomes}
    assert "a 256000x256000 image needs 183 GiB" in by_name["generate --grid 1000x1000 at 256 px"].stderr
    assert "must be a truncation psi from -2 to 2" in by_name["generate --trunc nan"].stderr
    assert "is a FIFO" in by_name["report --out fifo"].stderr
    assert "not a ganforge run folder" in by_name["report RUN not a run"].stderr
    assert "warning: " in by_name["report of a damaged run"].stderr
    assert (tmp_path / "runs" / "00001-damaged" / "report.html").is_file()
    assert by_name["report of a run of huge files"].peak_rss_mb < 2000


FULL_DISK = """
import resource, signal, sys
from click.testing import CliRunner
from ganforge.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (400, 400))
for args in sys.argv[1:]:
    result = CliRunner().invoke(main, args.split("|"))
    print(result.exit_code, result.stderr.strip().replace("\\n", " // "))
"""


def test_a_full_disk_is_one_line_and_leaves_no_partial_output(tmp_path):
    """A file-size limit stands in for a full disk (the same failing write); the page and the grid are larger."""
    net = _snapshot(tmp_path / "g16.safetensors", 16)
    run = _run_folder(tmp_path / "runs" / "00000-x")
    commands = [f"generate|--network|{net}|--outdir|{tmp_path / 'g'}|--seeds|0-15|--grid|4x4|--device|cpu",
                f"report|{run}|--out|{tmp_path / 'page.html'}"]  # fmt: skip
    result = subprocess.run([sys.executable, "-c", FULL_DISK, *commands], capture_output=True, text=True, timeout=300)
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout + result.stderr[-2000:]
    assert lines[0] == f"2 error: {tmp_path / 'g' / 'grid.png'}: cannot write (File too large); the file is larger " \
                       "than this file system or process may write; write elsewhere"  # fmt: skip
    assert lines[1].startswith(f"2 error: {tmp_path / 'page.html'}: cannot write (File too large)")
    assert list((tmp_path / "g").iterdir()) == [] and not (tmp_path / "page.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g", "g16.safetensors", "runs"]


def test_a_cache_that_cannot_be_written_only_warns(tmp_path):
    stats = FeatureStats(4, True, "cpu")
    stats.append(torch.ones(3, 4))
    stats.finalize(3)
    (tmp_path / "file").write_text("x")
    with pytest.warns(UserWarning, match="stats.npz: the reference statistics are not cached"):
        stats.save(tmp_path / "file" / "stats.npz", {"count": 3})
    stats.save(tmp_path / "stats.npz", {"count": 3})
    assert FeatureStats.load(tmp_path / "stats.npz", True, "cpu").count == 3


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _claims_huge_outer() -> bytes:
    """A stats file whose `outer` header declares 10^6 x 10^6 float64 (8 TB) in a few bytes."""
    good = _npz(sum=np.zeros(4), outer=np.zeros((4, 4)), count=np.array(3))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "outer.npy":
                data = data.replace(b"(4, 4)", b"(1000000, 1000000)")
            dst.writestr(info.filename, data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("truncated", lambda: _npz(sum=np.zeros(4), outer=np.zeros((4, 4)), count=np.array(3))[:300]),
        ("not a zip", lambda: b"not a zip at all"),
        ("huge declared array", _claims_huge_outer),
        ("compressed", lambda: (lambda b: np.savez_compressed(b, sum=np.zeros(4)) or b.getvalue())(io.BytesIO())),
        ("wrong shapes", lambda: _npz(sum=np.zeros(4), outer=np.zeros((3, 3)), count=np.array(3))),
        (
            "object array",
            lambda: _npz(sum=np.array([None] * 4, dtype=object), outer=np.zeros((4, 4)), count=np.array(3)),
        ),  # fmt: skip
    ],
)
def test_a_damaged_statistics_cache_is_computed_again(tmp_path, name, content):
    path = tmp_path / "stats.npz"
    path.write_bytes(content())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert FeatureStats.load(path, False, "cpu") is None
    assert any("cached statistics" in str(w.message) and "computing them again" in str(w.message) for w in caught)
