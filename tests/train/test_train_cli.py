"""`ganforge train` through the CLI: every artifact of a tiny run, resume by rerunning, and bad input."""

import json

import pytest
import torch
from click.testing import CliRunner
from safetensors.torch import load_file
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge.checkpoint.sizes import first_save_bytes
from ganforge.cli import main
from ganforge.config import Config
from ganforge.nets.configured import make_networks
from ganforge.snapshot import load_snapshot, save_discriminator, save_snapshot


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_cli") / "squares")


def _invoke(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_train_tiny_end_to_end_writes_every_artifact_and_resumes(data, tmp_path):
    outdir = tmp_path / "runs"
    result = _invoke(tiny_args(data, outdir, kimg=0.032))
    assert result.exit_code == 0, result.output
    (run,) = outdir.iterdir()
    assert run.name == "00000-squares-tiny-gpus1-batch8"
    config = json.loads((run / "config.json").read_text())
    assert config["preset"] == "tiny" and config["schedule"]["batch"] == 8 and config["data"]["resolution"] == 8
    env = json.loads((run / "env.json").read_text())
    assert env["torch"] and env["device"] == "cpu"
    records = [json.loads(line) for line in (run / "stats.jsonl").read_text().splitlines()]
    assert [r["kimg"] for r in records] == [0.016, 0.032]
    expected = ["Loss/G/main", "Loss/D/main", "Loss/D/r1", "Loss/G/pl", "Scores/real", "GradNorm/G_main", "LR/D_main",
                "Skipped/G_main", "Timing/img_per_s", "Timing/data_wait_share", "Memory/peak_gb"]  # fmt: skip
    for key in expected:
        assert key in records[0], key
    assert records[-1]["Skipped/G_main"] == 0
    log = (run / "log.txt").read_text()
    assert "Generator" in log and "Discriminator" in log and "derived: batch 8" in log and "done" in log
    assert list(run.glob("events.out.tfevents.*"))
    assert (run / "reals.png").is_file()
    assert not (run / "report.html").exists() and "report" not in log  # --no-report (tiny_args' default)
    assert sorted(p.name for p in run.glob("fakes*.png")) == ["fakes000000.000.png", "fakes000000.016.png",
                                                               "fakes000000.032.png"]  # fmt: skip
    snapshots = sorted((run / "snapshots").iterdir())
    assert len(snapshots) == 3
    G, meta = load_snapshot(snapshots[-1])
    assert G.resolution == 8 and G.img_channels == 1 and meta["kimg"] == 0.032
    checkpoints = sorted(p.name for p in (run / "checkpoints").glob("ckpt-*"))
    assert checkpoints == ["ckpt-000000000", "ckpt-000000016", "ckpt-000000032"]
    ema = load_file(run / "checkpoints" / "ckpt-000000032" / "tensors.safetensors")
    assert any(k.startswith("G_ema") for k in ema)
    written = (
        sum(f.stat().st_size for f in (run / "checkpoints" / "ckpt-000000016").iterdir()) + snapshots[0].stat().st_size
    )
    with torch.device("meta"):
        estimate = first_save_bytes(*make_networks(Config.from_json((run / "config.json").read_text())))
    assert 0.8 < estimate / written < 1.05, (
        estimate,
        written,
    )  # the free-space estimate; Adam moments exist after step 1

    # Rerunning the same command with a longer --kimg (0.041 is rounded up to 0.048, whole batches of 8) continues the
    # same run from its newest checkpoint; a memory layout change (--channels-last) does not change the training
    # maths, so it is accepted.
    result = _invoke(tiny_args(data, outdir, kimg=0.041, channels_last=True))
    assert result.exit_code == 0, result.output
    assert [p.name for p in outdir.iterdir()] == [run.name]
    assert "resuming at 0.032 kimg" in (run / "log.txt").read_text()
    assert (
        "(same training maths and data; its last command differed in --channels-last False (now True), --kimg "
        "0.032 (now 0.048))" in result.output
    )
    assert "derived: --kimg 0.041 rounded up to 0.048 kimg: 6 whole batches of 8" in (run / "log.txt").read_text()
    assert (run / "checkpoints" / "ckpt-000000048").is_dir()
    assert "Generator:" not in result.output and "derived:" not in result.output  # tables: log.txt only on resume
    assert (run / "log.txt").read_text().count("Generator:") == 2

    # The same command once more has nothing left to do, and says how to continue.
    result = _invoke(tiny_args(data, outdir, kimg=0.048))
    assert result.exit_code == 0, result.output
    assert "already at 0.048 kimg; nothing to do (raise --kimg to continue)" in result.output
    assert "done:" not in result.output and not (run / "checkpoints" / "ckpt-000000064").exists()

    # A changed loss weight does not continue the run: it would start a new one, and names the run it leaves alone.
    result = CliRunner().invoke(main, tiny_args(data, outdir, kimg=0.048, gamma=3, dry_run=True))
    assert result.exit_code == 0
    assert f"would start {outdir / '00001-squares-tiny-gpus1-batch8'}; {run} trained the same" in result.stderr
    assert "(--gamma 0.05 (now 3)); to continue it with these values, pass --resume" in result.stderr


def test_train_invalid_combinations_are_all_listed_exit_2(data, tmp_path):
    args = tiny_args(data, tmp_path, kimg=0.01, batch=6, batch_gpu=4, precision="fp16", cond=True, metrics="nope")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    out = result.output
    assert "--batch 6: not a whole number of --batch-gpu 4 x 1 process(es); pass --batch 4" in out
    assert "--precision fp16: needs a CUDA GPU" in out
    assert "--cond: the dataset has no labels" in out
    assert "--kimg" not in out  # any length is rounded up to whole batches
    assert "--metrics: unknown metric 'nope'" in out
    assert "Traceback" not in out
    assert not tmp_path.joinpath("00000-squares-tiny-gpus1-batch6").exists()


def test_train_fp16_on_cpu_is_refused_clearly(data, tmp_path):
    result = CliRunner().invoke(main, tiny_args(data, tmp_path, precision="fp16"))
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: --precision fp16: needs a CUDA GPU (no fast fp16 on CPU); use bf16 or fp32 on CPU"
    )


