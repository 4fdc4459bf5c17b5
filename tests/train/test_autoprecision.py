"""`--precision auto`: the choice per device, where it reads the CPU's flags, that the config records the chosen mode
and the reason (so --dry-run shows it and a resumed run compares the mode itself), and that a continued run keeps
the mode it was trained in."""

import json

import pytest
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge.cli import main as cli
from ganforge.config import Config, config_hash, describe_derived
from ganforge.train import precision as precision_module
from ganforge.train import resolve
from ganforge.train.precision import pick_precision
from ganforge.train.resolver import DatasetFacts, Facts

CASES = [
    ("cuda", (9, 0), frozenset(), "bf16"),
    ("cuda", (8, 0), frozenset(), "bf16"),
    ("cuda", (7, 5), frozenset(), "fp32"),
    ("cpu", None, frozenset({"avx2", "amx_bf16"}), "bf16"),
    ("cpu", None, frozenset({"avx512_bf16"}), "bf16"),
    ("cpu", None, frozenset({"avx2", "avx512bw"}), "fp32"),
]
FACTS = Facts(DatasetFacts(16, 3, 0, "squares"), 1, "cpu")


@pytest.mark.parametrize("device, capability, flags, mode", CASES)
def test_bf16_only_where_the_hardware_has_it_natively(device, capability, flags, mode):
    chosen, why = pick_precision(device, capability, flags)
    assert chosen == mode and why


def _cpuinfo(tmp_path, monkeypatch, flags: str) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    monkeypatch.setattr(precision_module, "CPUINFO", cpuinfo)


def test_cpu_flags_come_from_the_first_flags_line(tmp_path, monkeypatch):
    _cpuinfo(tmp_path, monkeypatch, "fpu sse2 amx_bf16")
    assert precision_module.cpu_flags() == {"fpu", "sse2", "amx_bf16"}
    monkeypatch.setattr(precision_module, "CPUINFO", tmp_path / "absent")
    assert precision_module.cpu_flags() == frozenset()


@pytest.mark.parametrize("flags, mode", [("fpu amx_bf16", "bf16"), ("fpu avx2", "fp32")])
def test_auto_is_resolved_into_the_config_with_its_reason(tmp_path, monkeypatch, flags, mode):
    _cpuinfo(tmp_path, monkeypatch, flags)
    cfg = resolve(tiny_options(tmp_path / "d", tmp_path / "o", precision="auto"), FACTS)
    assert cfg.precision.precision == mode and "native bf16" in cfg.precision.auto_reason
    assert f"precision {mode} (auto: " in "\n".join(describe_derived(cfg))
    assert Config.from_json(cfg.to_json()) == cfg
    explicit = resolve(tiny_options(tmp_path / "d", tmp_path / "o", precision=mode), FACTS)
    assert config_hash(explicit) == config_hash(cfg) and not explicit.precision.auto_reason


def test_dry_run_prints_what_auto_chose_and_why(tmp_path, monkeypatch):
    _cpuinfo(tmp_path, monkeypatch, "fpu avx512_bf16")
    data = make_dataset(tmp_path / "squares")
    result = CliRunner().invoke(cli, [*tiny_args(data, tmp_path / "runs", precision="auto"), "--dry-run"])
    assert result.exit_code == 0, result.output
    chosen = json.loads(result.stdout)["precision"]
    assert chosen["precision"] == "bf16" and "avx512_bf16" in chosen["auto_reason"]
    assert "derived: precision bf16 (auto: the CPU has native bf16 instructions (avx512_bf16))" in result.stderr


def test_a_continued_run_keeps_its_mode_on_other_hardware(tmp_path, monkeypatch):
    """The run folder of the same command (same --data and --cfg, with a checkpoint) decides, not this machine."""
    _cpuinfo(tmp_path, monkeypatch, "fpu avx2")
    options = tiny_options(tmp_path / "d", tmp_path / "runs", precision="auto")
    run = tmp_path / "runs" / "00000-squares-tiny-gpus1-batch8"
    (run / "checkpoints" / "ckpt-000000016").mkdir(parents=True)
    old = resolve(tiny_options(tmp_path / "d", tmp_path / "runs", precision="bf16"), FACTS)
    (run / "config.json").write_text(old.to_json())
    cfg = resolve(options, FACTS)
    assert cfg.precision.precision == "bf16" and run.name in cfg.precision.auto_reason
    assert config_hash(cfg) == config_hash(old)
