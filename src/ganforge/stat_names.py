"""The names of a training run's statistics, declared once with what each means: the phases, the loop and the monitor
write them into each tick's record (stats.jsonl, TensorBoard's scalars, the trackers' metrics), and the status line,
the alerts and the report read them by these names. A tick's value is the mean over the tick of what its steps
recorded (per image, per step or per sample of the telemetry) unless the name says otherwise; `STATS` lists them in
the order docs/watching.md shows them.

Names a phase or a device completes end with "/" (`per_phase(SKIPPED, "D_main")` is "Skipped/D_main"); they are stored
names, read back from older runs' files, so a name here is never changed, only added.
"""

LOSS_G = "Loss/G/main"
LOSS_G_PL = "Loss/G/pl"
LOSS_D = "Loss/D/main"
LOSS_D_R1 = "Loss/D/r1"
LOSS_D_R2 = "Loss/D/r2"
LOSS_D_OVER_G = "Loss/D_over_G"
SCORES_FAKE = "Scores/fake"
SCORES_REAL_G = "Scores/real_G"
SCORES_REAL = "Scores/real"
SCORES_FAKE_D = "Scores/fake_D"
PL_LENGTH = "PL/length"
PL_MEAN = "PL/mean"
GRAD_NORM = "GradNorm/"
CLIPPED = "Clipped/"
SKIPPED = "Skipped/"
LR = "LR/"
AUG_P = "Aug/p"
AUG_RT = "Aug/rt"
TOTAL_S = "Timing/total_s"
IMG_PER_S = "Timing/img_per_s"
SEC_PER_KIMG = "Timing/sec_per_kimg"
DATA_WAIT_SHARE = "Timing/data_wait_share"
ALLREDUCE_SHARE = "Timing/allreduce_share"
PEAK_GB = "Memory/peak_gb"
ALLOCATED_GB = "Memory/allocated_gb"
RESERVED_GB = "Memory/reserved_gb"
FRAGMENTATION_GB = "Memory/fragmentation_gb"
TOTAL_GB = "Memory/total_gb"
CPU_UTIL = "CPU/util"
CPU_RSS_GB = "CPU/rss_gb"
CPU_AVAIL_GB = "CPU/avail_gb"

STATS = (
    (LOSS_G, "G's loss per fake in G main: non-saturating (StyleGAN2, StyleGAN3) or relativistic (R3GAN)"),
    (LOSS_G_PL, "the path-length penalty per sample of G's regularisation step, weighted"),
    (LOSS_D, "D's loss per pair in D main: non-saturating on reals and fakes, or relativistic"),
    (LOSS_D_R1, "the R1 penalty on reals, weighted by gamma (lazy: in D's regularisation step; R3GAN: every step)"),
    (LOSS_D_R2, "R3GAN: the R2 penalty on fakes, weighted by gamma"),
    (LOSS_D_OVER_G, "D's main loss over G's, per tick"),
    (SCORES_FAKE, "D's logits of the fakes in G main"),
    (SCORES_REAL_G, "R3GAN: D's logits of the reals paired with the fakes in G main"),
    (SCORES_REAL, "D's logits of the reals in D main (the status line's D(real))"),
    (SCORES_FAKE_D, "D's logits of the fakes in D main"),
    (PL_LENGTH, "each sample's path length in G's regularisation step"),
    (PL_MEAN, "the running mean the path-length penalty pulls towards, at the tick"),
    (GRAD_NORM, "per phase: the norm of the summed gradient, before clipping"),
    (CLIPPED, "per phase with a clip: the share of steps whose gradient was clipped"),
    (SKIPPED, "per phase: the steps skipped for a non-finite loss or gradient (the status line's sum)"),
    (LR, "per phase: the learning rate its optimiser stepped with (the schedule included)"),
    (AUG_P, "the augmentation probability p (ADA's, or --aug fixed's when annealed), at the tick"),
    (AUG_RT, "ADA's overfitting heuristic r_t, E[sign(D(real))], at the tick"),
    (TOTAL_S, "seconds this process has trained, from the end of its setup to the tick"),
    (IMG_PER_S, "images trained per second over the tick"),
    (SEC_PER_KIMG, "seconds per thousand images over the tick"),
    (DATA_WAIT_SHARE, "the share of the tick spent waiting for the data loader"),
    (ALLREDUCE_SHARE, "the share of the tick in the gradient all-reduce (also fwd_bwd_share, optimizer_share)"),
    (PEAK_GB, "the device's peak allocated memory in the tick, in GB (CPU: the process's peak resident memory)"),
    (ALLOCATED_GB, "CUDA: the caching allocator's allocated memory at the tick, GB"),
    (RESERVED_GB, "CUDA: the memory the caching allocator holds, GB"),
    (FRAGMENTATION_GB, "CUDA: reserved minus allocated, GB"),
    (TOTAL_GB, "CUDA: the device's whole memory, GB"),
    (CPU_UTIL, "CPU telemetry: the process's CPU use in percent of one core (also /min, /max)"),
    (CPU_RSS_GB, "CPU telemetry: the process's resident memory, GB"),
    (CPU_AVAIL_GB, "CPU telemetry: the system's available memory, GB"),
)


def per_phase(prefix: str, phase: str) -> str:
    """The name of `prefix`'s statistic (GRAD_NORM, CLIPPED, SKIPPED, LR) for `phase` ("G_main", "D_reg", ...)."""
    return f"{prefix}{phase}"


def timing_share(section: str) -> str:
    """The name of the share of a tick spent in a timed `section` of the step ("fwd_bwd", "allreduce", ...)."""
    return f"Timing/{section}_share"


def markdown() -> str:
    """docs/watching.md's table of the statistics, in `STATS`' order."""
    rows = "\n".join(f"| `{name}{'<phase>' if name.endswith('/') else ''}` | {meaning} |" for name, meaning in STATS)
    return "| statistic | what it is |\n| --- | --- |\n" + rows
