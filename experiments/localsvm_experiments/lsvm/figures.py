"""The images: Figure 2 (k-means against MagKmeans), Figure 3 (PSVM's
piecewise-linear boundaries on a horse-shoe and a spiral set) and Figure 4's
runtime curves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
from localsvm_benchmarks.report import save_figure

from localsvm.datasets import load_banana
from localsvm.profile_svc import ProfileSVC

from .protocol import BANANA_PARAMS, RUNTIME_METHODS, SPIRALS_PARAMS, Config
from .report import say


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
    save_figure(fig, path, dpi=110)
    say(out, f"saved {path}")


def spirals_data(
    per_class: int = 200, turns: float = 1.5, noise: float = 0.03, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals in the unit square, for Figure 3's second panel.

    The paper's spiral set is not published; this draws ``per_class`` points
    per class along two spirals of ``turns`` turns (one the other turned by
    180°), with Gaussian noise of standard deviation ``noise`` (in units of
    the spirals' radius), then maps them into [0, 1]² as the paper's axes are.

    Parameters
    ----------
    per_class : int, default=200
        Points per class.
    turns : float, default=1.5
        Turns of each spiral.
    noise : float, default=0.03
        Standard deviation of the noise added to each coordinate.
    seed : int, default=0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (2 * per_class, 2)
    y : ndarray of shape (2 * per_class,)
        +1 for the first spiral, −1 for the other.
    """
    rng = np.random.default_rng(seed)
    # sqrt spreads the points evenly along the arc rather than the angle.
    t = np.sqrt(rng.uniform(0.05, 1.0, per_class)) * turns * 2.0 * np.pi
    r = t / (turns * 2.0 * np.pi)
    arm = np.column_stack([r * np.cos(t), r * np.sin(t)])
    X = np.vstack([arm, -arm]) + rng.normal(0.0, noise, (2 * per_class, 2))
    y = np.r_[np.ones(per_class, dtype=int), -np.ones(per_class, dtype=int)]
    return (X + 1.1) / 2.2, y


def figure3_sets() -> list[dict]:
    """The two Figure-3 sets with their training / test parts and PSVM's parameters."""
    b = load_banana(0)
    X_sp, y_sp = spirals_data(seed=0)
    Xt_sp, yt_sp = spirals_data(seed=1)
    return [
        {
            "data": "banana",
            "title": "horse-shoe: Banana (IDA realization 0)",
            "X": b.X_train,
            "y": b.y_train,
            "X_test": b.X_test,
            "y_test": b.y_test,
            "params": BANANA_PARAMS,
        },
        {
            "data": "spirals",
            "title": "two spirals (generated, 1.5 turns)",
            "X": X_sp,
            "y": y_sp,
            "X_test": Xt_sp,
            "y_test": yt_sp,
            "params": SPIRALS_PARAMS,
        },
    ]


