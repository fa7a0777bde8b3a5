"""``gpusvm train`` and ``gpusvm predict``: LIBSVM's ``svm-train`` / ``svm-predict`` command lines.

Same options, same file formats (LIBSVM data files in, LIBSVM model files out and back), so a script
written for LIBSVM runs by putting ``gpusvm`` before the command; ``--device`` and ``--solver`` choose
where and how gpusvm trains. Only what gpusvm implements is accepted: C-SVC (``-s 0``), the kernels
``-t 0..3``, probability estimates ``-b 0/1`` (Platt scaling with 5-fold cross-validation, as LIBSVM);
anything else is an error that names the option.
"""

from __future__ import annotations

import math
import os
import sys

TRAIN_USAGE = """\
Usage: gpusvm train [options] training_set_file [model_file]
options (as LIBSVM's svm-train; C-SVC only):
-s svm_type : 0 -- C-SVC (the only type gpusvm trains)
-t kernel_type : set type of kernel function (default 2)
	0 -- linear: u'*v
	1 -- polynomial: (gamma*u'*v + coef0)^degree
	2 -- radial basis function: exp(-gamma*|u-v|^2)
	3 -- sigmoid: tanh(gamma*u'*v + coef0)
-d degree : set degree in kernel function (default 3)
-g gamma : set gamma in kernel function (default 1/num_features)
-r coef0 : set coef0 in kernel function (default 0)
-c cost : set the parameter C of C-SVC (default 1)
-m cachesize : set cache memory size in MB (default 100)
-e epsilon : set tolerance of termination criterion (default 0.001)
-h shrinking : whether to use the shrinking heuristics, 0 or 1 (default 1)
-b probability_estimates : whether to train a model for probability estimates, 0 or 1 (default 0)
-wi weight : set the parameter C of class i to weight*C (default 1)
-v n : n-fold cross validation mode
-q : quiet mode (no outputs)
gpusvm options:
--device d : cpu, gpu, gpu:N or auto (default auto)
--solver s : smo, pa-smo or alfpgm (default smo)
--deduplicate m : auto, 1 or 0: merge equal points of the same label before training (exact; auto merges
    when at most half of the points are distinct; default auto)
"""

PREDICT_USAGE = """\
Usage: gpusvm predict [options] test_file model_file output_file
options:
-b probability_estimates : whether to predict probability estimates, 0 or 1 (default 0)
-q : quiet mode (no outputs)
gpusvm options:
--device d : cpu, gpu or gpu:N (default cpu)
"""


class UsageError(ValueError):
    pass


def _take(args, i, opt):
    if i + 1 >= len(args):
        raise UsageError(f"option {opt} needs a value")
    return args[i + 1]


def _num(value, opt, cast=float):
    try:
        return cast(value)
    except ValueError:
        raise UsageError(f"option {opt}: {value!r} is not a valid {'integer' if cast is int else 'number'}") from None


