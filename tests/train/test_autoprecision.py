"""`precision: auto`: the choice per device, where it reads the CPU's flags, and that the config records the chosen
mode and the reason (so --dry-run shows it and a resumed run compares the mode itself)."""

from dataclasses import dataclass

import pytest

from ganforge import autoprecision
from ganforge.autoprecision import pick_precision
from ganforge.config import Config, config_hash, describe_derived, resolve

CASES = [
    ("cuda", (9, 0), frozenset(), "bf16"),
    ("cuda", (8, 0), frozenset(), "bf16"),
    ("cuda", (7, 5), frozenset(), "fp32"),
    ("cpu", None, frozenset({"avx2", "amx_bf16"}), "bf16"),
    ("cpu", None, frozenset({"avx512_bf16"}), "bf16"),
    ("cpu", None, frozenset({"avx2", "avx512bw"}), "fp32"),
]


@pytest.mark.parametrize("device, capability, flags, mode", CASES)
def test_bf16_only_where_the_hardware_has_it_natively(device, capability, flags, mode):
    chosen, why = pick_precision(device, capability, flags)
    assert chosen == mode and why


def test_cpu_flags_come_from_the_first_flags_line(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 amx_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    monkeypatch.setattr(autoprecision, "CPUINFO", cpuinfo)
    assert autoprecision.cpu_flags() == {"fpu", "sse2", "amx_bf16"}
    monkeypatch.setattr(autoprecision, "CPUINFO", tmp_path / "absent")
    assert autoprecision.cpu_flags() == frozenset()


@dataclass(frozen=True)
class _Dataset:
    resolution: int = 16
    channels: int = 3
    label_dim: int = 0
    name: str = "squares"


@pytest.mark.parametrize("flags, mode", [("fpu amx_bf16", "bf16"), ("fpu avx2", "fp32")])
def test_auto_is_resolved_into_the_config_with_its_reason(tmp_path, monkeypatch, flags, mode):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"flags\t: {flags}\n")
    monkeypatch.setattr(autoprecision, "CPUINFO", cpuinfo)
    options = {"data": "d", "outdir": "o", "cfg": "tiny", "precision": "auto"}
    cfg = resolve(options, _Dataset(), 1, "cpu")
    assert cfg.precision.precision == mode and "native bf16" in cfg.precision.auto_reason
    assert f"precision {mode} (auto: " in "\n".join(describe_derived(cfg))
    again = Config.from_json(cfg.to_json())
    assert again == cfg
    explicit = resolve({**options, "precision": mode}, _Dataset(), 1, "cpu")
    assert config_hash(explicit) == config_hash(cfg) and not explicit.precision.auto_reason
