"""Mutation fuzzing of every file reader, through the command line: counts tracebacks, hangs and memory blow-ups.

For each target (a reader and the `ganforge` command that reads its files) a valid input is made, then mutated N
times (bit flips, byte edits, truncations, chunk copies and deletions, length and header fields set to extreme
integers, JSON values replaced by edge values or deep nesting); every mutant is read by the target's command in a
worker process that runs many cases in one interpreter, under a 3 GB address-space limit and a 10 s alarm per case.
A mutant may be accepted (exit 0: the edit was harmless) or refused (exit 2, one `error:` line); anything else is
counted: a traceback (any other exception), a hang (the alarm), a memory blow-up (MemoryError, or the worker killed).

    .venv/bin/python benchmarks/fuzz_readers.py --runs 2000                  # every target
    .venv/bin/python benchmarks/fuzz_readers.py --runs 200 --only snapshot --keep /tmp/fuzz-failures

Targets live in TARGETS below: `make(folder) -> input path` writes a valid input (a file, or a folder whose files
are mutated), `args(input, scratch) -> command line`, optional `after(input)` to run after each mutation (to re-sign
a manifest so that the mutation reaches the parsers behind the integrity check), and optional `mutate(input, rng)`
for edits of the target's own kind (a CSV's cells, a folder's file names) instead of byte and JSON edits alone.

A `remote` target reads its mutant through the hostile server of the tests (tests/hostile_server.py, run by this
process over the mutants' folder): each case draws how the server serves it (well half the time, else one of its
modes, for every file, the index or the shards only, from the first GET or the second), and `args` gets the mutant's
URL instead of its path. Workers run with short remote limits (REMOTE_LIMITS), as a user on a fast network could set
them, so that a silent or dripping server costs a second, not a minute; the S3 target points AWS_ENDPOINT_URL at the
same server.
"""

import argparse
import collections
import contextlib
import dataclasses
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ADDRESS_SPACE_BYTES = 3 * 2**30
CASE_SECONDS = 10
BATCH = 100  # mutants per worker process (a worker killed by the kernel loses only its batch's remainder)
EXTREME_INTS = (0, 1, 2**31 - 1, 2**32 - 1, 2**62, 2**63 - 1, 2**64 - 1)
REMOTE_LIMITS = "connect=2,read=0.5,request=2,patience=1"
EDGE_JSON = (-1, 0, 1.5, 1e308, -1e308, 10**30, "x", "", [], {}, None, True, "NaN", "../../etc/passwd", "a" * 5000,
             "7" * 5000)  # fmt: skip
# CSV cells: a number past Python's limit on converting text to int, digits that are not ASCII, a NUL, ...
EDGE_CELLS = ("7" * 5000, "-7", "\u00b2", "\u0663", "", "1e999", "NaN", "a" * 5000, "0" * 30 + "1", "9" * 19, "x\x00y")


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    make: Callable[[Path], Path]
    args: Callable[[Path, Path], list[str]]
    after: Callable[[Path], None] | None = None
    mutate: Callable[[Path, random.Random], None] | None = None  # None: mutate_input
    remote: bool = False  # read through the hostile server: `args` gets the mutant's URL (a str) for its path


