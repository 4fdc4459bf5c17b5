"""The report's "Training labels" section, from labels.json in run folders written by hand: classes as a table of
counts with bars (the largest when there are many), multi-hot vectors as images per label, continuous vectors as
ranges; older runs and unconditional data as a note; a hostile labels.json escaped, checked and counted, never a
crash. (That train writes labels.json: tests/train/test_train_cli.py, the conditional run.)"""

import json
import warnings

import pytest
from report_helpers import handmade_run
from report_page import Page

from ganforge.report import rundata
from ganforge.report.labels import MAX_NAME_CHARS, MAX_ROWS
from ganforge.report.page import render


def _section(tmp_path, labels: str | None, cond: bool = True):
    """The labels section of the page of a handmade run with `labels` as labels.json (None: no such file), and the
    warnings reading it gave. The run has no ticks, so that no figure is drawn."""
    run = handmade_run(tmp_path)
    (run / "stats.jsonl").unlink()
    (run / "metric-fid50k_full.jsonl").unlink()
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(config | {"data": config["data"] | {"cond": cond}}))
    if labels is not None:
        (run / "labels.json").write_text(labels)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = rundata.read_run(run)
    page = Page(render([found]))
    return page.root.find("section", id="labels"), [str(w.message) for w in caught]


def _rows(section) -> list[list[str]]:
    return [[cell.text for cell in row.find_all("td")] for row in section.find("tbody").find_all("tr")]


def _bars(section) -> list[str]:
    return [span.attrs["style"] for span in section.find_all("span")]


def test_classes_show_every_count_its_share_and_a_bar_in_the_datas_order(tmp_path):
    labels = {"kind": "classes", "counts": {"zebra": 30, "cat": 10, "dog": 0}}
    section, warned = _section(tmp_path, json.dumps(labels))
    assert not warned
    assert "3 classes, 40 images; smallest dog (0), largest zebra (30)" in section.text
    assert _rows(section) == [["zebra", "30", "75.0%", ""], ["cat", "10", "25.0%", ""], ["dog", "0", "0.0%", ""]]
    assert _bars(section) == ["width: 100.0%", "width: 33.3%", "width: 0.0%"]  # against the largest class
    assert "--cond" not in section.text


def test_many_classes_show_the_largest_and_say_how_many_more(tmp_path):
    counts = {f"class{i:03d}": 1000 + i for i in range(MAX_ROWS + 10)}
    section, _ = _section(tmp_path, json.dumps({"kind": "classes", "counts": counts}))
    rows = _rows(section)
    assert [row[0] for row in rows] == [f"class{i:03d}" for i in reversed(range(10, MAX_ROWS + 10))]
    assert rows[0][1] == "1,059"
    assert f"... 10 more classes (the {MAX_ROWS} largest shown)" in section.text
    assert "smallest class000 (1,000)" in section.text  # the rarest class is named though its row is not shown


def test_multi_hot_vectors_show_the_images_carrying_each_label(tmp_path):
    stats = {"min": 0.0, "max": 1.0, "std": 0.4}
    columns = {"smiling": stats | {"mean": 0.25, "nonzero": 4}, "glasses": stats | {"mean": 0.5, "nonzero": 8}}
    section, _ = _section(tmp_path, json.dumps({"kind": "vectors", "multi_hot": True, "columns": columns}))
    assert "multi-hot label vectors: 2 labels" in section.text
    assert _rows(section) == [["smiling", "4", "25.0%", ""], ["glasses", "8", "50.0%", ""]]
    assert _bars(section) == ["width: 50.0%", "width: 100.0%"]


def test_continuous_vectors_show_each_entrys_range(tmp_path):
    columns = {
        f"e{i}": {"min": -1.5, "mean": i / 8, "max": 90, "std": 12.25, "nonzero": 7} for i in range(MAX_ROWS + 2)
    }
    section, _ = _section(tmp_path, json.dumps({"kind": "vectors", "multi_hot": False, "columns": columns}))
    assert f"continuous label vectors: {MAX_ROWS + 2} entries" in section.text
    headers = [th.text for th in section.find_all("th")]
    assert headers == ["entry", "min", "mean", "max", "std"] and not _bars(section)
    rows = _rows(section)
    assert len(rows) == MAX_ROWS and rows[1] == ["e1", "-1.5", "0.125", "90", "12.25"]
    assert f"... 2 more entries (the first {MAX_ROWS} shown)" in section.text


@pytest.mark.parametrize(
    ("labels", "cond", "note"),
    [
        (None, True, "not recorded (the run folder has no readable labels.json)"),
        ('{"kind": "none"}', False, "unconditional data: no labels"),
        ('{"kind": "classes", "counts": {"a": 1}}', False, "This run trains without them (no --cond)"),
    ],
)
def test_older_runs_unconditional_data_and_unused_labels_get_a_note(tmp_path, labels, cond, note):
    section, warned = _section(tmp_path, labels, cond=cond)
    assert note in section.text and not warned


def test_a_hostile_labels_json_renders_escaped_with_the_bad_entries_counted(tmp_path):
    long_name = "n" * 100_000
    counts = (
        '{"<script>alert(1)</script>": 5, "' + long_name + '": 1e90, "text": "7", "negative": -1, "half": 1.5, '
        '"bool": true, "nan": NaN, "huge": 1e300, "list": [1], "null": null}'
    )
    section, warned = _section(tmp_path, '{"kind": "classes", "counts": ' + counts + "}")
    assert not warned and not section.find_all("script")
    rows = _rows(section)
    assert rows[0][:2] == ["<script>alert(1)</script>", "5"]  # as text: the parser saw no tag
    assert rows[1][0] == long_name[: MAX_NAME_CHARS - 3] + "..." and rows[1][1] == f"{int(1e90):,}"
    assert "8 entries of labels.json are not what train writes; left out" in section.text

    columns = '{"x": [], "y": {"min": "0", "mean": 0, "max": 1, "std": 0}, "z": {"nonzero": 3, "mean": 2}}'
    section, _ = _section(tmp_path / "vectors", '{"kind": "vectors", "multi_hot": true, "columns": ' + columns + "}")
    assert _rows(section) == [["z", "3", "-", ""]]  # a share of 200% is no share
    assert "2 entries of labels.json" in section.text


@pytest.mark.parametrize(
    "content",
    [
        '{"kind": "classes", "counts": [1, 2]}',
        '{"kind": "vectors", "columns": "x"}',
        '{"kind": 5}',
        "{}",
    ],
)
def test_a_labels_json_that_is_no_distribution_is_left_out_with_a_note(tmp_path, content):
    section, _ = _section(tmp_path, content)
    assert "labels.json is not a label distribution; left out" in section.text


@pytest.mark.parametrize("content", ["[]", "{", '{"a": ' * 40 + "1" + "}" * 40])
def test_a_labels_json_that_is_not_a_shallow_json_object_is_warned_about(tmp_path, content):
    section, warned = _section(tmp_path, content)
    assert "not recorded" in section.text and any("labels.json: is not a JSON object" in w for w in warned)
