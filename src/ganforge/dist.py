"""Distributed helpers: torchrun's environment, or one process when it is absent.

World size 1 goes through the same code paths as N; every helper here is a no-op or identity then.
"""

import contextlib
import contextvars
import ctypes
import datetime
import importlib
import os
import signal
import sys

import torch
import torch.distributed as tdist

from ganforge.devices import pick_device
from ganforge.errors import UserError

_TIMEOUT = datetime.timedelta(minutes=30)
# Set inside `alone()`: this thread's work is this process's only (a trace on fake tensors), so it sees one process.
_ALONE = contextvars.ContextVar("ganforge_dist_alone", default=False)
_PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>


def launched_by_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def init(device: str = "auto") -> torch.device:
    """Join the process group torchrun describes (NCCL on CUDA, gloo on CPU) and return this process's device.

    `device` is "auto" (CUDA when available), "cuda" or "cpu".
    """
    dev = pick_device(device, local_rank())
    use_cuda = dev.type == "cuda"
    if use_cuda:
        torch.cuda.set_device(dev)
    if launched_by_torchrun() and not tdist.is_initialized():
        _stop_with_launcher()
        # torch.distributed.nn.functional evaluates `group.WORLD` in its default arguments when it is imported. The
        # first optimiser imports it (through torch._dynamo); if that happens after the group exists, those defaults
        # hold the group for good, destroy_process_group() cannot free it, and its gloo threads are left to be torn
        # down during interpreter exit, where they now and then abort a process that finished its work
        # ("terminate called without an active exception"). Imported first, the defaults are None.
        importlib.import_module("torch.distributed.nn")

        store, rank_, size = next(tdist.rendezvous("env://", timeout=_TIMEOUT))
        store.set_timeout(_TIMEOUT)
        backend = "nccl" if use_cuda else "gloo"
        store = _attempt_store(store, rank_)
        tdist.init_process_group(backend, store=store, rank=rank_, world_size=size, timeout=_TIMEOUT)
    return dev


def _attempt_store(store: tdist.Store, rank: int) -> tdist.Store:
    """The rendezvous store, seen through a namespace of this launch attempt's own, and of this group within it.

    torchrun's c10d rendezvous keeps one store for the launcher's lifetime and hands it to every generation of
    workers it starts. Each rank publishes its address there under a fixed key, so after an elastic restart
    (--max-restarts) a new worker can read the address of a dead worker of the previous attempt and fail to connect,
    or hang, while the group forms (pytorch/pytorch#135712). The restart count names the attempt; it is the same for
    every worker of one launcher, but launchers on different nodes count restarts apart (a node that restarts for
    a membership change does not count it), so there the fix is torch's own switch to a fresh store per attempt.
    The same holds within one attempt for a process that trains twice (two `run` calls of the Python API): its
    second group would read its first group's addresses. Each rank counts the groups it joined in the store itself;
    every rank joins the same groups in the same order, so the count names the group alike on every rank."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return store  # rank 0 hosts a fresh store for every group: nothing stale to read
    if int(os.environ.get("GROUP_WORLD_SIZE", "1")) > 1 and int(os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0")):
        raise UserError(
            "torchrun --max-restarts on several nodes needs TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in every launcher's "
            "environment (export it before torchrun): with the store shared between attempts, a restarted worker "
            "can read a dead worker's address and hang"
        )
    attempt = tdist.PrefixStore(f"ganforge/attempt-{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)
    return tdist.PrefixStore(f"group-{attempt.add(f'groups-joined-by-rank-{rank}', 1)}", attempt)


def _stop_with_launcher() -> None:
    """Have Linux send this worker SIGTERM when its launcher dies, as when torchrun itself is SIGKILLed.

    torchrun starts each worker in a session of its own, so nothing else would reach it: the workers would train on
    without anyone to report to. SIGTERM takes the same path as a preemption (every rank stops at the same step,
    checkpoints, exits 143). Elsewhere than Linux this is a no-op."""
    parent_death_signal(signal.SIGTERM)


def parent_death_signal(signum: int) -> None:
    """Have Linux send this process `signum` when its parent ends (strictly, the parent's thread that started it).
    Elsewhere than Linux this is a no-op."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def shutdown() -> None:
    """Leave the process group. On success call barrier() first: a rank that tears the group down while a peer is
    still inside a collective makes gloo abort that peer. Not on an error path, where a barrier could wait forever."""
    if tdist.is_initialized():
        tdist.destroy_process_group()


@contextlib.contextmanager
def alone():
    """Within it, this thread's code sees a process of its own (rank 0 of 1), so it issues no collective: for work
    one process does for itself, such as tracing a step's memory on fake tensors while the group is joined."""
    token = _ALONE.set(True)
    try:
        yield
    finally:
        _ALONE.reset(token)


def rank() -> int:
    return tdist.get_rank() if tdist.is_initialized() and not _ALONE.get() else 0


def world_size() -> int:
    return tdist.get_world_size() if tdist.is_initialized() and not _ALONE.get() else 1


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def node_rank() -> int:
    """This machine's index among the nodes of the job (torchrun's GROUP_RANK; 0 on one node)."""
    return int(os.environ.get("GROUP_RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def print0(*args, **kwargs) -> None:
    """print() on rank 0 only."""
    if is_main():
        print(*args, **kwargs, flush=True)


def _collective() -> bool:
    """Do collectives reach other ranks: a process group is joined, this thread is not `alone()`, and it has others
    (world_size is asked as a function, which a test may replace to play a rank of several)."""
    return tdist.is_initialized() and not _ALONE.get() and world_size() > 1


def barrier() -> None:
    if _collective():
        tdist.barrier()


def all_reduce_sum_(tensor: torch.Tensor) -> torch.Tensor:
    """Sum `tensor` over ranks in place (identity on one process) and return it."""
    if _collective():
        tdist.all_reduce(tensor, op=tdist.ReduceOp.SUM)
    return tensor


def broadcast_object(obj, src: int = 0):
    """Send a small picklable Python value (strings, numbers, dicts of them) from `src` to every rank."""
    if not _collective():
        return obj
    box = [obj]
    tdist.broadcast_object_list(box, src=src)
    return box[0]


def check_replicas(tensors: dict[str, torch.Tensor]) -> list[str]:
    """Names of the tensors that differ from rank 0's copy on any rank (always [] on one process). Collective."""
    if not _collective():
        return []
    differs = []
    for name, tensor in tensors.items():
        reference = tensor.detach().clone()
        tdist.broadcast(reference, src=0)
        if not torch.equal(reference, tensor.detach()):
            differs.append(name)
    return [name for names in all_gather_object(differs) for name in names]


def all_gather_object(obj) -> list:
    """Every rank's small picklable value, in rank order ([obj] on one process). Collective."""
    if not _collective():
        return [obj]
    gathered = [None] * world_size()
    tdist.all_gather_object(gathered, obj)
    return gathered
