"""What resolving the options needs to know besides them, found out once by `resolver.observe` (or given by the
bench): the dataset's facts, the processes, the device, the disk, what the run starts from."""

from dataclasses import dataclass

from ganforge.train.resume import Found


@dataclass(frozen=True)
class DatasetFacts:
    """What the configuration needs to know of a dataset (an opened ImageDataset has these attributes too)."""

    resolution: int
    channels: int
    label_dim: int
    name: str
    num_raw: int | None = None  # images, mirror copies not counted (None: not known)
    aspect: tuple[int, int] = (1, 1)  # (rows, cols): the images are resolution*rows x resolution*cols

    @property
    def width(self) -> int:
        return self.resolution * self.aspect[1]

    @property
    def height(self) -> int:
        return self.resolution * self.aspect[0]


@dataclass(frozen=True)
class Facts:
    """What resolve needs besides the options: the dataset's facts (None when --data could not be opened), how many
    processes train together, the device type ("cpu" or "cuda"), problems met while finding these out, the free
    bytes on --outdir's disk (None: not looked at, as for the bench, which writes no run), and what the run may start
    from (what --resume names and the runs of OUTDIR it may continue), and the memory available on the host and the
    training device. Every look at the file system and the machine is here."""

    dataset: DatasetFacts | None
    world_size: int
    device_type: str
    problems: tuple[str, ...] = ()
    outdir_free_bytes: int | None = None
    found: Found | None = None  # what the run may start from (train/resume.py); None: not looked for (the bench)
    host_bytes: int | None = None  # memory available to the process and, on CUDA, on its device (None: not known)
    device_bytes: int | None = None
