"""The SVM kernel functions, called "grams" in code so that "kernel" always means a CUDA kernel.

=========  ==================================  ======
name       k(x, y)                             code
=========  ==================================  ======
linear     <x, y>                              0
poly       (gamma <x, y> + coef0) ** degree    1
rbf        exp(-gamma ||x - y||^2)             2
sigmoid    tanh(gamma <x, y> + coef0)          3
=========  ==================================  ======

"precomputed" (SVC only) is the user's own Gram matrix K of the training points (``GramSpec.matrix``);
the solvers then see every point as its row index: X has one column holding the index, and
k(x, y) = K[x, y] (:func:`precomputed_gram`). So every solver that asks for Gram blocks through the
backend (``be.gram``, :func:`gpusvm._solvers._common.gram_diag`) solves it unchanged; the compiled
pair-at-a-time SMO reads K directly (code 4).
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, field

GRAM_CODES = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}  # the codes of kernels/gram.cu
PRECOMPUTED_CODE = 4  # the compiled pairwise SMO's code for a precomputed Gram matrix (no CUDA code)


@dataclass(frozen=True)
class GramSpec:
    """A validated SVM kernel ("gram") with its numeric hyperparameters (gamma already resolved)."""

    kind: str = "rbf"
    gamma: float = 1.0
    coef0: float = 0.0
    degree: int = 3
    # "precomputed" only: the n x n Gram matrix of the training points (dense, on the backend's device);
    # the points are then row indices (see the module docstring). Left out of equality and hashing.
    matrix: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.kind, str) or self.kind not in (*GRAM_CODES, "precomputed"):
            raise ValueError(
                f"The 'kernel' parameter must be one of {sorted([*GRAM_CODES, 'precomputed'])}. Got {self.kind!r} "
                "instead."
            )
        if (self.kind == "precomputed") != (self.matrix is not None):
            raise ValueError("A GramSpec has a matrix exactly when its kind is 'precomputed'.")
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, numbers.Real) or not (
            math.isfinite(self.gamma) and self.gamma >= 0
        ):
            raise ValueError(f"The 'gamma' parameter must be a float in the range [0.0, inf). Got {self.gamma!r} "
                             "instead.")
        if self.gamma == 0 and self.kind not in ("linear", "precomputed"):  # (those two ignore gamma)
            raise ValueError(f"The 'gamma' parameter must be > 0 for the {self.kind!r} gram. Got {self.gamma!r}, which "
                             "makes it constant (k(x, z) no longer depends on x and z).")
        if isinstance(self.coef0, bool) or not isinstance(self.coef0, numbers.Real) or not math.isfinite(self.coef0):
            raise ValueError(f"The 'coef0' parameter must be a finite float. Got {self.coef0!r} instead.")
        low = 1 if self.kind == "poly" else 0  # (only the polynomial gram uses the degree)
        if isinstance(self.degree, bool) or not isinstance(self.degree, numbers.Integral) or self.degree < low:
            raise ValueError(f"The 'degree' parameter must be an int in the range [{low}, inf). Got {self.degree!r} "
                             "instead.")
        object.__setattr__(self, "gamma", float(self.gamma))
        object.__setattr__(self, "coef0", float(self.coef0))
        # the other grams ignore it: one value for them, so their specs compare equal whatever the degree
        object.__setattr__(self, "degree", int(self.degree) if self.kind == "poly" else 3)

    @property
    def code(self) -> int:
        return PRECOMPUTED_CODE if self.kind == "precomputed" else GRAM_CODES[self.kind]

    @functools.cached_property
    def matrix_max_abs(self) -> float:
        """max |K| of a precomputed matrix: one pass over it, then kept (the fit's symmetry check and every
        class pair's choice of float32 or float64 rows ask for it). From max(K) and min(K), not ``abs(K)``,
        whose n x n temporary doubled the fit's peak memory (a NaN still gives NaN)."""
        if not self.matrix.size:
            return 0.0
        return max(float(self.matrix.max()), -float(self.matrix.min()))

    @property
    def diag_is_one(self) -> bool:
        """True when k(x, x) = 1 for every x (RBF), which lets solvers skip the diagonal."""
        return self.kind == "rbf"


def index_points(be, n):
    """The points of a precomputed Gram matrix as the solvers see them: (n, 1) float64, row i holding
    i (exact in float64 up to 2**53 points)."""
    xp = be.xp
    return xp.arange(n, dtype=xp.float64)[:, None]


def precomputed_gram(be, X, Y, spec, dtype):
    """Block K[X, Y] of the precomputed Gram matrix ``spec.matrix`` for index points ``X`` and ``Y``
    (:func:`index_points`; ``Y=None`` means ``Y = X``), as ``dtype``."""
    xp = be.xp
    K = spec.matrix
    i = X[:, 0].astype(xp.int64)
    j = i if Y is None else Y[:, 0].astype(xp.int64)
    return xp.ascontiguousarray(K[i[:, None], j[None, :]], dtype=dtype or K.dtype)


# X.var() at or below (_ROUNDING_REL * mean)**2 is taken as 0: constant values leave only the rounding of
# their mean (a few eps of it, squared), and 1 / that would give a gamma of 1e30 where sklearn's rule for
# constant X (X.var() == 0) gives 1.0; values that differ in their last ten bits at most count as constant
_ROUNDING_REL = 1024 * 2.0 ** -52


def feature_variance(be, X) -> float:
    """``X.var()`` over all entries of ``X`` (dense, or CSR on ``be`` without densifying it: the mean of
    the squares minus the squared mean), what ``gamma="scale"`` divides by; accumulated in float64 for
    float32 ``X`` too, as scikit-learn, which converts X to float64 first (float32 squares overflow from
    1.8e19 on). A variance that is only rounding (nearly constant X) is 0, as for exactly constant X."""
    n, d = int(X.shape[0]), int(X.shape[1])
    xp = be.xp
    if be.issparse(X):
        mean = float(X.sum(dtype=xp.float64)) / (n * d)
        mean_sq = float(be.row_sqnorms(X, xp.float64).sum()) / (n * d)
        var = mean_sq - mean * mean
        if abs(var) <= _ROUNDING_REL * mean_sq:
            # the difference cancelled down to its rounding (a few eps of mean_sq, either sign: a 7.3-filled
            # CSR matrix gave 2.8e-14): sum the squared deviations of the stored entries and of the
            # implicit zeros instead, accurate for (nearly) constant values (X is canonical: no duplicates)
            dev = X.data.astype(xp.float64) - mean
            var = (float((dev * dev).sum()) + (n * d - int(X.nnz)) * mean * mean) / (n * d)
    else:
        var = _host_var(X) if not be.is_gpu else None
        if var is None:
            var = float(X.var(dtype=xp.float64))
        mean = float(X.mean(dtype=xp.float64))
    return 0.0 if var <= (_ROUNDING_REL * mean) ** 2 else var


_VAR_LEAF = 2**16  # elements of one squared-deviation block of _host_var (512 KB of float64)


def _host_var(X):
    """``X.var(dtype=float64)`` of contiguous host X, C-ordered, to the bit, without its temporary
    ``X - X.mean()`` (X's size in float64: twice float32 X's): NumPy sums the squared deviations of all
    entries by its pairwise summation, which splits a run of n > 128 values at n // 2 rounded down to a
    multiple of 8; the same splits are made here down to blocks of ``_VAR_LEAF`` entries, each block's
    deviations formed in a small buffer and summed by NumPy itself. None for a non-contiguous X (use
    ``X.var``).

    An F-ordered X is summed in C order too, block by block (a few rows copied at a time): NumPy's
    ``X.var()`` walks it in memory order, whose rounding differs (a 144 x 18 integer X: one ulp), so the
    same data as a C array, an F array or a data frame (``np.asarray`` of which is often F-ordered) gave
    gamma="scale" values an ulp apart, and different models (BudgetSVC's merges: decision values 5e-3
    apart); scikit-learn's SVC computes ``X.var()`` on X converted to C order."""
    import numpy as np

    if X.flags.c_contiguous:
        flat = X.reshape(-1)

        def block(lo, hi):
            return flat[lo:hi]
    elif X.flags.f_contiguous:
        d = X.shape[1]

        def block(lo, hi):  # entries lo..hi of X in C order: rows lo // d .. (hi - 1) // d copied
            r0 = lo // d
            return np.ascontiguousarray(X[r0:(hi - 1) // d + 1]).reshape(-1)[lo - r0 * d:hi - r0 * d]
    else:
        return None
    n = X.size
    if n == 0:
        return None

    if X.flags.c_contiguous:
        total = np.add.reduce(X, axis=None, dtype=np.float64, keepdims=True)  # np.var's own mean, to the bit
    elif X.dtype == np.float64:  # what np.add.reduce does on the C-ordered X: one pairwise sum
        total = np.asarray(_pairwise(0, n, lambda lo, hi: np.add.reduce(block(lo, hi)))).reshape(1, 1)
    else:  # float32 summed in float64: NumPy casts buffers of np.getbufsize() values and adds their sums
        step = np.getbufsize()
        total = np.zeros((1, 1))
        for lo in range(0, n, step):
            total += np.add.reduce(block(lo, min(lo + step, n)), dtype=np.float64)
    mean = np.true_divide(total, n, out=total, casting="unsafe").reshape(())

    def sq_dev(lo, hi):
        buf = np.subtract(block(lo, hi), mean, dtype=np.float64)
        np.multiply(buf, buf, out=buf)
        return np.add.reduce(buf)

    return float(_pairwise(0, n, sq_dev) / n)


def _pairwise(lo, hi, leaf_sum):
    """NumPy's pairwise sum of entries ``lo..hi`` (its splits at half the run, rounded down to a multiple
    of 8), down to runs of ``_VAR_LEAF`` entries, which ``leaf_sum(lo, hi)`` sums."""
    m = hi - lo
    if m <= _VAR_LEAF:
        return leaf_sum(lo, hi)
    h = m // 2
    h -= h % 8
    return _pairwise(lo, lo + h, leaf_sum) + _pairwise(lo + h, hi, leaf_sum)


def resolve_gamma(gamma, X_var: float, n_features: int, *, used: bool = True) -> float:
    """Resolve ``gamma`` as scikit-learn does: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features.
    ``used``: False for a gram that ignores gamma (linear, precomputed), where a "scale" that cannot be
    resolved gives 1.0 instead of an error (scikit-learn fits such data with those grams)."""
    if isinstance(gamma, str):
        if gamma == "scale":
            if X_var == 0:
                return 1.0
            value = 1.0 / (n_features * X_var) if math.isfinite(X_var) else 0.0
            if not (math.isfinite(value) and value > 0):
                if not used:
                    return 1.0
                why = ("too large: their squares overflow float64" if not math.isfinite(X_var) or value == 0
                       else "too small")
                raise ValueError(f"gamma='scale' cannot be resolved: 1 / (n_features * X.var()) with X.var() = "
                                 f"{X_var!r} is {value!r}; the values of X are {why}. Rescale X (e.g. with "
                                 "sklearn.preprocessing.StandardScaler) or give gamma as a float.")
            return value
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(f"The 'gamma' parameter must be 'scale', 'auto' or a float > 0. Got {gamma!r} instead.")
    return gamma
