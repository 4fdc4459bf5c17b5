"""`--precision auto`, the default: the choice per device (bf16 on Ampere+ GPUs, fp32 on older ones and on every CPU,
with the CPU's bf16 flags named in the reason), where it reads the CPU's flags, that the config records the chosen
mode and the reason (so --dry-run shows it and a resumed run compares the mode itself), that a continued run keeps
the mode it was trained in, and that `doctor` resolves it the same way."""

import dataclasses
import json

import pytest
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge import devices as precision_module
from ganforge.cli import main as cli
from ganforge.config import Config, config_hash
from ganforge.config.describe import describe_derived
from ganforge.devices import pick_precision
from ganforge.train import resolve
from ganforge.train.resolver import DatasetFacts, Facts
from ganforge.train.resume import find_sources
from ganforge.train.rundir import RunKey

CASES = [
    ("cuda", (9, 0), frozenset(), "bf16"),
    ("cuda", (8, 0), frozenset(), "bf16"),
    ("cuda", (7, 5), frozenset(), "fp32"),
    ("cpu", None, frozenset({"avx2", "amx_bf16"}), "fp32"),  # bf16 trained worse on the digits at equal images
    ("cpu", None, frozenset({"avx512_bf16"}), "fp32"),
    ("cpu", None, frozenset({"avx2", "avx512bw"}), "fp32"),
]
FACTS = Facts(DatasetFacts(16, 3, 0, "squares"), 1, "cpu")


@pytest.mark.parametrize("device, capability, flags, mode", CASES)
def test_bf16_only_on_gpus_with_bf16_tensor_cores(device, capability, flags, mode):
    chosen, why = pick_precision(device, capability, flags)
    assert chosen == mode and why
    assert all(flag in why for flag in flags if flag.endswith("_bf16"))  # the reason names what the CPU has


def _cpuinfo(tmp_path, monkeypatch, flags: str) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    monkeypatch.setattr(precision_module, "CPUINFO", cpuinfo)


def test_cpu_flags_come_from_the_first_flags_line(tmp_path, monkeypatch):
    _cpuinfo(tmp_path, monkeypatch, "fpu sse2 amx_bf16")
    assert precision_module.cpu_flags() == {"fpu", "sse2", "amx_bf16"}
    monkeypatch.setattr(precision_module, "CPUINFO", tmp_path / "absent")
    assert precision_module.cpu_flags() == frozenset()


@pytest.mark.parametrize("flags", ["fpu amx_bf16", "fpu avx2"])
@pytest.mark.parametrize("given", [{"precision": "auto"}, {}])  # auto is also what no --precision means
def test_auto_is_resolved_into_the_config_with_its_reason(tmp_path, monkeypatch, flags, given):
    _cpuinfo(tmp_path, monkeypatch, flags)
    cfg = resolve(tiny_options(tmp_path / "d", tmp_path / "o", **given), FACTS)
    assert cfg.precision.mode == "fp32" and "native bf16" in cfg.precision.auto_reason
    assert "precision fp32 (auto: " in "\n".join(describe_derived(cfg))
    assert Config.from_json(cfg.to_json()) == cfg
    explicit = resolve(tiny_options(tmp_path / "d", tmp_path / "o", precision="fp32"), FACTS)
    assert config_hash(explicit) == config_hash(cfg) and not explicit.precision.auto_reason


def test_dry_run_prints_what_auto_chose_and_why(tmp_path, monkeypatch):
    _cpuinfo(tmp_path, monkeypatch, "fpu avx512_bf16")
    data = make_dataset(tmp_path / "squares")
    result = CliRunner().invoke(cli, [*tiny_args(data, tmp_path / "runs"), "--dry-run"])
    assert result.exit_code == 0, result.output
    chosen = json.loads(result.stdout)["precision"]
    assert chosen["mode"] == "fp32" and "avx512_bf16" in chosen["auto_reason"]
    assert "derived: precision fp32 (auto: on CPU, even with native bf16 (avx512_bf16): " in result.stderr


def test_a_continued_run_keeps_its_mode_on_other_hardware(tmp_path, monkeypatch):
    """The run folder of the same command (same --data and --cfg, with a checkpoint) decides, not this machine."""
    _cpuinfo(tmp_path, monkeypatch, "fpu avx2")
    options = tiny_options(tmp_path / "d", tmp_path / "runs", precision="auto")
    run = tmp_path / "runs" / "00000-squares-tiny-gpus1-batch8"
    (run / "checkpoints" / "ckpt-000000016").mkdir(parents=True)
    old = resolve(tiny_options(tmp_path / "d", tmp_path / "runs", precision="bf16"), FACTS)
    (run / "config.json").write_text(old.to_json())
    found = find_sources(RunKey.of(old))  # what observe() finds before resolving
    assert [r.path for r in found.runs] == [str(run)]
    cfg = resolve(options, dataclasses.replace(FACTS, found=found))
    assert cfg.precision.mode == "bf16" and run.name in cfg.precision.auto_reason
    assert config_hash(cfg) == config_hash(old)


def test_auto_bf16_gives_r3gan_its_released_bfloat16_stages(tmp_path, monkeypatch):
    """Where auto chooses bf16, an R3GAN preset computes its top stages in bfloat16 without autocast, as explicit
    --precision bf16 does; --fp16-res and an explicit mode still win."""
    monkeypatch.setattr("ganforge.train.precision.choose_auto", lambda device_type: ("bf16", "an Ampere GPU"))
    facts = dataclasses.replace(FACTS, device_type="cuda")
    options = tiny_options(tmp_path / "d", tmp_path / "o", preset="tiny-r3gan")
    assert resolve(options, facts).precision.fp16_res == 2
    assert resolve(dataclasses.replace(options, precision="bf16"), facts).precision.fp16_res == 2
    assert resolve(dataclasses.replace(options, fp16_res=1), facts).precision.fp16_res == 1
    assert resolve(dataclasses.replace(options, precision="fp32"), facts).precision.fp16_res == 0
