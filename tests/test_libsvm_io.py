"""LIBSVM model files and the svm-train / svm-predict compatible commands.

Round trips through our own writer and reader run everywhere; the checks against LIBSVM itself (its
official Python bindings, ``pip install libsvm-official``) skip with a reason when it is not installed.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_iris, make_classification
from sklearn.svm import SVC as SkSVC

from gpusvm import SVC, load_libsvm_model, save_libsvm_model
from gpusvm.__main__ import main


def _libsvm():
    try:
        from libsvm import svmutil
    except ImportError as exc:  # pragma: no cover - depends on the environment
        pytest.skip(f"LIBSVM's Python bindings are not installed (pip install libsvm-official): {exc}")
    return svmutil


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y.astype(np.int64)


@pytest.mark.parametrize("kernel,kw", [("rbf", dict(gamma=0.5)), ("linear", {}),
                                       ("poly", dict(gamma=0.3, degree=2, coef0=1.0)),
                                       ("sigmoid", dict(gamma=0.01, coef0=-0.5))])
def test_round_trip_gives_back_the_same_model(tmp_path, iris, kernel, kw):
    X, y = iris
    est = SVC(C=3.0, kernel=kernel, device="cpu", **kw).fit(X, y)
    path = tmp_path / "iris.model"
    save_libsvm_model(est, path)
    back = load_libsvm_model(path)
    np.testing.assert_array_equal(back.classes_, est.classes_)
    np.testing.assert_array_equal(back.n_support_, est.n_support_)
    np.testing.assert_array_equal(back.support_vectors_, est.support_vectors_)
    np.testing.assert_array_equal(back.dual_coef_, est.dual_coef_)  # bit for bit
    np.testing.assert_array_equal(back.intercept_, est.intercept_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_allclose(back.decision_function(X), est.decision_function(X), rtol=1e-12, atol=1e-12)
    assert back.kernel == kernel and back.n_features_in_ == X.shape[1]
    assert np.all(back.support_ == -1) and np.isnan(back.objective_).all()


def test_round_trip_of_a_sparse_binary_fit(tmp_path):
    X, y = make_classification(300, 40, random_state=1)
    X[np.abs(X) < 1.0] = 0.0
    Xs = sp.csr_matrix(X)
    est = SVC(C=10.0, gamma=0.05, device="cpu").fit(Xs, y)
    save_libsvm_model(est, tmp_path / "m")
    back = load_libsvm_model(tmp_path / "m")
    np.testing.assert_array_equal(back.support_vectors_, est.support_vectors_.toarray())
    np.testing.assert_array_equal(back.dual_coef_, est.dual_coef_.toarray())
    np.testing.assert_allclose(back.decision_function(Xs), est.decision_function(Xs), rtol=1e-12, atol=1e-12)
    # the model matches scikit-learn's LIBSVM, so the file is LIBSVM's model for this data
    sk = SkSVC(C=10.0, gamma=0.05).fit(Xs, y)
    np.testing.assert_allclose(back.decision_function(X), sk.decision_function(X), rtol=1e-5, atol=1e-5)


def test_loads_labels_in_libsvm_file_order(tmp_path):
    """LIBSVM lists labels as they first appear (binary: often "1 -1"); loading sorts them."""
    sv = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    coef = np.array([0.7, -0.4, -0.3])  # first two labels' pair: +1 side is label 1 (listed first)
    rho = 0.1
    text = ["svm_type c_svc", "kernel_type rbf", "gamma 0.5", "nr_class 2", "total_sv 3", f"rho {rho}",
            "label 1 -1", "nr_sv 1 2", "SV"]
    text += [f"{c} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row) if v != 0) for c, row in zip(coef, sv)]
    (tmp_path / "m").write_text("\n".join(text) + "\n")
    m = load_libsvm_model(tmp_path / "m")
    X = np.random.default_rng(0).normal(size=(50, 2))
    K = np.exp(-0.5 * ((X[:, None, :] - sv[None, :, :]) ** 2).sum(-1))
    libsvm_dec = K @ coef - rho  # > 0 means label 1, the file's first label
    np.testing.assert_array_equal(m.classes_, [-1, 1])
    np.testing.assert_allclose(m.decision_function(X), libsvm_dec, rtol=1e-12, atol=1e-12)  # > 0: classes_[1] = 1
    np.testing.assert_array_equal(m.predict(X), np.where(libsvm_dec > 0, 1, -1))
    np.testing.assert_array_equal(m.n_support_, [2, 1])  # grouped by sorted class: the two -1 SVs first
    np.testing.assert_array_equal(m.support_vectors_, sv[[1, 2, 0]])


def test_n_features_pads_the_support_vectors(tmp_path, iris):
    X, y = iris
    est = SVC(C=1.0, gamma=0.5, device="cpu").fit(X[:, :3], y)
    save_libsvm_model(est, tmp_path / "m")
    wide = load_libsvm_model(tmp_path / "m", n_features=5)
    assert wide.n_features_in_ == 5
    Xw = np.hstack([X[:, :3], np.zeros((len(X), 2))])
    np.testing.assert_allclose(wide.decision_function(Xw), est.decision_function(X[:, :3]), rtol=1e-12)
    with pytest.raises(ValueError, match="smaller than the largest feature index"):
        load_libsvm_model(tmp_path / "m", n_features=2)


def test_bad_models_and_files_raise_clear_errors(tmp_path, iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    est = SVC(device="cpu").fit(X, names)
    with pytest.raises(ValueError, match="integer class labels"):
        save_libsvm_model(est, tmp_path / "m")
    with pytest.raises(TypeError, match="gpusvm.SVC"):
        save_libsvm_model(SkSVC().fit(X, y), tmp_path / "m")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        save_libsvm_model(SVC(), tmp_path / "m")
    good = SVC(device="cpu").fit(X, y)
    save_libsvm_model(good, tmp_path / "good")
    lines = (tmp_path / "good").read_text().splitlines()
    for bad, match in [(["svm_type nu_svc"] + lines[1:], "C-SVC"),
                       ([lines[0], "kernel_type precomputed"] + lines[2:], "precomputed"),
                       ([ln for ln in lines if ln != "SV"], "no 'SV' line"),
                       (lines[:-1], "total_sv"),
                       ([ln if not ln.startswith("rho") else "rho 0.1" for ln in lines], "rho values"),
                       (lines[:5] + ["probA -1", "probB 0"] + lines[5:], "probA and probB values"),
                       (lines[:5] + ["probA -1 x -1", "probB 0 0 0"] + lines[5:], "probA / probB")]:
        (tmp_path / "bad").write_text("\n".join(bad) + "\n")
        with pytest.raises(ValueError, match=match):
            load_libsvm_model(tmp_path / "bad")


def test_models_interchange_with_libsvm(tmp_path):
    """Our file predicts the same in LIBSVM; LIBSVM's file (labels in first-appearance order, 3 classes)
    predicts the same in gpusvm."""
    svm = _libsvm()
    X, y = make_classification(400, 8, n_informative=5, n_classes=3, random_state=3)
    y = np.array([7, 2, 5])[y]
    X_tr, y_tr, X_te = X[:300], y[:300], X[300:]
    data = tmp_path / "train"
    dump_svmlight_file(X_tr, y_tr, str(data), zero_based=False)
    yy, xx = svm.svm_read_problem(str(data))
    lib = svm.svm_train(yy, xx, "-c 4 -g 0.2 -q")
    svm.svm_save_model(str(tmp_path / "lib.model"), lib)
    # LIBSVM 3.3x lists these labels sorted; files in first-appearance order (older versions, and
    # "label 1 -1" binary models) are covered by test_loads_labels_in_libsvm_file_order
    xt = [{j + 1: float(v) for j, v in enumerate(r)} for r in X_te]
    lib_pred, _, _ = svm.svm_predict([0] * len(xt), xt, lib, "-q")
    ours = load_libsvm_model(tmp_path / "lib.model")
    np.testing.assert_array_equal(ours.predict(X_te), lib_pred)

    est = SVC(C=4.0, gamma=0.2, device="cpu").fit(X_tr, y_tr)
    save_libsvm_model(est, tmp_path / "ours.model")
    back = svm.svm_load_model(str(tmp_path / "ours.model"))
    pred, _, dec = svm.svm_predict([0] * len(xt), xt, back, "-q")
    np.testing.assert_array_equal(est.predict(X_te), pred)
    ovo = SVC(C=4.0, gamma=0.2, device="cpu", decision_function_shape="ovo").fit(X_tr, y_tr)
    np.testing.assert_allclose(ovo.decision_function(X_te), np.asarray(dec), rtol=1e-9, atol=1e-9)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_probability_models_round_trip_and_interchange_with_libsvm(tmp_path):
    """probA/probB: our file loads in LIBSVM with the same -b 1 probabilities; LIBSVM's -b 1 file (3
    classes, and a binary one whose labels are listed "1 -1", i.e. flipped against our sorted order)
    loads here with LIBSVM's probabilities."""
    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=4)
    y = np.array([3, 1, 2])[y]
    est = SVC(C=2.0, gamma=0.3, probability=True, device="cpu", random_state=0).fit(X, y)
    save_libsvm_model(est, tmp_path / "m")
    text = (tmp_path / "m").read_text()
    assert "\nprobA " in text and "\nprobB " in text
    back = load_libsvm_model(tmp_path / "m")
    assert back.probability
    np.testing.assert_array_equal(back.probA_, est.probA_)
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    plain = SVC(C=2.0, gamma=0.3, device="cpu").fit(X, y)
    save_libsvm_model(plain, tmp_path / "plain")
    assert "probA" not in (tmp_path / "plain").read_text()
    assert not hasattr(load_libsvm_model(tmp_path / "plain"), "predict_proba")
    svm = _libsvm()
    xx = [{j + 1: float(v) for j, v in enumerate(r)} for r in X]
    lib = svm.svm_load_model(str(tmp_path / "m"))
    _, _, prob = svm.svm_predict([0] * len(xx), xx, lib, "-b 1 -q")
    order = np.searchsorted(est.classes_, lib.get_labels())
    np.testing.assert_allclose(np.asarray(prob), est.predict_proba(X)[:, order], rtol=0, atol=1e-9)
    for labels in ([1, -1], None):  # binary in first-appearance order "1 -1", and the 3-class problem
        yy = np.where(y == 1, 1, -1) if labels else y
        if labels:
            first = int(np.flatnonzero(yy == 1)[0])  # put a +1 first so that LIBSVM lists "label 1 -1"
            idx = np.r_[first, np.delete(np.arange(len(yy)), first)]
            Xs, ys = X[idx], yy[idx]
        else:
            Xs, ys = X, yy
        m = svm.svm_train(ys.tolist(), [{j + 1: float(v) for j, v in enumerate(r)} for r in Xs], "-c 2 -g 0.3 -b 1 -q")
        svm.svm_save_model(str(tmp_path / "lib.model"), m)
        if labels:
            assert "label 1 -1" in (tmp_path / "lib.model").read_text()
        m = svm.svm_load_model(str(tmp_path / "lib.model"))  # as saved (LIBSVM writes features with %.8g)
        _, _, p_lib = svm.svm_predict([0] * len(xx), xx, m, "-b 1 -q")
        ours = load_libsvm_model(tmp_path / "lib.model")
        col = np.searchsorted(ours.classes_, m.get_labels())
        np.testing.assert_allclose(ours.predict_proba(X)[:, col], np.asarray(p_lib), rtol=0, atol=1e-9)


