"""The CUDA prefetcher (pinned memory, a side stream) delivers exactly the CPU loader's batches, from DataLoader
workers (zip) and from the read-ahead thread (fast format). Needs a GPU."""

import numpy as np
import pytest
import torch
from data_testfiles import write_fast, write_nvlabs_zip

from ganforge.data import make_loader, open_dataset

pytestmark = pytest.mark.cuda


@pytest.fixture(params=["zip", "fast"])
def dataset(tmp_path, request):
    rng = np.random.default_rng(0)
    source = [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(9)]
    labels = [i % 3 for i in range(9)]
    if request.param == "fast":
        return open_dataset(write_fast(tmp_path / "x.gfd", source, labels, ["0", "1", "2"]), mirror=True)
    return open_dataset(write_nvlabs_zip(tmp_path / "x.zip", source, labels), mirror=True)


@pytest.mark.parametrize("workers", [0, 2])
def test_cuda_prefetcher_equals_the_cpu_loader(dataset, workers):
    cpu = make_loader(dataset, 4, seed=3, start=8, workers=0, device="cpu")
    cuda = make_loader(dataset, 4, seed=3, start=8, workers=workers, device="cuda")
    for _ in range(6):
        (a, la), (b, lb) = next(cpu), next(cuda)
        assert b.device.type == lb.device.type == "cuda" and b.dtype == torch.float32
        assert torch.equal(b.cpu(), a) and torch.equal(lb.cpu(), la)  # the same float expression on both devices
        b.mul_(0)  # the caller may overwrite its batch on its stream; the batch being prefetched must not change
    torch.cuda.synchronize()
    assert torch.equal(next(cuda)[0].cpu(), next(cpu)[0])
