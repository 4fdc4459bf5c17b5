"""What a dataset's labels look like, for `dataset info`, the run folder and the report: a histogram of classes, or
per-entry statistics of label vectors (how many images carry each label, for multi-hot vectors).

The result is plain JSON:
    {"kind": "none"}
    {"kind": "classes", "counts": {name: images, ...}}
    {"kind": "vectors", "multi_hot": bool, "columns": {name: {"min", "max", "mean", "std", "nonzero"}, ...}}
`multi_hot` is true when every entry is 0 or 1 (each image carries any number of the labels); `nonzero` counts the
images whose entry is not 0, the histogram of a multi-hot vector.
"""

import numpy as np


def class_distribution(label_names: list[str], counts) -> dict:
    """From images per class, in label_names' order."""
    return {"kind": "classes", "counts": {name: int(n) for name, n in zip(label_names, counts, strict=True)}}


def distribution(label_names: list[str], labels: np.ndarray | None) -> dict:
    """From class indices [N] (int) or label vectors [N, D] (float); None or no names: no labels."""
    if labels is None or not label_names:
        return {"kind": "none"}
    if labels.ndim == 1:
        return class_distribution(label_names, np.bincount(labels, minlength=len(label_names)))
    assert labels.ndim == 2 and labels.shape[1] == len(label_names), (labels.shape, len(label_names))
    values = labels.astype(np.float64)  # float32 sums over millions of images lose digits
    columns = {
        name: {
            "min": float(column.min()),
            "max": float(column.max()),
            "mean": float(column.mean()),
            "std": float(column.std()),
            "nonzero": int(np.count_nonzero(column)),
        }
        for name, column in zip(label_names, values.T, strict=True)
    }
    multi_hot = bool(np.isin(labels, (0, 1)).all())
    return {"kind": "vectors", "multi_hot": multi_hot, "columns": columns}


def distribution_lines(summary: dict) -> list[str]:
    """`summary` as indented text lines, one per class or vector entry."""
    if summary["kind"] == "none":
        return ["labels: none"]
    if summary["kind"] == "classes":
        return ["labels: classes"] + [f"  {name}: {count}" for name, count in summary["counts"].items()]
    if summary["multi_hot"]:
        lines = ["labels: multi-hot vectors (images carrying each label)"]
        return lines + [f"  {name}: {stats['nonzero']}" for name, stats in summary["columns"].items()]
    lines = ["labels: continuous vectors (min / mean / max, std)"]
    return lines + [
        f"  {name}: {s['min']:.4g} / {s['mean']:.4g} / {s['max']:.4g}, {s['std']:.4g}"
        for name, s in summary["columns"].items()
    ]
