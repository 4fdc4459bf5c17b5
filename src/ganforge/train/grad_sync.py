"""Summing gradients over ranks while the backward pass still runs: bucketed, asynchronous all-reduces.

One all-reduce of every gradient after backward (what StyleGAN2-ADA does) leaves the device idle while the network
communicates. Here a network's parameters are cut into buckets of about `bucket_mb`, in reverse registration order
(backward reaches the last layers first). In the last micro-batch's backward a post-accumulate-grad hook counts each
bucket's gradients as they land and starts the bucket's all-reduce once all of them have, so communication overlaps
the rest of backward; `finish` waits for all of them before the optimizer step. Buckets start strictly in index order,
so every rank issues the same collectives in the same order even if autograd finishes parameters in another order;
a parameter that gets no gradient in that backward holds its bucket, and those after it, until `finish`.

Why not DistributedDataParallel: its reducer fixes the set of parameters that require gradients when it is built,
while the GAN phases switch G and D between trainable and frozen every step; and it only sees backward passes that
start from its own forward, while the phases call G.mapping and G.synthesis separately and take double-backward
gradients for R1 and path length.
"""

import torch
import torch.distributed as tdist

from ganforge import dist


def buckets_of(params: list[torch.nn.Parameter], bucket_bytes: int) -> list[list[int]]:
    """Parameter indices in reverse order, cut into consecutive runs of at least `bucket_bytes` (the last may be
    smaller); `bucket_bytes` 0 gives one bucket of everything."""
    buckets, current, size = [], [], 0
    for index in reversed(range(len(params))):
        current.append(index)
        size += params[index].numel() * params[index].element_size()
        if bucket_bytes and size >= bucket_bytes:
            buckets.append(current)
            current, size = [], 0
    return buckets + [current] if current else buckets


class GradientSync:
    """Sums one network's gradients over ranks, overlapped with backward when `bucket_mb` > 0.

    Use: `arm()` before the phase's last backward, `finish()` after it. With `bucket_mb` 0 nothing overlaps: `finish`
    runs one flat all-reduce. On one process `finish` only fills in missing gradients."""

    def __init__(self, params: list[torch.nn.Parameter], bucket_mb: float):
        self.params = params
        overlap = bucket_mb > 0 and dist.world_size() > 1
        self.buckets = buckets_of(params, int(bucket_mb * 2**20))
        self._bucket_of = {i: b for b, bucket in enumerate(self.buckets) for i in bucket}
        self._armed, self._next = False, 0
        self._waiting: list[int] = []  # per bucket: gradients still to land in the armed backward
        self._in_flight: list[tuple] = []  # (work handle, flat buffer, bucket) in start order
        if overlap:
            for index, p in enumerate(params):
                p.register_post_accumulate_grad_hook(lambda _p, index=index: self._landed(index))

    def arm(self) -> None:
        """The next backward is the last one of this step: start each bucket's all-reduce when it is complete."""
        self._armed, self._next = True, 0
        self._waiting = [len(bucket) for bucket in self.buckets]

    def _landed(self, index: int) -> None:
        if not self._armed:
            return
        self._waiting[self._bucket_of[index]] -= 1
        while self._next < len(self.buckets) and self._waiting[self._next] == 0:
            self._start(self._next)
            self._next += 1

    def _start(self, b: int) -> None:
        bucket = self.buckets[b]
        flat = torch.cat([self.params[i].grad.flatten() for i in bucket])
        self._in_flight.append((tdist.all_reduce(flat, op=tdist.ReduceOp.SUM, async_op=True), flat, bucket))

    def finish(self) -> None:
        """Start the buckets not started yet (a parameter without a gradient counts as zeros, so every rank sends
        the same layout), wait for all, and write the sums back into the gradients."""
        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if dist.world_size() == 1:
            return
        first = self._next if self._armed else 0
        for b in range(first, len(self.buckets)):
            self._start(b)
        for work, flat, bucket in self._in_flight:
            work.wait()
            for i, g in zip(bucket, flat.split([self.params[i].numel() for i in bucket]), strict=True):
                self.params[i].grad.copy_(g.view_as(self.params[i]))
        self._armed, self._in_flight = False, []
