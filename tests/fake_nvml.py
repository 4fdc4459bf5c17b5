"""A scripted stand-in for the pynvml module: each GPU reports the next of its scripted readings; once its script is
used up it raises NVMLError (a GPU that fell off the bus), or with `repeat_last` repeats the last reading until the
test sets `lost`."""

import types


class FakeNvml:
    class NVMLError(Exception):
        pass

    NVML_TEMPERATURE_GPU, NVML_CLOCK_SM = 0, 1

    def __init__(self, scripts: dict[str, list[dict]], repeat_last: bool = False):
        """scripts: handle -> readings, each {"util", "used_gb", "temp", "throttle"} (power and clock are fixed)."""
        self.scripts = {handle: list(readings) for handle, readings in scripts.items()}
        self.current: dict[str, dict] = {}
        self.repeat_last, self.lost = repeat_last, False

    def _next(self, handle: str) -> dict:
        if self.lost or not (self.scripts[handle] or self.repeat_last):
            raise self.NVMLError("GPU is lost")
        if not self.scripts[handle]:
            return self.current[handle]
        self.current[handle] = self.scripts[handle].pop(0)
        return self.current[handle]

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid not in self.scripts:
            raise self.NVMLError("Not Found")
        return uuid

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=self._next(handle)["util"], memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=int(self.current[handle]["used_gb"] * 2**30), total=80 * 2**30)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self.current[handle]["temp"]

    def nvmlDeviceGetPowerUsage(self, handle):
        return 300_000

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 400_000

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return 1980

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        if "throttle" not in self.current[handle]:
            raise self.NVMLError("Not Supported")
        return self.current[handle]["throttle"]


def reading(util: float = 95, temp: float = 70, used_gb: float = 40, **extra) -> dict:
    return {"util": util, "temp": temp, "used_gb": used_gb, **extra}
