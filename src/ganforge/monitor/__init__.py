"""Read-only observers of a training run: hardware telemetry (NVML, psutil) sampled on a background thread, where a
step spends its time, alert rules over each tick's statistics, and the one-shot profiler.

Nothing here changes what training computes: no random draws, no writes to the models, so a run with or without
these observers writes the same checkpoints.
"""
