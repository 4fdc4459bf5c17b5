"""The names of the quality metrics, importable without the metrics themselves (and torch), so that the commands'
help can list every one (`ganforge metrics --metrics`, `train --metrics`). `ganforge.metrics.registry` defines a metric
for each name, in this order, and checks that it does.

Names as in the field (stylegan2-ada): "_full" compares with the whole dataset, "50k" is the number of fakes;
`eq*` are StyleGAN3's equivariance metrics, which need no real images.
"""

METRIC_NAMES = (
    "fid50k_full", "fid50k", "fid10k", "fid10k_full", "kid50k_full", "pr50k3_full", "swd16k",
    "eqt50k_int", "eqt50k_frac", "eqr50k",
)  # fmt: skip
