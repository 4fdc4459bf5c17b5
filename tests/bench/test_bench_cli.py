"""`ganforge bench` end to end on CPU: the JSON schema, figures that add up, `--batch-gpu auto` under a memory cap,
bad input, and two torchrun-style ranks."""

import json
import math

import pytest
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.devices import choose_auto
from ganforge.nets import Discriminator, Generator

TINY = ["bench", "--cfg", "tiny", "--resolution", "8", "--channels", "1", "--steps", "2", "--warmup", "1",
        "--repeat", "1", "--device", "cpu", "--aug", "noaug", "--json"]  # fmt: skip
TOP_KEYS = {"schema", "device", "config", "data", "steps", "warmup", "repeat", "img_per_s", "s_per_kimg", "spread",
            "estimate", "phases", "iteration_ms", "flops_per_iteration", "tflops", "peak", "memory", "batch_search",
            "scaling"}  # fmt: skip


def _bench(*extra: str) -> dict:
    result = CliRunner().invoke(main, [*TINY, *extra], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # stderr may hold the spread warning of a loaded machine


def test_bench_tiny_json_schema_and_figures_that_add_up():
    r = _bench("--batch-gpu", "4", "--repeat", "3", "--steps", "1")
    assert set(r) == TOP_KEYS and r["schema"] == "ganforge.bench/2" and r["data"] is None
    assert r["device"] == {"type": "cpu", "name": r["device"]["name"], "world_size": 1} and r["device"]["name"]
    c = r["config"]
    assert (c["cfg"], c["resolution"], c["channels"], c["batch_gpu"], c["batch"]) == ("tiny", 8, 1, 4, 4)
    assert c["sources"] == {"resolution": "--resolution", "channels": "--channels"}
    assert (c["cond"], c["label_dim"]) == (False, 0)
    G = Generator(resolution=8, img_channels=1, z_dim=64, w_dim=64, mapping_layers=2, channel_base=512, channel_max=64)
    D = Discriminator(resolution=8, img_channels=1, channel_base=512, channel_max=64, mbstd_group_size=4)
    assert c["G_params"] == sum(p.numel() for p in G.parameters())
    assert c["D_params"] == sum(p.numel() for p in D.parameters())
    # The lazy regularisers run every 4 (path length) and 16 (R1) steps, as in training.
    assert {name: p["interval"] for name, p in r["phases"].items()} == {
        "G_main": 1, "G_reg": 4, "D_main": 1, "D_reg": 16, "EMA": 1}  # fmt: skip
    assert all(0 < p["ms_min"] <= p["ms"] <= p["ms_max"] for p in r["phases"].values())
    # The median repeat's step lies between the steps of the fastest and slowest calls of every phase.
    fastest, slowest = (sum(p[key] / p["interval"] for p in r["phases"].values()) for key in ("ms_min", "ms_max"))
    assert fastest * (1 - 1e-9) <= r["iteration_ms"] <= slowest * (1 + 1e-9)
    spread = r["spread"]
    assert spread["repeat"] == r["repeat"] == 3 and spread["img_per_s"]["median"] == r["img_per_s"]
    assert spread["img_per_s"]["min"] <= r["img_per_s"] <= spread["img_per_s"]["max"]
    low, high = spread["img_per_s"]["min"], spread["img_per_s"]["max"]
    assert math.isclose(spread["relative"], (high - low) / r["img_per_s"]) and spread["limit"] == 0.2
    assert (spread["warning"] is None) == (spread["relative"] <= 0.2)
    assert math.isclose(r["img_per_s"], 4 * 1000 / r["iteration_ms"])
    assert math.isclose(r["s_per_kimg"], 1000 / r["img_per_s"])
    assert r["estimate"]["kimg"] == 40 and math.isclose(r["estimate"]["seconds"], 40 * r["s_per_kimg"])
    assert r["flops_per_iteration"] > 0
    assert math.isclose(r["tflops"], r["flops_per_iteration"] / (r["iteration_ms"] / 1000) / 1e12)
    assert r["peak"]["tflops"] > 0 and "matmuls on this CPU" in r["peak"]["source"]
    assert math.isclose(r["peak"]["fraction"], r["tflops"] / r["peak"]["tflops"])
    assert r["memory"]["peak_gb"] is None and r["memory"]["source"] == "estimate"
    assert r["memory"]["gb"] == r["memory"]["estimate_gb"] > 0
    assert r["batch_search"] is None and r["scaling"] is None


def test_bench_with_one_repeat_its_phases_add_up_to_the_step():
    r = _bench("--batch-gpu", "4", "--steps", "1")
    assert all(p["ms_min"] == p["ms"] == p["ms_max"] for p in r["phases"].values())
    assert math.isclose(r["iteration_ms"], sum(p["ms"] / p["interval"] for p in r["phases"].values()))
    assert r["spread"]["relative"] == 0 and r["spread"]["warning"] is None


def test_bench_precision_auto_times_what_train_would_pick_here():
    c = _bench("--precision", "auto")["config"]
    assert c["precision"] == choose_auto("cpu")[0] and c["precision"] in ("fp32", "bf16")


def test_bench_auto_finds_the_batch_under_a_memory_cap():
    estimate_4 = _bench("--batch-gpu", "4", "--steps", "1", "--warmup", "0")["memory"]["estimate_gb"]
    r = _bench("--batch-gpu", "auto", "--memory-cap", f"{estimate_4 * 1.01}", "--steps", "1", "--warmup", "0")
    s = r["batch_search"]
    assert [c["batch_gpu"] for c in s["candidates"]] == [2, 4, 8]
    assert [c["out_of_memory"] is None for c in s["candidates"]] == [True, True, False]
    assert "> cap" in s["candidates"][-1]["out_of_memory"] and s["limit"] == "memory"
    assert s["largest_fit"] == 4 and s["fastest"] in (2, 4) and s["recommended"] == s["fastest"]
    assert s["preset_batch"] == 16 and r["config"]["batch_gpu"] == s["recommended"]
    assert all(c["memory_gb"] <= estimate_4 * 1.01 for c in s["candidates"][:2])


def test_bench_auto_stops_at_max_batch_gpu_and_prints_a_table():
    args = [a for a in TINY if a != "--json"] + ["--batch-gpu", "auto", "--max-batch-gpu", "4", "--steps", "1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ganforge bench: --cfg tiny 8x8x1" in out and "G_main" in out and "D_reg" in out and "img/s" in out
    assert "images   8x8x1: resolution 8 from --resolution, channels 1 from --channels; unconditional" in out
    assert "(1 repeat, so no spread: --repeat 3 or more measures it)" in out
    assert "largest that fits: 4 (limited by --max-batch-gpu)" in out and "use --batch-gpu" in out


def test_bench_auto_when_nothing_fits_exit_2():
    result = CliRunner().invoke(main, [*TINY, "--batch-gpu", "auto", "--memory-cap", "1e-6"])
    assert result.exit_code == 2
    assert "--batch-gpu auto: not even 2 images per device fit" in result.output and "--memory-cap" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--precision", "fp16"], "--precision fp16: needs a CUDA GPU"),
        (["--resolution", "12"], "--resolution 12: not a power of two"),
        (["--cfg", "paper256", "--resolution", "64"], "--cfg paper256 is made for 256"),
        (["--batch-gpu", "many"], "--batch-gpu many: give a whole number >= 1, or auto"),
        (["--batch-gpu", "3"], "--batch-gpu 3: must be even"),
        (["--batch-gpu", "4", "--memory-cap", "1e-6"], "--batch-gpu 4: out of memory on cpu (estimated"),
    ],
)
def test_bench_bad_input_exit_2_with_the_flag_named(args, message):
    base = ["bench", "--cfg", "tiny", "--resolution", "8", "--device", "cpu"]
    result = CliRunner().invoke(main, base + args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


BENCH_RANK = """
import json
from ganforge.bench import BenchOptions, run
result = run(BenchOptions(preset="tiny", resolution=8, channels=1, steps=1, warmup=0, repeat=1, device="cpu",
                          aug="noaug", batch_gpu=2), progress=False)
print("RESULT" + json.dumps(result))
"""


def test_bench_two_ranks_report_scaling_on_rank_0(run_ranks):
    outputs = run_ranks(BENCH_RANK)
    results = [json.loads(out.split("RESULT")[1]) for out in outputs]
    assert results[1] is None
    s = results[0]["scaling"]
    assert s["world_size"] == 2 and results[0]["device"]["world_size"] == 2 and results[0]["config"]["batch"] == 4
    assert s["img_per_s"] == results[0]["img_per_s"] > 0
    assert math.isclose(s["efficiency"], s["img_per_s"] / (2 * s["one_device_img_per_s"]))
