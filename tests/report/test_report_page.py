"""`ganforge report` on a tiny real run: a valid self-contained page with every section, embedded images and no
external URL; a run in progress, a run that just started, a run with metrics, two runs overlaid, and bad input."""

import base64
import io
import json
import re
import sys

import PIL.Image
from click.testing import CliRunner
from report_helpers import copy_run, make_dataset, rewrite_stats
from report_page import Page

from ganforge.cli import main
from ganforge.metrics import append_result
from ganforge.report import refresh_report, write_report
from ganforge.report.page import SECTIONS


def _page(path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


def test_report_of_a_finished_run_is_one_valid_self_contained_page(tiny_run):
    result = CliRunner().invoke(main, ["report", str(tiny_run)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = tiny_run / "report.html"
    assert result.output.strip() == f"wrote {out}"
    assert refresh_report(tiny_run) == f"report {out}"  # what the training loop logs at each snapshot
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert page.doctype.lower() == "doctype html"
    assert [i for i in page.ids if i in SECTIONS] == list(SECTIONS)
    # Self-contained: everything it shows is inside the file, and a link goes only to a part of the page; no script,
    # stylesheet link, frame or URL.
    assert page.references and all(ref.startswith("data:image/") for ref in page.references if ref[:1] != "#")
    assert {ref[1:] for ref in page.references if ref[:1] == "#"} <= set(page.ids)
    assert not {"script", "link", "iframe", "object", "embed"} & set(page.tags)
    outside_data = re.sub(r'data:[^"]*', "", text)
    assert not re.search(r"https?:|//[a-z]|url\(", outside_data, flags=re.IGNORECASE)
    for img in page.images:
        payload = base64.b64decode(img["src"].split(",", 1)[1])
        if img["src"].startswith("data:image/svg+xml"):
            assert b"<svg" in payload and not re.search(rb'href="(?!#)', payload)
        else:
            PIL.Image.open(io.BytesIO(payload)).verify()
    # Every grid and the reals are embedded, newest first; the summary says finished and where it got.
    grids = [i["alt"] for i in page.images if i["alt"].startswith("fakes") or i["alt"] == "reals.png"]
    assert grids == ["fakes000000.016.png: 0.016 kimg", "fakes000000.008.png: 0.008 kimg",
                     "fakes000000.000.png: 0 kimg", "reals.png"]  # fmt: skip
    words = page.all_text
    assert "finished" in words and "squares (8 px, 1 ch)" in words and "0.016 / 0.016" in words
    for title in ("Losses", "D outputs (logits)", "D/G loss ratio", "Gradient norms", "Learning rates",
                  "Speed (img/s)", "Data wait (share of tick time)"):  # fmt: skip
        assert b"<svg" in page.image(title), title
    # A CPU run: its peak resident memory, or where a tick sampled it, the sampled one; never both
    alts = [i["alt"] for i in page.images]
    assert alts.count("Peak memory (GB)") + alts.count("Process memory, resident (GB)") == 1
    assert "derived from the preset and flags" in words.lower() and "loss.gamma" in words and "torch_threads" in words
    assert "ckpt-000000016" in words and "network-snapshot-000000.016.safetensors" in words
    assert "unconditional data: no labels" in words  # the labels.json train wrote for the unlabelled squares
    assert len(text) < 1_000_000


def test_report_of_a_run_in_progress_and_of_one_just_started(tiny_run, tmp_path):
    run = copy_run(tiny_run, tmp_path / "progress")
    log = run / "log.txt"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines() if not line.startswith("done:")))
    rewrite_stats(run, lambda r: r | {"Timing/img_per_s": 4.0})
    with open(run / "stats.jsonl", "a") as stats:
        stats.write('{"tick": 3, "kimg": 0.0')  # the next record, half written
    with open(run / "config.json") as f:
        config = json.load(f)
    config["schedule"]["kimg"] = 0.056
    (run / "config.json").write_text(json.dumps(config))
    words = _page(write_report(run)).all_text
    assert "running" in words and "finished" not in words and "0.016 / 0.056" in words
    assert "0:00:10" in words  # ETA: 40 images left at 4 img/s
    assert "1 line(s) of stats.jsonl could not be read" in words

    started = tmp_path / "started" / "00001-squares-tiny-gpus1-batch8"
    started.mkdir(parents=True)
    (started / "config.json").write_text(json.dumps(config))
    (started / "log.txt").write_text("starting at 0 kimg in somewhere\n")
    page = _page(write_report(started))
    assert "running" in page.all_text and "no ticks yet" in page.all_text and "no grids yet" in page.all_text
    assert [i for i in page.ids if i in SECTIONS] == list(SECTIONS)


def test_report_of_a_run_with_metrics_plots_them_and_names_the_best(tiny_run, tmp_path):
    run = copy_run(tiny_run, tmp_path / "metrics")
    snapshots = sorted((run / "snapshots").iterdir())
    for snapshot, fid, precision in zip(snapshots, (310.0, 250.5, 270.0), (0.1, 0.3, 0.2), strict=True):
        append_result(run / "metric-fid50k_full.jsonl", {"metric": "fid50k_full", "results": {"fid50k_full": fid}},
                      snapshot=snapshot)  # fmt: skip
        results = {"pr50k3_full_precision": precision, "pr50k3_full_recall": 0.05}
        append_result(run / "metric-pr50k3_full.jsonl", {"metric": "pr50k3_full", "results": results}, snapshot)
    page = _page(write_report(run))
    words = page.all_text
    assert "fid50k_full 250.5 at 0.008 kimg" in words  # lower is better
    assert "pr50k3_full_precision 0.3 at 0.008 kimg" in words  # higher is better
    fid_plot = page.image("Metric fid50k_full").decode()
    assert "fid50k_full" in fid_plot
    assert "pr50k3_full_recall" in page.image("Metric pr50k3_full").decode()


def test_report_overlays_two_runs(tiny_run, tmp_path):
    other = copy_run(tiny_run, tmp_path, "00007-squares-tiny-gpus1-batch8")
    rewrite_stats(other, lambda r: r | {"Loss/G/main": r["Loss/G/main"] * 2})
    out = tmp_path / "compare.html"
    result = CliRunner().invoke(main, ["report", str(tiny_run), str(other), "--out", str(out)])
    assert result.exit_code == 0 and result.output.strip() == f"wrote {out}"
    page = _page(out)
    losses = page.image("Losses").decode()
    assert "00000: G main" in losses and "00007: G main" in losses  # legends name runs by number
    assert page.tags["h3"] >= 2 * (len(SECTIONS) - 2)  # per-run parts under a heading each
    assert page.all_text.count("finished") == 2


def test_report_bad_folder_and_missing_matplotlib_exit_2(tiny_run, tmp_path, monkeypatch):
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a ganforge run folder" in result.output and "Traceback" not in result.output
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    result = CliRunner().invoke(main, ["report", str(tiny_run)])
    assert result.exit_code == 2
    assert result.output.strip() == "error: ganforge report needs matplotlib: pip install 'ganforge[report]'"
    assert refresh_report(tiny_run) == "report.html not written: it needs matplotlib (pip install 'ganforge[report]')"


def test_report_out_naming_a_folder_is_refused_before_anything_is_read(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path / "missing-run"), "--out", str(tmp_path)])
    assert result.exit_code == 2 and result.output.startswith("error: "), result.output
    assert f"Invalid value for '--out': File '{tmp_path}' is a directory." in result.output


