"""The entries of a training checkpoint's state: each one's key, in the order a checkpoint stores them, and what it
holds. The one list of them: `train/checkpointing.py` captures and restores each entry by its key,
`checkpoint/resumable.py` checks each one, and docs/architecture.md shows `markdown()`, built from it at every docs
build. A new piece of state is a new `Entry` here, its capture and restore there, and its check in resumable.py (a
checkpoint with an entry that either lacks is refused by the tests of both).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    key: str
    holds: str  # one line: what the entry holds, as docs/architecture.md shows it


ENTRIES = (
    Entry("G", "the generator's weights (its `state_dict`)"),
    Entry("D", "the discriminator's weights"),
    Entry("G_ema", "the moving average of G's weights: the generator that snapshots and metrics take"),
    Entry(
        "opt_G",
        "G's Adam: each trained parameter's moments and step count (a resume takes lr, betas and eps from its own run)",
    ),
    Entry("opt_D", "D's Adam, as G's"),
    Entry("scaler_G", "G's loss scaler (`GradScaler`): its scale and growth tracker under fp16, empty otherwise"),
    Entry("scaler_D", "D's loss scaler, as G's"),
    Entry(
        "rng",
        "torch's CPU and CUDA generators, the ones training draws from; formats 1 and 2 also held Python's and "
        "NumPy's global generators, which any thread of the process may draw from: they are checked and not restored",
    ),
    Entry(
        "sampler",
        "the position in the data (the progress) and, for a shard stream, where the stream began and with how many "
        "processes",
    ),
    Entry("augment", "ADA's pipe (`p`) and controller state under `--aug ada`, empty otherwise"),
    Entry(
        "loop",
        "`cur_nimg`, `cur_tick`, `pl_mean`, `nonfinite_in_a_row`; from format 4 `intra_op_threads`, the writer's "
        "torch thread count: CPU sums round by it, so a resume on the CPU with another count warns that it will not "
        "continue exactly",
    ),
    Entry("config_hash", "the SHA-256 of `config` (its JSON with sorted keys)"),
    Entry(
        "config",
        "the flattened maths fields of the Config (`config.maths_fields`: everything not declared `maths=False`): "
        "no paths, so the same command run in two folders writes identical checkpoints",
    ),
)
STATE_KEYS = tuple(entry.key for entry in ENTRIES)


def markdown() -> str:
    """docs/architecture.md's list of the state: one item per entry, in the order stored."""
    # Indented by 4 spaces: Python-Markdown, which builds the docs, nests a list by no fewer.
    items = "\n".join(f"    - `{entry.key}`: {entry.holds}" for entry in ENTRIES)
    return (
        "- The state, in the order a checkpoint stores it (`checkpoint/layout.py`; each entry captured and restored by "
        "`train/checkpointing.py`, checked by `checkpoint/resumable.py`):\n" + items
    )