def run_boundary(cfg: Config, figdir: Path, out: TextIO) -> list[dict]:
    """Reproduce Figure 3: PSVM's piecewise-linear boundaries on a horse-shoe
    set (Banana) and a spiral set, κ = 11 as in the paper.

    Each model is :class:`~localsvm.ProfileSVC` fitted inductively (MagKmeans
    on the training points, one linear SVM per cluster, a point goes to the
    cluster whose profile it is most similar to) and scored on a test set
    drawn from the same source. The image has one panel per set: the plane
    coloured by predicted class, the boundary, and the training points with
    the paper's markers (○ and ∗ for the classes) coloured by cluster.

    Parameters
    ----------
    cfg : Config
        ``grid_points`` per axis of the image.
    figdir : Path
        The folder for ``lsvm_psvm_boundary.png`` (not written without
        matplotlib).
    out : TextIO
        Where one line (accuracies, the image's path) is printed.

    Returns
    -------
    rows : list of dict
        One ``"figure3"`` row per set: the test accuracy and the cluster sizes.
    """
    rows, models = [], []
    for s in figure3_sets():
        p = s["params"]
        # The paper's rule: a test example goes to the cluster it is most
        # similar to on average (the estimator's inductive default is the
        # nearest clustering centre).
        model = ProfileSVC(
            C=p["C"],
            bandwidth=p["bandwidth"],
            n_clusters=p["n_clusters"],
            routing="mean-similarity",
            random_state=0,
        ).fit(s["X"], s["y"])
        acc = 100.0 * float(model.score(s["X_test"], s["y_test"]))
        models.append(model)
        rows.append(
            {
                "section": "figure3",
                "data": s["data"],
                "accuracy": acc,
                "n_train": int(s["y"].shape[0]),
                "n_test": int(s["y_test"].shape[0]),
                "cluster_sizes": model.cluster_sizes_.tolist(),
            }
        )
    text = "; ".join(
        f"{r['data']} ({r['n_train']} train / {r['n_test']} test) {r['accuracy']:.2f} %"
        for r in rows
    )
    line = (
        "Figure 3 (the paper gives no accuracy, only 11 linear pieces on a horse-shoe and a spiral "
        "set): "
        f"PSVM, κ = 11, inductive, test accuracy {text}"
    )
    try:
        from matplotlib.figure import Figure
    except ImportError:
        say(out, f"{line}; image skipped: matplotlib not installed")
        return rows
    import matplotlib
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(12.4, 6.6))
    for ax, s, model, row in zip(fig.subplots(1, 2), figure3_sets(), models, rows, strict=True):
        X, y, p = s["X"], s["y"], s["params"]
        lo, hi = X.min(0), X.max(0)
        pad = 0.08 * (hi - lo)
        gx, gy = np.meshgrid(
            np.linspace(lo[0] - pad[0], hi[0] + pad[0], cfg.grid_points),
            np.linspace(lo[1] - pad[1], hi[1] + pad[1], cfg.grid_points),
        )
        grid = np.column_stack([gx.ravel(), gy.ravel()])
        pred = np.concatenate(
            [model.predict(grid[i : i + 10000]) for i in range(0, len(grid), 10000)]
        )
        zz = (pred == model.classes_[1]).astype(float).reshape(gx.shape)
        ax.contourf(gx, gy, zz, levels=[-0.5, 0.5, 1.5], colors=["#dce9f5", "#f8e0d8"])
        ax.contour(gx, gy, zz, levels=[0.5], colors="k", linewidths=1.0)
        k = int(p["n_clusters"])
        cmap = matplotlib.colormaps["tab20"].resampled(max(k, 2))
        handles = []
        for cls, marker in zip(model.classes_, ("o", "*"), strict=True):
            sel = y == cls
            ax.scatter(
                X[sel, 0],
                X[sel, 1],
                c=[cmap(c) for c in model.cluster_labels_[sel]],
                marker=marker,
                s=20 if marker == "o" else 42,
                edgecolors="k",
                linewidths=0.3,
            )
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="",
                    marker=marker,
                    markerfacecolor="lightgrey",
                    markeredgecolor="k",
                    markersize=6 if marker == "o" else 9,
                    label=f"training point, class {cls:+d} (colour: its MagKmeans cluster)",
                )
            )
        handles += [
            Line2D([], [], color="k", lw=1.0, label="PSVM decision boundary"),
            Line2D(
                [],
                [],
                ls="",
                marker="s",
                color="#f8e0d8",
                markersize=9,
                label=f"predicted class {model.classes_[1]:+d}",
            ),
            Line2D(
                [],
                [],
                ls="",
                marker="s",
                color="#dce9f5",
                markersize=9,
                label=f"predicted class {model.classes_[0]:+d}",
            ),
        ]
        ax.legend(
            handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=2
        )
        ax.set_title(
            f"{s['title']}: κ = {k}, λ = {p['bandwidth']:g}, C = {p['C']:g};\n"
            f"test accuracy {row['accuracy']:.1f} % on {row['n_test']} points",
            fontsize=9,
        )
        ax.set_xlabel("x₁")
        ax.set_ylabel("x₂")
    fig.suptitle(
        "Figure 3 of Cheng, Tan & Jin (SDM 2007) reproduced: PSVM (ProfileSVC, MagKmeans, "
        "one linear SVM per cluster, fitted inductively) on two synthetic sets",
        fontsize=10,
    )
    path = save_figure(fig, figdir / "lsvm_psvm_boundary.png", dpi=150)
    say(out, f"{line}; image {path}")
    return rows


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
    from localsvm.clustering import get_clustering

    X, y = figure2_data()
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
        rows.append({"section": "figure2", "method": name, "counts": counts})
    line = (
        "Figure 2 (paper: k-means one class per cluster, MagKmeans both classes in each), "
        f"κ = 2 on four generated blobs of {X.shape[0] // 4} points, two per class: each "
        "cluster's (class −1, class +1) counts: "
        + "; ".join(
            f"{r['method']} " + ", ".join(f"({a}, {b})" for a, b in r["counts"]) for r in rows
        )
    )
    try:
        from matplotlib.figure import Figure
    except ImportError:
        say(out, f"{line}; image skipped: matplotlib not installed")
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
    path = save_figure(fig, figdir / "lsvm_magkmeans.png", dpi=170)
    say(out, f"{line}; image {path}")
    return rows
