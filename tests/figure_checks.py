"""What every paper figure must satisfy (labelled axes, the expected panels, fonts >= 9 pt), shared by the
plot tests."""
from __future__ import annotations

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
    return panels
