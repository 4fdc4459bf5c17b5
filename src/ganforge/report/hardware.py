"""The hardware signals a run records, as the report names them: every telemetry signal the monitor samples
(`GPU<i>/<signal>`, `CPU/<signal>`, each with /min and /max; `node<n>/` first on several nodes) with a title and a
unit, and which memory figure a run gets.

On a CPU run `Memory/peak_gb` is the process's peak resident set size, the signal that `CPU/rss_gb` samples with its
range: a run that has both gets only the sampled one, so that one signal is not drawn twice.
"""

import re

from ganforge.report.rundata import Run
from ganforge.stat_names import CPU_RSS_GB, PEAK_GB, TOTAL_GB

# kind (GPU or CPU) -> signal -> (title, unit): what monitor/readers.py and nvml.read_load record
SIGNALS = {
    "GPU": {
        "util": ("GPU utilisation", "%"),
        "mem_used_gb": ("GPU memory used", "GB"),
        "temp": ("GPU temperature", "°C"),
        "power_w": ("GPU power draw", "W"),
        "sm_clock_mhz": ("GPU SM clock", "MHz"),
        "throttle": ("GPU slowdown reasons", "NVML reason bits, OR over the tick"),
    },
    "CPU": {
        "util": ("CPU use of the training process", "% of one core"),
        "rss_gb": ("Process memory, resident", "GB"),
        "avail_gb": ("System memory available", "GB"),
    },
}
# A device's size drawn beside its use, in that signal's figure: (signal, legend word)
BESIDE = {"mem_total_gb": ("mem_used_gb", "total"), "power_limit_w": ("power_w", "limit")}
RESIDENT = CPU_RSS_GB
PEAK = PEAK_GB
CUDA_ONLY = TOTAL_GB  # the CUDA allocator's statistics: every tick of a CUDA run, none of a CPU run
_TELEMETRY = re.compile(r"^((?:node\d+/)?(GPU\d+|CPU))/(.+?)(?:/(min|max))?$")


def title(kind: str, signal: str) -> tuple[str, str]:
    """(figure title with its unit, y axis label): ('GPU utilisation (%)', '%'). A signal this version does not
    record keeps its key."""
    name, unit = SIGNALS.get(kind, {}).get(signal, (f"{kind} {signal}", ""))
    return (f"{name} ({unit})" if unit else name), unit


def telemetry_groups(keys, max_curves: int) -> dict[tuple[str, str], dict[str, str]]:
    """Telemetry keys by figure, each with its legend label, in key order, at most `max_curves` per figure:
    {("GPU", "util"): {"GPU0/util": "GPU0 mean", "GPU0/util/max": "GPU0 max", ...}, ("GPU", "mem_used_gb"): {...,
    "GPU0/mem_total_gb": "GPU0 total"}}. A size (total memory, power limit) is drawn without its range."""
    keys, groups = set(keys), {}
    for key in sorted(keys):
        if not (match := _TELEMETRY.match(key)):
            continue
        device, unit, signal, word = match.groups()
        kind = "GPU" if unit.startswith("GPU") else "CPU"
        if signal in BESIDE:
            if word:
                continue
            signal, word = BESIDE[signal]
        elif not word and f"{key}/max" in keys:
            word = "mean"
        group = groups.setdefault((kind, signal), {})
        if len(group) < max_curves:
            group[key] = f"{device} {word}" if word else device
    return groups


def memory_keys(run: Run) -> dict[str, str]:
    """The peak-memory curve of `run`: the CUDA allocator's peak, or on a CPU run the peak resident set size unless
    the run sampled its resident memory (drawn with the telemetry then)."""
    keys = {key for record in run.stats for key in record}
    if CUDA_ONLY in keys:
        return {PEAK: "peak allocated (CUDA)"}
    return {} if RESIDENT in keys else {PEAK: "peak resident"}
