"""The images: Figure 4's runtime curves and Figure 3's PSVM boundary on Banana."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from ...datasets import load_banana
from ...profile_svm import ProfileSVC
from .protocol import BANANA_PARAMS, RUNTIME_METHODS, Config
from .report import heading, say


def plot_runtime(
    sizes: Sequence[int], times: dict[int, dict[str, float]], path: Path, out: TextIO
) -> None:
    """Draw Figure 4: every method's time, and PSVM's clustering against the rest.

    Skipped, with a line to ``out``, when matplotlib is not installed.

    Parameters
    ----------
    sizes : sequence of int
        The test-set sizes.
    times : dict
        Size → method (and ``"PSVM clustering"``) → seconds.
    path : Path
        The image file to write.
    out : TextIO
        Where the saved path (or the reason for skipping) is printed.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        say(out, "figure skipped: matplotlib not installed")
        return
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2)
    for method in RUNTIME_METHODS:
        left.plot(sizes, [times[s][method] for s in sizes], marker="o", label=method)
    left.set_yscale("log")
    left.set_xlabel("number of test examples")
    left.set_ylabel("fit + predict (s)")
    left.set_title("overall runtime (ijcnn1 for Physics)")
    left.legend(fontsize=8)
    total = [times[s]["PSVM"] for s in sizes]
    clus = [times[s]["PSVM clustering"] for s in sizes]
    right.plot(sizes, total, marker="o", label="PSVM (total)")
    right.plot(sizes, clus, marker="s", label="PSVM clustering")
    right.plot(
        sizes,
        [t - c for t, c in zip(total, clus, strict=True)],
        marker="^",
        label="PSVM without clustering",
    )
    right.plot(sizes, [times[s]["SVM"] for s in sizes], marker="x", ls="--", label="SVM")
    right.set_xlabel("number of test examples")
    right.set_ylabel("s")
    right.set_title("PSVM: clustering vs the rest")
    right.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    say(out, f"saved {path}")


def run_boundary(cfg: Config, figdir: Path, out: TextIO) -> list[dict]:
    """Reproduce Figure 3: PSVM's piecewise-linear boundary on Banana.

    Parameters
    ----------
    cfg : Config
        ``grid_points`` per axis of the image.
    figdir : Path
        The folder for ``lsvm_psvm_boundary.png`` (not written without
        matplotlib).
    out : TextIO
        Where the accuracy and the saved path are printed.

    Returns
    -------
    rows : list of dict
        One ``"figure3"`` row: the test accuracy and the cluster sizes.
    """
    heading(out, "Figure 3: PSVM's piecewise-linear boundary on Banana")
    b = load_banana(0)
    p = BANANA_PARAMS
    model = ProfileSVC(
        C=p["C"], bandwidth=p["bandwidth"], n_clusters=p["n_clusters"], random_state=0
    ).fit(b.X_train, b.y_train)
    acc = 100.0 * float(model.score(b.X_test, b.y_test))
    say(
        out,
        f"Banana realization 0 ({b.y_train.shape[0]} train / {b.y_test.shape[0]} test), "
        f"ProfileSVC inductive, κ = {p['n_clusters']} (the paper's 11 pieces), "
        f"λ = {p['bandwidth']:g}, C = {p['C']:g}: test accuracy {acc:.2f} %; "
        f"cluster sizes {model.cluster_sizes_.tolist()}",
    )
    row = {"section": "figure3", "accuracy": acc, "cluster_sizes": model.cluster_sizes_.tolist()}
    try:
        from matplotlib.figure import Figure
    except ImportError:
        say(out, "figure skipped: matplotlib not installed")
        return [row]
    X = b.X_train
    lo, hi = X.min(0) - 0.3, X.max(0) + 0.3
    gx, gy = np.meshgrid(
        np.linspace(lo[0], hi[0], cfg.grid_points), np.linspace(lo[1], hi[1], cfg.grid_points)
    )
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    pred = np.concatenate([model.predict(grid[i : i + 10000]) for i in range(0, len(grid), 10000)])
    zz = (pred == model.classes_[1]).astype(float).reshape(gx.shape)
    fig = Figure(figsize=(6.4, 5.4))
    ax = fig.subplots()
    ax.contourf(gx, gy, zz, levels=[-0.5, 0.5, 1.5], colors=["#dce9f5", "#f8e0d8"])
    ax.contour(gx, gy, zz, levels=[0.5], colors="k", linewidths=1.0)
    k = int(p["n_clusters"])
    import matplotlib

    cmap = matplotlib.colormaps["tab20"].resampled(max(k, 2))
    for cls, marker in zip(model.classes_, ("o", "*"), strict=True):
        sel = b.y_train == cls
        ax.scatter(
            X[sel, 0],
            X[sel, 1],
            c=[cmap(c) for c in model.cluster_labels_[sel]],
            marker=marker,
            s=22 if marker == "o" else 40,
            edgecolors="k",
            linewidths=0.3,
            label=f"class {cls:+d}",
        )
    ax.set_title(
        f"PSVM on Banana, κ = {k}: test accuracy {acc:.1f} %\n"
        "background: predicted class; points: training clusters",
        fontsize=9,
    )
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.legend(fontsize=8, loc="upper right", title="marker: class; colour: cluster")
    fig.tight_layout()
    path = figdir / "lsvm_psvm_boundary.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=170)
    say(out, f"saved {path}")
    return [row]


