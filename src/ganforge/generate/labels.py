"""Label vectors of `ganforge generate`: the conditioning input c of G(z, c) for a conditional network, given as
`--class I` (the one-hot vector of class I), `--label 0.2,1,0` (one vector: multi-hot or continuous) or
`--label-file PATH` (one vector per line, every seed made with each).

A label file is UTF-8 text: one vector per line, its numbers separated by commas (spaces allowed; blank lines are
skipped), optionally after a first line of column names (a first line none of whose cells is a number). Every number
must be finite and within float32, as the network reads it.

Plain Python, no numpy or torch: options.py checks `--label` with it, and the CLI imports options.py for its choices.
"""

import array
import io
import math

from ganforge.errors import UserError

# A label file is read whole, so a larger one is refused by its size before a byte is read. 64 MiB holds 10,000
# vectors of 1,000 numbers (ImageNet's classes, multi-hot or continuous) of up to 6 characters each ("0.123,"), each
# rendered with every seed: more vectors than that would pass the count of images a command may write long before.
MAX_LABEL_FILE_BYTES = 64 * 2**20
FLOAT32_MAX = 3.4028234663852886e38  # numpy.finfo(numpy.float32).max: beyond it the network would read inf
MAX_LISTED_LINES = 10  # a file of thousands of bad lines is reported by its first few, then their count
MAX_LISTED_CELLS = 3  # bad numbers named per vector; the count says how many more
MAX_SHOWN = 24  # characters of a cell repeated in a message (of a whole --label: MAX_SHOWN_LABEL)
MAX_SHOWN_LABEL = 60
MAX_NAMES_SHOWN = 8  # label names a message lists


def shown_names(space: dict | None) -> str:
    """The label names of a snapshot's `label_space` for a message: " (round, bright, ...)", or "" where none are
    known."""
    if space is None:
        return ""
    more = ", ..." if len(space["names"]) > MAX_NAMES_SHOWN else ""
    return f" ({', '.join(space['names'][:MAX_NAMES_SHOWN])}{more})"


def finite_numbers(cells: list[str]) -> tuple[list[float] | None, str | None]:
    """Typed cells -> (their values, None) when every one is a finite number float32 holds; else (None, what is wrong
    with the first MAX_LISTED_CELLS bad ones). Spaces around a number are allowed."""
    try:
        values = [float(cell) for cell in cells]
        if all(map(math.isfinite, values)) and max(map(abs, values)) <= FLOAT32_MAX:
            return values, None
    except ValueError:
        pass  # each bad cell is named below
    bad = [problem for problem in map(_cell_problem, cells) if problem]
    more = f" and {len(bad) - MAX_LISTED_CELLS} more" if len(bad) > MAX_LISTED_CELLS else ""
    return None, ", ".join(bad[:MAX_LISTED_CELLS]) + more


def _cell_problem(cell: str) -> str | None:
    shown = repr(_shown(cell.strip()))
    try:
        value = float(cell)
    except ValueError:
        return f"{shown} is not a number"
    if not math.isfinite(value):
        return f"{shown} is not a finite number"
    return f"{shown} is beyond float32 (+-3.4e38)" if abs(value) > FLOAT32_MAX else None


