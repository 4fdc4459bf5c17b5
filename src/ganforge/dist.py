"""Distributed helpers: torchrun's environment, or one process when it is absent.

World size 1 goes through the same code paths as N; every helper here is a no-op or identity then.
"""

import ctypes
import datetime
import importlib
import os
import signal
import sys

import torch
import torch.distributed as tdist

_TIMEOUT = datetime.timedelta(minutes=30)
_PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>


def launched_by_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def init(device: str = "auto") -> torch.device:
    """Join the process group torchrun describes (NCCL on CUDA, gloo on CPU) and return this process's device.

    `device` is "auto" (CUDA when available), "cuda" or "cpu".
    """
    use_cuda = torch.cuda.is_available() if device == "auto" else device == "cuda"
    dev = torch.device("cuda", local_rank()) if use_cuda else torch.device("cpu")
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

        tdist.init_process_group(backend="nccl" if use_cuda else "gloo", timeout=_TIMEOUT)
    return dev


def _stop_with_launcher() -> None:
    """Have Linux send this worker SIGTERM when its launcher dies, as when torchrun itself is SIGKILLed.

    torchrun starts each worker in a session of its own, so nothing else would reach it: the workers would train on
    without anyone to report to. SIGTERM takes the same path as a preemption (every rank stops at the same step,
    checkpoints, exits 143). Elsewhere than Linux this is a no-op."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def shutdown() -> None:
    """Leave the process group. On success call barrier() first: a rank that tears the group down while a peer is
    still inside a collective makes gloo abort that peer. Not on an error path, where a barrier could wait forever."""
    if tdist.is_initialized():
        tdist.destroy_process_group()


def rank() -> int:
    return tdist.get_rank() if tdist.is_initialized() else 0


def world_size() -> int:
    return tdist.get_world_size() if tdist.is_initialized() else 1


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


def barrier() -> None:
    if tdist.is_initialized():
        tdist.barrier()


def all_reduce_sum_(tensor: torch.Tensor) -> torch.Tensor:
    """Sum `tensor` over ranks in place (identity on one process) and return it."""
    if tdist.is_initialized() and world_size() > 1:
        tdist.all_reduce(tensor, op=tdist.ReduceOp.SUM)
    return tensor


def broadcast_object(obj, src: int = 0):
    """Send a small picklable Python value (strings, numbers, dicts of them) from `src` to every rank."""
    if not tdist.is_initialized() or world_size() == 1:
        return obj
    box = [obj]
    tdist.broadcast_object_list(box, src=src)
    return box[0]


def check_replicas(tensors: dict[str, torch.Tensor]) -> list[str]:
    """Names of the tensors that differ from rank 0's copy on any rank (always [] on one process). Collective."""
    if world_size() == 1:
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
    if world_size() == 1:
        return [obj]
    gathered = [None] * world_size()
    tdist.all_gather_object(gathered, obj)
    return gathered