# ---- the commands ------------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    X, y = make_classification(240, 6, random_state=5)
    y = np.where(y == 1, 1, -1)
    dump_svmlight_file(X[:180], y[:180], str(tmp_path / "tr"), zero_based=False)
    dump_svmlight_file(X[180:], y[180:], str(tmp_path / "te"), zero_based=False)
    return tmp_path, X, y


def test_train_and_predict_commands(files, capsys):
    d, X, y = files
    assert main(["train", "-c", "2", "-g", "0.3", "-e", "0.0001", "-w-1", "2", str(d / "tr"), str(d / "m")]) == 0
    out = capsys.readouterr().out
    assert "nSV = " in out and "model written" in out
    ref = SVC(C=2.0, gamma=0.3, tol=1e-4, class_weight={-1: 2.0}, device="cpu").fit(X[:180], y[:180])
    assert main(["predict", str(d / "te"), str(d / "m"), str(d / "out")]) == 0
    pred = np.array([int(v) for v in (d / "out").read_text().split()])
    np.testing.assert_array_equal(pred, ref.predict(X[180:]))
    acc = 100.0 * np.mean(pred == y[180:])
    assert f"Accuracy = {acc:g}%" in capsys.readouterr().out
    # default model name: the training file's name + .model, in the current folder
    import os

    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["train", "-q", "-t", "0", "tr"]) == 0
    finally:
        os.chdir(cwd)
    assert "kernel_type linear" in (d / "tr.model").read_text()


