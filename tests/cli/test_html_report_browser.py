"""The HTML report pages in a real browser (Debian's headless Chromium): each page kind — a training
run, an eval run, a compare run, a utility run, and a long training run with long case names — laid
out at 1280 and 800 px wide, measured by a script in the browser, must not scroll sideways, clip a
text box or a chart label, or blow a chart up past its own size.

One Chromium process measures every page at both widths (each page in a same-origin ``srcdoc``
frame of that width); one more takes a screenshot of the narrow training page.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from html import escape
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.train.html_report import render_html
from ovtui.train.reports import RunReport, StageReport

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium); CI has it"
)
WIDTHS = (1280, 800)

# Runs in the harness once every frame has loaded; writes what it measured into the DOM, which
# --dump-dom prints.
MEASURE = """
<script>
window.addEventListener("load", () => {
  const out = [];
  for (const frame of document.querySelectorAll("iframe")) {
    const doc = frame.contentDocument, view = frame.contentWindow;
    const root = doc.documentElement;
    const body = parseFloat(view.getComputedStyle(doc.body).fontSize);
    const said = (el) => el.tagName.toLowerCase() + " " + (el.textContent || "").trim().slice(0, 50);
    const overflowing = [], clipped = [], grown = [], large = [];
    for (const el of doc.body.querySelectorAll("*")) {
      if (el instanceof view.SVGElement) continue;
      if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) overflowing.push(said(el));
      const box = el.getBoundingClientRect();
      if (box.right > root.clientWidth + 1) overflowing.push("past the page: " + said(el));
    }
    for (const svg of doc.querySelectorAll("svg")) {
      const box = svg.viewBox.baseVal, shown = svg.getBoundingClientRect();
      const scale = shown.width / box.width;
      if (scale > 1.01) grown.push(svg.getAttribute("class") + " x" + scale.toFixed(2));
      for (const text of svg.querySelectorAll("text")) {
        const b = text.getBBox();
        if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > box.width + 0.5 || b.y + b.height > box.height + 0.5)
          clipped.push(svg.getAttribute("class") + ": " + text.textContent);
        const size = parseFloat(view.getComputedStyle(text).fontSize) * scale;
        if (size > body * 1.01) large.push(svg.getAttribute("class") + ": " + text.textContent + " " + size);
      }
    }
    out.push({page: frame.dataset.page, width: Number(frame.width), scrollWidth: root.scrollWidth,
              clientWidth: root.clientWidth, height: root.scrollHeight, body,
              overflowing, clipped, grown, large});
  }
  const pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={cwd / 'profile'}",  # its own profile: other Chromiums may run at once
        *args,
    ]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def long_report() -> RunReport:
    """A run of many epochs over cases with long names and long evidence: what crowds a page."""
    names = [f"a_rather_long_case_name_for_intent_{i:02d}_with_its_variant_and_more" for i in range(70)]
    stages = [
        StageReport(
            stage=stage,
            epoch=epoch,
            cases=len(names),
            passed=sum((i + epoch) % 3 > 0 for i in range(len(names))),
            avg_reward=0.5,
            results={n: [int((i + epoch) % 3 > 0)] for i, n in enumerate(names)},
            evidence={n: "get_reservation→" * 30 + "no_space_anywhere_" * 12 for n in names},
        )
        for stage, epoch in [
            ("baseline_eval", -1),
            *(("train_epoch", e) for e in range(16)),
            ("final_eval", 16),
        ]
    ]
    return RunReport(
        run_id="20261202T000000000000_longrn",
        command="train",
        backend="offline",
        dataset="support",
        stages=stages,
        split="validation",
        errors=["x" * 300],
    )


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each page kind, written by the product's commands (the long one rendered from its report)."""
    tmp = tmp_path_factory.mktemp("browser")
    root = build_sample_workspace(tmp / "ws")

    def ovtui(*args: str) -> str:
        proc = run_ovtui(*args, cwd=tmp)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def report_of_latest_run(name: str) -> str:
        ovtui("report", "-w", str(root), "--html", str(tmp / f"{name}.html"))
        return (tmp / f"{name}.html").read_text(encoding="utf-8")

    ovtui("train", str(root), "--epochs", "2", "--approve", "all")
    found = {"train": report_of_latest_run("train")}
    ovtui("eval", str(root))
    found["eval"] = report_of_latest_run("eval")
    first = sorted(p.name for p in (root / "history").iterdir() if p.is_dir())[0]
    ovtui("compare", first, "current", "-w", str(root), "--html", str(tmp / "compare.html"))
    found["compare"] = (tmp / "compare.html").read_text(encoding="utf-8")
    ovtui("utility", "-w", str(root), "--yes")
    found["utility"] = report_of_latest_run("utility")
    found["long"] = render_html(long_report())
    return found


