"""The bench's parts against obvious references: FLOP counting, saved-activation and state bytes, the batch search's
out-of-memory handling and its choice of batch."""

import gc
import weakref

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ganforge.bench.flops import count_flops
from ganforge.bench.measure import Measurement
from ganforge.bench.memory import OutOfMemory
from ganforge.bench.options import BenchOptions
from ganforge.bench.search import Candidate, summarize, try_sizes
from ganforge.bench.shape import choose_shape
from ganforge.bench.training import training_config
from ganforge.errors import UserError
from ganforge.train.build import build
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.schedules import plan_step


def test_flop_count_of_a_convolution_and_a_matmul_is_the_textbook_figure():
    x, w = torch.randn(2, 3, 10, 10), torch.randn(5, 3, 3, 3)
    assert count_flops(lambda: torch.nn.functional.conv2d(x, w)) == 2 * 2 * 5 * 8 * 8 * 3 * 3 * 3
    a, b = torch.randn(4, 6), torch.randn(6, 7)
    assert count_flops(lambda: a @ b) == 2 * 4 * 6 * 7


def test_bench_aug_fixed_times_the_pipe_at_aug_p_else_every_transform_on_every_image():
    def timed(**aug):
        options = BenchOptions(preset="tiny", resolution=8, **aug)
        cfg = training_config(options, choose_shape(options, None), 1, "cpu", 4)
        return cfg.augment.mode, cfg.augment.p

    assert timed(aug="fixed") == ("fixed", 1.0) and timed(aug="fixed", aug_p=0.25) == ("fixed", 0.25)
    assert timed(aug="ada") == ("ada", 0.0)
    with pytest.raises(UserError, match="--aug-p 0.5: only used by --aug fixed"):
        BenchOptions(aug="ada", aug_p=0.5)


def test_flop_count_equals_flop_counter_mode_on_training_phases_and_runs_r1():
    options = BenchOptions(preset="tiny", resolution=8, aug="noaug")
    cfg = training_config(options, choose_shape(options, None), 1, "cpu", 4)
    t, phases, _ = build(cfg, torch.device("cpu"))
    images, labels = torch.rand([4, 3, 8, 8]) * 2 - 1, torch.zeros([4, 0])
    counts, plan = {}, plan_step(cfg, 0, phases)
    for index, phase in enumerate(phases):

        def call(index=index, phase=phase):
            run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, labels, t.G.num_ws))

        counts[phase.name] = count_flops(call)
        if phase.name != "D_reg":  # FlopCounterMode cannot run R1's gradient w.r.t. a leaf (pytorch#131753)
            with FlopCounterMode(display=False) as reference:
                call()
            assert counts[phase.name] == reference.get_total_flops(), phase.name
    # R1 needs D forward, its backward to the image, and the backward of that to D's weights: more than D main's
    # forward + backward on reals alone, and positive.
    assert counts["D_reg"] > 0 and counts["G_reg"] > 0


def _measurement(batch_gpu: int, img_per_s: float) -> Measurement:
    ms = batch_gpu * 1000 / img_per_s
    return Measurement(batch_gpu, 1, 1, 1, ({"G_main": ms},), {"G_main": 1}, 1.0, 0.1, None)


def test_try_sizes_stops_at_the_first_out_of_memory_and_frees_the_failed_attempt():
    tried, leftovers = [], []

    class Networks:
        """Stands in for the networks a failed measurement built."""

    def measure_size(size: int) -> Measurement:
        tried.append(size)
        networks = Networks()
        leftovers.append(weakref.ref(networks))
        if size == 8:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail")
        if size == 16:
            raise AssertionError("never reached: the search stops at the first failure")
        return _measurement(size, 10.0 * size)

    candidates = try_sizes([2, 4, 8, 16], measure_size, torch.device("cpu"))
    assert tried == [2, 4, 8]
    assert [(c.batch_gpu, c.out_of_memory) for c in candidates] == [
        (2, None), (4, None), (8, "CUDA out of memory. Tried to allocate 2.00 GiB")]  # fmt: skip
    gc.collect()
    assert all(ref() is None for ref in leftovers)


def test_summarize_recommends_the_fastest_batch_that_divides_the_preset_batch():
    fits = [Candidate(size, _measurement(size, rate)) for size, rate in ((2, 10), (4, 30), (8, 20), (16, 40))]
    found = summarize([*fits, Candidate(32, None, "estimated 9 GB > cap 8 GB")], preset_batch=8, world_size=1)
    assert (found.largest_fit, found.fastest, found.recommended, found.limit) == (16, 16, 4, "memory")
    assert found.measurement_of(4).batch_gpu == 4
    found = summarize(fits, preset_batch=32, world_size=2)  # 16 x 2 ranks divides 32
    assert (found.recommended, found.limit) == (16, "max-batch-gpu")
    with pytest.raises(UserError, match="not even 2 images per device fit"):
        summarize([Candidate(2, None, str(OutOfMemory("peak 9 GB > cap 8 GB")))], 8, 1)
