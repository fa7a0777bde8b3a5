"""Input and hyperparameter validation with messages that name the parameter, the rule and the value.

Written once for every estimator, for NumPy/SciPy and CuPy inputs alike (CuPy is never imported here:
arrays are inspected through the backend the estimator picked).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

from ._backend import array_library

FLOAT_DTYPES = (np.float64, np.float32)


def check_scalar(value, name, owner, *, kind="float", low=None, high=None, low_open=False,
                 high_open=False, allow_none=False):
    """Validate one numeric hyperparameter; raise ``ValueError`` in scikit-learn's wording.

    >>> check_scalar(-1, "C", "SVC", low=0.0, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: The 'C' parameter of SVC must be a float in the range (0.0, inf). Got -1 instead.
    """
    if value is None and allow_none:
        return None
    lo = "-inf" if low is None else low
    hi = "inf" if high is None else high
    rng = f"{'(' if low_open or low is None else '['}{lo}, {hi}{')' if high_open or high is None else ']'}"
    what = "an int" if kind == "int" else "a float"
    msg = f"The {name!r} parameter of {owner} must be {what} in the range {rng}. Got {value!r} instead."
    if isinstance(value, bool):
        raise ValueError(msg)
    if kind == "int":
        if not isinstance(value, numbers.Integral):
            raise ValueError(msg)
    elif not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(msg)
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(msg)
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(msg)
    return value


def check_degree(degree, kernel, owner):
    """``degree`` as scikit-learn's SVC takes it: any int >= 0 (only the polynomial gram uses it), except
    that a polynomial gram of degree 0 is constant and is refused with a message saying so."""
    check_scalar(degree, "degree", owner, kind="int", low=0)
    if kernel == "poly" and degree == 0:
        raise ValueError("degree=0 makes the polynomial gram constant ((gamma <x, y> + coef0)^0 = 1), so it "
                         f"cannot separate the classes; {owner} needs degree >= 1 for kernel='poly'.")
    return degree


def check_gamma(gamma, kernel, owner):
    """``gamma`` as scikit-learn's SVC takes it: "scale", "auto" or a float >= 0, except that a float 0 makes
    the rbf, poly and sigmoid grams constant and is refused with a message saying so, as :func:`check_degree`
    refuses degree 0 (the linear gram and a precomputed or callable one ignore gamma, so 0 passes there)."""
    if isinstance(gamma, str):
        return check_options(gamma, "gamma", owner, ("scale", "auto"))
    check_scalar(gamma, "gamma", owner, low=0.0)
    if gamma == 0 and isinstance(kernel, str) and kernel in ("rbf", "poly", "sigmoid"):
        raise ValueError(f"gamma=0 makes the {kernel!r} gram constant (k(x, z) no longer depends on x and z), so it "
                         f"cannot separate the classes; {owner} needs gamma > 0 for kernel={kernel!r}.")
    return gamma


def check_random_state_param(value, owner, generator=False):
    """``random_state`` as scikit-learn validates it at fit: None, an int in [0, 2^32 - 1] or a
    ``numpy.random.RandomState`` (and a ``numpy.random.Generator`` where the estimator takes one); checked
    also where the fit does not use it, as scikit-learn does (a typo must not pass silently)."""
    ok = value is None or isinstance(value, np.random.RandomState) or (
        generator and isinstance(value, np.random.Generator)) or (
        isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and 0 <= value < 2**32)
    if not ok:
        gen = " a 'numpy.random.Generator'," if generator else ""
        raise ValueError(f"The 'random_state' parameter of {owner} must be an int in the range [0, 4294967295], an "
                         f"instance of 'numpy.random.mtrand.RandomState',{gen} or None. Got {value!r} instead.")
    return value


def check_options(value, name, owner, options):
    """Validate a string hyperparameter against its allowed values."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"The {name!r} parameter of {owner} must be one of {sorted(options)}. Got {value!r} instead.")
    return value


def check_auto_or_bool(value, name, owner):
    """Validate a hyperparameter that is "auto" or a bool (NumPy's included)."""
    if not (isinstance(value, (bool, np.bool_)) or (isinstance(value, str) and value == "auto")):
        raise ValueError(f"The {name!r} parameter of {owner} must be 'auto' or a bool. Got {value!r} instead.")
    return value


def check_feature_names(estimator, X, *, reset):
    """scikit-learn's bookkeeping of column names: ``reset=True`` (fit) sets ``feature_names_in_`` from
    a data frame's string column names (and deletes a stale one otherwise); ``reset=False`` (predict)
    warns when names were seen on one side only and raises ``ValueError`` when they differ."""
    if not reset and (type(X) is np.ndarray or sp.issparse(X)) and getattr(estimator, "feature_names_in_",
                                                                                None) is None:
        # no names on either side, so scikit-learn's check does nothing; it takes 15 us (ndarray) to 30 us
        # (CSR) to find that out (narwhals' data frame tests), 15-20% of a one-row prediction
        return
    try:
        from sklearn.utils.validation import _check_feature_names
    except ImportError:  # scikit-learn < 1.6: a BaseEstimator method
        estimator._check_feature_names(X, reset=reset)
    else:
        _check_feature_names(estimator, X, reset=reset)


def check_X(X, be, *, name="X", dtype=None, owner=None, estimator=None, reset=False, squares=True, gram=False):
    """Validate a 2-d feature matrix and put it on backend ``be``.

    Accepts lists, NumPy arrays (C or F order), data frames, SciPy sparse matrices (converted to CSR),
    CuPy arrays and cupyx sparse matrices. Returns a float64 or float32 array or CSR matrix on ``be``
    (float32 kept, anything else converted to ``dtype`` or float64). Raises ``ValueError`` for ragged,
    empty, non-2-d or non-finite input. With ``estimator``, first sets (``reset``, in fit) or checks
    its ``feature_names_in_`` (:func:`check_feature_names`). ``squares``: also raise when the squares of
    the values overflow float64 (every gram and row norm squares them); False where only ``X @ w`` is
    computed (a linear model's prediction). ``gram``: X is a Gram matrix (kernel="precomputed"), which the
    overflow messages then advise to rescale with C instead of scaling features.
    """
    if estimator is not None:
        check_feature_names(estimator, X, reset=reset)
    where = f" for {owner}" if owner else ""
    by = f" by {owner}" if owner else ""
    if X is None:
        raise ValueError(f"Expected 2D array, got None instead for {name!r}{where}.")
    if array_library(X) == "numpy" and not sp.issparse(X) and not isinstance(X, np.ndarray):
        X = _pandas_missing_to_nan(X)
        try:
            X = np.asarray(X)
        except ValueError as exc:
            raise ValueError(f"{name!r}{where} is ragged or not numeric: {exc}") from None
    if isinstance(X, np.ndarray) and X.dtype == object:
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as exc:
            # keep the exception type: float() says "argument must be a string or a number" for dicts
            raise type(exc)(f"{name!r}{where} holds non-numeric values: {exc}") from None
    if sp.issparse(X):
        X = X.tocsr()
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        got = "scalar array" if shape == () else f"{len(shape)}D array" if shape is not None else type(X).__name__
        raise ValueError(
            f"Expected 2D array, got {got} instead for {name!r}{where}. Reshape your data either using "
            "array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if it "
            "contains a single sample."
        )
    if shape[0] == 0:
        raise ValueError(f"{name!r} is empty: found array with 0 sample(s) (shape={tuple(shape)}) while a "
                         f"minimum of 1 is required{by}.")
    if shape[1] == 0:
        raise ValueError(f"{name!r} is empty: found array with 0 feature(s) (shape={tuple(shape)}) while a "
                         f"minimum of 1 is required{by}.")
    kind = getattr(X.dtype, "kind", "O")
    if kind == "c":
        raise ValueError(f"Complex data not supported: {name!r}{where} has dtype {X.dtype}.")
    if kind not in "biuf":
        raise ValueError(f"{name!r}{where} must be numeric, got dtype {X.dtype}.")
    target = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
    X = be.asarray(X, dtype=target)
    if be.is_gpu and not be.issparse(X) and not X.flags.c_contiguous:
        # one C-ordered copy on the device (the CUDA ops index rows, and copied F-ordered X each call).
        # X.var() of gamma="scale" reduces in memory order (NumPy does, so the emulator did; CuPy's
        # reduction merges contiguous axes, not checked on a GPU), so F-ordered X (or a data frame, often
        # F-ordered) got a gamma an ulp away from the same C-ordered X's and so a different model; the
        # CPU sums in C order instead (_gram._host_var), without the copy
        X = be.xp.ascontiguousarray(X)
    if be.issparse(X) and not getattr(X, "has_canonical_format", False):
        # sorted indices without duplicates (the compiled loops scatter rows into a dense buffer, so a
        # repeated column would count once); on a copy, never on the caller's matrix. Before the checks
        # below: they must see the summed values (two stored 1e154 are one 2e154, whose square overflows)
        X = X.copy()
        X.sum_duplicates()
    data = X.data if be.issparse(X) else X
    if data.size:
        # reductions only, no temporary of X's size (|X| or an isfinite mask doubled the memory of a dense
        # X: full w8a densified, 114 MB, peaked at 228 MB here): min and max propagate NaN and show an
        # infinity; a sum that is not finite (NaN, infinity, or only an overflow) gets the elementwise test
        xp = be.xp
        with np.errstate(over="ignore", invalid="ignore"):  # (the float32 sum of large values overflows)
            lo, hi, total = (float(v) for v in be.to_host(xp.stack([xp.min(data), xp.max(data), xp.sum(data)])))
        if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(total)) and not bool(
                xp.isfinite(data).all()):
            nan = bool(xp.isnan(data).any())
            raise ValueError(f"{name!r}{where} contains {'NaN' if nan else 'infinity'}; remove or impute it "
                             "first.")
        big = max(hi, -lo)
        fix = ("scale the Gram matrix first: K / s with C * s gives the same decision function (s, e.g., its "
               "largest value)" if gram else "scale the features first, e.g. with sklearn.preprocessing.StandardScaler")
        if squares and not math.isfinite(big * big):
            # every gram and the linear solvers' row norms square the values: they would be inf, and
            # the solvers would stop at once with a zero model
            raise ValueError(f"{name!r}{where} has values up to {big:.3g}, whose squares overflow float64 "
                             f"(every gram and row norm squares them); {fix}.")
        if squares and not math.isfinite(big * big * int(X.shape[1])) and not bool(
                xp.isfinite(be.row_sqnorms(X, xp.float64)).all()):
            # each square finite, their sum over a row not: the RBF gram's distances were inf - inf, and
            # SVC, DCSVC and BudgetSVC predicted NaN without a word (scikit-learn's SVC raises)
            raise ValueError(f"{name!r}{where} has rows whose squared norms overflow float64 (values up to "
                             f"{big:.3g} in {int(X.shape[1])} features; every gram and row norm squares them); "
                             f"{fix}.")
    return X


