"""The labels `dataset build` gives each source image: class names or label vectors, from sub-folders, SRC's
dataset.json or a CSV file, with every problem found listed once (by file, or by CSV line when a row names no image).

CSV files (UTF-8, paths relative to SRC):
- `file,label` rows (the header is optional): one class per image, by name or number;
- a header `file,NAME1,NAME2,...` naming D columns: one label vector of D numbers per image, multi-hot (0/1: the
  image carries any number of the labels) or continuous (any finite number). The names are kept as label_names.
"""

import csv
import dataclasses
import io
import math
import re
from pathlib import Path

import numpy as np

from ganforge.data import labels
from ganforge.data.files import brief
from ganforge.errors import UserError

_NEGATIVE_INTEGER = re.compile(r"-\d+")
_INTEGER = re.compile(r"-?[0-9]+")
# Digits a class label that is a number may have: int64's, and far below Python's limit on converting text to int.
_MAX_CLASS_DIGITS = 18
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_LISTED_CELLS = 3  # bad cells named per row; the row's count says how many more


@dataclasses.dataclass(frozen=True)
class Labelling:
    """Each labelled file's class index (kind "class") or float32 label vector ("vector"), the class or entry
    names, and a reason per file or CSV line that cannot be labelled; kind "none" without labels."""

    kind: str
    names: list[str]
    of: dict
    problems: dict[str, str]


NONE = Labelling("none", [], {}, {})


def from_classes(text: dict[str, str], problems: dict[str, str], where: str) -> Labelling:
    """Class names per file -> class indices, the names sorted (numerically when every name is an integer)."""
    unique = set(text.values())
    numbers = [value for value in unique if _INTEGER.fullmatch(value)]
    too_long = max(numbers, key=len, default="")
    if len(too_long.lstrip("-")) > _MAX_CLASS_DIGITS:
        raise UserError(
            f"{where}: class label {brief(too_long, 24)} is a number of {len(too_long.lstrip('-'))} digits; a class "
            f"is a name or a number of at most {_MAX_CLASS_DIGITS} digits"
        )
    names = sorted(unique, key=int) if len(numbers) == len(unique) else sorted(unique)
    if len(names) > labels.MAX_LABEL_DIM:
        raise UserError(f"{where}: {len(names)} classes, more than the {labels.MAX_LABEL_DIM} ganforge takes")
    index = {name: i for i, name in enumerate(names)}
    return Labelling("class", names, {file: index[value] for file, value in text.items()}, problems)


def folder_classes(names: list[str]) -> Labelling:
    text = {name: name.split("/")[0] for name in names if "/" in name}
    problems = {name: "not inside a class sub-folder (--labels folders)" for name in names if "/" not in name}
    return from_classes(text, problems, "--labels folders")


def source_labels(meta: dict | None, names: list[str], where: str) -> Labelling:
    """Labels of SRC's dataset.json (`--labels source`): class indices or label vectors, as NVlabs' key holds them."""
    table = labels.label_table(meta, where)
    present = [name for name in names if name in table]
    problems = {name: f"no label in {where} (--labels source)" for name in names if name not in table}
    if not present:
        return Labelling("class", [], {}, problems)
    values, label_names = labels.parse_values(meta, [table[name] for name in present], len(names), where)
    if values.ndim == 2:
        return Labelling("vector", label_names, dict(zip(present, values, strict=True)), problems)
    text = {name: label_names[c] for name, c in zip(present, values.tolist(), strict=True)}
    return from_classes(text, problems, where)


def csv_labels(data: bytes, path: Path, names: list[str]) -> Labelling:
    """A `--labels PATH.csv` file: class rows, or label vectors when its header names the columns."""
    rows = _csv_rows(data, str(path))
    header = [cell.strip() for cell in rows[0]] if rows else []
    if len(header) >= 2 and header[0].lower() == "file" and [cell.lower() for cell in header] != ["file", "label"]:
        return _csv_vectors(rows, header[1:], path, names)
    if [cell.lower() for cell in header] == ["file", "label"]:
        rows[0] = []  # the header: no row, but the line numbers stay the file's
    return _csv_classes(rows, path, names)


