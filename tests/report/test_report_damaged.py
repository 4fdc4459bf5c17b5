"""A damaged or foreign run folder: each bad part is left out with a warning (or counted), the rest is reported, and
nothing makes the report slow, large, blocked or crash; only a folder that is not a run is refused. The page's
destination is checked before any work."""

import json
import os
import warnings

import pytest
from report_helpers import handmade_run

from ganforge.durable import WriteError
from ganforge.report import curves, images, refresh_report, rundata, tables, write_report
from ganforge.report.page import render
from ganforge.report.rundata import read_run

GARBAGE_LINES = [
    b"garbage",
    b"[]",
    b"5",
    b'{"kimg": "x", "Loss/G/main": 1}',  # no numeric kimg: not a tick
    b"[" * 100_000 + b"]" * 100_000,  # deeper than the parser's recursion limit
    b'{"kimg": ' + b"9" * 5000 + b"}",  # an integer Python will not convert
    b'{"kimg": 1.0, "x": "' + b"a" * (rundata.MAX_LINE_BYTES + 10) + b'"}',  # a line longer than any record
]


def read(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = read_run(run)
    return found, [str(w.message) for w in caught]


def test_stats_lines_that_are_not_tick_records_are_counted_and_skipped(tmp_path):
    run = handmade_run(tmp_path)
    odd = {"kimg": 0.024, "Loss/G/main": 10**400, "Loss/D/main": float("nan"), "flag": True, "k" * 500: 1.0,
           "alerts": ["ok", 5, {"x": 1}], "Timing/img_per_s": -1e300}  # fmt: skip
    with open(run / "stats.jsonl", "ab") as f:
        f.write(b"\n".join([*GARBAGE_LINES, json.dumps(odd).encode()]) + b"\n")
    found, warned = read(run)
    assert found.unreadable_stats == len(GARBAGE_LINES)
    assert [r["kimg"] for r in found.stats] == [0.008, 0.016, 0.024]
    assert found.stats[-1] == {"kimg": 0.024, "alerts": ["ok"]}  # only finite, plausible numbers and alert texts
    assert rundata._stats_record({"kimg": 1.0, "alerts": -1}) == {"kimg": 1.0}  # a number is no alert
    assert tables.alerts(rundata.Run(**{**found.__dict__, "stats": [rundata._stats_record({"kimg": 1, "alerts": 2})]})
                         ) == [("", "warning: data-bound")]  # fmt: skip
    assert any(f"{len(GARBAGE_LINES)} line(s) are not tick records" in w for w in warned)
    assert f"{len(GARBAGE_LINES)} line(s) of stats.jsonl could not be read" in render([found])  # the page says so too


@pytest.mark.parametrize("content", [b"[]", b"7", b"{", b"[" * 100_000, b'{"a": ' * 40 + b"1" + b"}" * 40])
def test_a_config_that_is_not_a_shallow_json_object_is_left_out(tmp_path, content):
    run = handmade_run(tmp_path)
    (run / "config.json").write_bytes(content)
    found, warned = read(run)
    assert found.config is None and any("config.json: is not a JSON object" in w for w in warned)
    assert tables.summary(found)["preset"] == "?" and tables.config_rows(found) == []


def test_config_values_of_any_type_are_shown_and_only_a_well_typed_config_is_described(tmp_path):
    run = handmade_run(tmp_path)
    config = {"preset": {"x": [1, 2]}, "data": [1, 2], "schedule": {"kimg": "many"}, "world_size": 10**300}
    (run / "config.json").write_text(json.dumps(config))
    found, _ = read(run)
    facts = tables.summary(found)
    assert facts["dataset"] == "? (? px, ? ch)" and facts["kimg"] == "0.016 / ?"
    assert tables.derived_lines(found) == [] and "data" in dict(tables.config_rows(found))
    render([found])


def test_a_well_typed_config_with_impossible_values_is_not_described(tiny_run, tmp_path):
    config = json.loads((tiny_run / "config.json").read_text())
    found = read_run(tiny_run)
    assert tables.derived_lines(found)  # a real run's config is described
    config["schedule"]["batch_gpu"] = 0  # batch // (batch_gpu * world_size)
    broken = rundata.Run(**{**found.__dict__, "config": config})
    assert tables.derived_lines(broken) == []
    config["schedule"]["batch_gpu"] = "8"
    assert tables.derived_lines(rundata.Run(**{**found.__dict__, "config": config})) == []


def test_metric_lines_that_are_not_results_are_skipped(tmp_path):
    run = handmade_run(tmp_path)
    with open(run / "metric-fid50k_full.jsonl", "a") as f:
        for line in ("[]", '{"results": [1]}', '{"results": {"fid50k_full": "low"}, "snapshot": 5}', "{"):
            f.write(line + "\n")
    (run / "metric-junk.jsonl").write_bytes(os.urandom(3000))
    found, warned = read(run)
    assert found.metrics["fid50k_full"][0]["results"] == {"fid50k_full": 300.0}
    assert found.metrics["fid50k_full"][1:] == [
        {"snapshot": None, "results": {}, "kimg": None, "num_fake": None, "num_real": None}
    ]
    assert any("metric-fid50k_full.jsonl: 3 line(s) are not metric results" in w for w in warned)
    [(key, value, kimg, used)] = tables.best_metrics(found)
    assert (key, value, kimg, used.counts) == ("fid50k_full", 300.0, 0.016, "image counts not recorded")
    assert not used.full  # a value whose images are not known is never shown as the full protocol


@pytest.mark.parametrize("count", ["512", -1, 2.5, True, 10**12, float("nan"), None, [512]])
def test_image_counts_that_no_metric_writes_are_not_recorded(tmp_path, count):
    run = handmade_run(tmp_path)
    result = {"snapshot": "snapshots/network-snapshot-000000.016.safetensors", "results": {"fid50k_full": 3.0},
              "num_fake": 50_000, "num_real": count}  # fmt: skip
    (run / "metric-fid50k_full.jsonl").write_text(json.dumps(result) + "\n")
    (record,) = read(run)[0].metrics["fid50k_full"]
    assert (record["num_fake"], record["num_real"]) == (50_000, None)
    assert "not the full protocol" in render([read(run)[0]])


def test_a_fifo_in_place_of_any_file_is_never_opened_for_a_blocking_read(tmp_path):
    run = handmade_run(tmp_path)
    for name in ("stats.jsonl", "config.json", "env.json", "metric-fid50k_full.jsonl", "fakes000000.016.png"):
        (run / name).unlink(missing_ok=True)
        os.mkfifo(run / name)
    (run / "log.txt").unlink()
    os.mkfifo(run / "log.txt")
    with pytest.raises(rundata.UserError, match="not a ganforge run folder"):
        read_run(run)  # neither config.json nor log.txt is a file
    (run / "log.txt").unlink()
    (run / "log.txt").write_text("starting at 0 kimg\n")
    found, warned = read(run)
    assert found.stats == [] and found.config is None and found.fakes == []
    assert sum("is not a regular file" in w or "not a readable regular file" in w for w in warned) == 5
    render([found])


def test_only_the_end_of_a_huge_log_is_read(tmp_path, monkeypatch):
    run = handmade_run(tmp_path)
    monkeypatch.setattr(rundata, "MAX_LOG_BYTES", 100)
    (run / "log.txt").write_text("starting at 0 kimg\n" + "x" * 10_000 + "\nerror: training diverged: 20 steps\n")
    found, warned = read(run)
    assert found.status.state == "diverged" and len(found.log[0]) <= 100
    assert any("only its last 100 bytes are read" in w for w in warned)


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height (its one IDAT holds almost nothing)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")
    )


