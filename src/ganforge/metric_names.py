"""The quality metrics by name with the image counts of their protocol, importable without the metrics themselves (and
torch): the commands' help lists every name (`ganforge metrics --metrics`, `train --metrics`) and the report tells a
value computed on the full protocol from one computed on fewer images. `ganforge.metrics.registry` defines a metric
for each name, in this order, with these counts.

Names as in the field (stylegan2-ada): "_full" compares with the whole dataset, "50k" is the number of fakes;
`eq*` are StyleGAN3's equivariance metrics, `ppl_*` the perceptual path lengths (50,000 paths) and `is50k` the Inception
Score, none of which needs real images.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Counts:
    """The images a metric's full protocol uses: `num_gen` fakes, and `num_real` reals (None: every real image of the
    dataset; 0: none, the metric measures the generator alone)."""

    num_gen: int
    num_real: int | None

    @property
    def needs_real(self) -> bool:
        return self.num_real != 0


METRIC_COUNTS = {
    "fid50k_full": Counts(50_000, None),
    "fid50k": Counts(50_000, 50_000),
    "fid10k": Counts(10_000, 10_000),
    "fid10k_full": Counts(10_000, None),
    "kid50k_full": Counts(50_000, None),
    "pr50k3_full": Counts(50_000, None),
    "swd16k": Counts(16_384, 16_384),
    "eqt50k_int": Counts(50_000, 0),
    "eqt50k_frac": Counts(50_000, 0),
    "eqr50k": Counts(50_000, 0),
    "ppl_zfull": Counts(50_000, 0),
    "ppl_wfull": Counts(50_000, 0),
    "ppl_zend": Counts(50_000, 0),
    "ppl_wend": Counts(50_000, 0),
    "is50k": Counts(50_000, 0),
}
METRIC_NAMES = tuple(METRIC_COUNTS)
