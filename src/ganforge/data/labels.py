"""Labels from untrusted files, checked before anything is sized by them: NVlabs' `dataset.json` (the CSV files of
`dataset build --labels` are read by ganforge.data.labelling).

dataset.json is `{"labels": [[name, label], ...] | null, "label_names": [str, ...]}` (label_names optional; ganforge
adds a "ganforge" object). A label is either a class index or a label vector, the same kind for every image:
- a class index is an integer 0 <= c < the number of classes, which is len(label_names) when the file declares them,
  else at most the number of images (a class beyond that would have no images: declare label_names to keep it);
- a label vector is a list of finite numbers, the same length for every image; its entries are named by
  label_names when the file declares as many, else "0", "1", ...
Either way there are at most MAX_LABEL_DIM classes or vector entries, since the networks take one input per label
dimension. Sizes of these files are bounded by the images they describe (`metadata_cap`).
"""

import re

import numpy as np

from ganforge.data.files import brief, parse_json
from ganforge.errors import UserError
from ganforge.limits import MAX_CLASSES

# ImageNet-21k's 21,841 classes fit; the conditioning layers take one input per class.
MAX_LABEL_DIM = MAX_CLASSES  # what a network file may hold, so that every dataset trains a loadable network
# A label file takes about 40 bytes a class-labelled image; 4 KiB each leaves room for label vectors of ~200 numbers,
# 1 MiB for label names and ganforge's own header. 64 MiB holds ImageNet's 1.28M class labels, and parses into well
# under 2 GB however it is written.
_BASE_BYTES, _BYTES_PER_IMAGE, _MAX_BYTES = 2**20, 4096, 64 * 2**20
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def metadata_cap(image_count: int) -> int:
    """The most bytes a dataset.json or label CSV for `image_count` images may take."""
    return min(_MAX_BYTES, _BASE_BYTES + _BYTES_PER_IMAGE * image_count)


def read_meta(data: bytes, where: str) -> dict:
    """A parsed dataset.json, checked to be an object whose "ganforge" entry, when present, is an object with a
    content hash (if any) of 64 hex digits."""
    meta = parse_json(data, where)
    if not isinstance(meta, dict):
        raise UserError(f"{where}: not a JSON object; rebuild it")
    own = meta.get("ganforge", {})
    if not isinstance(own, dict):
        raise UserError(f'{where}: its "ganforge" entry is not an object; rebuild it')
    if "content_hash" in own and not is_content_hash(own["content_hash"]):
        raise UserError(f"{where}: ganforge.content_hash is not 64 hex digits; rebuild it")
    return meta


def is_content_hash(value) -> bool:
    return isinstance(value, str) and _SHA256_HEX.fullmatch(value) is not None


def names_problem(value) -> str | None:
    """What is wrong with `label_names` (a list of at most MAX_LABEL_DIM distinct strings), or None."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        return "label_names is not a list of strings"
    if len(value) > MAX_LABEL_DIM:
        return f"{len(value)} label_names, more than the {MAX_LABEL_DIM} classes ganforge takes"
    if len(set(value)) != len(value):
        return "label_names repeats a name"
    return None


def class_problem(labels: np.ndarray, classes: int) -> str | None:
    """What is wrong with class indices [N] for `classes` classes (None: all within 0..classes-1)."""
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        bad = int(labels.min()) if labels.min() < 0 else int(labels.max())
        return f"class index {bad} outside 0..{classes - 1}"
    return None


def image_labels(meta: dict | None, names: list[str], where: str) -> tuple[np.ndarray | None, list[str]]:
    """NVlabs' `labels` of the images `names` -> class indices [N] (int64) or label vectors [N, D] (float32), and the
    label names (the declared ones, else "0", "1", ...); (None, []) without labels."""
    table = label_table(meta, where)
    if not table:
        return None, []
    missing = [name for name in names if name not in table]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise UserError(f"{where}: no label for {brief(missing[0])}{more}; every image needs one")
    return parse_values(meta, [table[name] for name in names], len(names), where)


def parse_values(meta: dict, values: list, image_count: int, where: str) -> tuple[np.ndarray, list[str]]:
    if all(_is_integer(value) for value in values):
        return _classes(meta, values, image_count, where)
    if all(isinstance(value, list) for value in values):
        return _vectors(values, meta.get("label_names"), where)
    raise UserError(
        f"{where}: a label is neither a class index (a whole number) nor a list of numbers, or the two kinds are mixed"
    )


def label_table(meta: dict | None, where: str) -> dict:
    """{file name: label} from the "labels" entry (empty without labels)."""
    entries = (meta or {}).get("labels")
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise UserError(f'{where}: "labels" is not a list of [file name, label] pairs')
    table = {}
    for index, entry in enumerate(entries):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise UserError(f"{where}: labels entry {index} is not a [file name, label] pair")
        table[entry[0].replace("\\", "/")] = entry[1]
    return table


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _classes(meta: dict, values: list[int], image_count: int, where: str) -> tuple[np.ndarray, list[str]]:
    declared = meta.get("label_names")
    if declared is None:
        classes = min(image_count, MAX_LABEL_DIM)
        why = f"without label_names, {image_count} image(s) make at most {classes} classes; fix it or add label_names"
    else:
        problem = names_problem(declared)
        if problem:
            raise UserError(f"{where}: {problem}")
        classes, why = len(declared), f"its label_names list {len(declared)} classes"
    bad = next((value for value in values if not 0 <= value < classes), None)
    if bad is not None:
        shown = bad if abs(bad) < 10**12 else "of more than 12 digits"
        raise UserError(f"{where}: class index {shown} is outside 0..{classes - 1} ({why})")
    labels = np.array(values, dtype=np.int64)
    names = declared if declared is not None else [str(i) for i in range(int(labels.max()) + 1)]
    return labels, list(names)


def _vectors(values: list[list], declared, where: str) -> tuple[np.ndarray, list[str]]:
    dim = len(values[0])
    if not 1 <= dim <= MAX_LABEL_DIM or any(len(value) != dim for value in values):
        raise UserError(f"{where}: label vectors differ in length or are empty or longer than {MAX_LABEL_DIM}")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for value in values for x in value):
        raise UserError(f"{where}: a label vector holds something other than numbers")
    try:
        with np.errstate(over="ignore"):
            labels = np.array(values, dtype=np.float64).astype(np.float32)
    except OverflowError:  # an integer beyond float64
        labels = np.full(1, np.inf)
    if not np.isfinite(labels).all():
        raise UserError(f"{where}: a label vector holds a number that is not finite in float32 (NaN, inf, > 3e38)")
    if declared is None:
        return labels, [str(i) for i in range(dim)]
    problem = names_problem(declared)
    if problem is None and len(declared) != dim:
        problem = f"label_names lists {len(declared)} names for label vectors of {dim} numbers"
    if problem:
        raise UserError(f"{where}: {problem}")
    return labels, list(declared)