def harness(pages: dict[str, str]) -> str:
    """Every page at every width, each in a frame of that width."""
    frames = "".join(
        f'<iframe data-page="{name}" width="{width}" height="900" srcdoc="{escape(html)}"></iframe>'
        for width in WIDTHS
        for name, html in pages.items()
    )
    return f"<!DOCTYPE html><html><head>{MEASURE}</head><body>{frames}</body></html>"


def measure(pages: dict[str, str], tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "harness.html"
    path.write_text(harness(pages), encoding="utf-8")
    proc = chromium("--virtual-time-budget=20000", "--dump-dom", path.as_uri(), cwd=tmp_path)
    found = re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout, re.S)
    assert found is not None, proc.stderr[-2000:]
    measured: list[dict[str, Any]] = json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<"))
    return measured


def test_every_page_kind_fits_1280_and_800_px_with_nothing_clipped(
    pages: dict[str, str], tmp_path: Path
) -> None:
    measured = measure(pages, tmp_path)
    assert {(m["page"], m["width"]) for m in measured} == {(p, w) for p in pages for w in WIDTHS}
    for m in measured:
        where = f"{m['page']} at {m['width']} px"
        assert m["clientWidth"] > m["width"] * 0.95, where  # the frame really was that wide
        assert m["scrollWidth"] <= m["clientWidth"], f"{where} scrolls sideways: {m['scrollWidth']} px"
        assert m["overflowing"] == [], where
        assert m["clipped"] == [], where  # every chart label inside its chart
        assert m["grown"] == [], where  # a chart never drawn larger than its own size
        assert m["large"] == [], where  # chart text never larger than the body's
    heights = {(m["page"], m["width"]): m["height"] for m in measured}
    assert heights[("train", 1280)] < 4000  # 40 cases: the flips map is not thousands of px tall
    assert heights[("long", 800)] < 30_000  # 70 cases' evidence, each readable, not a column of letters


def test_each_page_kind_says_what_it_is(pages: dict[str, str]) -> None:
    assert 'class="curve"' in pages["train"] and "validation-split evaluations" in pages["train"]
    assert "do-nothing" not in pages["train"]  # the sample's cases name no floor: the legend neither
    compare = pages["compare"]
    assert 'class="comparison"' in compare and "<polyline" not in compare  # policies, not a curve
    utility = pages["utility"]
    assert 'class="effects"' in utility and 'class="utility"' in utility
    rows = re.findall(r'<tr data-name="([^"]+)">(.*?)</tr>', utility)
    assert rows and all("tokens" in row for _, row in rows)


def test_a_screenshot_of_the_narrow_page_is_drawn_at_its_width(pages: dict[str, str], tmp_path: Path) -> None:
    page = tmp_path / "train.html"
    page.write_text(pages["train"], encoding="utf-8")
    shot = tmp_path / "train.png"
    proc = chromium("--window-size=800,900", f"--screenshot={shot}", page.as_uri(), cwd=tmp_path)
    assert shot.is_file(), proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (800, 900)
    assert len(data) > 10_000  # drawn, not a blank page