def test_grids_that_cannot_be_shown_are_left_out_with_a_warning(tmp_path):
    run = handmade_run(tmp_path)
    good = (run / "fakes000000.016.png").read_bytes()
    (run / "fakes000000.000.png").write_bytes(good[: len(good) // 2])  # truncated
    (run / "fakes000000.004.png").write_bytes(_png_claiming(100_000, 100_000))  # 10^10 pixels
    (run / "fakes000000.006.png").write_bytes(_png_claiming(9000, 9000))  # within Pillow's limit, beyond a grid's
    (run / "fakes000000.008.png").mkdir()
    (run / "fakes000000.010.png").symlink_to(run / "missing.png")
    with open(run / "fakes000000.012.png", "wb") as f:  # larger than any grid; sparse: takes no disk
        f.truncate(images.MAX_GRID_BYTES + 1)
    (run / "reals.png").write_bytes(b"not a png")
    found, warned = read(run)
    assert [p.name for _, p in found.fakes] == ["fakes000000.000.png", "fakes000000.004.png", "fakes000000.006.png",
                                               "fakes000000.012.png", "fakes000000.016.png"]  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = render([found])
    texts = " ".join(str(w.message) for w in caught)
    for name, why in (("000.png", "not a readable image"), ("004.png", "not a readable image"),
                      ("006.png", "9000x9000 pixels, more than a sample grid has"),
                      ("012.png", "more than such a file holds"), ("reals.png", "not a readable image")):  # fmt: skip
        assert name in texts and why in texts, name
    assert page.count('<img class="grid"') == 1  # the one good grid
    assert any("fakes000000.008.png: is not a readable regular file" in w for w in warned)


def test_a_stats_file_with_thousands_of_keys_draws_a_bounded_number_of_figures(tmp_path, monkeypatch):
    run = handmade_run(tmp_path)
    monkeypatch.setattr(curves, "MAX_PLOTS", 6)
    monkeypatch.setattr(curves, "MAX_CURVES", 3)
    record = {"kimg": 1.0} | {f"GPU0/signal{i}": 1.0 for i in range(5000)} | {f"GradNorm/l{i}": 1.0 for i in range(50)}
    (run / "stats.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.warns(UserWarning) as caught:
        drawn = curves.plots([read_run(run)])
    assert len(drawn) == 6 and all(len(p.curves) <= 3 for p in drawn if isinstance(p, curves.Plot))
    assert any("GradNorm/ curves" in str(w.message) for w in caught)


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink", "device"])
def test_the_page_is_never_written_over_what_is_not_a_regular_file(tmp_path, kind, monkeypatch):
    run = handmade_run(tmp_path)
    monkeypatch.setattr("ganforge.report.page.render", lambda runs: pytest.fail("checked after the work"))
    out = tmp_path / "page.html"
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "folder":
        out.mkdir()
    elif kind == "symlink":
        out.symlink_to(tmp_path / "elsewhere.html")
    elif os.geteuid() == 0:
        os.mknod(out, 0o20600, os.makedev(1, 7))  # a node of its own with /dev/full's numbers
    else:
        pytest.skip("making a device node needs root")
    before = os.lstat(out)
    with pytest.raises(WriteError, match=f"{out}: is a "):
        write_report(run, out)
    after = os.lstat(out)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    (run / "report.html").symlink_to(tmp_path / "elsewhere.html")
    assert refresh_report(run).startswith("report.html not written: ")  # training goes on
    assert not (tmp_path / "elsewhere.html").exists()


def test_a_page_for_a_folder_that_does_not_exist_is_one_line(tmp_path):
    run = handmade_run(tmp_path)
    with pytest.raises(
        WriteError, match="missing/page.html: cannot write: its folder does not exist; choose another path"
    ):
        write_report(run, tmp_path / "missing" / "page.html")
    assert not (run / "report.html").exists()


def test_links_in_a_run_folder_are_not_followed_into_the_page(tmp_path):
    run = handmade_run(tmp_path)
    secret = tmp_path / "credentials.json"
    secret.write_text(json.dumps({"auths": {"registry": {"auth": "c2VjcmV0LXRva2Vu"}}}))
    (run / "env.json").symlink_to(secret)
    (run / "stats.jsonl").unlink()
    (run / "stats.jsonl").symlink_to(secret)
    found, warned = read(run)
    assert found.env is None and found.stats == []
    assert sum("is a symbolic link, which is not followed" in w for w in warned) == 2
    assert "c2VjcmV0LXRva2Vu" not in render([found])


def test_a_metric_file_with_hundreds_of_result_keys_gives_a_bounded_summary(tmp_path):
    run = handmade_run(tmp_path)
    result = {"snapshot": "snapshots/network-snapshot-000000.016.safetensors", "num_fake": 16, "num_real": 16,
              "results": {f"fid50k_full_{i:03d}": float(i) for i in range(300)}}  # fmt: skip
    (run / "metric-fid50k_full.jsonl").write_text(json.dumps(result) + "\n")
    lines = tables.best_lines(read(run)[0])
    assert len(lines) == tables.MAX_BEST_LINES + 1 and lines[-1] == ("and 260 more results", True)
    assert all("16 fakes / 16 reals, not the full protocol" in text for text, _ in lines[:-1])