def parse_train_args(args):
    """LIBSVM-style options -> (settings dict, training file, model file)."""
    opt = {"kernel": 2, "degree": 3, "gamma": None, "coef0": 0.0, "C": 1.0, "cache": 100.0, "tol": 1e-3,
           "weights": {}, "folds": None, "quiet": False, "device": "auto", "solver": "smo",
           "deduplicate": "auto"}
    i = 0
    while i < len(args) and args[i].startswith("-") and len(args[i]) > 1:
        a = args[i]
        if a in ("--device", "--solver"):
            opt[a[2:]] = _take(args, i, a)
            i += 2
            continue
        if a == "--deduplicate":
            v = _take(args, i, a)
            if v not in ("auto", "0", "1"):
                raise UsageError(f"--deduplicate {v}: auto, 0 or 1")
            opt["deduplicate"] = {"0": False, "1": True}.get(v, "auto")
            i += 2
            continue
        if a == "-q":
            opt["quiet"] = True
            i += 1
            continue
        if a.startswith("-w"):
            label = a[2:]
            if not label:
                raise UsageError("option -w needs a class label, as in -w1 2.5")
            # svm-train reads the label with atoi (-w1.5 weighs class 1, the class of labels 1.5 once cast
            # to int); repeated for a label, the weights multiply, as svm-train's
            lab = float(_num(label.partition(".")[0] or "0", a, int))
            opt["weights"][lab] = opt["weights"].get(lab, 1.0) * _num(_take(args, i, a), a)
            i += 2
            continue
        letter = a[1:]
        v = _take(args, i, a)
        if letter == "s":
            if _num(v, a, int) != 0:
                raise UsageError(f"-s {v}: gpusvm trains C-SVC only (-s 0); nu-SVC, one-class SVM and "
                                 "regression are not implemented")
        elif letter == "t":
            t = _num(v, a, int)
            if t not in (0, 1, 2, 3):
                raise UsageError(f"-t {v}: kernel types 0-3 only (a precomputed kernel, -t 4, is not supported)")
            opt["kernel"] = t
        elif letter == "d":
            opt["degree"] = _num(v, a, int)
        elif letter == "g":
            opt["gamma"] = _num(v, a)
        elif letter == "r":
            opt["coef0"] = _num(v, a)
        elif letter == "c":
            opt["C"] = _num(v, a)
        elif letter == "m":
            opt["cache"] = _num(v, a)
        elif letter == "e":
            opt["tol"] = _num(v, a)
        elif letter == "h":
            if _num(v, a, int) not in (0, 1):
                raise UsageError(f"-h {v}: shrinking is 0 or 1")
            opt["shrinking"] = _num(v, a, int) == 1
        elif letter == "b":
            if _num(v, a, int) not in (0, 1):
                raise UsageError(f"-b {v}: probability_estimates is 0 or 1")
            opt["probability"] = _num(v, a, int) == 1
        elif letter == "v":
            opt["folds"] = _num(v, a, int)
            if opt["folds"] < 2:
                raise UsageError("n-fold cross validation: n must >= 2")
        else:
            raise UsageError(f"unknown option: {a}")
        i += 2
    rest = args[i:]
    if not 1 <= len(rest) <= 2:
        raise UsageError("expected training_set_file [model_file]")
    train = rest[0]
    model = rest[1] if len(rest) == 2 else os.path.basename(train) + ".model"
    return opt, train, model


def _read(path):
    """A LIBSVM data file (.gz/.bz2/.xz too) -> (CSR X, y), column j holding feature index j: as LIBSVM,
    which takes index 0 too (scikit-learn's dump_svmlight_file writes 0-based files by default), the
    commands keep the indices as they are, so column 0 is empty for the usual 1-based files (no gram
    sees an all-zero feature) and model files carry the same indices as the data."""
    import lzma

    from .datasets import load_svmlight

    import numpy as np

    try:
        X, y = load_svmlight(path, zero_based=True)
    # (EOFError: a cut-off .gz/.bz2/.xz; LZMAError: a .xz that is not one; OverflowError: an index past int32)
    except (OSError, ValueError, EOFError, OverflowError, lzma.LZMAError) as exc:
        line = _bad_line(path) if isinstance(exc, (ValueError, OverflowError)) else None
        raise UsageError(f"can't read {path}: " + (f"wrong input format at line {line} ({exc})" if line else
                                                   str(exc))) from None
    if not np.all(np.isfinite(X.data)):
        # (the reader takes nan, inf and 1e400 as numbers, as svm-train's strtod; the estimator's "X contains NaN"
        # left the user to search a file of many lines for it)
        line = _bad_line(path, finite=True)
        raise UsageError(f"can't read {path}: " + (f"line {line} has a feature value that is not finite (nan, inf "
                                                   "or beyond float64's range)" if line else
                                                   "a feature value is not finite (nan, inf or beyond float64's "
                                                   "range)"))
    return X, y


def _bad_line(path, finite=False, label_ok=None):
    """The number of the first line of a LIBSVM data file that is not ``label index:value ...`` with
    increasing indices below 2^31 (svm-train names it: "Wrong input format at line N"); blank lines, ``#`` comments
    and a leading ``qid:`` pair, which the reader takes, pass. ``finite``: also a line with a feature value that
    is not finite; ``label_ok``: also a line whose label (a float) it refuses. None if every line passes or the
    file cannot be read."""
    from .datasets import _OPENERS

    try:
        with _OPENERS.get(os.path.splitext(path)[1].lower(), open)(path, "rt", encoding="latin-1") as fh:
            for n, raw in enumerate(fh, 1):
                tok = raw.split("#", 1)[0].split()
                if not tok:
                    continue
                try:
                    label = float(tok[0])
                    if label_ok is not None and not label_ok(label):
                        return n
                    last = -1
                    for i, t in enumerate(tok[1:]):
                        j, sep, v = t.partition(":")
                        value = float(v)
                        if j == "qid" and i == 0:
                            continue
                        if finite and not math.isfinite(value):
                            return n
                        if not sep or int(j) <= last or int(j) >= 2**31:
                            return n
                        last = int(j)
                except ValueError:
                    return n
    except (OSError, EOFError, ValueError):
        return None
    return None


