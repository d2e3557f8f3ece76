"""What every paper figure must satisfy (labelled axes, the expected panels, fonts >= 9 pt), shared by the
plot tests."""
from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text


def _panels(fig: Figure) -> list:
    """Visible data axes (not colorbars, not twin axes sharing a panel)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"
            and not any(ax.get_shared_x_axes().joined(ax, o) and o.bbox.bounds == ax.bbox.bounds
                        for o in fig.axes if o is not ax and fig.axes.index(o) < fig.axes.index(ax))]


def _check_figure(fig: Figure, n_panels: int) -> list:
    assert isinstance(fig, Figure)
    panels = _panels(fig)
    assert len(panels) == n_panels
    assert any(ax.get_xlabel() for ax in panels) or fig.get_supxlabel()
    assert any(ax.get_ylabel() for ax in panels) or fig.get_supylabel()
    fig.canvas.draw()
    small = [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text) if t.get_text() and t.get_visible()
             and t.get_fontsize() < 9]
    assert not small, f"text under 9 pt: {small[:3]}"
    overlapping = _overlapping_texts(fig)
    assert not overlapping, f"texts run into each other: {overlapping[:3]}"
    return panels


def _drawn_texts(fig: Figure) -> list[Text]:
    """The texts a reader sees: figure texts and legends, and per visible axes its titles, axis labels, texts
    and the tick labels matplotlib draws (ticks outside the view limits exist as artists but are not drawn)."""
    found = list(fig.texts) + [t for leg in fig.legends for t in (leg.get_title(), *leg.get_texts())]
    found += [t for t in (getattr(fig, "_supxlabel", None), getattr(fig, "_supylabel", None),
                          getattr(fig, "_suptitle", None)) if t is not None]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            found += [legend.get_title(), *legend.get_texts()]
        for axis in (a for a in (ax.xaxis, ax.yaxis) if a.get_visible()):   # a twin's x axis is hidden
            for tick in axis._update_ticks():
                found += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def _overlapping_texts(fig: Figure, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of drawn texts (titles, tick labels, axis labels, legends, annotations) whose boxes overlap by
    more than `tolerance` pixels both ways on the laid-out figure: the "enem_4shot" title running into
    "enem_4shot_cat" of the next panel."""
    if not hasattr(fig.canvas, "get_renderer"):      # a bare Figure: lay it out as savefig does
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in dict.fromkeys(_drawn_texts(fig))]
    found = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            if w > tolerance and h > tolerance:
                found.append((a, b))
    return found
