"""Headless matplotlib figures, written atomically as PNG. Every figure has a title, labelled
axes and (where there is more than one series) a legend."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: reports are made on servers and in CI

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from components.reporting.run_dir import atomic_write_bytes

SIZE = (6.4, 4.8)  # inches; at DPI 100 a 640 × 480 image
DPI = 100


def save(fig, path: Path) -> Path:
    """Render `fig` to PNG bytes and write them atomically; close the figure."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    atomic_write_bytes(Path(path), buffer.getvalue())
    return Path(path)


def scatter_by_label(points: np.ndarray, labels: np.ndarray, *, title: str, path: Path) -> Path:
    """2-D points coloured by an integer label (e.g. t-SNE by task)."""
    fig, ax = plt.subplots(figsize=SIZE)
    for label in np.unique(labels):
        mask = labels == label
        ax.scatter(points[mask, 0], points[mask, 1], s=6, label=f"task {label}")
    ax.set(title=title, xlabel="t-SNE 1", ylabel="t-SNE 2")
    ax.legend(fontsize=6, markerscale=2, ncol=2, loc="best")
    fig.tight_layout()
    return save(fig, path)


def densities(
    edges: np.ndarray, series: dict[str, np.ndarray], *, title: str, xlabel: str, path: Path
) -> Path:
    """Histogram densities on shared bin edges, one step line per series."""
    fig, ax = plt.subplots(figsize=SIZE)
    for name, values in series.items():
        ax.stairs(values, edges, label=name)
    ax.set(title=title, xlabel=xlabel, ylabel="density")
    ax.legend()
    fig.tight_layout()
    return save(fig, path)


def curves(
    x: dict[str, np.ndarray],
    mean: dict[str, np.ndarray],
    std: dict[str, np.ndarray] | None = None,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    path: Path,
) -> Path:
    """One line per series, with a ±std band when `std` is given (learning curves over seeds),
    else with a marker at each point (a measure against a swept setting)."""
    fig, ax = plt.subplots(figsize=SIZE)
    colours = plt.get_cmap("tab20" if len(mean) > 10 else "tab10").colors
    for i, name in enumerate(mean):
        # tab20 pairs a dark and a light shade: the light one gets a dashed line to tell apart
        style = {"color": colours[i % len(colours)], "linestyle": "--" if i % 2 else "-"}
        if len(mean) <= 10:
            style["linestyle"] = "-"
        ax.plot(x[name], mean[name], label=name, marker=None if std else "o", **style)
        if std:
            low, high = mean[name] - std[name], mean[name] + std[name]
            ax.fill_between(x[name], low, high, alpha=0.15, color=style["color"])
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(6, steps=[1, 2, 4, 5, 10]))
    if len(mean) > 4:  # many series: the legend beside the axes, not over the curves
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    return save(fig, path)