def _csv_rows(data: bytes, where: str) -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
    except UnicodeDecodeError:
        raise UserError(f"{where}: not UTF-8 text; save it as UTF-8") from None
    except csv.Error as error:  # a NUL byte, a field past csv's size limit
        raise UserError(f"{where}: not a readable CSV file ({brief(error, 100)})") from None


class _Rows:
    """Rows keyed by image file: a problem per line that names no image of SRC or repeats one, else the cells."""

    def __init__(self, path: Path, names: list[str]):
        self.where, self.known = str(path), set(names)
        self.first_line: dict[str, int] = {}
        self.problems: dict[str, str] = {}

    def each(self, rows: list[list[str]], cells: int, expected: str):
        """Yield (line, file, cells after the file) of every well-formed row naming an image once."""
        for line, row in enumerate(rows, start=1):
            if not row:
                continue
            file = row[0].strip().replace("\\", "/").removeprefix("./")
            at = f"{self.where}:{line}"
            if file not in self.known:
                short = "" if file and len(row) == cells else f" (and expected {expected}, found {len(row)} cell(s))"
                self.problems[at] = f"{brief(file)} is not an image in SRC{short}" if file else f"expected {expected}"
            elif file in self.first_line:
                self.problems[file] = f"a second row at {at} (the first at line {self.first_line[file]})"
            elif len(row) != cells:
                self.first_line[file] = line
                self.problems[file] = f"expected {expected} at {at}, found {len(row)} cell(s)"
            else:
                self.first_line[file] = line
                yield line, file, [cell.strip() for cell in row[1:]]

    def missing(self, table: dict, names: list[str]) -> None:
        for name in names:
            if name not in table and name not in self.problems:
                self.problems[name] = f"no row in {Path(self.where).name} (--labels)"


def _csv_classes(rows: list[list[str]], path: Path, names: list[str]) -> Labelling:
    """`file,label` rows -> class names. A negative integer is no class: refused by name."""
    reader, text = _Rows(path, names), {}
    for line, file, (label,) in reader.each(rows, 2, "a `file,label` row"):
        if not label:
            reader.problems[f"{reader.where}:{line}"] = "expected a `file,label` row, the label is empty"
        elif _NEGATIVE_INTEGER.fullmatch(label):
            reader.problems[file] = (
                f"label {brief(label, 24)} at {reader.where}:{line} is negative; a class is a name or an index >= 0"
            )
        else:
            text[file] = label
    for file in [file for file in text if file in reader.problems]:  # a repeated row leaves the file unlabelled
        del text[file]
    reader.missing(text, names)
    return from_classes(text, reader.problems, f"--labels {path}")


def _csv_vectors(rows: list[list[str]], columns: list[str], path: Path, names: list[str]) -> Labelling:
    """Rows of `file` then one number per named column -> float32 label vectors."""
    problem = labels.names_problem(columns) or ("a column name is empty" if not all(columns) else None)
    if problem:
        raise UserError(f"{path}: the header's {problem}; name each label column once")
    rows[0] = []  # the header
    reader, vectors = _Rows(path, names), {}
    expected = f"file and {len(columns)} number(s) (the header's columns)"
    for line, file, cells in reader.each(rows, 1 + len(columns), expected):
        bad = [(name, cell) for name, cell in zip(columns, cells, strict=True) if not _is_finite_number(cell)]
        if bad:
            shown = ", ".join(f"{brief(name, 24)}={brief(cell, 16)!r}" for name, cell in bad[:_LISTED_CELLS])
            more = f" and {len(bad) - _LISTED_CELLS} more" if len(bad) > _LISTED_CELLS else ""
            reader.problems[file] = f"{shown}{more} at {reader.where}:{line}: not a finite number"
        else:
            vectors[file] = np.array([float(cell) for cell in cells], dtype=np.float32)
    for file in [file for file in vectors if file in reader.problems]:
        del vectors[file]
    reader.missing(vectors, names)
    return Labelling("vector", list(columns), vectors, reader.problems)


def _is_finite_number(cell: str) -> bool:
    """A decimal number that float32 holds (no NaN, inf, or magnitude past 3.4e38)."""
    try:
        value = float(cell)
    except ValueError:
        return False
    return math.isfinite(value) and abs(value) <= _FLOAT32_MAX
