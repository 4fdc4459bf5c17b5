"""What a reader sees on the report page, read from the DOM a browser builds (report_page.Page) and from the figures'
SVG, on run folders made of small hand-written files: the images behind every metric value and a mark on each one
not computed on its metric's full protocol; a title and unit for every telemetry signal the monitor records; ADA's
target line; a table for a metric with one result; one memory figure on a CPU run; the profile summary linked and
embedded."""

import json
import os
import warnings
from collections import Counter

import matplotlib.colors
import pytest
from report_helpers import handmade_run
from report_page import Page

from fake_nvml import FakeNvml, reading
from ganforge.monitor.profiler import Window, summary_text
from ganforge.monitor.readers import CpuReader, GpuReader
from ganforge.monitor.sampler import summarise
from ganforge.report import rundata, write_report
from ganforge.report.figures import LEVEL_COLOR

FULL, SMALL = (50_000, 70_000), (256, 512)  # (fakes, reals): fid50k_full's protocol on a 70k dataset; a quick look


def _result(metric: str, kimg: int, results: dict, counts: tuple[int, int] | None) -> dict:
    record = {"snapshot": f"snapshots/network-snapshot-{kimg:06d}.safetensors", "metric": metric, "results": results}
    return record | ({} if counts is None else {"num_fake": counts[0], "num_real": counts[1]})


def _write_metrics(run, results: list[dict]) -> None:
    for path in run.glob("metric-*.jsonl"):
        path.unlink()
    for record in results:
        with open(run / f"metric-{record['metric']}.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")


def _write_stats(run, records: list[dict]) -> None:
    (run / "stats.jsonl").write_text(
        "".join(json.dumps({"kimg": 4.0 * (i + 1)} | r) + "\n" for i, r in enumerate(records))
    )


def _page(run, **kwargs) -> Page:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the damaged-file tests look at the warnings; these look at the page
        return Page(write_report(run, **kwargs).read_text(encoding="utf-8"))


def _best_lines(page: Page, row: int = 0) -> list[tuple[str, bool]]:
    """(text, marked as reduced) of each best value in the summary's row `row`."""
    summary = page.root.find("section", id="summary")
    column = [th.text for th in summary.find_all("th")].index("best (images used)")
    cell = summary.find("tbody").find_all("tr")[row].find_all("td")[column]
    return [(span.text, "reduced" in span.attrs.get("class", "")) for span in cell.find_all("span")]


