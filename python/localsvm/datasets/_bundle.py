"""Re-create the bundled ``.npz`` files from the project's shared benchmark copies.

Run from a checkout: ``python -m localsvm.datasets._bundle ../shared/datasets``.
Sets without a split are copied as they are. IDA-style sets whose realizations
are permutations of one pool of points (ringnorm, image) are stored once as
``points`` plus per-realization row indices, which keeps the wheel small; the
loader rebuilds ``X_train``/``X_test`` from them. Labels are stored per
realization because a few pooled points repeat with different labels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

PLAIN = (
    "breast_w",
    "glass",
    "yeast",
    "splice",
    "two_spirals",
    "segmentation",
    "vehicle",
    "waveform_21",
    "heart_statlog",
)
POOLED = ("ringnorm", "image", "diabetis")


def pool(z) -> dict[str, np.ndarray]:
    """Store an IDA set as unique points and index arrays (exactly invertible)."""
    r, n_tr, d = z["X_train"].shape
    n_te = z["X_test"].shape[1]
    flat = np.concatenate([z["X_train"].reshape(-1, d), z["X_test"].reshape(-1, d)])
    points, inverse = np.unique(flat, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int32)
    out = {
        "points": points,
        "index_train": inverse[: r * n_tr].reshape(r, n_tr),
        "index_test": inverse[r * n_tr :].reshape(r, n_te),
        "y_train": z["y_train"].astype(np.int8),
        "y_test": z["y_test"].astype(np.int8),
        # diabetis' copy does not number its realizations: 1..R then.
        "realizations": z["realizations"] if "realizations" in z.files else np.arange(1, r + 1),
    }
    assert np.array_equal(points[out["index_train"]], z["X_train"])
    assert np.array_equal(points[out["index_test"]], z["X_test"])
    return out


def main(src: str, dest: str | None = None) -> None:
    dest_dir = Path(dest) if dest else Path(__file__).with_name("data")
    for name in PLAIN + POOLED:
        with np.load(Path(src) / f"{name}.npz", allow_pickle=False) as z:
            arrays = pool(z) if name in POOLED else {k: z[k] for k in z.files}
        np.savez_compressed(dest_dir / f"{name}.npz", **arrays)
        print(name, {k: v.shape for k, v in arrays.items()})


if __name__ == "__main__":
    main(*sys.argv[1:])