def _label_text(v):
    f = float(v)
    return str(int(f)) if f.is_integer() else format(f, ".17g")


def train_main(args) -> int:
    if not args or args[0] == "--help":
        print(TRAIN_USAGE, file=sys.stderr if not args else sys.stdout)
        return 1 if not args else 0
    try:
        opt, train_file, model_file = parse_train_args(args)
    except UsageError as exc:
        print(f"gpusvm train: {exc}\n\n{TRAIN_USAGE}", file=sys.stderr)
        return 1
    from .libsvm_io import save_libsvm_model
    from .svc import SVC

    try:
        X, y = _read(train_file)
    except UsageError as exc:
        print(f"gpusvm train: {exc}", file=sys.stderr)
        return 1
    if X.shape[0] == 0:  # (-v used to print "Cross Validation Accuracy = nan%" with NumPy warnings and exit 0)
        print(f"gpusvm train: {train_file} holds no data lines: nothing to train on.", file=sys.stderr)
        return 1
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    kernel = ("linear", "poly", "rbf", "sigmoid")[opt["kernel"]]
    if kernel == "poly" and opt["degree"] < 0:
        print("gpusvm train: degree of polynomial kernel < 0", file=sys.stderr)
        return 1
    # as svm-train: -g 0 (or no -g) means 1 / num_features, num_features the largest feature index; the
    # linear kernel ignores -g, whatever its value (svm-train checks gamma < 0 only for the other kernels)
    gamma = opt["gamma"] if opt["gamma"] and kernel != "linear" else 1.0 / max(int(X.shape[1]) - 1, 1)

    def label_ok(v):  # (a class needs an integer label: nan, inf and 1e30 ended in "Unknown label type: continuous"
        return math.isfinite(v) and abs(v) < 2.0**63  # or "'y' contains NaN or infinity", with no line)

    if not all(label_ok(v) for v in np.unique(y).tolist()):
        line = _bad_line(train_file, label_ok=label_ok)
        print(f"gpusvm train: {train_file}: " + (f"line {line}" if line else "a line") + " has a label that is not "
              "an integer of at most 2^63 (nan, inf or too large)", file=sys.stderr)
        return 1
    y_file, labels = y, np.trunc(y)  # svm-train casts labels to int (-v scores against the file's labels)
    if np.any(labels != y):
        print("WARNING: labels that are not integers are truncated to integers, as LIBSVM does", file=sys.stderr)
    y = labels + 0.0  # (no -0.0)
    cw = None
    if opt["weights"]:
        present = set(y.tolist())
        cw = {lab: w for lab, w in opt["weights"].items() if lab in present}
        for lab in sorted(set(opt["weights"]) - present):
            print(f"WARNING: class label {_label_text(lab)} specified in weight is not found", file=sys.stderr)
    # svm-train's iteration cap, max(10^7, 100 l) with l the class pair's size (with a warning when reached):
    # what max_iter=-1 keeps in SVC's pair-at-a-time loop (the whole file's size used to stand in for l)
    est = SVC(C=opt["C"], kernel=kernel, degree=opt["degree"] if kernel == "poly" else 3, gamma=gamma,
              coef0=opt["coef0"], tol=opt["tol"], cache_size=opt["cache"], class_weight=cw or None,
              solver=opt["solver"], device=opt["device"], deduplicate=opt["deduplicate"],
              shrinking=opt.get("shrinking", True), probability=bool(opt.get("probability")),
              max_iter=-1, random_state=0)
    if not opt["folds"] and np.unique(y).size == 1:  # as svm-train: a model that predicts that label
        from .libsvm_io import one_class_model_text

        if not opt["quiet"]:
            print("WARNING: training data in only one class. See README for details.")
        try:
            with open(model_file, "w", encoding="ascii") as fh:
                fh.write(one_class_model_text(y[0], kernel, gamma, opt["degree"], opt["coef0"],
                                              probability=bool(opt.get("probability"))))
        except OSError as exc:
            print(f"gpusvm train: can't save model to file {model_file}: {exc}", file=sys.stderr)
            return 1
        return 0
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            if opt["folds"]:
                pred = _cross_validate(est, X, y, opt["folds"])
            else:
                est.fit(X, y)
                est._label_order = _libsvm_label_order(est.classes_, y)
                try:
                    save_libsvm_model(est, model_file, _first_index=0)
                except OSError as exc:
                    print(f"gpusvm train: can't save model to file {model_file}: {exc}", file=sys.stderr)
                    return 1
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                if not opt["quiet"]:
                    print("WARNING: reaching max number of iterations")
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    except (ValueError, MemoryError, RuntimeError) as exc:
        print(f"gpusvm train: {exc}", file=sys.stderr)
        return 1
    if opt["folds"]:
        print(f"Cross Validation Accuracy = {100.0 * float(np.mean(pred == y_file)):g}%")
        return 0
    if not opt["quiet"]:
        print(f"optimization finished, #iter = {int(sum(est.n_iter_))}")
        print(f"nSV = {int(sum(est.n_support_))}, obj = " + ", ".join(f"{-o:g}" for o in est.objective_)
              + " (as LIBSVM: minus the dual objective)")
        print(f"model written to {model_file}")
        print(f"Total nSV = {int(sum(est.n_support_))}")  # svm-train's last line, which scripts read
    return 0


