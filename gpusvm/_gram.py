"""The SVM kernel functions, called "grams" in code so that "kernel" always means a CUDA kernel.

=========  ==================================  ======
name       k(x, y)                             code
=========  ==================================  ======
linear     <x, y>                              0
poly       (gamma <x, y> + coef0) ** degree    1
rbf        exp(-gamma ||x - y||^2)             2
sigmoid    tanh(gamma <x, y> + coef0)          3
=========  ==================================  ======
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

GRAM_CODES = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}


@dataclass(frozen=True)
class GramSpec:
    """A validated SVM kernel ("gram") with its numeric hyperparameters (gamma already resolved)."""

    kind: str = "rbf"
    gamma: float = 1.0
    coef0: float = 0.0
    degree: int = 3

    def __post_init__(self):
        if not isinstance(self.kind, str) or self.kind not in GRAM_CODES:
            raise ValueError(
                f"The 'kernel' parameter must be one of {sorted(GRAM_CODES)}. Got {self.kind!r} instead."
            )
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, numbers.Real) or not (
            math.isfinite(self.gamma) and self.gamma > 0
        ):
            raise ValueError(f"The 'gamma' parameter must be a float in the range (0.0, inf). Got {self.gamma!r} instead.")
        if isinstance(self.coef0, bool) or not isinstance(self.coef0, numbers.Real) or not math.isfinite(self.coef0):
            raise ValueError(f"The 'coef0' parameter must be a finite float. Got {self.coef0!r} instead.")
        if isinstance(self.degree, bool) or not isinstance(self.degree, numbers.Integral) or self.degree < 1:
            raise ValueError(f"The 'degree' parameter must be an int in the range [1, inf). Got {self.degree!r} instead.")
        object.__setattr__(self, "gamma", float(self.gamma))
        object.__setattr__(self, "coef0", float(self.coef0))
        object.__setattr__(self, "degree", int(self.degree))

    @property
    def code(self) -> int:
        return GRAM_CODES[self.kind]

    @property
    def diag_is_one(self) -> bool:
        """True when k(x, x) = 1 for every x (RBF), which lets solvers skip the diagonal."""
        return self.kind == "rbf"


def feature_variance(be, X) -> float:
    """``X.var()`` over all entries of ``X`` (dense, or CSR on ``be`` without densifying it: the mean of
    the squares minus the squared mean), what ``gamma="scale"`` divides by."""
    n, d = int(X.shape[0]), int(X.shape[1])
    if be.issparse(X):
        mean = float(X.sum()) / (n * d)
        return float(be.row_sqnorms(X, be.xp.float64).sum()) / (n * d) - mean * mean
    return float(X.var())


def resolve_gamma(gamma, X_var: float, n_features: int) -> float:
    """Resolve ``gamma`` as scikit-learn does: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features."""
    if isinstance(gamma, str):
        if gamma == "scale":
            if X_var == 0:
                return 1.0
            value = 1.0 / (n_features * X_var) if math.isfinite(X_var) else 0.0
            if not (math.isfinite(value) and value > 0):
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
