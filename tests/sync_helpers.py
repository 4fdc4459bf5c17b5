"""Counting, on the CPU, the operations that make the host wait for a CUDA device.

On CUDA the host queues kernels and runs ahead; anything that needs a value back (`.item()`, `float(t)`, `bool(t)`,
`.tolist()`, `.cpu()`, `.numpy()`, printing a tensor), an output whose shape depends on the data (`nonzero`,
`masked_select`, `unique`, a boolean-mask index) or a blocking copy of host data to the device (`torch.tensor(...,
device=...)`, `Tensor.new_tensor`) stalls it until the device has caught up. On a CPU nothing stalls, so these are
counted instead: every such call while a `SyncCounter` is active, on any tensor, is recorded with the place in
ganforge that made it and the region (what the caller says the code is doing) it was made in.

Not counted: calls made by ganforge's data pipeline (`ganforge/data/`), which decodes files into host tensors by
design (in DataLoader workers, or in this process with `--workers 0`) and hands them to the device with a copy the
host does not wait for.
"""

import contextlib
import dataclasses
import sys
from pathlib import Path

import torch

# torch._dynamo records torch's functions when it is imported (those it may put in a graph), and a dispatch mode's
# first use imports it: imported inside the counting, it would record the counting wrappers instead, and a later
# torch.compile in the same process would break its graph at torch.where.
import torch._dynamo  # noqa: F401
from torch.utils._python_dispatch import TorchDispatchMode

import ganforge

_PACKAGE = str(Path(ganforge.__file__).parent)
_HOST_SIDE = str(Path(_PACKAGE) / "data")

# Tensor methods that read a value back to the host, print it, or give a shape that depends on it.
_METHODS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__", "__repr__",
            "__format__", "nonzero", "masked_select", "unique", "unique_consecutive", "new_tensor")  # fmt: skip
_FUNCTIONS = ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "equal", "allclose")
# The same at the dispatcher, for calls that do not go through the Python methods (bool(t) and f-strings in C++,
# composite operators); a call already counted by a method above is not counted again.
_ATEN = {"_local_scalar_dense", "is_nonzero", "nonzero", "masked_select", "_unique2", "unique_dim",
         "unique_consecutive", "equal", "allclose"}  # fmt: skip
_MASK_INDEXED = {"index", "index_put", "index_put_", "_index_put_impl_"}  # data-dependent with a boolean index


@dataclasses.dataclass(frozen=True)
class Sync:
    what: str  # the operation
    region: str  # what the code was doing (set by the caller)
    where: str  # file:line in ganforge (or the innermost frame outside torch)


class SyncCounter(TorchDispatchMode):
    """A context manager: while active, every sync-forcing call is appended to `syncs`, under the region that
    `region()` names at the time."""

    def __init__(self, region=lambda: "outside"):
        super().__init__()
        self.region = region
        self.syncs: list[Sync] = []
        self._inside = 0  # > 0 while a counted Python-level call runs (its own dispatcher calls are not counted again)
        self._patches = contextlib.ExitStack()

    def by_region(self) -> dict[str, list[str]]:
        """{region: [where, ...]} of the syncs counted."""
        out = {}
        for sync in self.syncs:
            out.setdefault(sync.region, []).append(sync.where)
        return out

    def _record(self, what: str) -> None:
        frame, inner, mine = sys._getframe(2), None, None
        while frame is not None:
            name = frame.f_code.co_filename
            if "sync_helpers" not in name:
                inner = inner or frame
                if name.startswith(_PACKAGE):
                    mine = frame
                    break
            frame = frame.f_back
        mine = mine or inner
        if mine.f_code.co_filename.startswith(_HOST_SIDE):
            return
        via = "" if inner is mine else f" (in {Path(inner.f_code.co_filename).name}:{inner.f_lineno})"
        self.syncs.append(
            Sync(what, self.region(), f"{Path(mine.f_code.co_filename).name}:{mine.f_lineno} {what}{via}")
        )

    def _wrap(self, owner, name: str, counted=lambda *args, **kwargs: True) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            if self._inside or not counted(*args, **kwargs):
                return original(*args, **kwargs)
            self._record(name)
            self._inside += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._inside -= 1

        self._patches.enter_context(_patched(owner, name, wrapper))

    def __enter__(self):
        for name in _METHODS:
            self._wrap(torch.Tensor, name)
        for name in _FUNCTIONS:
            self._wrap(torch, name)
        self._wrap(torch, "where", lambda *args, **kwargs: len(args) + len(kwargs) == 1)  # where(cond) is nonzero
        for name in ("tensor", "as_tensor"):  # host data copied to a device (blocking on CUDA)
            self._wrap(torch, name, lambda *args, device=None, **kwargs: device is not None)
        return super().__enter__()

    def __exit__(self, *exc):
        self._patches.close()
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._overloadpacket.__name__
        mask = name in _MASK_INDEXED and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in _flat(args[1:2])  # the indices
        )
        if not self._inside and (name in _ATEN or mask):
            self._record(f"aten.{name}")
        return func(*args, **kwargs)


def _flat(items):
    for item in items:
        if isinstance(item, list | tuple):
            yield from _flat(item)
        else:
            yield item


@contextlib.contextmanager
def _patched(owner, name: str, value):
    own = name in vars(owner)  # else inherited (torch.Tensor's C methods live on its base class)
    original = vars(owner).get(name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)