def test_train_kernels_choice_is_printed_and_triton_on_cpu_is_refused_clearly(data, tmp_path, monkeypatch):
    """--dry-run says which fused ops would run and why; Triton's kernels need CUDA (or Triton's interpreter, which
    only the tests switch on)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    result = _invoke(tiny_args(data, tmp_path / "runs", dry_run=True))
    assert "kernels: reference (auto: " in result.stderr
    assert json.loads(result.stdout)["runtime"]["kernels"] == "auto"  # as typed: a resumed run may choose anew
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path), "--kernels", "triton"])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: --kernels triton: ")
    assert "use --kernels reference or auto" in result.output or "Triton is not installed" in result.output


def test_train_missing_data_and_bad_preset_resolution_listed_together(data, tmp_path):
    result = CliRunner().invoke(main, tiny_args(tmp_path / "nope", tmp_path, precision="tf32"))
    assert result.exit_code == 2
    assert "nope" in result.output and "--precision tf32" in result.output
    result = CliRunner().invoke(main, tiny_args(data, tmp_path) + ["--cfg", "cifar"])
    assert result.exit_code == 2 and "--cfg cifar: made for 32x32, but --data is 8x8" in result.output


def test_train_dry_run_prints_resolved_config_and_writes_nothing(data, tmp_path):
    result = _invoke(tiny_args(data, tmp_path / "runs", dry_run=True))
    assert result.exit_code == 0
    config = json.loads(result.stdout)
    assert config["loss"]["r1_interval"] == 16 and config["model"]["mbstd_group"] == 4
    assert "derived: lazy regularisation: G lr x 0.8000" in result.stderr
    assert "derived: augmentation: none" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_dry_run_says_what_the_presets_do_not_derive(data, tmp_path):
    """auto keeps the gamma and EMA of its own batch when --batch replaces it (as the official code does); cifar's
    discriminator is not the official one."""
    args = tiny_args(data, tmp_path / "runs", dry_run=True)
    auto = _invoke([*args, "--cfg", "auto", "--batch", "16"])  # auto's batch at 8x8 is 32
    assert json.loads(auto.stdout)["loss"]["gamma"] == 0.0002 * 8**2 / 32
    assert "--cfg auto with --batch 16: gamma and the EMA half-life are those derived for the auto batch 32" in (
        auto.stderr
    )
    assert "--cfg" not in _invoke(args).stderr


def test_training_control_flags_reach_the_config_and_the_dry_run(data, tmp_path):
    flags = {"aug": "fixed", "aug_pipe": "bgcfnc", "ada_interval": 2, "aug_p": 0.3, "diffaug_policy": "cutout",
             "lr_schedule": "step", "lr_warmup_kimg": 0.016, "lr_steps": "0.016,0.024", "lr_gamma": 0.5,
             "d_warmup_kimg": 0.008, "d_steps": 2, "clip_grad": 1.0, "clip_grad_d": 0.5}  # fmt: skip
    result = _invoke(tiny_args(data, tmp_path / "runs", dry_run=True, **flags))
    assert result.exit_code == 0, result.output
    c = json.loads(result.stdout)
    assert c["augment"] == {"mode": "fixed", "target": 0.6, "ada_kimg": 20.0, "pipe": "bgcfnc", "ada_interval": 2,
                            "p": 0.3, "diffaug_policy": "cutout"}  # fmt: skip
    o, s = c["optim"], c["schedule"]
    assert (o["lr_schedule"], o["lr_warmup_kimg"], o["lr_steps"], o["lr_gamma"]) == ("step", 0.016, [0.016, 0.024], 0.5)
    assert (o["clip_grad_g"], o["clip_grad_d"], s["d_warmup_kimg"], s["d_steps"]) == (1.0, 0.5, 0.008, 2)
    for line in ("derived: augmentation: pipe bgcfnc at fixed p 0.3",
                 "derived: learning rate: x0.5 at each of 0.016, 0.024 kimg after a linear warm-up of 0.016",
                 "derived: phases: D alone for 0.008 kimg, then 2 D step(s) per G step"):  # fmt: skip
        assert line in result.stderr, line


def test_bad_training_control_values_name_the_flag_and_the_fix_exit_2(data, tmp_path):
    flags = {"ada_interval": 0, "aug_p": 1.5, "lr_min_ratio": 2, "lr_warmup_kimg": -0.008, "clip_grad": 0,
             "d_warmup_kimg": -0.008, "lr_steps": "0.016,x"}  # fmt: skip
    result = CliRunner().invoke(main, tiny_args(data, tmp_path, **flags))
    assert result.exit_code == 2 and "Traceback" not in result.output
    for text in ("--ada-interval 0: must be a positive number of D steps", "--aug-p 1.5: must be a probability",
                 "--aug-p: only used by --aug fixed; add --aug fixed", "--lr-min-ratio 2: must be in [0, 1]",
                 "--lr-warmup-kimg -0.008: must be >= 0", "--clip-grad 0: must be a positive gradient norm",
                 "--d-warmup-kimg -0.008: must be >= 0", "--lr-steps 0.016,x: not a comma-separated list"):  # fmt: skip
        assert text in result.output, text
    assert "--augpipe" not in CliRunner().invoke(main, ["train", "--help"]).output


def test_train_metrics_at_each_snapshot_are_appended_to_jsonl(data, tmp_path):
    result = _invoke(tiny_args(data, tmp_path, kimg=0.008, tick=0.008, metrics="swd16k"))
    assert result.exit_code == 0, result.output
    (run,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run / "metric-swd16k.jsonl").read_text().splitlines()]
    assert [r["snapshot"].rsplit("/", 1)[1] for r in records] == [
        "network-snapshot-000000.000.safetensors",
        "network-snapshot-000000.008.safetensors",
    ]
    assert all(r["results"]["swd16k_avg"] > 0 for r in records)
    assert "metric swd16k_avg" in (run / "log.txt").read_text()


def test_train_conditional_channels_last_run_uses_labels(tmp_path):
    from ganforge.data.build import BuildOptions, build

    src = tmp_path / "src"
    for label, brightness in (("a", 0.5), ("b", 0.9)):
        make_dataset(src / label, count=8, brightness=brightness)
    build(src, tmp_path / "labeled.zip", BuildOptions(resolution=8, labels="folders", channels=1, workers=0))
    result = _invoke(tiny_args(tmp_path / "labeled.zip", tmp_path / "runs", kimg=0.008, cond=True, channels_last=True))
    assert result.exit_code == 0, result.output
    (snapshot,) = sorted(tmp_path.glob("runs/*/snapshots/*.safetensors"))[-1:]
    G, _ = load_snapshot(snapshot)
    assert G.c_dim == 2
    labels = json.loads((snapshot.parent.parent / "labels.json").read_text())  # what `ganforge report` shows
    assert labels == {"kind": "classes", "counts": {"a": 8, "b": 8}}


def test_train_resume_from_snapshot_initialises_generator_weights_only(data, tmp_path):
    assert _invoke(tiny_args(data, tmp_path / "first", kimg=0.008)).exit_code == 0
    (snapshot,) = sorted(tmp_path.glob("first/*/snapshots/*.safetensors"))[-1:]
    result = _invoke(tiny_args(data, tmp_path / "second", kimg=0.008, resume=snapshot))
    assert result.exit_code == 0, result.output
    assert f"from {snapshot} (ganforge snapshot, sha256 " in result.output
    assert ": the weights of G_ema (G from its G_ema)" in result.output
    assert "starting fresh: D, optimisers, progress (kimg 0); the rest from --cfg tiny" in result.output
    (run,) = (tmp_path / "second").iterdir()
    start = load_file(run / "checkpoints" / "ckpt-000000000" / "tensors.safetensors")
    weights = load_file(snapshot)
    name = "synthesis.b8.torgb.weight"
    assert torch.equal(start[f"G/{name}"], weights[name]) and torch.equal(start[f"G_ema/{name}"], weights[name])


def test_train_starts_from_a_snapshot_and_a_discriminator_file(data, tmp_path):
    from ganforge.train import resolve
    from ganforge.train.build import build_networks

    G, D = build_networks(resolve(tiny_options(data, tmp_path / "x", seed=5)), torch.device("cpu"))
    save_snapshot(tmp_path / "G.safetensors", G, {})
    save_discriminator(tmp_path / "D.safetensors", D, {})
    files = f"{tmp_path / 'G.safetensors'},{tmp_path / 'D.safetensors'}"
    result = _invoke(tiny_args(data, tmp_path / "runs", kimg=0.008, resume=files))
    assert result.exit_code == 0, result.output
    assert "(ganforge snapshot, sha256 " in result.output and "; ganforge discriminator file, sha256 " in result.output
    assert "the weights of G_ema, D (G from its G_ema)" in result.output
    assert "starting fresh: optimisers, progress (kimg 0)" in result.output
    (run,) = (tmp_path / "runs").iterdir()
    start = load_file(run / "checkpoints" / "ckpt-000000000" / "tensors.safetensors")
    assert torch.equal(start["D/b8.conv0.weight"], D.state_dict()["b8.conv0.weight"])
    assert torch.equal(start["G_ema/synthesis.b8.torgb.weight"], G.state_dict()["synthesis.b8.torgb.weight"])
    twice = f"{tmp_path / 'G.safetensors'},{tmp_path / 'G.safetensors'}"
    result = _invoke(tiny_args(data, tmp_path / "again", kimg=0.008, resume=twice))
    assert result.exit_code == 2 and "two files hold G_ema" in result.output