def _shown(text: str, limit: int = MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_label(text: str, problems: list) -> tuple[float, ...] | None:
    """--label "0.2, 1, 0" -> (0.2, 1.0, 0.0); a problem appended (None returned) unless every part is a finite
    number. Its length is checked once the network is known (GenerateOptions.check_network)."""
    values, problem = finite_numbers(text.split(","))
    if problem:
        problems.append(
            f"--label {_shown(text, MAX_SHOWN_LABEL)}: {problem}; write the vector as numbers separated by commas, "
            "e.g. --label 0.2,1,0"
        )
        return None
    return tuple(values)


def shown_label(label: tuple[float, ...]) -> str:
    """A --label vector as a message repeats it."""
    return _shown(",".join(f"{value:g}" for value in label), MAX_SHOWN_LABEL)


def flag_problems(class_index, label_text, label_file, modes: list[str]) -> list[str]:
    """What the command line's conditioning flags do not allow, before the network is read: more than one of them;
    a label file (every seed with every vector, a PNG each) with one of the output `modes` that make one file."""
    flags = ("--class", class_index), ("--label", label_text), ("--label-file", label_file)
    problems = _one_source([flag for flag, value in flags if value is not None])
    if label_file is not None and modes:
        problems.append(
            f"--label-file with {modes[0]}: a label file makes a PNG per vector and seed; give {modes[0]} one "
            "vector with --label"
        )
    return problems


def _one_source(flags: list[str]) -> list[str]:
    if len(flags) < 2:
        return []
    named = f"{', '.join(flags[:-1])} and {flags[-1]}"
    return [f"{named}: give one of --class (a class), --label (one label vector) or --label-file (a file of them)"]


def network_problems(class_index, label, label_file, c_dim: int, network, space: dict | None = None) -> list[str]:
    """What the network of `c_dim` label inputs (0: unconditional) cannot take: a class or vector given to an
    unconditional network, none given to a conditional one, a class beyond its classes, a class to a network of
    label vectors (`space`, what its run recorded: snapshot.label_space), a vector of another length. The lines of a
    label file are checked as it is read (`parse_label_file`)."""
    flags = ("--class", class_index), ("--label", label), ("--label-file", label_file)
    given = [(flag, value) for flag, value in flags if value is not None]
    vectors = space is not None and space["kind"] == "vectors"
    named = shown_names(space)
    if len(given) > 1:
        return _one_source([flag for flag, _ in given])
    if c_dim == 0 and given:
        flag, value = given[0]
        return [f"{flag} {shown_label(value) if flag == '--label' else value}: {network} is unconditional; drop {flag}"]
    if vectors and (class_index is not None or not given):
        given_class = f"--class {class_index}" if class_index is not None else "--label"
        return [
            f"{given_class}: {network} takes label vectors of {c_dim} numbers{named}, not classes; give one with "
            "--label V,V,... or a file of them with --label-file"
        ]
    if c_dim > 0 and not given:
        return [
            f"--class: {network} is conditional; pick a class from 0 to {c_dim - 1}{named}, or give a label vector "
            f"of {c_dim} numbers with --label or --label-file"
        ]
    if class_index is not None and class_index >= c_dim:
        return [f"--class {class_index}: {network} has classes 0 to {c_dim - 1}"]
    if label is not None and len(label) != c_dim:
        return [f"--label {shown_label(label)}: {len(label)} number(s), {network} takes label vectors of {c_dim}"]
    return []


def one_vector(class_index: int | None, label: tuple[float, ...] | None, c_dim: int) -> list[float]:
    """The vector of --label, the one-hot vector of --class, or zeros (an unconditional network: no numbers)."""
    if label is not None:
        return list(label)
    vector = [0.0] * c_dim
    if class_index is not None:
        vector[class_index] = 1.0
    return vector


def parse_label_file(data: bytes, where: str, c_dim: int) -> array.array:
    """The vectors of a label file (see the module's docstring) -> their numbers, vector after vector, as float32
    ('f'); UserError naming every bad line (the first MAX_LISTED_LINES, then how many more), or an empty file."""
    table, bad, vectors = array.array("f"), [], 0
    for number, raw in enumerate(io.BytesIO(data), start=1):  # line by line: no second copy of the file
        try:
            line = raw.decode("utf-8").removeprefix("\ufeff" if number == 1 else "")
        except UnicodeDecodeError:
            bad.append(f"line {number}: not UTF-8 text; save the file as UTF-8")
            continue
        cells = line.split(",")
        if not line.strip() or (number == 1 and _is_header(cells)):
            continue
        vectors += 1
        values, problem = finite_numbers(cells)
        length = f"{len(cells)} value(s), the network takes label vectors of {c_dim}" if len(cells) != c_dim else None
        problem = "; ".join(filter(None, (problem, length)))
        if problem:
            bad.append(f"line {number}: {problem}")
        elif not bad:  # once the file is refused, its numbers are not kept
            table.extend(values)
    if not vectors and not bad:
        raise UserError(f"{where}: no label vectors; write one vector of {c_dim} comma-separated numbers per line")
    if bad:
        more = [f"{where}: {len(bad) - MAX_LISTED_LINES:,} more bad line(s)"] if len(bad) > MAX_LISTED_LINES else []
        raise UserError(*(f"{where}: {problem}" for problem in bad[:MAX_LISTED_LINES]), *more)
    return table


def _is_header(cells: list[str]) -> bool:
    """A line of column names: no cell is a number (NaN and infinities are numbers here, refused as such). A line
    of numbers with a typo among them (`1,0,x`) is a bad vector, said so, not a header skipped in silence."""
    return all(not _is_number(cell) for cell in cells)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