def _pandas_missing_to_nan(X):
    """A data frame with pandas' nullable or other extension columns (``Float64``, ``Int64``, ``boolean``,
    categorical) as a float64 array with ``pd.NA`` as NaN, so that missing values get the NaN error, not a
    TypeError from converting ``pd.NA``; anything else (also frames that do not convert) unchanged."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "to_numpy") or getattr(X, "ndim", 0) != 2:
        return X
    if all(isinstance(dt, np.dtype) for dt in dtypes):
        return X
    try:
        return X.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):  # strings or other non-numeric columns: the checks below say so
        return X


def _has_missing(y):
    """True when an object or pandas label array holds None, NaN or ``pd.NA``."""
    isna = getattr(y, "isna", None)
    if callable(isna) and getattr(y, "ndim", 0) == 1:
        return bool(isna().any())
    y = np.asarray(y)
    if y.dtype != object:
        return False
    for v in y.ravel():
        if v is None or type(v).__name__ == "NAType":
            return True
        try:
            if v != v:
                return True
        except TypeError:
            return True
    return False


def _nullable_labels_as_float(y):
    """Labels in pandas' nullable integer, float or boolean dtypes (``Int64``, ``UInt8``, ``Float64``,
    ``boolean``; a Series or a pandas array) as float64, as scikit-learn's check_array converts them (its
    ``astype(None)``): its ``classes_`` and predictions are then float64 (measured: SVC, LinearSVC and
    LogisticRegression of scikit-learn 1.9.1 alike), also as the one column of a data frame. Anything else
    is returned unchanged."""
    if getattr(y, "ndim", 0) == 2 and hasattr(y, "iloc") and y.shape[1] == 1:
        col = _nullable_labels_as_float(y.iloc[:, 0])
        return col.reshape(-1, 1) if isinstance(col, np.ndarray) else y
    dtype = getattr(y, "dtype", None)
    if dtype is None or isinstance(dtype, np.dtype) or not type(y).__module__.startswith("pandas"):
        return y
    from pandas import SparseDtype
    from pandas.api.types import is_bool_dtype, is_extension_array_dtype, is_float_dtype, is_integer_dtype

    if isinstance(dtype, SparseDtype) or not is_extension_array_dtype(dtype):
        return y
    if is_bool_dtype(dtype) or is_integer_dtype(dtype) or is_float_dtype(dtype):
        return np.asarray(y, dtype=np.float64)
    return y


def check_y(y, n_samples, *, owner=None):
    """Validate labels on the host: 1-d, finite, ``n_samples`` long. Returns a NumPy array."""
    where = f" for {owner}" if owner else ""
    if array_library(y) == "cupy":
        y = y.get()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"'y'{where} must be 1-d, got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(f"'y'{where} has {y.shape[0]} labels but X has {n_samples} samples.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"'y'{where} contains NaN or infinity.")
    return y


def check_class_labels(y, n_samples, *, owner):
    """Validate classification targets: ``check_y`` plus scikit-learn's rules for classifiers.

    ``y`` None raises; a column vector (n, 1) is raveled with a ``DataConversionWarning``, as scikit-learn's
    estimators do; continuous or multi-output targets raise ``ValueError`` ("Unknown label type").
    """
    from sklearn.exceptions import DataConversionWarning
    from sklearn.utils.multiclass import check_classification_targets

    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None.")
    if array_library(y) == "numpy":
        if _has_missing(y):
            raise ValueError(f"'y' for {owner} contains NaN or missing values (None, pd.NA); classification "
                             "targets must all be labels.")
        y = np.asarray(_nullable_labels_as_float(y))
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape "
                      "of y to (n_samples,), for example using ravel().", DataConversionWarning, stacklevel=3)
    y = check_y(y, n_samples, owner=owner)
    if y.dtype == object:
        # labels of types that do not order (strings and numbers) failed in the estimators' np.unique with
        # "'<' not supported between instances of 'int' and 'str'", or, with a number first, got
        # check_classification_targets' "Unknown label type: unknown ... continuous values"
        try:
            np.unique(y)
        except TypeError:
            kinds = sorted({type(v).__name__ for v in y})
            raise ValueError(f"'y' for {owner} mixes labels of types that cannot be ordered ({', '.join(kinds)}); "
                             "use labels of one type, e.g. all strings.") from None
    check_classification_targets(y)
    return y


def class_indices(y):
    """``np.unique(y, return_inverse=True)`` of labels checked by :func:`check_class_labels`: the sorted
    classes and each label's index among them, found by a binary search in the classes instead of
    through the argsort of ``y`` that NumPy's inverse takes, which is slow on the few distinct values
    of labels (a9a, 32,561 labels of +-1: 4.1 ms against 0.25 ms; ijcnn1, 49,990: 10.3 against 0.36 ms).
    """
    classes = np.unique(y)
    return classes, np.searchsorted(classes, y)


def check_sample_weight(sample_weight, n_samples, *, owner=None):
    """Validate sample weights on the host: None -> ones; length ``n_samples``, finite, non-negative."""
    where = f" for {owner}" if owner else ""
    if sample_weight is None:
        return np.ones(n_samples)
    if array_library(sample_weight) == "cupy":
        sample_weight = sample_weight.get()
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.ndim == 0:
        sw = np.full(n_samples, float(sw))
    if sw.ndim != 1 or sw.shape[0] != n_samples:
        raise ValueError(f"'sample_weight'{where} must have shape ({n_samples},), got {sw.shape}.")
    if not np.isfinite(sw).all():
        raise ValueError(f"'sample_weight'{where} contains NaN or infinity.")
    if (sw < 0).any():
        raise ValueError(f"'sample_weight'{where} has negative values (min {sw.min()}); weights must be >= 0.")
    return sw


def check_class_weight(class_weight, owner):
    """Validate the ``class_weight`` hyperparameter: None, "balanced" or a dict."""
    if not (class_weight is None or isinstance(class_weight, dict)
            or (isinstance(class_weight, str) and class_weight == "balanced")):
        raise ValueError(f"The 'class_weight' parameter of {owner} must be None, 'balanced' or a dict. "
                         f"Got {class_weight!r} instead.")


def class_weights(class_weight, classes, y, *, owner):
    """Weight of each class (shape (n_classes,)) for ``class_weight`` None, "balanced" or a dict, as
    scikit-learn's ``compute_class_weight``, which also decides about dict keys that are not classes of y:
    taken when every class of y has its weight (a cross-validation fold without a rare class), else an
    error naming the classes without one."""
    if class_weight is None:  # skip sklearn's helper: it builds Python sets of all labels
        return np.ones(len(classes))
    from sklearn.utils.class_weight import compute_class_weight

    if isinstance(class_weight, dict):
        bad = {}
        for key, value in class_weight.items():
            try:
                ok = math.isfinite(float(value)) and float(value) >= 0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                bad[key] = value
        if bad:
            raise ValueError(f"The 'class_weight' parameter of {owner} must map classes to finite weights >= 0; "
                             f"got {bad!r}.")
    return np.asarray(compute_class_weight(class_weight, classes=classes, y=y), dtype=np.float64)


def weights_per_sample(sample_weight, class_weight, classes, y, y_idx, *, owner, weighted_balance=False, C=None):
    """Weight of each sample, w_i = class_weight[y_i] * sample_weight_i (sample i's C is C w_i), the
    per-class weights and the validated sample weights (ones for None); at least one w_i must be positive.

    ``weighted_balance``: "balanced" counts the samples by their sample weights, ``sum(sw) / (n_classes *
    sum_{y_i = c} sw_i)``, as scikit-learn's LinearSVC does (its SVC counts samples; a class whose
    samples all weigh 0 gets weight 1, which multiplies nothing).

    ``C``: also raise when the largest C_i = C class_weight sample_weight overflows float64 (C=1e300 with
    sample weights of 1e300 gave inf bounds: NaN objectives and decision values without a word)."""
    sw = check_sample_weight(sample_weight, len(y_idx), owner=owner)
    balanced = isinstance(class_weight, str) and class_weight == "balanced"
    if balanced and weighted_balance and sample_weight is not None:
        counts = np.bincount(y_idx, weights=sw, minlength=len(classes))
        cw = np.where(counts > 0, counts.sum() / (len(classes) * np.where(counts > 0, counts, 1.0)), 1.0)
    elif balanced:
        # scikit-learn's n_samples / (n_classes * bincount(y)), the same floats (every class has samples: the
        # classes are y's), without compute_class_weight's LabelEncoder, whose np.unique(y, return_inverse=True)
        # argsorts y (ijcnn1's 49,990 labels: 7.9 ms, see class_indices)
        cw = len(y_idx) / (len(classes) * np.bincount(y_idx, minlength=len(classes)).astype(np.float64))
    else:
        cw = class_weights(class_weight, classes, y, owner=owner)
    tops = (float(C) if C is not None else 1.0, float(np.max(cw, initial=0.0)), float(np.max(sw, initial=0.0)))
    if C is not None and min(tops) > 0 and sum(math.log(t) for t in tops) >= math.log(np.finfo(np.float64).max):
        raise ValueError(f"C times the class and sample weights of {owner} overflows float64 (C={C!r}, largest "
                         f"class weight {tops[1]:.3g}, largest sample weight {tops[2]:.3g}): every sample's bound is "
                         "C * class_weight * sample_weight; lower C or the weights (only their product matters).")
    w = cw[y_idx] * sw
    if not np.any(w > 0):
        raise ValueError(f"Invalid input: all samples have zero weight. The sample weights (times the class "
                         f"weights) of {owner} are all zero; at least one sample needs a positive weight.")
    return w, cw, sw


def ovr_weights(sample_weight, class_weight, y_idx, k):
    """Sample weights of the problem "class ``k`` against the rest" as LIBLINEAR (and so scikit-learn's
    LinearSVC) sets them: with more than two classes, class k's samples get ``class_weight[k]`` times
    their sample weight and every other sample its sample weight only; with two classes (the one
    problem) every sample gets its own class's weight, ``class_weight[y_i] * sample_weight_i``.
    ``sample_weight`` and ``class_weight``: :func:`weights_per_sample`'s third and second outputs."""
    if class_weight.shape[0] == 2:
        return sample_weight * class_weight[y_idx]
    return sample_weight * np.where(y_idx == k, class_weight[k], 1.0)


def to_numpy(x):
    """``x`` (a NumPy or CuPy array, or anything ``np.asarray`` takes) as a host NumPy array."""
    if array_library(x) == "cupy":
        return x.get()
    return np.asarray(x)


def to_input_library(x, lib):
    """Return the dense result ``x`` (NumPy or CuPy) in array library ``lib``: ``"cupy"`` or ``"numpy"``.

    ``lib`` is ``array_library(X)`` of the estimator's input, so that ``predict`` and
    ``decision_function`` answer a CuPy (or cupyx CSR) input with a CuPy array and anything else with a
    NumPy array, wherever the model lives. Labels CuPy cannot hold (strings, objects) stay NumPy.
    CuPy is imported only when the input was CuPy, so it is importable then.
    """
    if lib == "cupy":
        if array_library(x) == "cupy":
            return x
        x = np.asarray(x)
        if x.dtype.kind not in "biufc":
            return x
        import cupy as cp

        return cp.asarray(x)
    return to_numpy(x)