def figure2_data(per_blob: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic data in the spirit of the paper's Figure 2: four tight blobs,
    two per class, the classes side by side (the paper's points are not
    published)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for cx, cy, c in [(0.25, 0.45, -1), (0.25, 0.75, -1), (0.7, 0.45, 1), (0.7, 0.75, 1)]:
        X.append(rng.normal([cx, cy], 0.04, size=(per_blob, 2)))
        y += [c] * per_blob
    return np.vstack(X), np.array(y)


def run_clusters(figdir: Path, out: TextIO) -> list[dict]:
    """Figure 2: k-means against MagKmeans (κ = 2) on :func:`figure2_data`.

    Prints each cluster's class counts for both and saves
    ``lsvm_magkmeans.png`` (skipped, with a line, without matplotlib).

    Parameters
    ----------
    figdir : Path
        The folder for the image.
    out : TextIO
        Where the counts are printed.

    Returns
    -------
    rows : list of dict
        One ``"figure2"`` row per method: each cluster's (class −1, class +1)
        counts.
    """
    from ...clustering import get_clustering

    heading(out, "Figure 2: k-means against MagKmeans, κ = 2")
    X, y = figure2_data()
    say(
        out,
        f"Synthetic data (the paper's is not published): four blobs of {X.shape[0] // 4} "
        "points, two per class, the classes side by side; random_state 0.",
    )
    results = {
        "k-means": get_clustering("kmeans").cluster(X, y, 2, random_state=0),
        "MagKmeans": get_clustering("magkmeans").cluster(X, y, 2, random_state=0),
    }
    rows = []
    for name, res in results.items():
        counts = [
            (int(np.sum((res.labels == j) & (y == -1))), int(np.sum((res.labels == j) & (y == 1))))
            for j in range(2)
        ]
        say(
            out,
            f"  {name:<10} clusters (class −1, class +1): "
            + ", ".join(f"({a}, {b})" for a, b in counts)
            + " (paper: k-means one class per cluster, MagKmeans both classes in each)",
        )
        rows.append({"section": "figure2", "method": name, "counts": counts})
    try:
        from matplotlib.figure import Figure
    except ImportError:
        say(out, "figure skipped: matplotlib not installed")
        return rows
    fig = Figure(figsize=(10, 4.4))
    for ax, (name, res) in zip(fig.subplots(1, 2), results.items(), strict=True):
        for cls, marker in ((-1, "o"), (1, "*")):
            sel = y == cls
            ax.scatter(
                X[sel, 0],
                X[sel, 1],
                c=[("tab:blue", "tab:orange")[c] for c in res.labels[sel]],
                marker=marker,
                s=22 if marker == "o" else 40,
                edgecolors="k",
                linewidths=0.3,
            )
            ax.scatter(
                [], [], marker=marker, c="lightgrey", edgecolors="k", label=f"class {cls:+d}"
            )
        ax.set_title(f"{name} (colour: cluster)", fontsize=10)
        ax.set_xlabel("x₁")
        ax.set_ylabel("x₂")
        ax.legend(fontsize=8, title="marker: class")
    fig.suptitle("k-means against MagKmeans (Figure 2 of Cheng, Tan & Jin, SDM 2007)")
    fig.tight_layout()
    path = figdir / "lsvm_magkmeans.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=170)
    say(out, f"saved {path}")
    return rows
