"""A training step makes the host wait for the device nowhere, and a tick at most once.

On CUDA, a `.item()`, a `bool(tensor)`, a `nonzero` or a blocking copy in the step stalls the host until the GPU has
caught up, and the GPU then idles until the host has queued the next kernels. The whole loop runs here on the CPU
with every such call counted (tests/sync_helpers.py), for a StyleGAN2 with ADA, a StyleGAN3-T with ADA and an R3GAN
(fixed, annealed augmentation), each with its lazy regularisers due within the run: the steps after the first make
none, and the gaps between steps (the preemption check; at a tick, the status line, the stats record, the ADA p and
r_t, the path-length mean and the divergence check) one at most. The first step is left out: it is where one-time
set-up happens (state moved to the device, the loader started). On a GPU the same run goes under
`torch.cuda.set_sync_debug_mode`: "error" in the steps, and the gaps' warnings counted.
"""

import contextlib
import dataclasses
import warnings

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.monitor.telemetry import Monitor
from ganforge.train import loop, resolve, run
from sync_helpers import SyncCounter

BATCH, STEPS_PER_TICK, TICKS = 4, 2, 2
STEPS = STEPS_PER_TICK * TICKS

FAMILIES = {
    "stylegan2-ada": dict(preset="tiny", aug="ada", ada_interval=1, ada_kimg=0.1),
    "stylegan3-t": dict(preset="tiny3", aug="ada"),
    "r3gan": dict(preset="tiny-r3gan", aug="fixed"),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("no_sync") / "squares", count=16, res=8, channels=3)


class Regions:
    """What the loop is doing: "step N <phase>", "step N" (the rest of step N), "after step N" (until the next step
    starts: the loop's top and, at a tick, its report). `entered(step)` / `left(step)` are called around each step."""

    def __init__(self, monkeypatch, entered=lambda step: None, left=lambda step: None):
        self.now, self.steps = "before the first step", 0
        step, run_phase = Monitor.step, loop.run_phase

        @contextlib.contextmanager
        def regioned_step(monitor, cur_nimg):
            self.now = f"step {self.steps}"
            entered(self.steps)
            with step(monitor, cur_nimg):
                yield
            left(self.steps)
            self.now = f"after step {self.steps}"
            self.steps += 1

        def regioned_phase(trainer, phase, *args):
            outside, self.now = self.now, f"{self.now} {phase.name}"
            try:
                return run_phase(trainer, phase, *args)
            finally:
                self.now = outside

        monkeypatch.setattr(Monitor, "step", regioned_step)
        monkeypatch.setattr(loop, "run_phase", regioned_phase)


def _config(data, outdir, **options):
    """TICKS ticks of STEPS_PER_TICK steps, no snapshot between the first and the last, R1 and path length every 2
    steps (so due within the checked steps)."""
    cfg = resolve(tiny_options(data, outdir, kimg=BATCH * STEPS / 1000, batch=BATCH,
                               tick=BATCH * STEPS_PER_TICK / 1000, snap=1000, **options))  # fmt: skip
    return dataclasses.replace(cfg, loss=dataclasses.replace(cfg.loss, r1_interval=2, pl_interval=2))


def _assert_steps_free_and_ticks_once(regions: Regions, counts: dict[str, list]) -> None:
    """No sync in steps 1..; none in their gaps but exactly one at a tick's report, its read of the tick's values
    (which also shows that syncs are seen). The last gap, with the final checkpoint, is not checked."""
    assert regions.steps == STEPS
    in_steps = {r: where for r, where in counts.items() if r.startswith("step ") and not r.startswith("step 0")}
    assert not in_steps, in_steps
    for k in range(1, STEPS - 1):
        expected = 1 if (k + 1) % STEPS_PER_TICK == 0 else 0
        assert len(counts.get(f"after step {k}", [])) == expected, (k, counts.get(f"after step {k}"))


@pytest.mark.parametrize("family", FAMILIES)
def test_train_step_never_waits_for_the_device(data, tmp_path, monkeypatch, family):
    regions = Regions(monkeypatch)
    with SyncCounter(lambda: regions.now) as counter:
        assert run(_config(data, tmp_path, **FAMILIES[family])) == 0
    _assert_steps_free_and_ticks_once(regions, counter.by_region())


@pytest.mark.cuda
@pytest.mark.parametrize("family", FAMILIES)
def test_train_cuda_step_under_sync_debug_mode(data, tmp_path, monkeypatch, family):
    """On a GPU: steps 1.. under set_sync_debug_mode("error") (a sync raises), the rest under "warn", its warnings
    counted per gap."""
    counts = {}
    regions = Regions(
        monkeypatch,
        entered=lambda step: torch.cuda.set_sync_debug_mode("error" if step > 0 else "warn"),
        left=lambda step: torch.cuda.set_sync_debug_mode("warn"),
    )

    def counted(message, *args, **kwargs):
        if "synchronizing" in str(message):
            counts.setdefault(regions.now, []).append(str(message)[:200])

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", counted)
        try:
            assert run(_config(data, tmp_path, device="cuda", **FAMILIES[family])) == 0
        finally:
            torch.cuda.set_sync_debug_mode("default")
    _assert_steps_free_and_ticks_once(regions, counts)
