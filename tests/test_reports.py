"""The experiments' plots (``agents.reports``): what a reader of the figure sees."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib", reason="the plots need matplotlib (the [agents] extra)")

from agents.reports import curves_figure, curves_plot, interval_bars_plot  # noqa: E402


def test_iteration_axes_tick_at_whole_numbers_only():
    import matplotlib.pyplot as plt

    for iterations in ([1, 2, 3], [1, 2], list(range(1, 8)), [0, 5, 10, 15]):
        fig = curves_figure({"win rate": (iterations, [0.1 * i for i in range(len(iterations))])},
                            "iteration", "rate", "t")
        fig.canvas.draw()
        ax = fig.axes[0]
        low, high = ax.get_xlim()
        shown = [tick for tick in ax.get_xticks() if low <= tick <= high]
        assert len(shown) >= 2 and all(float(tick).is_integer() for tick in shown), (iterations, shown)
        plt.close(fig)
    fig = curves_figure({"loss": ([0.5, 1.0, 1.5], [3, 2, 1])}, "minutes", "loss", "t")  # not whole numbers
    fig.canvas.draw()
    assert not all(float(t).is_integer() for t in fig.axes[0].get_xticks())
    plt.close(fig)


def test_coinciding_curves_are_told_apart():
    import matplotlib.pyplot as plt

    xs = [1, 2, 3, 4]
    curves = {f"probe {k}": (xs, [0.5, 0.5, 0.75, 1.0]) for k in range(12)}  # all on top of each other
    fig = curves_figure(curves, "iteration", "value", "t")
    lines = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("probe")]
    looks = {(line.get_marker(), line.get_linestyle(), line.get_markersize()) for line in lines}
    assert len(looks) == len(curves)
    assert len({(line.get_marker(), line.get_linestyle()) for line in lines}) == len(curves)
    assert all(line.get_fillstyle() == "none" for line in lines)  # hollow: the ones below show through
    plt.close(fig)


def test_plots_are_written(tmp_path):
    assert curves_plot(str(tmp_path / "a.png"), {"x": ([1, 2], [0, 1])}, "iteration", "y", "t")
    assert interval_bars_plot(str(tmp_path / "b.png"), ["ppo", "random"],
                              {"as White": [(0.8, 0.7, 0.9), (0.5, 0.4, 0.6)],
                               "as Black": [(0.6, 0.5, 0.7), (0.3, 0.2, 0.4)]},
                              "win rate", "t")
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / "b.png").stat().st_size > 1000
