"""``report --plot``: histograms of nearest-neighbour and drop distances (matplotlib)."""

from __future__ import annotations

from typing import Any

import numpy as np

from scrapy_simhash.cli.errors import UsageProblem
from scrapy_simhash.extras import needs


def require_matplotlib() -> None:
    """Fail with one line before any work when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise UsageProblem(needs("--plot", "matplotlib", "plot"), usage=False) from None


def nearest_distances(fps: np.ndarray, sample: int = 5000, seed: int = 0
                      ) -> tuple[np.ndarray, bool]:
    """Distance from each fingerprint (or a sample of them) to its nearest other one."""
    n = len(fps)
    if n < 2:
        return np.empty(0, np.uint8), False
    rows = np.arange(n)
    sampled = n > 4 * sample
    if sampled:
        rows = np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))
    out = np.empty(len(rows), np.uint8)
    step = max(1, 20_000_000 // n)
    for start in range(0, len(rows), step):
        chunk = rows[start:start + step]
        d = np.bitwise_count(fps[chunk, None] ^ fps[None, :])
        d[np.arange(len(chunk)), chunk] = 255  # not oneself
        out[start:start + step] = d.min(axis=1)
    return out, sampled


def distance_figure(nearest: np.ndarray, drops: np.ndarray | None, k: int, *,
                    sampled: bool = False, title: str = "") -> Any:
    """Two histograms with counts: each stored page's distance to its nearest
    stored page, and each near-duplicate's distance to its original. Each x-axis
    runs from 0 to just past its own data (and k)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(9, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    panels = (
        (ax1, nearest, "tab:blue",
         f"nearest stored page: {len(nearest):,} pages" + (" (a sample)" if sampled else "")),
        (ax2, drops, "tab:red",
         "near-duplicates: unknown (no drop log)" if drops is None
         else f"near-duplicates: {len(drops):,}, distance to their original"),
    )
    for ax, values, color, label in panels:
        values = np.empty(0, np.int64) if values is None else np.asarray(values, np.int64)
        top = int(max(values.max(initial=0), k)) + 2
        counts = np.bincount(values, minlength=top + 1)[:top + 1]
        bars = ax.bar(np.arange(top + 1), counts, width=0.9, color=color)
        if len(values) and top <= 40:
            ax.bar_label(bars, labels=[str(c) if c else "" for c in counts], fontsize=7)
        ax.axvline(k + 0.5, color="black", linestyle="--", label=f"k = {k}")
        ax.set_xlim(-0.5, top + 0.5)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("Hamming distance (bits)")
        ax.set_ylabel("pages")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def save_figure(fig: Any, path: str) -> None:
    fig.savefig(path, format="png")
