"""Which phases run at a given image count: lazy regularisation (StyleGAN2 Sec. 3.1) and two-phase training.

Two-phase training trains D alone for `d_warmup_kimg` (G main and G regularisation skipped, G untouched), then gives
G one step every `d_steps` D steps, as in the alternating schedule of Goodfellow et al. 2014 (Algorithm 1, k D steps
per G step). Both are counted in images, so the cadence is a pure function of `cur_nimg`: a resumed run, or one on
another number of processes, runs the same phases at the same images. G's lazy regulariser counts G's own steps.
"""

from ganforge.config import ScheduleConfig


def g_steps_before(schedule: ScheduleConfig, cur_nimg: int) -> int | None:
    """How many G steps came before the step at `cur_nimg`, when G trains at that step; None when it does not."""
    since_warmup = cur_nimg - round(schedule.d_warmup_kimg * 1000)
    period = schedule.batch * schedule.d_steps
    if since_warmup < 0 or since_warmup % period:
        return None
    return since_warmup // period


def phase_due(schedule: ScheduleConfig, network: str, interval: int, cur_nimg: int) -> bool:
    """Does a phase of `network` ("G" or "D") that runs every `interval` of its network's steps run at `cur_nimg`?"""
    if network == "D":
        return (cur_nimg // schedule.batch) % interval == 0
    g_steps = g_steps_before(schedule, cur_nimg)
    return g_steps is not None and g_steps % interval == 0
