"""Every alert rule starts once, stays quiet while its condition lasts, clears, and starts again; GPU signals come
from the fake NVML through the real sampler."""

from fake_nvml import FakeNvml, reading
from ganforge.monitor import alerts as A
from ganforge.monitor.readers import GpuReader
from ganforge.monitor.sampler import Sampler

HEALTHY = {"Loss/G/main": 1.0, "Loss/D/main": 1.2, "Scores/real": 0.5, "Scores/fake_D": -0.5,
           "Skipped/G_main": 0.0, "Timing/data_wait_share": 0.01}  # fmt: skip


def _gpu_tick(*readings: dict) -> dict:
    """One tick's GPU statistics, sampled from the fake NVML until its script runs out."""
    nvml = FakeNvml({"GPU-a": list(readings)})
    sampler = Sampler(GpuReader(nvml, ["GPU-a"]), interval=1e-4)
    sampler.start()
    sampler._thread.join(timeout=30)
    return sampler.drain()


def _run(alerts: A.Alerts, records: list[dict]) -> list[list[str]]:
    """The alerts raised at each tick (losses move a little from tick to tick unless a record sets them)."""
    moving = lambda tick: {"Loss/G/main": 1.0 + 0.01 * tick, "Loss/D/main": 1.2 - 0.01 * tick}  # noqa: E731
    return [alerts.check(HEALTHY | moving(tick) | {"tick": tick} | record) for tick, record in enumerate(records)]


def _pattern(raised: list[list[str]], needle: str) -> list[int]:
    """Per tick: how many raised alerts mention `needle`."""
    return [sum(needle in message for message in messages) for messages in raised]


def test_hot_gpu_and_throttling_start_once_clear_and_restart():
    ticks = [_gpu_tick(reading(temp=70)), _gpu_tick(reading(temp=80), reading(temp=86)),
             _gpu_tick(reading(temp=88)), _gpu_tick(reading(temp=70)), _gpu_tick(reading(temp=70, throttle=0x40)),
             _gpu_tick(reading(temp=70, throttle=0x1))]  # fmt: skip
    raised = _run(A.Alerts(world=1), ticks)
    assert _pattern(raised, "GPU0 is slowed down") == [0, 1, 0, 0, 1, 0]  # 0x1 (idle) is no slowdown
    assert "86 C" in raised[1][0] and "hardware thermal slowdown" in raised[4][0] and "cooling" in raised[1][0]


def test_power_cap_counts_as_a_slowdown():
    (message,) = A.Alerts(world=1).check(HEALTHY | _gpu_tick(reading(temp=60, throttle=0x4)))
    assert "power cap" in message


def test_data_bound_needs_idle_gpus_and_waiting_for_data():
    busy, idle = _gpu_tick(reading(util=95)), _gpu_tick(reading(util=40), reading(util=60))
    records = [idle | {"Timing/data_wait_share": 0.05}, busy | {"Timing/data_wait_share": 0.3},
               idle | {"Timing/data_wait_share": 0.3}, idle | {"Timing/data_wait_share": 0.2},
               idle | {"Timing/data_wait_share": 0.01}, idle | {"Timing/data_wait_share": 0.5}]  # fmt: skip
    raised = _run(A.Alerts(world=1), records)
    assert _pattern(raised, "data-bound") == [0, 0, 1, 0, 0, 1]
    assert "50%" in raised[2][0] and "--format fast" in raised[2][0] and "--workers" in raised[2][0]
    assert A.Alerts(world=1).check(HEALTHY | {"Timing/data_wait_share": 0.9}) == []  # no GPU telemetry: no verdict


def test_memory_growing_five_ticks_in_a_row_is_a_possible_leak():
    series = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1]
    raised = _run(A.Alerts(world=1), [{"Memory/allocated_gb": gb} for gb in series])
    assert _pattern(raised, "memory leak") == [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    assert "tick 5" in raised[5][0] and "by 0.500 GB" in raised[5][0]
    flat = _run(A.Alerts(world=1), [{"Memory/allocated_gb": 1.0} for _ in range(8)])
    assert not any(flat)


def test_peak_memory_near_the_device_size():
    records = [{"Memory/peak_gb": gb, "Memory/total_gb": 80.0} for gb in (70, 76, 79, 70, 77)]
    raised = _run(A.Alerts(world=1), records)
    assert _pattern(raised, "lower --batch-gpu") == [0, 1, 0, 0, 1]
    assert "95% of the device's 80.0 GB" in raised[1][0]
    assert not any(_run(A.Alerts(world=1), [{"Memory/peak_gb": 1.0}]))  # CPU: no device size


def test_all_reduce_share_flags_an_interconnect_bound_run_only_with_several_processes():
    records = [{"Timing/allreduce_share": share} for share in (0.1, 0.3, 0.4, 0.2, 0.5)]
    assert _pattern(_run(A.Alerts(world=8), records), "interconnect-bound") == [0, 1, 0, 0, 1]
    assert not any(_run(A.Alerts(world=1), records))


def test_d_scores_that_flip_sign_are_flagged():
    margins = [1.0, -0.2, -0.5, 0.3, -0.1]
    records = [{"Scores/real": m / 2, "Scores/fake_D": -m / 2} for m in margins]
    raised = _run(A.Alerts(world=1), records)
    assert _pattern(raised, "D(real) - D(fake) turned negative") == [0, 1, 0, 0, 1]
    assert "-0.200" in raised[1][0]


def test_a_loss_stuck_at_a_constant_for_five_ticks_is_a_collapse():
    losses = [0.9, 0.7, 0.69, 0.69, 0.69, 0.69, 0.69, 0.69, 0.8, 0.69, 0.69, 0.69, 0.69, 0.69]
    raised = _run(A.Alerts(world=1), [{"Loss/G/main": g, "Loss/D/main": 1.0 + 0.01 * i} for i, g in enumerate(losses)])
    assert _pattern(raised, "Loss/G/main has stayed at 0.6900") == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    assert not any("Loss/D/main" in m for messages in raised for m in messages)


def test_skipped_steps_rising():
    counts = [0, 0, 1, 3, 3, 1, 2]
    raised = _run(A.Alerts(world=1), [{"Skipped/G_main": c / 2, "Skipped/D_main": c / 2} for c in counts])
    assert _pattern(raised, "non-finite steps rising") == [0, 0, 1, 0, 0, 0, 1]
    assert "1 skipped this tick (previous tick 0)" in raised[2][0] and "--precision" in raised[2][0]


def test_a_healthy_run_raises_nothing():
    ticks = [_gpu_tick(reading()) | {"Memory/allocated_gb": 2.0, "Memory/peak_gb": 3.0,
                                               "Memory/total_gb": 80.0, "Timing/allreduce_share": 0.05}
             for _ in range(8)]  # fmt: skip
    assert not any(_run(A.Alerts(world=4), ticks))