def test_train_and_predict_commands_with_probability_estimates(files, capsys):
    d, X, y = files
    assert main(["train", "-q", "-b", "1", "-g", "0.3", str(d / "tr"), str(d / "m")]) == 0
    assert "probA " in (d / "m").read_text()
    ref = SVC(C=1.0, gamma=0.3, probability=True, random_state=0, device="cpu").fit(X[:180], y[:180])
    assert main(["predict", "-b", "1", str(d / "te"), str(d / "m"), str(d / "out")]) == 0
    lines = (d / "out").read_text().splitlines()
    labels = [int(v) for v in lines[0].split()[1:]]
    assert lines[0].startswith("labels ") and sorted(labels) == [-1, 1]
    rows = np.array([[float(v) for v in ln.split()] for ln in lines[1:]])
    proba = ref.predict_proba(X[180:])[:, np.searchsorted(ref.classes_, labels)]
    np.testing.assert_allclose(rows[:, 1:], proba, rtol=1e-5, atol=1e-6)  # %g: 6 digits
    np.testing.assert_array_equal(rows[:, 0], np.asarray(labels)[proba.argmax(axis=1)])
    capsys.readouterr()
    # -b 0 on a probability model: LIBSVM's note, plain labels
    assert main(["predict", str(d / "te"), str(d / "m"), str(d / "out")]) == 0
    assert "Model supports probability estimates, but disabled in prediction." in capsys.readouterr().out
    # -b 1 on a model without probabilities: a clear error
    assert main(["train", "-q", "-g", "0.3", str(d / "tr"), str(d / "plain")]) == 0
    assert main(["predict", "-b", "1", str(d / "te"), str(d / "plain"), str(d / "out")]) == 1
    assert "does not support probability estimates" in capsys.readouterr().err


