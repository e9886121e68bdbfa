"""``ovtui report --html`` and ``ovtui compare --html``: one self-contained page whose plotted points
are the report's figures (read back from the SVG by its own axis), with nothing fetched from elsewhere."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace


class Page(HTMLParser):
    """Every element's tag and attributes, in order, and the page's text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str, cls: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and a.get("class") == cls]


def plotted_value(y: float, page: Page) -> float:
    """The value at height ``y`` by the chart's own y axis (its tick labels and their positions)."""
    ticks = sorted((float(a["y"]), float(a["data-value"])) for a in page.all("text", "ytick"))
    (y0, v0), (y1, v1) = ticks[0], ticks[-1]
    return v0 + (y - y0) * (v1 - v0) / (y1 - y0)


def assert_self_contained(page: Page, text: str) -> None:
    tags = {t for t, _ in page.elements}
    assert "script" not in tags and "link" not in tags and "img" not in tags and "iframe" not in tags
    refs = [v for _, a in page.elements for k, v in a.items() if k in {"src", "href"}]
    assert refs == [] and "url(" not in text and "@import" not in text


def test_the_html_report_of_a_training_run_plots_the_report(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    train = run_ovtui("train", str(root), "--epochs", "2", "--approve", "all", cwd=tmp_path)
    assert train.returncode == 0, train.stderr
    out = tmp_path / "share" / "run.html"
    out.parent.mkdir()
    proc = run_ovtui("report", "-w", str(root), "--html", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [run] = [p for p in (root / "runs").iterdir()]
    assert proc.stdout.strip() == f"html: share/run.html (run {run.name})"
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert_self_contained(page, text)

    points = page.all("circle", "point") + page.all("rect", "point")
    by_stage = {(a["data-stage"], int(a["data-epoch"])): a for a in points}
    assert set(by_stage) == {(s["stage"], s["epoch"]) for s in report["stages"]}
    for stage in report["stages"]:
        mark = by_stage[(stage["stage"], stage["epoch"])]
        accuracy = stage["passed"] / stage["cases"]
        assert float(mark["data-accuracy"]) == pytest.approx(accuracy, abs=1e-6)
        y = float(mark["cy"]) if "cy" in mark else float(mark["y"]) + float(mark["height"]) / 2
        assert plotted_value(y, page) == pytest.approx(accuracy, abs=0.01), stage["stage"]
    bars = page.all("line", "ci")
    assert [b["data-stage"] for b in bars] == ["baseline_eval", "final_eval"]
    for bar in bars:  # each interval holds its point, drawn where it says
        point = float(
            by_stage[(bar["data-stage"], -1 if bar["data-stage"] == "baseline_eval" else 2)]["data-accuracy"]
        )
        assert float(bar["data-low"]) <= point <= float(bar["data-high"])
        assert plotted_value(float(bar["y1"]), page) == pytest.approx(float(bar["data-low"]), abs=0.01)

    cells = {(a["data-case"], a["data-stage"], int(a["data-epoch"])): a for a in page.all("rect", "cell")}
    for stage in report["stages"]:
        for case, trials in stage["results"].items():
            cell = cells[(case, stage["stage"], stage["epoch"])]
            assert cell["data-passed"] == f"{sum(trials)}/{len(trials)}"
    gained = [c for c, a in cells.items() if c[1] == "final_eval" and a["data-flip"] == "gained"]
    baseline, final = report["stages"][0]["results"], report["stages"][-1]["results"]
    assert sorted(c for c, _, _ in gained) == sorted(
        c for c in final if final[c] == [1] and baseline[c] == [0]
    )
    assert gained and "final better than baseline" in " ".join(page.text)
    evidence = report["stages"][-1]["evidence"]
    assert evidence and all(line in text for line in evidence.values())  # each case with what the agent did


def test_compare_writes_its_verdict_and_both_policies_into_one_page(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    assert (
        run_ovtui(
            "train", str(root), "--epochs", "1", "--approve", "all", "--no-eval", cwd=tmp_path
        ).returncode
        == 0
    )
    first = sorted(p.name for p in (root / "history").iterdir() if p.is_dir())[0]
    out = tmp_path / "ab.html"
    proc = run_ovtui("compare", first, "current", "-w", str(root), "--json", "--html", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert_self_contained(page, text)
    [verdict] = page.all("p", "verdict")
    assert verdict["data-verdict"] == data["verdict"]
    stages = {a["data-stage"]: float(a["data-accuracy"]) for a in page.all("circle", "point")}
    assert stages["compare_b"] - stages["compare_a"] == pytest.approx(data["delta"], abs=1e-6)
    lost_or_gained = {
        a["data-case"] for a in page.all("rect", "cell") if a["data-stage"] == "compare_b" and a["data-flip"]
    }
    assert lost_or_gained == set(data["flips"]["gained"]) | set(data["flips"]["lost"])
    # A again is marked against A's first run, not against B: the scripted agent never flips there.
    assert not [a for a in page.all("rect", "cell") if a["data-stage"] == "compare_aa" and a["data-flip"]]
    assert len(text.encode()) < 200_000
