"""Preemption: turn SIGTERM/SIGINT into a flag the training loop polls, so it can checkpoint and exit cleanly.

Clusters send SIGTERM some seconds before killing a job, torchrun forwards it to every worker, and Ctrl-C sends
SIGINT. Acting on the signal inside the handler would interrupt whatever was running (a half-applied optimizer
step, a checkpoint being written); setting a flag lets the loop finish the step, save once and exit with the
conventional status 128 + signal number (143 for SIGTERM, 130 for SIGINT).
"""

import signal

import torch

from ganforge import dist

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class PreemptionGuard:
    """Context manager: while active, SIGTERM and SIGINT set `.requested` instead of ending the process.

        with PreemptionGuard() as guard:
            while training:
                ...one step...
                if guard.any_rank_requested(device):
                    save checkpoint; sys.exit(guard.exit_code)

    A second SIGINT raises KeyboardInterrupt, so a person pressing Ctrl-C twice is never stuck waiting for a
    save. On exit the handlers that were installed before are put back. Use from the main thread only (Python
    delivers signals there).
    """

    def __init__(self):
        self.requested = False
        self.signal_number: int | None = None
        self._previous: dict[int, object] = {}

    @property
    def exit_code(self) -> int | None:
        """128 + the signal number once a signal arrived (143 SIGTERM, 130 SIGINT); None before."""
        return None if self.signal_number is None else 128 + self.signal_number

    def __enter__(self) -> "PreemptionGuard":
        for signum in _SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame) -> None:
        if signum == signal.SIGINT and self.signal_number == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        self.signal_number = signum

    def any_rank_requested(self, device: torch.device | str = "cpu") -> bool:
        """Collective: True on every rank when a signal reached any rank, so all ranks stop at the same step.

        Every rank then adopts the same signal (SIGTERM before SIGINT), so all of them exit with the same status
        even where the signal reached only one. Every rank must call it at the same point of the loop. `device`
        must suit the backend (CUDA for NCCL).
        """
        seen = torch.tensor([float(self.signal_number == signum) for signum in _SIGNALS], device=device)
        for signum, count in zip(_SIGNALS, dist.all_reduce_sum_(seen).tolist(), strict=True):
            if count > 0:
                self.requested, self.signal_number = True, signum
                return True
        return False
