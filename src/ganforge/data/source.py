"""Training's stream of batches and where it stands, the same for every dataset format: the images read so far (all
processes together) and, for a dataset read as a stream (shards), the layout its order is computed from. A checkpoint
keeps `state_dict()` and a resume gives it back through `load_state_dict`, so that whoever trains never asks which
format it reads.
"""

import torch

from ganforge.data import stream
from ganforge.data.loader import DeviceLoader, make_loader


class DataSource:
    """A training dataset read by `world_size` processes, and its position: `position` images taken by all of them
    together, which each batch taken advances. `layout` is {"origin", "world_size"} of a streamed dataset's order
    (ganforge.data.stream: the origin is the image count where this world size began), None for the formats read by
    index, whose order needs the position alone."""

    def __init__(self, dataset, world_size: int):
        self.dataset, self.world_size = dataset, world_size
        self.position = 0
        self.layout = {"origin": 0, "world_size": world_size} if dataset.streamed else None
        self._restarted = None  # what to say when the stream opens: why it starts a new pass
        self._batches: DeviceLoader | None = None
        self._step = 0

    def state_dict(self) -> dict:
        """The position, and a streamed dataset's layout; what a checkpoint's `sampler` entry holds."""
        return {"position": self.position} | ({"stream": dict(self.layout)} if self.layout else {})

    def load_state_dict(self, state: dict) -> None:
        """Continue where a checkpoint's state stands: at its position, and in its stream when as many processes
        wrote it. A stream of another world size (or a checkpoint of other data, which keeps the position only) is
        dealt afresh: a new stream begins at the position, and `open` says why when the world size changed."""
        self.position = state["position"]
        if self.layout is None:
            return
        saved = state.get("stream")
        if saved is not None and saved["world_size"] == self.world_size:
            self.layout = dict(saved)
            return
        if saved is not None:
            self._restarted = (
                f"data: {self.world_size} process(es) now, {saved['world_size']} when the checkpoint was written; the "
                f"shards are dealt afresh and the stream starts a new pass at {self.position / 1000:g} kimg"
            )
        self.layout = {"origin": self.position, "world_size": self.world_size}

    def open(
        self,
        batch_per_rank: int,
        seed: int,
        rank: int,
        workers: int,
        device: torch.device | str,
        say,
        shuffle_buffer: int = stream.DEFAULT_BUFFER,
    ) -> None:
        """Start reading rank `rank`'s batches of `batch_per_rank` images from the position (make_loader says how
        each format is read); `say` tells why a restored stream starts a new pass."""
        if self._restarted is not None:
            say(self._restarted)
        origin = self.layout["origin"] if self.layout else 0
        self._batches = make_loader(
            self.dataset, batch_per_rank, seed, rank, self.world_size, self.position, workers, device,
            origin=origin, shuffle_buffer=shuffle_buffer,
        )  # fmt: skip
        self._step = batch_per_rank * self.world_size

    def __iter__(self):
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's next (images, labels); the position moves past the global batch once it has been read."""
        batch = next(self._batches)
        self.position += self._step
        return batch