def test_demo_summary_ends_with_the_report(tiny_run, capsys):
    from ganforge.demo import where

    where(tiny_run.parent)
    *lines, last = capsys.readouterr().out.strip().splitlines()
    assert last.startswith(f"report:       {tiny_run / 'report.html'}") and (tiny_run / "report.html").is_file()
    assert lines[-1].startswith(f"explore:      .venv/bin/ganforge explore --network {tiny_run} ")


def test_train_rewrote_the_report_at_each_snapshot_and_once_it_ended(tiny_run):
    """The fixture's run did not pass --no-report: the loop wrote report.html after each of its 3 snapshots, and
    once more after its last line, so that the page says it finished (it said "running" at its end before)."""
    lines = (tiny_run / "log.txt").read_text().splitlines()
    snapshots = [line for line in lines if line.startswith("snapshot ")]
    assert len(snapshots) == lines.count(f"report {tiny_run / 'report.html'}") - 1 == 3
    assert lines[-1] == f"report {tiny_run / 'report.html'}" and lines[-2].startswith("done: ")
    page = (tiny_run / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and '<span class="status finished"' in page


def test_a_run_stopped_by_ctrl_c_says_so_in_its_log_and_its_report(tmp_path, monkeypatch):
    """Ctrl-C (SIGINT) in the training loop: checkpointed, exit 130, "stopped by the user" (not "preempted", which
    SIGTERM is), and report.html rewritten to say "stopped" (it said "running, 0/40" until `ganforge report`)."""
    import signal

    from ganforge.train import loop

    data = make_dataset(tmp_path / "squares")
    original, pressed = loop.run_phase, []

    def phase_then_ctrl_c(*args, **kwargs):
        stats = original(*args, **kwargs)
        if not pressed:  # once: a second Ctrl-C a while later interrupts at once, as it should
            pressed.append(True)
            signal.raise_signal(signal.SIGINT)  # caught by the loop's guard: it stops at the next step boundary
        return stats

    monkeypatch.setattr(loop, "run_phase", phase_then_ctrl_c)
    args = ["train", "--data", str(data), "--outdir", str(tmp_path / "runs"), "--cfg", "tiny", "--kimg", "0.04",
            "--batch", "8", "--tick", "0.008", "--snap", "5", "--workers", "0", "--device", "cpu",
            "--aug", "noaug"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130, result.output
    (run,) = (tmp_path / "runs").iterdir()
    log = (run / "log.txt").read_text()
    assert "stopped by the user (Ctrl-C) after 0.008 kimg; rerun the same command to resume" in log
    assert "stopping on signal" not in log and (run / "checkpoints" / "ckpt-000000008").is_dir()
    assert '<span class="status stopped"' in (run / "report.html").read_text()