# ---- mutations -----------------------------------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """One random edit of a byte string."""
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    b = bytearray(data)
    kind = rng.randrange(7)
    at = rng.randrange(len(b))
    if kind == 0:  # flip a few bits
        for _ in range(rng.randrange(1, 9)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # set bytes to boundary values
        for _ in range(rng.randrange(1, 5)):
            b[rng.randrange(len(b))] = rng.choice((0x00, 0xFF, 0x7F, 0x80))
    elif kind == 2:  # truncate
        del b[at:]
    elif kind == 3:  # delete a chunk
        del b[at : at + rng.randrange(1, 256)]
    elif kind == 4:  # copy a chunk elsewhere (duplicated records, repeated opcodes)
        chunk = b[at : at + rng.randrange(1, 256)]
        where = rng.randrange(len(b) + 1)
        b[where:where] = chunk * rng.randrange(1, 4)
    elif kind == 5:  # an integer field set to an extreme value (lengths, counts, offsets, shapes)
        value = rng.choice(EXTREME_INTS)
        width, fmt = rng.choice(((4, "I"), (8, "Q")))
        packed = struct.pack(rng.choice("<>") + fmt, value & (2 ** (8 * width) - 1))
        b[at : at + width] = packed
    else:  # random bytes inserted
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
    return bytes(b)


def mutate_json(value, rng: random.Random, depth: int = 0):
    """The JSON value with one of its values (at any depth) replaced, deleted or deeply nested."""
    if isinstance(value, dict) and value and depth < 8 and rng.random() < 0.7:
        key = rng.choice(sorted(value))
        if rng.random() < 0.15:
            return {k: v for k, v in value.items() if k != key}
        return value | {key: mutate_json(value[key], rng, depth + 1)}
    if isinstance(value, list) and value and depth < 8 and rng.random() < 0.7:
        i = rng.randrange(len(value))
        return value[:i] + [mutate_json(value[i], rng, depth + 1)] + value[i + 1 :]
    if rng.random() < 0.05:
        return deep_nest(rng.choice((1000, 100_000)))
    return rng.choice(EDGE_JSON)


def deep_nest(depth: int) -> str:
    """A placeholder that `json_text` writes as `depth` nested lists: json.dumps itself cannot write such a nest."""
    return f"\x00nest {depth}\x00"


def json_text(value) -> str:
    """JSON of a mutated value, its deep-nest placeholders written out."""
    text = json.dumps(value)
    for depth in (1000, 100_000):
        text = text.replace(json.dumps(deep_nest(depth)), "[" * depth + "0" + "]" * depth)
    return text


def mutate_file(path: Path, rng: random.Random) -> None:
    """One edit of a file: a JSON edit when it holds JSON (most of the time), else a byte edit."""
    data = path.read_bytes()
    if rng.random() < 0.75:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            doc = None
        if doc is not None:
            try:
                text = json_text(mutate_json(doc, rng)) if rng.random() > 0.02 else data.decode() + "]" * 100
            except RecursionError:  # nesting added to a document an earlier edit already nested deeply
                text = None
            if text is not None:
                path.write_text(text)
                return
    path.write_bytes(mutate_bytes(data, rng))


def mutate_input(path: Path, rng: random.Random) -> None:
    """One to three edits of a file, or of files of a folder."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        mutate_file(rng.choice(files), rng)


def mutate_cells(path: Path, rng: random.Random) -> None:
    """A CSV file: a cell or two set to edge values, or the edits of any file."""
    if rng.random() < 0.5:
        mutate_input(path, rng)
        return
    rows = [line.split(",") for line in path.read_text().splitlines()]
    for _ in range(rng.choice((1, 1, 2))):
        row = rng.choice(rows)
        row[rng.randrange(len(row))] = rng.choice(EDGE_CELLS)
    path.write_text("".join(",".join(row) + "\n" for row in rows))


def mutate_names(folder: Path, rng: random.Random) -> None:
    """A folder: a file renamed to a name whose bytes are not UTF-8 (as a Latin-1 system names `é.png`), or the
    edits of any folder."""
    if rng.random() < 0.7:
        mutate_input(folder, rng)
        return
    file = rng.choice(sorted(p for p in folder.rglob("*") if p.is_file()))
    file.rename(file.with_name(os.fsdecode(rng.choice((b"\xe9", b"\xff\xfe", b"\x80")) + file.name.encode())))


# ---- the worker: many cases in one interpreter ---------------------------------------------------------------------


class CaseTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def worker(cases_file: Path, outcomes_file: Path) -> None:
    import torch._dynamo  # noqa: F401  (imported by the first arithmetic on the meta device, which sizes networks)
    from click.testing import CliRunner

    import ganforge.data  # noqa: F401  (torch and the readers, imported before the first case's alarm)
    import ganforge.generate.run  # noqa: F401
    import ganforge.interop  # noqa: F401
    from ganforge.cli import main

    signal.signal(signal.SIGALRM, _alarm)
    with open(outcomes_file, "a") as out:
        for case in json.loads(cases_file.read_text()):
            signal.alarm(CASE_SECONDS)
            start = time.monotonic()
            try:
                result = CliRunner().invoke(main, case["args"], catch_exceptions=True)
                kind, detail = _classify(result)
            except CaseTimeout:
                kind, detail = "hang", "".join(traceback.format_stack(limit=6))
            finally:
                signal.alarm(0)
            out.write(json.dumps(dict(id=case["id"], kind=kind, detail=detail, s=time.monotonic() - start)) + "\n")
            out.flush()


def _classify(result) -> tuple[str, str]:
    error = result.exception
    if error is not None and not isinstance(error, SystemExit):
        kind = "memory" if isinstance(error, MemoryError) else "traceback"
        return kind, "".join(traceback.format_exception(*result.exc_info))[-3000:]
    if "Traceback" in result.stderr + result.stdout:
        return "traceback", result.stderr[-3000:]
    if result.exit_code == 0:
        return "accepted", ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    if result.exit_code == 2 and errors:
        return "refused", errors[0][:300]
    return "traceback", f"exit {result.exit_code}: {result.stderr[-1000:]}"


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def run_batch(cases: list[dict], scratch: Path, environment: dict[str, str]) -> dict[int, dict]:
    """Outcomes by case id, the workers run with `environment` added to this process's; the cases a dead worker did
    not reach run again in a fresh worker, and the one it died on counts as a memory blow-up (the kernel's OOM
    killer) or a crash."""
    outcomes: dict[int, dict] = {}
    pending = list(cases)
    while pending:
        cases_file, outcomes_file = scratch / "cases.json", scratch / "outcomes.jsonl"
        cases_file.write_text(json.dumps(pending))
        outcomes_file.unlink(missing_ok=True)
        budget = CASE_SECONDS * len(pending) + 120
        proc = subprocess.run([sys.executable, __file__, "--worker", str(cases_file), str(outcomes_file)],
                              preexec_fn=_limit, capture_output=True, text=True, timeout=budget,
                              env=os.environ | environment)  # fmt: skip
        done = [json.loads(line) for line in outcomes_file.read_text().splitlines()] if outcomes_file.exists() else []
        outcomes.update({o["id"]: o for o in done})
        pending = pending[len(done) :]
        if pending:
            killed = proc.returncode < 0 and -proc.returncode == signal.SIGKILL
            kind = "memory" if killed else "traceback"
            detail = f"worker died ({proc.returncode}): {proc.stderr[-1500:]}"
            outcomes[pending[0]["id"]] = dict(id=pending[0]["id"], kind=kind, s=0.0, detail=detail)
            pending = pending[1:]
    return outcomes


# ---- the driver ----------------------------------------------------------------------------------------------------


def signature(detail: str) -> str:
    """A short name for a failure: the exception line and the innermost ganforge frame."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    frames = [line for line in lines if line.startswith("File ") and "ganforge" in line]
    last = lines[-1] if lines else "?"
    return f"{last[:120]} @ {frames[-1][:160] if frames else '?'}"


def fuzz(target: Target, runs: int, seed: int, keep: Path | None) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    failures: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{target.name}-") as tmp, served(target, Path(tmp)) as server:
        root = Path(tmp)
        valid = target.make(root / "valid")
        for first in range(0, runs, BATCH):
            batch_dir = root / "batch"
            shutil.rmtree(batch_dir, ignore_errors=True)
            batch_dir.mkdir()
            cases = []
            for i in range(first, min(first + BATCH, runs)):
                rng = random.Random(f"{seed}-{target.name}-{i}")
                case_dir = batch_dir / f"case{i}"
                case_dir.mkdir()
                mutant = case_dir / valid.name
                (shutil.copytree if valid.is_dir() else shutil.copy)(valid, mutant)
                (target.mutate or mutate_input)(mutant, rng)
                if target.after is not None:
                    target.after(mutant)
                scratch = case_dir / "scratch"
                scratch.mkdir()
                location = mutant if server is None else remote_url(server.url, mutant.relative_to(root), rng)
                cases.append(dict(id=i, args=target.args(location, scratch), dir=str(case_dir)))
            outcomes = run_batch(cases, root, {} if server is None else remote_environment(server.url))
            for case in cases:
                outcome = outcomes[case["id"]]
                counts[outcome["kind"]] += 1
                if outcome["kind"] in ("traceback", "hang", "memory"):
                    sig = f"{outcome['kind']}: {signature(outcome['detail'])}"
                    if sig not in failures:
                        failures[sig] = case["id"]
                        print(f"  [{target.name} #{case['id']}] {sig}", flush=True)
                        if keep is not None:
                            dest = keep / target.name / f"case{case['id']}"
                            shutil.copytree(case["dir"], dest, dirs_exist_ok=True)
                            (dest / "outcome.txt").write_text(outcome["detail"] + "\n" + " ".join(case["args"]))
    return counts


@contextlib.contextmanager
def served(target: Target, root: Path):
    """The hostile server over `root` for a remote target while the context lasts (None for the others)."""
    if not target.remote:
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from hostile_server import hostile_server

    with hostile_server(root) as server:
        yield server


def remote_url(base: str, relative: Path, rng: random.Random) -> str:
    """The URL of a mutant on the hostile server, served well half the time, else as a mode drawn for every file,
    the index or the shards only, from the first GET or the second (after the reads a command makes first)."""
    from hostile_server import MODES

    mode = "ok" if rng.random() < 0.5 else rng.choice(MODES[1:])
    mode += rng.choice(("", ".json", ".tar")) + rng.choice(("", "@1"))
    return f"{base}/{mode}/{relative.as_posix()}/"


def remote_environment(url: str) -> dict[str, str]:
    return {"GANFORGE_REMOTE_LIMITS": REMOTE_LIMITS, "AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "fuzz",
            "AWS_SECRET_ACCESS_KEY": "fuzz", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="mutants per target")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", choices=sorted(TARGETS), help="fuzz only these targets")
    parser.add_argument("--keep", type=Path, help="copy one input per distinct failure here, with its outcome")
    args = parser.parse_args()
    rows = []
    for name in args.only or sorted(TARGETS):
        start = time.monotonic()
        counts = fuzz(TARGETS[name], args.runs, args.seed, args.keep)
        rows.append((name, counts, time.monotonic() - start))
    print(f"\n| reader | mutants | accepted | refused (exit 2) | tracebacks | hangs (> {CASE_SECONDS} s) "
          "| memory (> 3 GB) | seconds |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, c, seconds in rows:
        print(f"| {name} | {sum(c.values())} | {c['accepted']} | {c['refused']} | {c['traceback']} | {c['hang']} "
              f"| {c['memory']} | {seconds:.0f} |")  # fmt: skip
    return int(any(c["traceback"] + c["hang"] + c["memory"] for _, c, _ in rows))


# ---- targets -------------------------------------------------------------------------------------------------------

TARGETS: dict[str, Target] = {}


# ---- checkpoint: `ganforge checkpoint verify` on a checkpoint folder of a tiny run ----------------------------------

CHECKPOINT_TRAIN = ["--cfg", "tiny", "--batch", "8", "--tick", "0.008", "--snap", "1", "--workers", "0", "--device",
                    "cpu", "--aug", "ada", "--no-report"]  # fmt: skip
CHECKPOINT_DATA: list[Path] = []  # the dataset of the run that made the valid checkpoint (for a resume's command)


def make_checkpoint(folder: Path) -> Path:
    """The checkpoint after the first step of a tiny run (8x8 RGB, ADA: every kind of state entry is there), made in
    this process with the real training command."""
    import numpy as np
    import PIL.Image
    from click.testing import CliRunner

    from ganforge.cli import main as ganforge_main

    images = folder / "images"
    images.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(16):
        PIL.Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(images / f"{i:02d}.png")
    args = ["train", "--data", str(images), "--outdir", str(folder / "runs"), "--kimg", "0.008", *CHECKPOINT_TRAIN]
    result = CliRunner().invoke(ganforge_main, args)
    assert result.exit_code == 0, result.output
    CHECKPOINT_DATA[:] = [images]
    (ckpt,) = (folder / "runs").glob("*/checkpoints/ckpt-000000008")
    return ckpt


def resign_checkpoint(ckpt: Path) -> None:
    """Sign the manifest again with the files' SHA-256 and sizes (when it still has their entries), as an attacker
    who edits a file would, so that the mutation reaches the safetensors and JSON parsers and the resume checks."""
    import hashlib

    try:
        manifest = json.loads((ckpt / "manifest.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        return
    for name, entry in files.items():
        path = ckpt / str(name)
        if isinstance(entry, dict) and path.is_file():
            data = path.read_bytes()
            entry.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (ckpt / "manifest.json").write_text(json.dumps(manifest))


def resume_args(ckpt: Path, scratch: Path) -> list[str]:
    """The tiny run's command resumed from `ckpt`, one step further, writing into `scratch`."""
    return ["train", "--data", str(CHECKPOINT_DATA[0]), "--outdir", str(scratch / "runs"), "--kimg", "0.016",
            *CHECKPOINT_TRAIN, "--resume", str(ckpt)]  # fmt: skip


TARGETS["checkpoint"] = Target(
    "checkpoint", make_checkpoint, lambda ckpt, scratch: ["checkpoint", "verify", str(ckpt)], resign_checkpoint
)
TARGETS["checkpoint-resume"] = Target("checkpoint-resume", make_checkpoint, resume_args, resign_checkpoint)
# ---- dataset readers: NVlabs-layout zips, the fast format, dataset.json and label CSVs ---------------------------


def _dataset_pngs(count: int = 3, size: int = 8) -> dict[str, bytes]:
    """Tiny random PNGs named as NVlabs' dataset_tool names them."""
    import io

    import numpy as np
    from PIL import Image

    files = {}
    for index in range(count):
        buffer = io.BytesIO()
        Image.fromarray(np.random.default_rng(index).integers(0, 256, (size, size, 3), dtype=np.uint8)).save(
            buffer, "PNG"
        )
        files[f"00000/img{index:08d}.png"] = buffer.getvalue()
    return files


def _dataset_json(names) -> bytes:
    return json.dumps({"labels": [[name, i % 2] for i, name in enumerate(names)], "label_names": ["a", "b"]}).encode()


def _write_zip(path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _resign_png(data: bytes) -> bytes:
    """Recompute each PNG chunk's CRC, so that an edit inside a chunk reaches the decoder instead of the CRC check."""
    import zlib

    out, at = bytearray(data[:8]), 8
    while at + 12 <= len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        if at + 12 + length > len(data):
            break
        body = data[at + 4 : at + 8 + length]
        out += data[at : at + 4] + body + zlib.crc32(body).to_bytes(4, "big")
        at += 12 + length
    return bytes(out + data[at:])


def make_zip_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True)
    pngs = _dataset_pngs()
    return _write_zip(folder / "data.zip", {**pngs, "dataset.json": _dataset_json(pngs)})


def make_zip_members(folder: Path) -> Path:
    """The members of a zip dataset as files; `zip_members_after` zips them after each mutation."""
    pngs = _dataset_pngs()
    for name, data in {**pngs, "dataset.json": _dataset_json(pngs)}.items():
        (folder / "members" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "members" / name).write_bytes(data)
    return folder / "members"


def zip_members_after(members: Path) -> None:
    files = {p.relative_to(members).as_posix(): p.read_bytes() for p in sorted(members.rglob("*")) if p.is_file()}
    files = {name: _resign_png(data) if name.endswith(".png") else data for name, data in files.items()}
    _write_zip(members.with_name("members.zip"), files)


def make_fast_format(folder: Path) -> Path:
    """A valid fast file whose recorded content hash is correct (verify re-derives it)."""
    import numpy as np

    from ganforge.data import fastformat, images

    folder.mkdir(parents=True)
    writer, hasher = fastformat.FastWriter(folder / "data.gfd", 3, 8, 8), fastformat.ContentHasher()
    for index in range(3):
        pixels = np.random.default_rng(index).integers(0, 256, (3, 8, 8), dtype=np.uint8)
        writer.add(pixels)
        hasher.add(images.digest(pixels))
    classes = np.array([0, 1, 0])
    header = {"label_names": ["a", "b"], "content_hash": hasher.finish(3, (8, 8), ["a", "b"], classes), "build": {}}
    writer.finish(classes, header)
    return folder / "data.gfd"


def make_fast_header(folder: Path) -> Path:
    """A fast file split into its JSON header and its data; `fast_header_after` joins them with a correct prefix, so
    that JSON edits of the header reach the header's validation."""
    from ganforge.data import fastformat

    data = make_fast_format(folder / "whole").read_bytes()
    _, offset, length = fastformat._PREFIX.unpack(data[: fastformat._PREFIX.size])
    (folder / "parts").mkdir()
    (folder / "parts" / "header.json").write_bytes(data[offset : offset + length])
    (folder / "parts" / "data.bin").write_bytes(data[fastformat._PREFIX.size : offset])
    return folder / "parts"


def fast_header_after(parts: Path) -> None:
    from ganforge.data import fastformat

    header, body = (parts / "header.json").read_bytes(), (parts / "data.bin").read_bytes()
    prefix = fastformat._PREFIX.pack(fastformat.MAGIC, fastformat._PREFIX.size + len(body), len(header))
    parts.with_name("parts.gfd").write_bytes(prefix + body + header)


def make_dataset_json(folder: Path) -> Path:
    """A dataset.json for a folder of images; `dataset_json_after` puts the images beside each mutant."""
    folder.mkdir(parents=True)
    (folder / "dataset.json").write_bytes(_dataset_json(_dataset_pngs()))
    return folder / "dataset.json"


def dataset_json_after(meta: Path) -> None:
    for name, data in _dataset_pngs().items():
        (meta.parent / name).parent.mkdir(parents=True, exist_ok=True)
        (meta.parent / name).write_bytes(data)


def make_label_csv(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "labels.csv").write_text(
        "file,label\n" + "".join(f"{n},{i % 2}\n" for i, n in enumerate(_dataset_pngs()))
    )
    return folder / "labels.csv"


def make_image_folder(folder: Path) -> Path:
    """A folder of images, as `dataset info` and `train --data` read it (no dataset.json: its hash is of the files)."""
    for name, data in _dataset_pngs().items():
        (folder / "images" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "images" / name).write_bytes(data)
    return folder / "images"


def _build_args(src: Path, scratch: Path, *extra: str) -> list[str]:
    return ["dataset", "build", str(src), str(scratch / "out.zip"), "--transform", "none", "--workers", "0", *extra]


def make_image_files(folder: Path) -> Path:
    """One small image in each format `dataset build` reads, so that mutations reach each of PIL's decoders."""
    import numpy as np
    from PIL import Image

    folder.mkdir(parents=True)
    for seed, (suffix, fmt) in enumerate(((".png", "PNG"), (".jpg", "JPEG"), (".bmp", "BMP"), (".tif", "TIFF"),
                                          (".webp", "WEBP"))):  # fmt: skip
        pixels = np.random.default_rng(seed).integers(0, 256, (16, 16, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"image{suffix}", fmt)
    return folder


TARGETS["zip_dataset"] = Target(
    "zip_dataset", make_zip_dataset, lambda path, scratch: ["dataset", "verify", str(path), "--workers", "0"]
)
TARGETS["zip_members"] = Target(
    "zip_members",
    make_zip_members,
    lambda path, scratch: ["dataset", "verify", str(path.with_name("members.zip")), "--workers", "0"],
    after=zip_members_after,
)
TARGETS["fast_format"] = Target(
    "fast_format", make_fast_format, lambda path, scratch: ["dataset", "verify", str(path), "--workers", "0"]
)
TARGETS["fast_header"] = Target(
    "fast_header",
    make_fast_header,
    lambda path, scratch: ["dataset", "verify", str(path.with_name("parts.gfd")), "--workers", "0"],
    after=fast_header_after,
)
TARGETS["dataset_json"] = Target(
    "dataset_json", make_dataset_json, lambda path, scratch: _build_args(path.parent, scratch), after=dataset_json_after
)
TARGETS["image_files"] = Target(
    "image_files",
    make_image_files,
    lambda path, scratch: ["dataset", "build", str(path), str(scratch / "out.zip"), "--resolution", "8",
                           "--on-error", "skip", "--workers", "0"],
)  # fmt: skip
TARGETS["label_csv"] = Target(
    "label_csv",
    make_label_csv,
    lambda path, scratch: _build_args(path.parent, scratch, "--labels", str(path)),
    after=dataset_json_after,
    mutate=mutate_cells,
)
TARGETS["image_folder"] = Target(
    "image_folder", make_image_folder, lambda path, scratch: ["dataset", "info", str(path)], mutate=mutate_names
)


# ---- remote shard datasets: every command that reads `--data URL`, through the hostile server ----------------------

REMOTE_TRAIN = ["--cfg", "tiny", "--kimg", "0.008", "--batch", "8", "--workers", "0", "--device", "cpu", "--aug",
                "noaug", "--no-report"]  # fmt: skip


def make_remote_shards(folder: Path) -> Path:
    """Eight 8 px images as PNG shards of one image each, with two classes (index.json counts them), and beside the
    folder, where no mutation reaches them, eight fake images for `metrics --fake`."""
    from ganforge.data import build

    source = folder / "images"
    for name, data in _dataset_pngs(count=8).items():
        path = source / ("a" if int(Path(name).stem[-1]) % 2 else "b") / Path(name).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    options = build.BuildOptions(transform="none", labels="folders", workers=0, format="shards", shard_size="2KB")
    build.build(source, folder / "shards", options)
    fakes = folder.parent / "fakes"
    fakes.mkdir()
    for name, data in _dataset_pngs(count=8).items():
        (fakes / Path(name).name).write_bytes(data)
    return folder / "shards"


def _s3(url: str) -> str:
    """s3://MODE/KEY for http://HOST:PORT/MODE/KEY: the same file through the S3 client (path-style requests)."""
    return "s3://" + url.split("://", 1)[1].split("/", 1)[1]


def _remote(name: str, args: Callable[[str, Path], list[str]]) -> None:
    TARGETS[name] = Target(name, make_remote_shards, args, remote=True)


_remote("remote_info", lambda url, scratch: ["dataset", "info", url])
_remote("remote_verify", lambda url, scratch: ["dataset", "verify", url, "--workers", "0"])
_remote("remote_verify_s3", lambda url, scratch: ["dataset", "verify", _s3(url), "--workers", "0"])
_remote("remote_build", lambda url, scratch: ["dataset", "build", url, str(scratch / "out.zip"), "--transform", "none"])
_remote("remote_train", lambda url, scratch: ["train", "--data", url, "--outdir", str(scratch / "runs"), *REMOTE_TRAIN])
_remote(
    "remote_metrics",
    lambda url, scratch: ["metrics", "--data", url, "--fake", str(scratch.parents[2] / "fakes"), "--metrics", "swd16k",
                          "--workers", "0", "--device", "cpu"],
)  # fmt: skip


# ---- network files: NVlabs pickles (PyTorch, TensorFlow-era), rosinality checkpoints, ganforge snapshots (tiny
# networks, so that a mutant that is accepted costs milliseconds). The pickle builders of the interop tests write the
# official object graph.

NETWORK_ARCH = dict(resolution=8, z_dim=4, w_dim=4, channel_base=32, channel_max=4, mapping_layers=1)
SNAPSHOT_TENSORS, SNAPSHOT_METADATA, SNAPSHOT = "tensors.safetensors", "metadata.json", "snapshot.safetensors"
PT_MEMBERS = "members"  # a folder holding the members of a torch.save zip, zipped by `after`


def _interop_fixtures():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))
    import interop_fixtures
    import rosinality_reference

    return interop_fixtures, rosinality_reference


def make_official_pickle(folder: Path) -> Path:
    from ganforge.nets import Discriminator, Generator

    fx, _ = _interop_fixtures()
    G = fx.random_weights(Generator(**NETWORK_ARCH, c_dim=2), seed=1)
    D = fx.random_weights(Discriminator(**NETWORK_ARCH, c_dim=2, mbstd_group_size=2), seed=2)
    trees = {
        "G_ema": fx.persistent_tree(G, fx.generator_kwargs(G)),
        "D": fx.persistent_tree(D, fx.discriminator_kwargs(D)),
    }
    folder.mkdir(parents=True)
    path = folder / "network.pkl"
    path.write_bytes(fx.network_pickle(trees))
    return path


def make_rosinality_pt(folder: Path) -> Path:
    """The members of a torch.save zip as files (`after` zips them, stored and with correct CRCs, as torch does), so
    that mutations reach the pickle and the storages rather than stopping at the archive's checksums."""
    import io
    import zipfile

    import torch

    _, ref = _interop_fixtures()
    checkpoint = {"g_ema": ref.generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1), "latent_avg": torch.zeros(4)}
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    members = folder / PT_MEMBERS
    with zipfile.ZipFile(buffer) as archive:
        for info in archive.infolist():
            (members / info.filename).parent.mkdir(parents=True, exist_ok=True)
            (members / info.filename).write_bytes(archive.read(info))
    zip_members(folder)
    return folder


def make_rosinality_legacy(folder: Path) -> Path:
    """A checkpoint in torch.save's format before PyTorch 1.6 (pickles and raw storages, no zip), as rosinality's
    released checkpoints are."""
    import torch

    _, ref = _interop_fixtures()
    folder.mkdir(parents=True)
    path = folder / "checkpoint.pt"
    checkpoint = {"g_ema": ref.generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1), "latent_avg": torch.zeros(4)}
    torch.save(checkpoint, path, _use_new_zipfile_serialization=False)
    return path


def zip_members(folder: Path) -> None:
    import zipfile

    with zipfile.ZipFile(folder / "checkpoint.pt", "w", zipfile.ZIP_STORED) as archive:
        for member in sorted(p for p in (folder / PT_MEMBERS).rglob("*") if p.is_file()):
            archive.writestr(str(member.relative_to(folder / PT_MEMBERS)), member.read_bytes())


def make_snapshot(folder: Path) -> Path:
    """A snapshot as its metadata (JSON, the generator config and meta as objects so that JSON edits reach their
    values) and its tensors; `after` writes the snapshot from them, signed when the metadata still names a checksum,
    so that mutations reach the parsers behind the integrity check."""
    import safetensors
    import safetensors.torch

    from ganforge.nets import Generator
    from ganforge.snapshot import save_snapshot

    fx, _ = _interop_fixtures()
    folder.mkdir(parents=True)
    save_snapshot(folder / SNAPSHOT, fx.random_weights(Generator(**NETWORK_ARCH), seed=3), {"kimg": 1.0})
    with safetensors.safe_open(folder / SNAPSHOT, framework="pt") as f:
        metadata, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    metadata |= {key: json.loads(metadata[key]) for key in ("generator", "meta")}
    (folder / SNAPSHOT_METADATA).write_text(json.dumps(metadata))
    (folder / SNAPSHOT_TENSORS).write_bytes(safetensors.torch.save(tensors))
    (folder / SNAPSHOT).unlink()
    return folder


def sign_snapshot(folder: Path) -> None:
    import safetensors
    import safetensors.torch

    from ganforge.snapshot import CONTENT_HASH, content_sha256

    raw = (folder / SNAPSHOT_TENSORS).read_bytes()
    try:
        tensors = safetensors.torch.load(raw)
    except (safetensors.SafetensorError, ValueError, RuntimeError, OverflowError):
        (folder / SNAPSHOT).write_bytes(raw)  # a damaged file reaches the reader as it is
        return
    text = (folder / SNAPSHOT_METADATA).read_bytes().decode("latin-1")
    try:
        metadata = json.loads(text)
    except (ValueError, RecursionError):
        metadata = None
    if not isinstance(metadata, dict):  # a byte edit broke the document: it becomes the generator config's text
        metadata = {"format": "ganforge-snapshot", "format_version": "1", "architecture": "stylegan2",
                    "generator": text, "meta": "{}", CONTENT_HASH: ""}  # fmt: skip
    text = {str(k): v if isinstance(v, str) else _dumps(v) for k, v in metadata.items()}
    if CONTENT_HASH in text:
        text[CONTENT_HASH] = content_sha256(text, tensors)
    (folder / SNAPSHOT).write_bytes(safetensors.torch.save(tensors, metadata=text))


def _dumps(value) -> str:
    try:
        return json.dumps(value)
    except RecursionError:  # JSON edits nest 100,000 deep: write it as the text it was
        return "[" * 100_000 + "]" * 100_000


TARGETS["official_pickle"] = Target(
    "official_pickle", make_official_pickle, lambda pkl, scratch: ["import", str(pkl), str(scratch / "G.safetensors")]
)


def make_official_stylegan3(folder: Path) -> Path:
    """A StyleGAN3-T snapshot written by NVlabs' own code under numpy 1.x (tests/interop/fixtures: its numpy
    arrays, scalars and dtypes as `_reconstruct` + BUILD, its D and AugmentPipe)."""
    folder.mkdir(parents=True)
    path = folder / "network-snapshot.pkl"
    shutil.copyfile(Path(__file__).resolve().parents[1] / "tests" / "interop" / "fixtures" / "stylegan3-t.pkl", path)
    return path


def make_stylegan3_protocol_5(folder: Path) -> Path:
    """A StyleGAN3-R generator pickled with protocol 5, as Python 3.14's pickle.dump writes by default: numpy's
    arrays as `_frombuffer` over in-band buffers (BYTEARRAY8)."""
    from ganforge.nets import StyleGAN3Generator

    fx, _ = _interop_fixtures()
    arch = dict(z_dim=4, w_dim=4, img_channels=3, num_layers=3)
    G = StyleGAN3Generator(**arch, resolution=16, channel_base=64, channel_max=4, mapping_layers=1, config="r")
    G = fx.random_weights(G, seed=5)
    kwargs = dict(**arch, c_dim=0, img_resolution=16, channel_base=128, channel_max=8, conv_kernel=1,
                  mapping_kwargs=fx.EasyDict(num_layers=1), use_radial_filters=True)  # fmt: skip
    tree = fx.persistent_tree(G, kwargs, class_name="Generator", resample_filters=False)
    folder.mkdir(parents=True)
    path = folder / "network.pkl"
    path.write_bytes(fx.network_pickle({"G_ema": tree}, protocol=5))
    return path


def _stylegan3_generate(pkl: Path, scratch: Path) -> list[str]:
    return ["generate", "--network", str(pkl), "--seeds", "0", "--rotate", "10", "--outdir", str(scratch / "images"),
            "--device", "cpu"]  # fmt: skip


TARGETS["official_stylegan3"] = Target("official_stylegan3", make_official_stylegan3, _stylegan3_generate)
TARGETS["stylegan3_protocol_5"] = Target("stylegan3_protocol_5", make_stylegan3_protocol_5, _stylegan3_generate)


def make_tf_pickle(folder: Path, protocol: int = 4) -> Path:
    """A TensorFlow-era NVlabs pickle (G, D, Gs) of a conditional 8 px network, written to the published layout by
    the interop tests' builder: protocol 4 as the released files are, or 3, without frames, so that more edits reach
    the opcodes rather than a frame's length."""
    from ganforge.nets import Discriminator, Generator

    fx, _ = _interop_fixtures()
    import tf_fixtures as tfx

    G = fx.random_weights(Generator(**NETWORK_ARCH, c_dim=2), seed=1)
    D = fx.random_weights(Discriminator(**NETWORK_ARCH, c_dim=2, mbstd_group_size=2), seed=2)
    folder.mkdir(parents=True)
    path = folder / "network.pkl"
    path.write_bytes(tfx.tf_pickle(tfx.tf_generator(G, name="G"), tfx.tf_discriminator(D), tfx.tf_generator(G),
                                   protocol=protocol))  # fmt: skip
    return path


TARGETS["tf_pickle"] = Target(
    "tf_pickle", make_tf_pickle, lambda pkl, scratch: ["import", str(pkl), str(scratch / "G.safetensors")]
)
TARGETS["tf_pickle_d"] = Target(
    "tf_pickle_d",
    lambda folder: make_tf_pickle(folder, protocol=3),
    lambda pkl, scratch: ["import", str(pkl), str(scratch / "D.safetensors"), "--which", "D"],
)
TARGETS["rosinality_pt"] = Target(
    "rosinality_pt",
    make_rosinality_pt,
    lambda folder, scratch: ["import", str(folder / "checkpoint.pt"), str(scratch / "G.safetensors")],
    after=zip_members,
)
TARGETS["rosinality_pt_legacy"] = Target(
    "rosinality_pt_legacy",
    make_rosinality_legacy,
    lambda pt, scratch: ["import", str(pt), str(scratch / "G.safetensors")],
)
TARGETS["snapshot"] = Target(
    "snapshot",
    make_snapshot,
    lambda folder, scratch: [
        "generate",
        "--network",
        str(folder / SNAPSHOT),
        "--seeds",
        "0",
        "--outdir",
        str(scratch / "images"),
        "--device",
        "cpu",
    ],  # fmt: skip
    after=sign_snapshot,
)


def make_projected_w(folder: Path) -> Path:
    """A projected_w.npz of two rows with its noise maps, as `ganforge project` writes them, kept as its .npy members
    (`after` stores them in the npz with correct CRCs, as numpy.savez does, so that mutations reach the headers and
    the arrays rather than stopping at the zip's checksums); the snapshot of the network they belong to lies beside
    the valid input, where no mutation reaches it."""
    import io
    import zipfile

    import numpy as np
    import torch

    from ganforge.nets import Generator
    from ganforge.nets.noise import noise_buffer_names
    from ganforge.snapshot import save_snapshot

    fx, _ = _interop_fixtures()
    G = fx.random_weights(Generator(**NETWORK_ARCH), seed=4)
    folder.mkdir(parents=True)
    save_snapshot(folder.parent / PROJECTED_G, G, {})
    rng = np.random.default_rng(0)
    arrays = {f"noise.{name}": rng.standard_normal((2, *G.synthesis.get_buffer(name).shape)).astype(np.float32)
              for name in noise_buffer_names(G)}  # fmt: skip
    with torch.no_grad():
        arrays["w"] = G.mapping(torch.randn(2, G.z_dim), torch.zeros(2, 0)).numpy()
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with zipfile.ZipFile(buffer) as archive:
        for info in archive.infolist():
            (folder / info.filename).write_bytes(archive.read(info))
    return folder


def zip_projected(folder: Path) -> None:
    import zipfile

    with zipfile.ZipFile(folder / PROJECTED_NPZ, "w", zipfile.ZIP_STORED) as archive:
        for member in sorted(p for p in folder.iterdir() if p.suffix == ".npy"):
            archive.writestr(member.name, member.read_bytes())


PROJECTED_G, PROJECTED_NPZ = "projected-G.safetensors", "projected_w.npz"
TARGETS["projected_w"] = Target(
    "projected_w",
    make_projected_w,
    lambda folder, scratch: ["generate", "--network", str(folder.parents[2] / PROJECTED_G), "--projected-w",
                             str(folder / PROJECTED_NPZ), "--outdir", str(scratch / "images"), "--device", "cpu"],
    after=zip_projected,
)  # fmt: skip


# -- report_run: `ganforge report` on a run folder whose JSON, JSON-lines and PNG files are mutated --------------------


def _tiny_png(width: int, height: int, shade: int) -> bytes:
    import io

    import PIL.Image

    buffer = io.BytesIO()
    PIL.Image.new("RGB", (width, height), (shade, 255 - shade, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


def _report_config() -> str:
    """A config.json as train writes it (every section and field), for a tiny 16 px run."""
    from ganforge import config as c

    cfg = c.Config(preset="tiny", world_size=1,
                   data=c.DataConfig(path="squares.zip", name="squares", resolution=16, channels=3, label_dim=0),
                   model=c.ModelConfig(z_dim=8, w_dim=8, mapping_layers=2, channel_base=64, channel_max=8,
                                       mbstd_group=4),
                   loss=c.LossConfig(gamma=0.1), optim=c.OptimConfig(g_lr=0.002, d_lr=0.002),
                   schedule=c.ScheduleConfig(batch=8, batch_gpu=8, kimg=0.024, tick_kimg=0.008, snap=1, ema_kimg=0.01,
                                             ema_rampup=0.05),
                   precision=c.PrecisionConfig(mode="fp32"), runtime=c.RuntimeConfig(), augment=c.AugmentConfig(),
                   run=c.RunConfig(outdir="runs"))  # fmt: skip
    return cfg.to_json()


def make_report_run(folder: Path) -> Path:
    """A finished three-tick run as train leaves it: config, environment, log, stats, a metric, grids, a snapshot,
    a checkpoint and a profile summary (the files `report` reads; the network files are only listed, so they hold
    placeholders)."""
    run = folder / "00000-squares-tiny-gpus1-batch8"
    (run / "snapshots").mkdir(parents=True)
    (run / "checkpoints" / "ckpt-000000024").mkdir(parents=True)
    (run / "config.json").write_text(_report_config())
    (run / "env.json").write_text(json.dumps({"torch": "2.13.0", "devices": [{"name": "cpu", "threads": 2}],
                                             "git": {"commit": "0" * 40, "dirty": False}}, indent=2))  # fmt: skip
    ticks = []
    for tick in range(1, 4):
        # one key of each kind the report draws differently (each figure costs ~0.3 s to draw)
        record = {"tick": tick, "kimg": tick * 0.008, "Loss/G/main": 0.7 + tick / 10, "Loss/D/main": 1.3 - tick / 10,
                  "GradNorm/G": 2.0 / tick, "Skipped/D_main": float(tick == 2), "Timing/img_per_s": 40.0 + tick,
                  "Timing/total_s": 0.2 * tick, "CPU/util": 50.0 + tick, "CPU/util/max": 90.0}  # fmt: skip
        ticks.append(record | ({"alerts": ["data-bound: waiting 60% of the tick"]} if tick == 3 else {}))
    (run / "stats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ticks))
    results = [{"snapshot": str(run / "snapshots" / f"network-snapshot-00000{k}.safetensors"),
                "metric": "fid50k_full", "results": {"fid50k_full": 300.0 - k}, "num_real": 16, "num_fake": 16,
                "protocol": "fid", "seconds": 1.0, "timestamp": "2025-01-01T00:00:00Z"} for k in (0, 1)]  # fmt: skip
    (run / "metric-fid50k_full.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    (run / "log.txt").write_text("starting at 0 kimg in runs/00000-squares-tiny-gpus1-batch8\n"
                                 "tick 1 kimg 0.008\nwarning: data-bound: waiting 60% of the tick\n"
                                 "done: 0.024 kimg; results in runs/00000-squares-tiny-gpus1-batch8\n")  # fmt: skip
    for name, shade in (("reals.png", 10), ("fakes000000.000.png", 80), ("fakes000000.024.png", 200)):
        (run / name).write_bytes(_tiny_png(32, 16, shade))
    (run / "snapshots" / "network-snapshot-000000.024.safetensors").write_bytes(b"placeholder")
    (run / "checkpoints" / "ckpt-000000024" / "manifest.json").write_text("{}")
    (run / "profile").mkdir()
    profile = "ganforge profile: 2 steps from 0.008 kimg, 41.34 ms per step\n  G main   50.5%   20.88 ms/step\n"
    (run / "profile" / "summary.txt").write_text(profile)
    return run


def mutate_report_lines(run: Path) -> None:
    """Half the time, also one JSON edit of a line of a JSON-lines file (the generic edits see a .jsonl file as
    bytes); the edit is chosen from the folder's content, so a case is the same every time it is made."""
    files = sorted(p for p in run.rglob("*") if p.is_file())
    rng = random.Random(b"".join(p.read_bytes() for p in files))
    lines_files = [p for p in files if p.suffix == ".jsonl"]
    if not lines_files or rng.random() < 0.5:
        return
    path = rng.choice(lines_files)
    lines = path.read_bytes().split(b"\n")
    i = rng.randrange(len(lines))
    try:
        lines[i] = json.dumps(mutate_json(json.loads(lines[i]), rng)).encode()
    except (ValueError, RecursionError):  # a line an earlier edit broke, or nested too deeply to write again
        return
    path.write_bytes(b"\n".join(lines))


TARGETS["report_run"] = Target(
    "report_run",
    make_report_run,
    lambda run, scratch: ["report", str(run), "--out", str(scratch / "report.html")],
    after=mutate_report_lines,
)


if __name__ == "__main__":
    sys.exit(main())
