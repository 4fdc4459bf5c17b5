"""What the telemetry sampler reads: every local GPU through NVML, or this process's CPU and memory through psutil.

A reader is called from the sampler's thread; `read()` returns {signal name: value} and raises one of `errors` when
the source stops answering.
"""

from typing import Any

import psutil

from ganforge.monitor import nvml as nvml_reader
from ganforge.stat_names import CPU_AVAIL_GB, CPU_RSS_GB, CPU_UTIL


class GpuReader:
    """Load of each GPU this node's processes use (`GPU<i>/util`, `GPU<i>/temp`, ...), i = CUDA device index."""

    def __init__(self, nvml: Any, handles: list[Any]):
        self.nvml, self.handles = nvml, handles
        self.errors = (nvml.NVMLError,)

    def read(self) -> dict[str, float]:
        out = {}
        for index, handle in enumerate(self.handles):
            for key, value in nvml_reader.read_load(self.nvml, handle).items():
                out[f"GPU{index}/{key}"] = value
        return out


class CpuReader:
    """This process's CPU use (100% = one core busy), resident memory, and the memory the system has left."""

    errors = (psutil.Error,)

    def __init__(self):
        self.process = psutil.Process()
        self.process.cpu_percent()  # the first call only starts psutil's interval

    def read(self) -> dict[str, float]:
        return {
            CPU_UTIL: self.process.cpu_percent(),
            CPU_RSS_GB: self.process.memory_info().rss / 2**30,
            CPU_AVAIL_GB: psutil.virtual_memory().available / 2**30,
        }


def gpu_handles(nvml: Any, uuids: list[str]) -> list[Any] | str:
    """NVML handles of the GPUs with these UUIDs ('GPU-…'), or why one cannot be found (a MIG instance)."""
    handles = [nvml_reader.find_device(nvml, uuid) for uuid in uuids]
    missing = [uuid for uuid, handle in zip(uuids, handles, strict=True) if handle is None]
    return f"NVML does not list {', '.join(missing)}" if missing else handles
