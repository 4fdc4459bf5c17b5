"""How many images a metric value was computed on, against its metric's full protocol (what the name says: fid50k_full
is 50k fakes against every real image, fid10k 10k fakes against 10k reals, eqt50k_int 50k fakes and no reals).

FID grows as the number of images shrinks (its estimate is biased, Chong & Forsyth 2020) and every metric is noisier
on fewer: a value from a quick `--num-gen 256` look is no number to compare with a paper's, so the page names the
counts beside every value and marks each one that was not computed on the full protocol.
"""

from dataclasses import dataclass

from ganforge.metric_names import METRIC_COUNTS, Counts


@dataclass(frozen=True)
class Protocol:
    """The images behind one metric result, and whether they are its metric's full protocol."""

    fakes: int | None  # None: the record does not say
    reals: int | None
    full: bool  # False too where it cannot be told (counts not recorded, a metric ganforge does not have)
    nominal: str | None  # the full protocol, "50k fakes / all reals"; None for a metric ganforge does not have

    @property
    def counts(self) -> str:
        """'256 fakes / 512 reals'; '50k fakes' for a metric of the generator alone."""
        if self.fakes is None:
            return "image counts not recorded"
        reals = f" / {image_text(self.reals)} reals" if self.reals else ""
        return f"{image_text(self.fakes)} fakes{reals}"

    @property
    def text(self) -> str:
        """The counts, and when they are not the full protocol, which protocol that is."""
        if self.full:
            return self.counts
        if self.nominal is None:
            return f"{self.counts}, a metric ganforge does not have: its protocol is unknown"
        return f"{self.counts}, not the full protocol of {self.nominal}"

    @property
    def short(self) -> str:
        """The counts, with `reduced` where they are not the full protocol (for legends)."""
        return self.counts if self.full else f"{self.counts}, reduced"


def image_text(count: int) -> str:
    """50000 -> '50k', 16384 -> '16,384'."""
    return f"{count // 1000}k" if count >= 1000 and count % 1000 == 0 else f"{count:,}"


def _nominal(spec: Counts) -> str:
    if not spec.needs_real:
        return f"{image_text(spec.num_gen)} fakes"
    reals = "all reals" if spec.num_real is None else f"{image_text(spec.num_real)} reals"
    return f"{image_text(spec.num_gen)} fakes / {reals}"


def _is_full(spec: Counts, fakes: int | None, reals: int | None) -> bool:
    """At least the metric's count of fakes and of reals. A "_full" metric's reals are all of the dataset's, which the
    record does not size: any count of them is taken as all."""
    if fakes is None or fakes < spec.num_gen:
        return False
    if not spec.needs_real:
        return True
    return bool(reals) and (spec.num_real is None or reals >= spec.num_real)


def protocol(metric: str, record: dict) -> Protocol:
    """The protocol of `record`, a result of the metric named `metric` (as rundata reads it)."""
    fakes, reals = record.get("num_fake"), record.get("num_real")
    spec = METRIC_COUNTS.get(metric)
    if spec is None:
        return Protocol(fakes, reals, False, None)
    return Protocol(fakes, reals, _is_full(spec, fakes, reals), _nominal(spec))
