"""The examples' figures read cleanly: every title inside the image and clear of the others,
every line with a name in a legend, no legend drawn over data. Each script's main() runs
briefly in this process and the figures it saves are checked as drawn."""

import importlib.util
import itertools
import pathlib

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
if not EXAMPLES.is_dir():
    pytest.skip("examples/ is not next to the tests (installed package)", allow_module_level=True)

SCRIPTS = sorted(p.stem for p in EXAMPLES.glob("*.py"))
SHORT = {"adaptive_control": "0.3", "lqr_hold": "0.3"}  # the others: 0.2 s


@pytest.fixture
def saved_figures(monkeypatch):
    figures = []
    save = Figure.savefig

    def record(self, *args, **kwargs):
        figures.append(self)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return figures


def run_example(name, out_dir):
    spec = importlib.util.spec_from_file_location(f"figure_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    extra = ["--frames", "2", "--steps", "400"] if name == "falling_cat" else []
    mod.main(["--duration", SHORT.get(name, "0.2"), "--out-dir", str(out_dir)] + extra)


def _inside(box, outer, slack=1.0):
    return (box.x0 >= outer.x0 - slack and box.x1 <= outer.x1 + slack
            and box.y0 >= outer.y0 - slack and box.y1 <= outer.y1 + slack)


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_figure_reads_cleanly(name, tmp_path, saved_figures):
    run_example(name, tmp_path)
    pngs = [f for f in saved_figures if f.axes and f.axes[0].name != "3d"]  # not GIF frames
    assert pngs, f"{name} saved no figure"
    for fig in pngs:
        r = FigureCanvasAgg(fig).get_renderer()
        fig.canvas.draw()
        whole = fig.bbox
        titles = [(ax.get_title(), ax.title.get_window_extent(r)) for ax in fig.axes
                  if ax.get_title()]
        if fig._suptitle is not None:
            titles.append((fig._suptitle.get_text(), fig._suptitle.get_window_extent(r)))
        for text, box in titles:
            assert _inside(box, whole), f"{name}: title {text!r} is cut off"
        for (a, box_a), (b, box_b) in itertools.combinations(titles, 2):
            assert not box_a.overlaps(box_b), f"{name}: {a!r} overlaps {b!r}"
        legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
        legends = [leg for leg in legends if leg is not None]
        for leg in legends:
            assert _inside(leg.get_window_extent(r), whole), f"{name}: a legend is cut off"
        # each curve among others is named in a legend, or drawn as one that is (same colour
        # and style: the reference of every joint, say)
        keys = {(to_hex(h.get_color()), h.get_linestyle()) for leg in legends
                for h in leg.legend_handles if isinstance(h, Line2D)}
        for ax in fig.axes:
            curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
            for line in curves if len(curves) > 1 else ():
                key = (to_hex(line.get_color()), line.get_linestyle())
                assert key in keys, (f"{name}: {ax.get_title()!r} has a curve "
                                     f"({line.get_label()}) that no legend names")
            leg = ax.get_legend()
            if leg is None:
                continue
            box = leg.get_window_extent(r)
            if not box.overlaps(ax.bbox):
                continue  # placed outside the axes
            for line in ax.get_lines():
                pts = line.get_xydata()
                pts = pts[np.all(np.isfinite(pts), axis=1)]
                if pts.size == 0:
                    continue
                d = ax.transData.transform(pts)
                covered = ((d[:, 0] > box.x0) & (d[:, 0] < box.x1) & (d[:, 1] > box.y0)
                           & (d[:, 1] < box.y1))
                assert not covered.any(), (f"{name}: the legend of {ax.get_title()!r} covers "
                                           f"{line.get_label()!r}")