def _result_rows(page: Page, title: str) -> list[list[str]]:
    """The body rows of the results table captioned `title`."""
    (table,) = [f for f in page.root.find_all("figure", cls="results") if f.find("figcaption").text == title]
    return [[td.text for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")]


def test_every_metric_value_names_its_images_and_a_reduced_protocol_is_marked(tmp_path):
    run = handmade_run(tmp_path)
    kid = [_result("kid50k_full", k, {"kid50k_full": v}, SMALL) for k, v in ((4, 0.05), (8, 0.001), (12, 0.03))]
    _write_metrics(run, [*kid, _result("kid50k_full", 12, {"kid50k_full": 0.02}, FULL),
                         _result("fid50k_full", 12, {"fid50k_full": 3.21}, FULL),
                         _result("eqt50k_int", 12, {"eqt50k_int": 40.5}, (50_000, 0)),
                         _result("pr50k3_full", 12, {"pr50k3_full_precision": 0.7, "pr50k3_full_recall": 0.4},
                                 (1000, 70_000)),
                         _result("mymetric", 12, {"mymetric": 1.0}, (10, 10)),
                         _result("fid10k", 12, {"fid10k": 9.0}, None)])  # fmt: skip
    page = _page(run)
    reduced_pr = "1k fakes / 70k reals, not the full protocol of 50k fakes / all reals"
    assert _best_lines(page) == [
        ("eqt50k_int 40.5 at 12 kimg (50k fakes)", False),
        ("fid10k 9 at 12 kimg (image counts not recorded, not the full protocol of 10k fakes / 10k reals)", True),
        ("fid50k_full 3.21 at 12 kimg (50k fakes / 70k reals)", False),
        ("kid50k_full 0.02 at 12 kimg (50k fakes / 70k reals)", False),  # not the lower value on 256 fakes
        ("mymetric 1 at 12 kimg (10 fakes / 10 reals, a metric ganforge does not have: its protocol is unknown)", True),
        (f"pr50k3_full_precision 0.7 at 12 kimg ({reduced_pr})", True),
        (f"pr50k3_full_recall 0.4 at 12 kimg ({reduced_pr})", True),
    ]
    # KID has several results: a figure, each curve named with its images in the legend, caption and tooltip.
    reduced_kid = "kid50k_full: 256 fakes / 512 reals, not the full protocol of 50k fakes / all reals"
    figure = page.figure("Metric kid50k_full")
    assert figure.find("figcaption").text == f"{reduced_kid} kid50k_full: 50k fakes / 70k reals"
    assert reduced_kid in figure.find("img").attrs["title"]
    legend = page.svg("Metric kid50k_full").texts
    assert "kid50k_full (256 fakes / 512 reals, reduced)" in legend and "kid50k_full (50k fakes / 70k reals)" in legend
    # One result each: a table where the figure would be, the images beside the value.
    assert "Metric fid50k_full" not in [i["alt"] for i in page.images]
    assert _result_rows(page, "Metric fid50k_full") == [["fid50k_full", "12", "3.21", "50k fakes / 70k reals"]]
    assert _result_rows(page, "Metric eqt50k_int") == [["eqt50k_int", "12", "40.5", "50k fakes"]]
    assert _result_rows(page, "Metric pr50k3_full") == [["pr50k3_full_precision", "12", "0.7", reduced_pr],
                                                        ["pr50k3_full_recall", "12", "0.4", reduced_pr]]  # fmt: skip


def test_a_metric_is_a_table_until_one_of_its_curves_has_two_results(tmp_path):
    run = handmade_run(tmp_path)
    first = _result("fid50k_full", 4, {"fid50k_full": 30.0}, FULL)
    _write_metrics(run, [first, _result("fid50k_full", 8, {"fid50k_full": 20.0}, SMALL)])  # two protocols, one each
    page = _page(run)
    assert "Metric fid50k_full" not in [i["alt"] for i in page.images]
    assert [row[-1] for row in _result_rows(page, "Metric fid50k_full")] == [
        "50k fakes / 70k reals", "256 fakes / 512 reals, not the full protocol of 50k fakes / all reals"]  # fmt: skip
    _write_metrics(run, [first, _result("fid50k_full", 8, {"fid50k_full": 20.0}, FULL)])
    page = _page(run)
    assert "fid50k_full (50k fakes / 70k reals)" in page.svg("Metric fid50k_full").texts
    assert not page.root.find_all("figure", cls="results")


def test_runs_overlaid_with_one_result_each_get_one_table_naming_the_runs(tmp_path):
    runs = [handmade_run(tmp_path, f"0000{i}-squares-tiny-gpus1-batch8") for i in (1, 2)]
    for run, fid in zip(runs, (30.0, 40.0), strict=True):
        _write_metrics(run, [_result("fid50k_full", 4, {"fid50k_full": fid}, FULL)])
    page = _page(runs, out=tmp_path / "compare.html")
    header = [th.text for th in page.root.find("figure", cls="results").find_all("th")]
    assert header == ["run", "result", "kimg", "value", "images"]
    assert [row[0] for row in _result_rows(page, "Metric fid50k_full")] == ["00001", "00002"]


def _telemetry_ticks() -> list[dict]:
    """Two ticks of what the monitor records, read through its own readers: every signal of a GPU (a scripted
    NVML) and of the CPU (this process), each summarised with its range as the sampler does."""
    gpu = GpuReader(FakeNvml({"GPU-a": [reading(throttle=4), reading(throttle=0)] * 2}), ["GPU-a"])
    cpu = CpuReader()
    return [summarise([gpu.read() | cpu.read() for _ in range(2)]) for _ in range(2)]


def test_every_telemetry_signal_has_a_title_with_its_unit(tmp_path):
    run = handmade_run(tmp_path)
    ticks = _telemetry_ticks()
    assert {"GPU0/mem_total_gb", "GPU0/power_limit_w", "GPU0/throttle", "CPU/avail_gb"} <= set(ticks[0])
    _write_stats(run, ticks)
    page = _page(run)
    units = {"GPU utilisation (%)": "%", "GPU memory used (GB)": "GB", "GPU temperature (°C)": "°C",
             "GPU power draw (W)": "W", "GPU SM clock (MHz)": "MHz",
             "GPU slowdown reasons (NVML reason bits, OR over the tick)": "NVML reason bits, OR over the tick",
             "CPU use of the training process (% of one core)": "% of one core",
             "Process memory, resident (GB)": "GB", "System memory available (GB)": "GB"}  # fmt: skip
    drawn = [i["alt"] for i in page.images if i["class"] == "plot"]
    assert sorted(drawn) == sorted(units)  # every signal read has a figure of its own title, and nothing else
    for title, unit in units.items():
        texts = page.svg(title).texts
        assert texts.count(title) == 1 and unit in texts, title  # the title, and the unit on the y axis
    assert {"GPU0 mean", "GPU0 max", "GPU0 total"} <= set(page.svg("GPU memory used (GB)").texts)
    assert "GPU0 limit" in page.svg("GPU power draw (W)").texts


def _ada_run(tmp_path, name: str, augment: dict):
    run = handmade_run(tmp_path, name)
    config = json.loads((run / "config.json").read_text()) | {"augment": augment}
    (run / "config.json").write_text(json.dumps(config))
    _write_stats(run, [{"Aug/p": 0.0, "Aug/rt": 0.1}, {"Aug/p": 0.02, "Aug/rt": 0.3}, {"Aug/p": 0.05, "Aug/rt": 0.4}])
    return run


def test_the_ada_figure_draws_the_target_its_legend_names(tmp_path):
    grey = matplotlib.colors.to_hex(LEVEL_COLOR)
    run = _ada_run(tmp_path, "00001-squares-tiny-gpus1-batch8", {"mode": "ada", "target": 0.6})
    svg = _page(run).svg("Adaptive augmentation")
    assert "r_t target 0.6" in svg.texts and {"p", "r_t"} <= set(svg.texts)
    (line,) = svg.horizontal_lines(grey)
    assert line == pytest.approx(svg.y_at(0.6), abs=0.01)  # drawn across the axes at r_t = 0.6
    fixed = _ada_run(tmp_path, "00002-squares-tiny-gpus1-batch8", {"mode": "fixed", "target": 0.6, "p": 0.2})
    svg = _page(fixed).svg("Adaptive augmentation")
    assert not any("target" in text for text in svg.texts) and svg.horizontal_lines(grey) == []  # p is not steered
    other = _ada_run(tmp_path, "00003-squares-tiny-gpus1-batch8", {"mode": "ada", "target": 0.45})
    svg = _page([run, other], out=tmp_path / "compare.html").svg("Adaptive augmentation")
    assert {"00001: r_t target 0.6", "00003: r_t target 0.45"} <= set(svg.texts)
    assert sorted(svg.horizontal_lines(grey)) == pytest.approx(sorted([svg.y_at(0.6), svg.y_at(0.45)]), abs=0.01)


def test_a_cpu_run_has_one_figure_of_its_resident_memory(tmp_path):
    run = handmade_run(tmp_path)
    ticks = [{"Memory/peak_gb": 1.5 + t, "CPU/rss_gb": 1.0 + t, "CPU/rss_gb/min": 0.9 + t, "CPU/rss_gb/max": 1.4 + t,
              "CPU/avail_gb": 50.0, "CPU/util": 100.0} for t in (0, 1)]  # fmt: skip
    _write_stats(run, ticks)
    page = _page(run)
    alts = [i["alt"] for i in page.images]
    assert "Process memory, resident (GB)" in alts and "Peak memory (GB)" not in alts
    _write_stats(run, [{"Memory/peak_gb": 1.5}, {"Memory/peak_gb": 2.5}])  # telemetry off: only the peak
    assert "peak resident" in _page(run).svg("Peak memory (GB)").texts
    # On a GPU the peak is the CUDA allocator's, another signal than the process's resident memory.
    _write_stats(run, [tick | {"Memory/total_gb": 80.0, "Memory/allocated_gb": 1.0} for tick in ticks])
    page = _page(run)
    assert "peak allocated (CUDA)" in page.svg("Peak memory (GB)").texts
    assert "Process memory, resident (GB)" in [i["alt"] for i in page.images]


def _profile(run, text: str) -> None:
    (run / "profile").mkdir()
    (run / "profile" / "summary.txt").write_text(text)


WINDOW = Window(steps=2, count=2, limit=2, first_nimg=8000, phases={"G main": 1, "D main": 1}, missing=(), detail=False)
TIMES, CALLS = {"G main": 50.0, "D main": 30.0, "other": 0.0}, Counter({"G main": 2, "D main": 2})
SUMMARY = summary_text(WINDOW, 80.0, TIMES, CALLS, "Name  Self CPU\naten::mul <1>")


def test_the_profile_summary_is_linked_from_the_summary_and_embedded(tmp_path):
    run = handmade_run(tmp_path)
    _profile(run, SUMMARY)
    page = _page(run)
    link = page.root.find("section", id="summary").find("a")
    assert link.text == "summary" and link.attrs["href"] == "#profile-0"
    shown = page.root.find(id="profile-0")
    assert shown.tag == "pre" and "".join(shown.children) == SUMMARY  # every line, as the file has it
    assert page.root.find("section", id="profile").find_all("pre") == [shown]
    plain = handmade_run(tmp_path, "00001-squares-tiny-gpus1-batch8")
    page = _page([run, plain], out=tmp_path / "compare.html")
    links = [a.attrs["href"] for a in page.root.find("section", id="summary").find_all("a")]
    assert links == ["#profile-0"] and page.root.find(id="profile-0").tag == "pre"
    assert "not profiled" in page.root.find(id="profile-1").text


def test_a_profile_summary_is_read_bounded_and_never_through_a_link(tmp_path, monkeypatch):
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "summary.txt").write_text("c2VjcmV0LXRva2Vu")
    run = handmade_run(tmp_path)
    (run / "profile").symlink_to(secret, target_is_directory=True)
    with pytest.warns(UserWarning, match="profile: is not a folder"):
        found = rundata.read_run(run)
    assert found.profile is None and "c2VjcmV0LXRva2Vu" not in _page(run).all_text
    (run / "profile").unlink()
    (run / "profile").mkdir()
    (run / "profile" / "summary.txt").symlink_to(secret / "summary.txt")
    with pytest.warns(UserWarning, match="symbolic link, which is not followed"):
        assert rundata.read_run(run).profile is None
    (run / "profile" / "summary.txt").unlink()
    os.mkfifo(run / "profile" / "summary.txt")
    with pytest.warns(UserWarning, match="not a regular file"):
        assert rundata.read_run(run).profile is None  # returned: a FIFO is never opened for a blocking read
    (run / "profile" / "summary.txt").unlink()
    monkeypatch.setattr(rundata, "MAX_PROFILE_BYTES", 100)
    (run / "profile" / "summary.txt").write_text(SUMMARY * 100)
    with pytest.warns(UserWarning, match="only its first 100 bytes are read"):
        assert rundata.read_run(run).profile == SUMMARY[:100]