def _libsvm_label_order(classes, y):
    """svm-train's label order, as indices into the sorted ``classes``: as the labels first appear in the
    training file, except that a two-class problem with labels -1 and +1 lists +1 first."""
    import numpy as np

    _, first = np.unique(y, return_index=True)
    order = np.argsort(first, kind="stable")
    if len(classes) == 2 and classes[order[0]] == -1 and classes[order[1]] == 1:
        order = order[::-1].copy()
    return order


def _libsvm_folds(y, n_folds, rng):
    """svm-train -v's folds (fold number per sample): each class's samples shuffled and cut into
    ``n_folds`` consecutive runs of sizes differing by at most one (so a class smaller than ``n_folds``
    is absent from some folds); with more folds than samples, leave-one-out, as svm-train."""
    import numpy as np

    n = len(y)
    fold = np.empty(n, dtype=np.int64)
    if n_folds >= n:
        fold[rng.permutation(n)] = np.arange(n)
        return fold
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        cuts = (np.arange(n_folds + 1) * len(members)) // n_folds
        for f in range(n_folds):
            fold[members[cuts[f]:cuts[f + 1]]] = f
    return fold


def _cross_validate(est, X, y, n_folds):
    """svm-train -v: the prediction of every sample by the model trained on the other folds (a training
    part of a single class predicts that class, as LIBSVM's one-class models; an empty one, a fold that
    holds every sample (every class smaller than ``n_folds``, fewer folds than samples), predicts no
    label, so those samples count as wrong: LIBSVM trains a model of no class there and reads a label
    past its end; -b 1: the class of the largest probability, as LIBSVM)."""
    import numpy as np
    from sklearn.base import clone

    n = int(X.shape[0])
    if n_folds > n:
        print(f"WARNING: # folds ({n_folds}) > # data ({n}). Will use # folds = # data instead (i.e., leave-one-out "
              "cross validation)", file=sys.stderr)
        n_folds = n
    fold = _libsvm_folds(y, n_folds, np.random.default_rng(0))
    pred = np.empty_like(y)
    for f in range(n_folds):
        test = np.flatnonzero(fold == f)
        if not test.size:
            continue
        train = np.flatnonzero(fold != f)
        if not train.size:  # every sample in this fold (each class smaller than n): no model, no label
            pred[test] = np.nan
            continue
        if np.unique(y[train]).size < 2:
            pred[test] = y[train[0]]
            continue
        m = clone(est).fit(X[train], y[train])
        m._label_order = _libsvm_label_order(m.classes_, y[train])  # (vote ties, coupling: as svm-train's)
        if est.probability:
            pred[test] = m.classes_[np.argmax(np.asarray(m.predict_proba(X[test])), axis=1)]
        else:
            pred[test] = np.asarray(m.predict(X[test]))
    return pred