def test_predict_command_with_a_test_file_of_another_width(files):
    """Narrower test file: read as the model's width; wider: the extra features enter the RBF gram
    through ||x||^2, as in LIBSVM."""
    d, X, y = files
    assert main(["train", "-q", "-g", "0.3", str(d / "tr"), str(d / "m")]) == 0
    ref = SVC(C=1.0, gamma=0.3, device="cpu").fit(X[:180], y[:180])
    narrow = X[180:].copy()
    narrow[:, -1] = 0.0  # no test row uses the last feature: the file's highest index is 5
    wide = np.hstack([X[180:], np.full((60, 1), 0.7)])
    padded = SVC(C=1.0, gamma=0.3, device="cpu").fit(np.hstack([X[:180], np.zeros((180, 1))]), y[:180])
    for name, Xt, expect in [("narrow", narrow, ref.predict(narrow)), ("wide", wide, padded.predict(wide))]:
        dump_svmlight_file(Xt, y[180:], str(d / name), zero_based=False)
        assert main(["predict", "-q", str(d / name), str(d / "m"), str(d / "out")]) == 0
        pred = np.array([int(v) for v in (d / "out").read_text().split()])
        np.testing.assert_array_equal(pred, expect, err_msg=name)


def test_train_cross_validation(files, capsys):
    d, _, _ = files
    assert main(["train", "-v", "3", "-g", "0.3", str(d / "tr")]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("Cross Validation Accuracy = ")
    assert 60.0 < float(line.split("=")[1].rstrip("%")) <= 100.0
    assert not (d / "tr.model").exists()


@pytest.mark.parametrize("args,match", [(["-s", "1"], "C-SVC only"), (["-t", "4"], "precomputed"),
                                        (["-b", "2"], "probability_estimates is 0 or 1"), (["-x", "1"], "unknown option"),
                                        (["-c", "abc"], "not a valid number"),
                                        (["-c", "-1"], "'C' parameter"),
                                        (["--deduplicate", "yes"], "--deduplicate yes: auto, 0 or 1")])
def test_train_rejects_bad_options(files, capsys, args, match):
    d, _, _ = files
    assert main(["train", *args, str(d / "tr"), str(d / "m")]) == 1
    assert match in capsys.readouterr().err


def test_train_deduplicate_option(tmp_path, capsys):
    """--deduplicate 1 merges repeated points (fewer SVs in the file, the same predictions as the plain
    fit); 0 solves with every copy; auto merges here (80 distinct points of 240)."""
    X, y = make_classification(80, 4, random_state=1)
    y = np.where(y == 1, 1, -1)
    X3, y3 = np.vstack([X, X, X]), np.concatenate([y, y, y])
    dump_svmlight_file(X3, y3, str(tmp_path / "tr"), zero_based=False)
    nsv = {}
    for mode in ("0", "1", "auto"):
        assert main(["train", "-q", "-e", "1e-6", "-g", "0.5", "--deduplicate", mode, str(tmp_path / "tr"),
                     str(tmp_path / f"m{mode}")]) == 0
        text = (tmp_path / f"m{mode}").read_text()
        nsv[mode] = int(text.split("total_sv ")[1].split()[0])
        assert main(["predict", "-q", str(tmp_path / "tr"), str(tmp_path / f"m{mode}"), str(tmp_path / "o")]) == 0
        pred = np.array([int(v) for v in (tmp_path / "o").read_text().split()])
        ref = SVC(C=1.0, gamma=0.5, tol=1e-6, device="cpu", deduplicate=False).fit(X3, y3)
        assert np.mean(pred == ref.predict(X3)) == 1.0
    assert nsv["1"] == nsv["auto"] < nsv["0"]


def test_train_shrinking_option_reaches_the_solver(files, monkeypatch):
    """-h 0 / -h 1 set SVC(shrinking=...), as LIBSVM's svm-train; a bad value is a usage error."""
    import gpusvm.svc as svc_mod

    d, _, _ = files
    seen = []
    real_fit = svc_mod.SVC.fit
    monkeypatch.setattr(svc_mod.SVC, "fit", lambda self, *a, **k: seen.append(self.shrinking) or real_fit(self, *a, **k))
    for flag in ("0", "1"):
        assert main(["train", "-q", "-h", flag, str(d / "tr"), str(d / "m")]) == 0
    assert main(["train", "-q", str(d / "tr"), str(d / "m")]) == 0
    assert seen == [False, True, True]
    assert main(["train", "-q", "-h", "2", str(d / "tr"), str(d / "m")]) == 1


def test_option_without_value():
    from gpusvm._cli_libsvm import UsageError, parse_train_args

    with pytest.raises(UsageError, match="option -c needs a value"):
        parse_train_args(["-c"])


def test_commands_report_missing_files(files, capsys):
    d, _, _ = files
    assert main(["train", str(d / "nope")]) == 1
    assert "can't read" in capsys.readouterr().err
    assert main(["predict", str(d / "te"), str(d / "nope"), str(d / "out")]) == 1
    assert "nope" in capsys.readouterr().err
    assert main(["predict", str(d / "te")]) == 1
    assert "expected test_file model_file output_file" in capsys.readouterr().err
