"""The app's charts, drawn by plotext (the only module that imports ``textual_plotext``).

Each chart keeps what it plotted (``series``, ``bars``), so a test reads the values back from the
widget rather than from its pixels. plotext rebuilds the whole picture on every render: the charts
live where nothing else repaints them (the Run screen shows them instead of its log, not beside it),
or are small enough that a repaint beside them stays cheap (Review's two validation bars).
An empty chart says what would fill it instead of drawing empty axes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import ContentSwitcher, Static
from textual_plotext import PlotextPlot

from ovtui.app.views.review import PlanValidation
from ovtui.app.views.run_charts import MARKERS, TEST, TRAIN, CostView, CurveView, curve_legend

POINTS = frozenset({TEST, TRAIN})


class LearningCurvePlot(PlotextPlot):
    """Accuracy per stage: the scored split's evaluations, the training epochs, the 95% interval of
    each evaluation and the do-nothing floor as dotted lines."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: dict[str, tuple[list[int], list[float]]] = {}

    def show(self, view: CurveView) -> None:
        self.series = view.series
        plt = self.plt
        plt.clear_figure()
        plt.title(f"accuracy % · {curve_legend()}")
        plt.ylim(0, 100)
        plt.yticks([0, 25, 50, 75, 100])
        plt.xticks(list(range(len(view.ticks))), view.ticks)
        if len(view.ticks) == 1:  # one stage: room on both sides, or the point sits on the frame
            plt.xlim(-1, 1)
        # The points last, so no interval or floor line is drawn over them; no label: the title is
        # the legend.
        for name, (xs, ys) in sorted(view.series.items(), key=lambda item: item[0] in POINTS):
            plt.plot(xs, ys, marker=MARKERS[name])
        self.refresh()


class StageCostPlot(PlotextPlot):
    """Tokens per pipeline stage as bars, each stage's cost under its name."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.bars: dict[str, int] = {}

    def show(self, view: CostView) -> None:
        self.bars = dict(zip(view.stages, view.tokens, strict=True))
        plt = self.plt
        plt.clear_figure()
        plt.title(f"tokens per stage · cost ${view.total_cost:.4f}")
        names = [f"{stage} ${cost:.4f}" for stage, cost in zip(view.stages, view.costs, strict=True)]
        plt.bar(names, view.tokens, marker="█")
        self.refresh()


class ValidationBarPlot(PlotextPlot):
    """The plan's validation as two horizontal bars, cases passing before and after, on an axis
    from none to all of its cases; the labels carry the counts and the change, so the bars read
    without colour (plotext gives one bar call one colour, so both bars share it). Five rows: the
    title, the bars a row apart, the axis."""

    DEFAULT_CSS = "ValidationBarPlot { height: 5; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.bars: dict[str, int] = {}
        self.cases = 0

    def show(self, view: PlanValidation) -> None:
        before, after = view.labels
        self.bars = {before: view.before, after: view.after}
        self.cases = view.cases
        plt = self.plt
        plt.clear_figure()
        plt.title("plan validation")
        plt.frame(False)
        # plotext stacks horizontal bars upwards: "after" goes first to sit under "before".
        # A space after each label keeps it off its bar.
        plt.bar(
            [f"{after} ", f"{before} "],
            [view.after, view.before],
            orientation="horizontal",
            marker="█",
            width=1 / 5,
        )
        plt.xlim(0, view.cases)
        plt.xticks([0, view.cases])
        self.refresh()


class ChartOrEmpty(Vertical):
    """A chart, or the line that says how to get its data while there is none."""

    DEFAULT_CSS = """
    ChartOrEmpty { height: 1fr; }
    ChartOrEmpty > ContentSwitcher { height: 1fr; }
    ChartOrEmpty .chart-empty { height: auto; padding: 1 2; color: $text-muted; }
    """

    def __init__(self, chart: PlotextPlot, empty: str, *, id: str) -> None:
        super().__init__(id=id)
        self.chart = chart
        self.empty_text = empty

    def compose(self) -> ComposeResult:
        with ContentSwitcher(initial="empty"):
            yield Static(self.empty_text, id="empty", classes="chart-empty", markup=False)
            yield self.chart

    def showing(self, has_data: bool) -> None:
        self.query_one(ContentSwitcher).current = self.chart.id if has_data else "empty"
