"""The figure of `robodyn opcount --plot` (robodyn.opcount.plot_growth): every curve readable
(none flattened onto the axis by another's growth) and no title drawn over another."""

import itertools

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from robodyn import opcount  # noqa: E402


@pytest.fixture(scope="module")
def figure(tmp_path_factory):
    g = opcount.growth(1, 12)
    assert "nie_kane" in g["counts"]  # the curve that grows as n^4 (2e4 at n = 12)
    path = tmp_path_factory.mktemp("plot") / "counts.png"
    fig = opcount.plot_growth(g, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return fig


def _height_fraction(ax, x, y):
    """Where (x, y) is drawn, as a fraction of the axes' height (0 bottom, 1 top)."""
    display = ax.transData.transform((x, y))
    return ax.transAxes.inverted().transform(display)[1]


def test_every_curve_is_readable(figure):
    # every count (measured or published; not the ratios): its smallest and largest values
    # at least 10 % of the axes' height apart, so a count that grows from n = 2 to n = 12
    # does not lie along the axis
    counts = 0
    for ax in figure.axes:
        for line in ax.get_lines():
            if "/" in line.get_label() or line.get_label().startswith("_"):
                continue  # a ratio, or the line at ratio 1
            counts += 1
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            ok = np.isfinite(y)
            lo = _height_fraction(ax, x[ok][np.argmin(y[ok])], y[ok].min())
            hi = _height_fraction(ax, x[ok][np.argmax(y[ok])], y[ok].max())
            assert hi - lo > 0.1, f"{ax.get_title()!r}: {line.get_label()!r} spans {hi - lo:.3f}"
    assert counts == 2 * 7  # mul and add: 3 measured, 3 published, Nie's


def test_no_title_overlaps_another(figure):
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.canvas.draw()
    boxes = [(ax.get_title(), ax.title.get_window_extent(renderer)) for ax in figure.axes]
    boxes.append(("suptitle", figure._suptitle.get_window_extent(renderer)))
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"
