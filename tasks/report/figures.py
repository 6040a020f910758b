"""What every report figure shares: a figure and its palette, and text taken from data drawn as written.

matplotlib is imported by the first figure drawn, not by the modules that define figures: every command
imports its benchmark's report modules, and most (a dry run, a run with --no-report, a leaderboard) draw
none. Importing it takes a quarter of a second."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure


def new_figure(figsize: tuple[float, float]) -> "Figure":
    """A figure with constrained layout, made without pyplot: no global state, safe in threads."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def tab10() -> "Colormap":
    """The categorical palette of every figure (matplotlib's tab10)."""
    from matplotlib import colormaps

    return colormaps["tab10"]


def plain_text(text: object) -> str:
    """A label from data (a condition's display, a model name) with every `$` escaped, so matplotlib never
    reads it as mathtext: `Cost $5$` would be typeset, and a parse error there loses the whole report.
    Escaping keeps the figure code thread-safe, unlike turning mathtext off through the global rcParams."""
    return str(text).replace("$", r"\$")