def parse_predict_args(args):
    opt = {"quiet": False, "device": "cpu", "probability": False}
    i = 0
    while i < len(args) and args[i].startswith("-") and len(args[i]) > 1:
        a = args[i]
        if a == "-q":
            opt["quiet"] = True
            i += 1
        elif a == "--device":
            opt["device"] = _take(args, i, a)
            i += 2
        elif a == "-b":
            v = _num(_take(args, i, a), a, int)
            if v not in (0, 1):
                raise UsageError(f"-b {v}: probability_estimates is 0 or 1")
            opt["probability"] = v == 1
            i += 2
        else:
            raise UsageError(f"unknown option: {a}")
    rest = args[i:]
    if len(rest) != 3:
        raise UsageError("expected test_file model_file output_file")
    return opt, rest[0], rest[1], rest[2]


def predict_main(args) -> int:
    if not args or args[0] == "--help":
        print(PREDICT_USAGE, file=sys.stderr if not args else sys.stdout)
        return 1 if not args else 0
    try:
        opt, test_file, model_file, out_file = parse_predict_args(args)
    except UsageError as exc:
        print(f"gpusvm predict: {exc}\n\n{PREDICT_USAGE}", file=sys.stderr)
        return 1
    import numpy as np

    import scipy.sparse as sp

    from .libsvm_io import _build_model, _parse_model

    try:
        parsed = _parse_model(model_file, first_index=0, one_class=True)
        X, y = _read(test_file)
        if parsed["k"] == 1:  # svm-train's model of a single label: that label for every point
            if opt["probability"] and parsed["prob"] is None:
                raise UsageError(f"{model_file}: the model does not support probability estimates (it holds a "
                                 "single class; train with -b 1)")
            pred = np.full(int(X.shape[0]), float(parsed["labels"][0]))
            if opt["probability"]:  # as svm-predict: probability 1 for the one label
                return _write_predictions(out_file, pred, parsed["labels"], np.ones((len(pred), 1)), y, opt)
            return _write_predictions(out_file, pred, None, None, y, opt)
        # as wide as the wider of the two: features the SVs never use still enter the gram (||x||^2)
        d = max(parsed["width"], int(X.shape[1]), 1)
        if X.shape[1] < d:
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
        model = _build_model(parsed, d, opt["device"], sparse=True)
        if opt["probability"] and not model.probability:
            raise UsageError(f"{model_file}: the model does not support probability estimates (train with -b 1)")
        n = int(X.shape[0])  # 0 (an empty test file): an empty output, as svm-predict's
        if opt["probability"]:
            # LIBSVM's -b 1 output: the model file's label order; the label of the largest probability
            labels = np.asarray(parsed["labels"])
            col = np.searchsorted(model.classes_, labels)
            proba = np.asarray(model.predict_proba(X))[:, col] if n else np.empty((0, len(labels)))
            pred = labels[np.argmax(proba, axis=1)]
        else:
            pred = np.asarray(model.predict(X)) if n else np.empty(0)
            if model.probability and not opt["quiet"]:
                print("Model supports probability estimates, but disabled in prediction.")
    except (OSError, ValueError, RuntimeError, UsageError) as exc:
        print(f"gpusvm predict: {exc}", file=sys.stderr)
        return 1
    return _write_predictions(out_file, pred, labels if opt["probability"] else None,
                              proba if opt["probability"] else None, y, opt)


def _write_predictions(out_file, pred, labels, proba, y, opt):
    """svm-predict's output file (with ``labels``: its -b 1 layout) and accuracy line; the exit code."""
    import numpy as np

    try:
        with open(out_file, "w", encoding="ascii") as fh:
            if labels is not None:
                fh.write("labels " + " ".join(str(int(v)) for v in labels) + "\n")
                fh.write("".join(_label_text(p) + "".join(f" {q:g}" for q in row) + "\n"
                                 for p, row in zip(pred, proba)))
            else:
                fh.write("".join(_label_text(p) + "\n" for p in pred))
    except OSError as exc:
        print(f"gpusvm predict: can't open output file {out_file}: {exc}", file=sys.stderr)
        return 1
    if not opt["quiet"]:
        correct = int(np.count_nonzero(pred == y))
        print(f"Accuracy = {100.0 * correct / max(len(y), 1):g}% ({correct}/{len(y)}) (classification)")
    return 0
