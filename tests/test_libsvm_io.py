"""LIBSVM model files and the svm-train / svm-predict compatible commands.

Round trips through our own writer and reader run everywhere; the checks against LIBSVM itself (its
official Python bindings, ``pip install libsvm-official``) skip with a reason when it is not installed.
"""

import copy

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


def test_sparse_loading_keeps_csr_support_vectors(tmp_path):
    """load_libsvm_model(sparse=True): the support vectors as a csr_matrix of the file's nonzeros (no
    n_SV x n_features dense copy), predicting as the dense load and saving the same file."""
    X, y = make_classification(300, 40, n_informative=6, n_classes=3, random_state=2)
    X[np.abs(X) < 1.0] = 0.0
    est = SVC(C=10.0, gamma=0.05, device="cpu").fit(sp.csr_matrix(X), y)
    save_libsvm_model(est, tmp_path / "m")
    dense = load_libsvm_model(tmp_path / "m", n_features=60)
    csr = load_libsvm_model(tmp_path / "m", n_features=60, sparse=True)
    assert sp.isspmatrix_csr(csr.support_vectors_) and csr.support_vectors_.shape == (est.n_support_.sum(), 60)
    assert csr.support_vectors_.nnz == est.support_vectors_.nnz
    np.testing.assert_array_equal(csr.support_vectors_.toarray(), dense.support_vectors_)
    Xw = sp.csr_matrix(np.hstack([X, np.zeros((300, 20))]))
    np.testing.assert_array_equal(csr.predict(Xw), dense.predict(Xw))
    np.testing.assert_allclose(csr.decision_function(Xw), dense.decision_function(Xw), rtol=1e-12, atol=1e-12)
    save_libsvm_model(csr, tmp_path / "again")
    assert (tmp_path / "again").read_bytes() == (tmp_path / "m").read_bytes()
    with pytest.raises(ValueError, match="'sparse' parameter"):
        load_libsvm_model(tmp_path / "m", sparse="auto")


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
                       ([ln if not ln.startswith("nr_class") else "nr_class 0" for ln in lines], "at least one class"),
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
    # probability switched off after the fit (scikit-learn's default string too): predict_proba is hidden,
    # and the file has no sigmoids either
    for off in (False, "deprecated"):
        save_libsvm_model(copy.deepcopy(est).set_params(probability=off), tmp_path / "off")
        assert "probA" not in (tmp_path / "off").read_text()
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
    assert out.endswith(f"\nTotal nSV = {ref.support_.shape[0]}\n")  # svm-train's last line
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


# ---- LIBSVM's label order, ties, and svm-train's option rules ---------------------------------------
def test_vote_ties_go_to_the_label_listed_first_in_the_file(tmp_path):
    """Three equal votes: LIBSVM's svm-predict picks the first label of the file ("3"), as we now do; the
    order survives a save, and a model fitted in Python keeps scikit-learn's rule (lowest class)."""
    text = ("svm_type c_svc\nkernel_type linear\nnr_class 3\ntotal_sv 3\nrho -1 1 -1\nlabel 3 2 1\nnr_sv 1 1 1\n"
            "SV\n0 0 1:1\n0 0 1:1\n0 0 1:1\n")
    (tmp_path / "tie.m").write_text(text)
    m = load_libsvm_model(tmp_path / "tie.m")
    np.testing.assert_array_equal(m.classes_, [1, 2, 3])
    assert m.predict(np.array([[0.5]]))[0] == 3
    save_libsvm_model(m, tmp_path / "again.m")
    assert "label 3 2 1" in (tmp_path / "again.m").read_text()
    again = load_libsvm_model(tmp_path / "again.m")
    assert again.predict(np.array([[0.5]]))[0] == 3
    X = np.random.default_rng(3).normal(size=(20, 1))
    np.testing.assert_allclose(again.decision_function(X), m.decision_function(X), rtol=0, atol=1e-15)
    # the same pairs in sorted order, as a Python fit would hold them: the tie goes to class 1
    m.__dict__.pop("_label_order")
    assert m.predict(np.array([[0.5]]))[0] == 1


@pytest.mark.parametrize("labels,expect", [([1, -1, 1], "1 -1"), ([-1, 1, 1], "1 -1"), ([5, -2, 7], "5 -2 7"),
                                           ([2, 0, 1], "2 0 1")])
def test_train_writes_labels_in_libsvm_order(tmp_path, labels, expect, capsys):
    """svm-train lists labels as they first appear, except that -1/+1 data puts +1 first: scripts read
    the sign of binary decision values and the columns of -b 1 output by that order."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(90, 3))
    y = np.array([labels[i % 3] for i in range(90)])
    X += np.searchsorted(np.unique(y), y)[:, None] * 1.5
    dump_svmlight_file(X, y, str(tmp_path / "tr"), zero_based=False)
    assert main(["train", "-q", "-b", "1", "-g", "0.5", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    assert f"label {expect}\n" in (tmp_path / "m").read_text()
    ref = SVC(C=1.0, gamma=0.5, probability=True, random_state=0, device="cpu").fit(X, y)
    loaded = load_libsvm_model(tmp_path / "m")
    np.testing.assert_allclose(loaded.decision_function(X), ref.decision_function(X), rtol=1e-9, atol=1e-9)
    assert main(["predict", "-b", "1", str(tmp_path / "tr"), str(tmp_path / "m"), str(tmp_path / "o")]) == 0
    out = (tmp_path / "o").read_text().splitlines()
    assert out[0] == f"labels {expect}"
    order = [int(v) for v in expect.split()]
    rows = np.array([[float(v) for v in ln.split()] for ln in out[1:]])
    # (the coupling of more than two classes runs in the file's order, as LIBSVM's, so to its tolerance
    # the probabilities differ from those of the sorted order)
    proba = loaded.predict_proba(X)[:, np.searchsorted(loaded.classes_, order)]
    np.testing.assert_allclose(rows[:, 1:], proba, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(proba, ref.predict_proba(X)[:, np.searchsorted(ref.classes_, order)], atol=5e-3)
    try:
        from libsvm import svmutil
    except ImportError:
        return
    lib = svmutil.svm_train(y.tolist(), [{j + 1: float(v) for j, v in enumerate(r)} for r in X], "-g 0.5 -q")
    svmutil.svm_save_model(str(tmp_path / "lib.m"), lib)
    assert f"label {expect}\n" in (tmp_path / "lib.m").read_text()


def test_libsvm_folds():
    from gpusvm._cli_libsvm import _libsvm_folds

    rng = np.random.default_rng(0)
    y = np.array([0] * 11 + [1] * 3 + [2] * 6)
    fold = _libsvm_folds(y, 4, rng)
    for c in (0, 1, 2):
        sizes = np.bincount(fold[y == c], minlength=4)
        assert sizes.max() - sizes.min() <= 1 and sizes.sum() == np.sum(y == c)
    np.testing.assert_array_equal(np.sort(_libsvm_folds(y, 20, rng)), np.arange(20))  # leave-one-out


def test_train_cross_validation_with_more_folds_than_a_class_or_the_data(tmp_path, capsys):
    """svm-train -v n runs when n exceeds a class's size (LIBSVM's folds simply miss that class) and, with
    a warning, when n exceeds the number of samples (leave-one-out); a training part holding a single
    class predicts it."""
    X = np.array([[0.0], [0.1], [0.2], [1.0], [1.1], [1.2], [5.0]])
    y = np.array([1, 1, 1, 2, 2, 2, 3])
    dump_svmlight_file(X, y, str(tmp_path / "seven"), zero_based=False)
    assert main(["train", "-q", "-v", "5", str(tmp_path / "seven")]) == 0
    assert capsys.readouterr().out.startswith("Cross Validation Accuracy = ")
    assert main(["train", "-q", "-v", "10", "-g", "2", str(tmp_path / "seven")]) == 0
    cap = capsys.readouterr()
    assert "WARNING: # folds (10) > # data (7). Will use # folds = # data instead" in cap.err  # svm-train's words
    # leave-one-out by hand: the class-3 point is never predicted right, the others always
    assert cap.out.strip() == f"Cross Validation Accuracy = {100 * 6 / 7:g}%"


@pytest.mark.parametrize("b", ["0", "1"])
def test_train_cross_validation_with_a_fold_of_every_sample(tmp_path, capsys, b):
    """-v 2 on three points of three classes: LIBSVM's stratified folds put every point in the second
    fold, whose training part is empty. That raised an IndexError (y[train[0]]); those points now count
    as wrong, as LIBSVM's 0% (its model of no class reads a label past its end)."""
    (tmp_path / "three").write_text("1 1:0\n2 1:1\n3 1:2\n")
    assert main(["train", "-q", "-b", b, "-v", "2", str(tmp_path / "three")]) == 0
    assert capsys.readouterr().out.strip() == "Cross Validation Accuracy = 0%"


def test_train_option_values_as_svm_train(files, capsys):
    """-g 0 means 1/num_features, -d is ignored by the other kernels, a negative polynomial degree and
    degree 0 are refused with a message, and labels are cast to integers as LIBSVM does."""
    d, X, y = files
    assert main(["train", "-q", "-g", "0", str(d / "tr"), str(d / "m")]) == 0
    assert f"gamma {1 / 6!r}\n" in (d / "m").read_text()
    for deg in ("0", "-1"):
        assert main(["train", "-q", "-d", deg, str(d / "tr"), str(d / "m")]) == 0
    assert main(["train", "-q", "-t", "1", "-d", "-1", str(d / "tr"), str(d / "m")]) == 1
    assert "degree of polynomial kernel < 0" in capsys.readouterr().err
    assert main(["train", "-q", "-t", "1", "-d", "0", str(d / "tr"), str(d / "m")]) == 1
    assert "degree=0 makes the polynomial gram constant" in capsys.readouterr().err
    dump_svmlight_file(X[:180], np.where(y[:180] > 0, 2.5, 0.0), str(d / "frac"), zero_based=False)
    assert main(["train", "-q", str(d / "frac"), str(d / "m")]) == 0
    assert "truncated to integers" in capsys.readouterr().err
    assert "label 0 2\n" in (d / "m").read_text()


def test_train_cross_validation_scores_against_the_labels_of_the_file(files, capsys):
    """svm-train -v compares the integer labels it predicts with the labels as read: 2.5 and -0.5 are
    never predicted (the classes are 2 and 0), so LIBSVM reports 0%."""
    d, X, y = files
    dump_svmlight_file(X[:60], np.where(y[:60] > 0, 2.5, -0.5), str(d / "frac"), zero_based=False)
    assert main(["train", "-q", "-v", "3", str(d / "frac")]) == 0
    assert capsys.readouterr().out.strip() == "Cross Validation Accuracy = 0%"


def test_train_caps_iterations_as_svm_train(files, monkeypatch, capsys):
    """max(10^7, 100 l) steps per binary problem, l the class pair's size (max_iter=-1 keeps that limit;
    the whole file's size stood in for l), and LIBSVM's warning when a problem reaches it."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    import gpusvm._solvers.smo as smo_mod
    import gpusvm.svc as svc_mod

    d, _, _ = files
    seen, caps = [], []
    real_fit, real_cap = svc_mod.SVC.fit, smo_mod.step_cap

    def fit(self, *a, **k):
        seen.append(self.max_iter)
        warnings.warn("stopped early", ConvergenceWarning)
        return real_fit(self, *a, **k)

    def step_cap(max_iter, n):
        caps.append((n, real_cap(max_iter, n)))
        return caps[-1][1]

    monkeypatch.setattr(svc_mod.SVC, "fit", fit)
    monkeypatch.setattr(smo_mod, "step_cap", step_cap)
    assert main(["train", str(d / "tr"), str(d / "m")]) == 0
    assert seen == [-1]
    assert caps and all(cap == max(10**7, 100 * n) for n, cap in caps)
    caps.clear()
    X3, y3 = load_iris(return_X_y=True)  # three classes of 50: each pair's cap counts its 100 rows
    dump_svmlight_file(X3, y3, str(d / "iris"), zero_based=False)
    assert main(["train", "-q", str(d / "iris"), str(d / "m3")]) == 0
    assert sorted(n for n, _ in caps) == [100, 100, 100]
    assert "WARNING: reaching max number of iterations" in capsys.readouterr().out
    assert main(["train", "-q", str(d / "tr"), str(d / "m")]) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_commands_report_unwritable_paths_and_unusable_devices(files, capsys):
    from gpusvm import gpu_status

    d, _, _ = files
    assert main(["train", "-q", str(d / "tr"), str(d / "no" / "m")]) == 1
    assert "can't save model to file" in capsys.readouterr().err
    assert main(["train", "-q", str(d / "tr"), str(d / "m")]) == 0
    assert main(["predict", str(d / "te"), str(d / "m"), str(d / "no" / "out")]) == 1
    assert "can't open output file" in capsys.readouterr().err
    if not gpu_status()[0]:
        for args in (["train", "--device", "gpu", str(d / "tr"), str(d / "m")],
                     ["predict", "--device", "gpu", str(d / "te"), str(d / "m"), str(d / "out")]):
            assert main(args) == 1
            assert "no GPU is usable" in capsys.readouterr().err


def test_model_headers_with_tabs_and_one_class_models(tmp_path, iris):
    X, y = iris
    save_libsvm_model(SVC(gamma=0.5, device="cpu").fit(X, y), tmp_path / "m")
    text = (tmp_path / "m").read_text()
    (tmp_path / "tabs").write_text("\n".join(ln.replace(" ", "\t", 1) if not ln[0].isdigit() and ln[0] != "-"
                                             else ln for ln in text.splitlines()) + "\n")
    np.testing.assert_allclose(load_libsvm_model(tmp_path / "tabs").decision_function(X),
                               load_libsvm_model(tmp_path / "m").decision_function(X), rtol=0, atol=0)
    (tmp_path / "one").write_text("svm_type c_svc\nkernel_type rbf\ngamma 0.25\nnr_class 1\ntotal_sv 0\nrho\n"
                                  "label 1\nnr_sv 0\nSV\n")
    with pytest.raises(ValueError, match="nr_class 1: LIBSVM writes such a model when its training file holds a "
                                         "single label"):
        load_libsvm_model(tmp_path / "one")


def test_commands_take_feature_index_zero(tmp_path, capsys):
    """scikit-learn's dump_svmlight_file writes 0-based files by default; LIBSVM reads index 0 as one more
    feature, and so do the commands: the model file keeps the data's indices ("0:"), the predictions are
    those of a fit on the same columns, and LIBSVM itself (where installed) reads our model."""
    X, y = make_classification(150, 5, random_state=2)
    y = np.where(y == 1, 1, -1)
    dump_svmlight_file(X, y, str(tmp_path / "zero"))  # zero_based=True: indices 0..4
    assert "0:" in (tmp_path / "zero").read_text()
    assert main(["train", "-q", str(tmp_path / "zero"), str(tmp_path / "m")]) == 0
    text = (tmp_path / "m").read_text()
    assert f"gamma {1 / 4!r}\n" in text  # 1 / (largest index), as svm-train
    assert " 0:" in text
    assert main(["predict", "-q", str(tmp_path / "zero"), str(tmp_path / "m"), str(tmp_path / "o")]) == 0
    pred = np.array([int(v) for v in (tmp_path / "o").read_text().split()])
    np.testing.assert_array_equal(pred, SVC(gamma=0.25, device="cpu").fit(X, y).predict(X))
    # and a 1-based file gives the model it gave before (indices 1.., the gamma of its width)
    dump_svmlight_file(X, y, str(tmp_path / "one"), zero_based=False)
    assert main(["train", "-q", str(tmp_path / "one"), str(tmp_path / "m1")]) == 0
    assert f"gamma {1 / 5!r}\n" in (tmp_path / "m1").read_text()
    assert " 0:" not in (tmp_path / "m1").read_text()
    try:
        from libsvm import svmutil
    except ImportError:
        return
    yl, xl = svmutil.svm_read_problem(str(tmp_path / "zero"))
    lib = svmutil.svm_load_model(str(tmp_path / "m"))
    p_lib, _, _ = svmutil.svm_predict(yl, xl, lib, "-q")
    np.testing.assert_array_equal(np.asarray(p_lib, dtype=int), pred)


def test_load_model_of_a_zero_based_file(tmp_path):
    """load_libsvm_model refused ("feature indices are 1-based; found index 0") what `gpusvm train` writes for
    a 0-based data file (scikit-learn's dump_svmlight_file default); zero_based="auto", as
    load_svmlight_file's, reads such a model 0-based and a file without index 0 1-based as before."""
    from sklearn.datasets import load_svmlight_file

    X, y = make_classification(120, 4, random_state=3)
    y = np.where(y == 1, 1, -1)
    dump_svmlight_file(X, y, str(tmp_path / "zero"))
    assert main(["train", "-q", "-g", "0.5", str(tmp_path / "zero"), str(tmp_path / "m")]) == 0
    Xz, _ = load_svmlight_file(str(tmp_path / "zero"))  # "auto": 0-based here, 4 columns
    ref = SVC(gamma=0.5, device="cpu").fit(X, y)
    for zb in ("auto", True):
        got = load_libsvm_model(tmp_path / "m", zero_based=zb)
        assert got.n_features_in_ == 4
        np.testing.assert_allclose(got.decision_function(Xz.toarray()), ref.decision_function(X), rtol=1e-6,
                                   atol=1e-6)
    with pytest.raises(ValueError, match="feature indices start at 1 here; found index 0"):
        load_libsvm_model(tmp_path / "m", zero_based=False)
    with pytest.raises(ValueError, match="'zero_based' parameter of load_libsvm_model"):
        load_libsvm_model(tmp_path / "m", zero_based="yes")
    # a 1-based model: "auto" and False read it as before; True sees one more (empty) leading column
    save_libsvm_model(ref, tmp_path / "m1")
    for zb in ("auto", False):
        np.testing.assert_allclose(load_libsvm_model(tmp_path / "m1", zero_based=zb).decision_function(X),
                                   ref.decision_function(X), rtol=1e-6, atol=1e-6)
    shifted = load_libsvm_model(tmp_path / "m1", zero_based=True)
    assert shifted.n_features_in_ == 5
    np.testing.assert_allclose(shifted.decision_function(np.hstack([np.zeros((120, 1)), X])),
                               ref.decision_function(X), rtol=1e-6, atol=1e-6)


def test_commands_on_a_single_class_as_svm_train(tmp_path, capsys):
    """svm-train writes a model of one label for a training file of one label (no support vectors) and
    svm-predict predicts that label everywhere; so do the commands (our file is svm-train 3.24's to the
    byte); -b 1 on it is refused with a message (it was not trained with -b 1)."""
    (tmp_path / "one").write_text("3 1:0.5 2:1\n3 1:0.2\n3 2:0.7\n")
    assert main(["train", str(tmp_path / "one"), str(tmp_path / "m")]) == 0
    assert "WARNING: training data in only one class" in capsys.readouterr().out
    assert (tmp_path / "m").read_text() == ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 1\ntotal_sv 0\n"
                                           "rho\nlabel 3\nnr_sv 0\nSV\n")
    (tmp_path / "te").write_text("3 1:1\n-1 2:5 4:1\n")
    assert main(["predict", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 0
    assert (tmp_path / "o").read_text() == "3\n3\n"
    assert "Accuracy = 50% (1/2)" in capsys.readouterr().out
    assert main(["predict", "-b", "1", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
    assert "does not support probability estimates" in capsys.readouterr().err
    assert main(["train", "-v", "2", str(tmp_path / "one")]) == 0
    assert "Cross Validation Accuracy = 100%" in capsys.readouterr().out


def test_single_class_probability_model_as_svm_train(tmp_path, capsys):
    """svm-train -b 1 on a file of one label writes empty probA / probB lines, and svm-predict -b 1 on that
    model gives probability 1 for the label; ours did not write them, so svm-predict -b 1 refused our
    model, and our predict -b 1 refused svm-train's."""
    (tmp_path / "one").write_text("3 1:0.5 2:1\n3 1:0.2\n3 2:0.7\n")
    assert main(["train", "-q", "-b", "1", str(tmp_path / "one"), str(tmp_path / "m")]) == 0
    assert (tmp_path / "m").read_text() == ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 1\ntotal_sv 0\n"
                                           "rho\nlabel 3\nprobA\nprobB\nnr_sv 0\nSV\n")  # svm-train 3.24's
    (tmp_path / "te").write_text("3 1:1\n-1 2:5 4:1\n")
    assert main(["predict", "-b", "1", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 0
    assert (tmp_path / "o").read_text() == "labels 3\n3 1\n3 1\n"
    assert "Accuracy = 50% (1/2)" in capsys.readouterr().out


def test_predict_command_on_an_empty_test_file(files, capsys):
    """svm-predict on an empty test file writes an empty output file (with -b 1 only the labels line) and
    exits 0; ours failed ("'X' is empty"), breaking a script that predicts chunks of a file."""
    d, _, _ = files
    assert main(["train", "-q", "-b", "1", "-g", "0.3", str(d / "tr"), str(d / "m")]) == 0
    (d / "empty").write_text("")
    assert main(["predict", "-q", str(d / "empty"), str(d / "m"), str(d / "out")]) == 0
    assert (d / "out").read_text() == ""
    assert main(["predict", "-q", "-b", "1", str(d / "empty"), str(d / "m"), str(d / "out")]) == 0
    labels = (d / "m").read_text().split("\nlabel ")[1].split("\n")[0]
    assert (d / "out").read_text() == f"labels {labels}\n"


def test_train_repeated_weight_options_multiply_as_svm_train(files):
    """svm-train multiplies the C of a class by every -wi given for it (-w1 2 -w1 3 trains as -w1 6); ours
    kept the last one (-w1 3)."""
    d, _, _ = files
    assert main(["train", "-q", "-w1", "2", "-w1", "3", str(d / "tr"), str(d / "m23")]) == 0
    assert main(["train", "-q", "-w1", "6", str(d / "tr"), str(d / "m6")]) == 0
    assert (d / "m23").read_text() == (d / "m6").read_text()


def test_train_linear_kernel_ignores_gamma_as_svm_train(files):
    """svm-train accepts any -g with -t 0 (gamma is not used, and LIBSVM checks gamma < 0 only for the
    other kernels): the same model as without -g."""
    d, _, _ = files
    assert main(["train", "-q", "-t", "0", "-g", "-1", str(d / "tr"), str(d / "lin_g")]) == 0
    assert main(["train", "-q", "-t", "0", str(d / "tr"), str(d / "lin")]) == 0
    assert (d / "lin_g").read_text() == (d / "lin").read_text()


def test_train_weight_labels_read_as_svm_train_reads_them(files, capsys):
    """svm-train reads the label of -wi with atoi: -w1.5 weighs class 1 (no 'not found' warning)."""
    d, _, _ = files
    assert main(["train", "-q", "-w1.5", "4", str(d / "tr"), str(d / "m15")]) == 0
    assert "not found" not in capsys.readouterr().err
    assert main(["train", "-q", "-w1", "4", str(d / "tr"), str(d / "m1")]) == 0
    assert (d / "m15").read_text() == (d / "m1").read_text()


def test_predict_command_keeps_support_vectors_sparse(tmp_path, monkeypatch, capsys):
    """gpusvm predict builds the model with CSR support vectors, as svm-predict keeps them sparse: dense ones
    took n_SV x the largest feature index doubles (6 GB for 400 SVs of a 10^6-feature text model)."""
    import gpusvm.libsvm_io as io

    (tmp_path / "tr").write_text("".join(f"{1 if i % 2 else -1} {i % 2 + 1}:1 {3_000_000 - i}:0.5\n"
                                         for i in range(20)))
    assert main(["train", "-q", "-t", "0", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    built = []
    real = io._build_model
    monkeypatch.setattr(io, "_build_model", lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    assert main(["predict", str(tmp_path / "tr"), str(tmp_path / "m"), str(tmp_path / "out")]) == 0
    assert "Accuracy = 100% (20/20)" in capsys.readouterr().out
    assert sp.issparse(built[0].support_vectors_) and built[0].support_vectors_.shape[1] == 3_000_001


@pytest.mark.parametrize("text,line", [("1 1:0.5\n-1 1:0.3 2:abc\n", 2), ("1 1:0.5\n\n1 1:1 # note\nx 1:0.3\n", 4),
                                       ("1 1:0.5\n-1 2:0.3 1:0.2\n", 2), ("1 1:0.5\n-1 0.3\n", 2),
                                       ("1 1:0.5\n-1 1:0.1\n-1 1.5:0.3\n", 3)])
def test_commands_name_the_malformed_line(tmp_path, capsys, text, line):
    """svm-train / svm-predict say "Wrong input format at line N"; ours gave only the parser's message
    ("could not convert string to float: b'abc'"), leaving the user to search a large file for it."""
    import lzma

    (tmp_path / "bad").write_text(text)
    (tmp_path / "bad.xz").write_bytes(lzma.compress(text.encode()))
    (tmp_path / "tr").write_text("1 1:0.5\n-1 1:-0.5\n")
    assert main(["train", "-q", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    for f in ("bad", "bad.xz"):
        assert main(["train", str(tmp_path / f), str(tmp_path / "m2")]) == 1
        assert f"can't read {tmp_path / f}: wrong input format at line {line} (" in capsys.readouterr().err
        assert main(["predict", str(tmp_path / f), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
        assert f"wrong input format at line {line} (" in capsys.readouterr().err


def test_commands_report_corrupt_compressed_files_and_huge_indices(tmp_path, capsys):
    """A cut-off .gz / .xz (EOFError), a .xz that is not one (LZMAError) and a feature index past the reader's
    int32 (OverflowError) ended the commands with a traceback; svm-train / svm-predict print a message."""
    import gzip
    import lzma

    text = b"1 1:0.5\n-1 1:-0.5\n"
    (tmp_path / "tr").write_bytes(text)
    assert main(["train", "-q", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    (tmp_path / "cut.xz").write_bytes(lzma.compress(text)[:30])
    (tmp_path / "cut.gz").write_bytes(gzip.compress(text)[:20])
    (tmp_path / "not.xz").write_bytes(text)
    for name, match in [("cut.xz", "Compressed file ended"), ("cut.gz", "Compressed file ended"),
                        ("not.xz", "can't read")]:
        assert main(["train", str(tmp_path / name), str(tmp_path / "m2")]) == 1
        assert match in capsys.readouterr().err
        assert main(["predict", str(tmp_path / name), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
        assert match in capsys.readouterr().err
    (tmp_path / "big").write_text("1 1:0.5\n-1 3000000000:1\n")
    assert main(["train", str(tmp_path / "big"), str(tmp_path / "m2")]) == 1
    assert "wrong input format at line 2 (" in capsys.readouterr().err


@pytest.mark.parametrize("body, match", [
    # 'nr_sv 3 -1 2' sums to total_sv 4 and passed, giving a model of n_support_ [3, -1, 2] and garbage
    # decision values, silently
    ("gamma 0.5\nnr_class 3\ntotal_sv 4\nrho 0.1 -0.2 0.3\nlabel 1 2 3\nnr_sv 3 -1 2\nSV\n0.5 0.2 1:1 2:0.5\n"
     "-0.5 0.1 1:0.3\n-0.2 0.4 2:1\n-0.1 -0.6 1:-1 3:2\n", "negative support vector count in 'nr_sv 3 -1 2'"),
    # '1:1 1:0.5' on a support vector line loaded silently, and differently by the two readers: the dense
    # model of load_libsvm_model kept the last value (0.5), the sparse one of gpusvm predict their sum (1.5)
    ("gamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.1\nlabel 1 -1\nnr_sv 1 1\nSV\n0.5 1:0.2\n-0.5 1:1 2:0.3 1:0.5\n",
     "support vector line 2 repeats feature index 1"),
], ids=["negative-nr_sv", "repeated-index"])
def test_inconsistent_support_vectors_are_refused(tmp_path, capsys, body, match):
    """Model files that loaded silently into wrong models are refused by the API and the predict command."""
    (tmp_path / "m").write_text("svm_type c_svc\nkernel_type rbf\n" + body)
    with pytest.raises(ValueError, match=match):
        load_libsvm_model(tmp_path / "m")
    (tmp_path / "te").write_text("1 1:0.5\n")
    assert main(["predict", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
    assert match in capsys.readouterr().err


def test_a_pair_value_of_zero_votes_as_in_libsvm(tmp_path, capsys):
    """svm-predict votes ``dec > 0`` for the first label of a pair in the file's order, else for the second;
    our vote ran in sorted order, so a value of exactly 0 in a pair whose order flips went to the other
    class ("label 1 -1": svm-predict says -1, we said 1; "label 3 1 2", all values 0: 2, we said 3)."""
    sv = "SV\n1 1:1\n-1 1:1\n"
    for labels, expect in [("1 -1", -1), ("-1 1", 1), ("2 5", 5), ("5 2", 2)]:
        (tmp_path / "m").write_text(f"svm_type c_svc\nkernel_type linear\nnr_class 2\ntotal_sv 2\nrho 0\n"
                                    f"label {labels}\nnr_sv 1 1\n{sv}")
        assert load_libsvm_model(tmp_path / "m").predict(np.array([[0.3]]))[0] == expect, labels
    (tmp_path / "m3").write_text("svm_type c_svc\nkernel_type linear\nnr_class 3\ntotal_sv 3\nrho 0 0 0\n"
                                 "label 3 1 2\nnr_sv 1 1 1\nSV\n0 0 1:1\n0 0 1:1\n0 0 1:1\n")
    m = load_libsvm_model(tmp_path / "m3")
    assert m.predict(np.array([[0.3]]))[0] == 2
    (tmp_path / "te").write_text("2 1:0.3\n")
    assert main(["predict", "-q", str(tmp_path / "te"), str(tmp_path / "m3"), str(tmp_path / "o")]) == 0
    assert (tmp_path / "o").read_text() == "2\n"
    m.__dict__.pop("_label_order")  # sorted order, as a Python fit: 0 in pair (a, b) votes for b, 3 wins
    assert m.predict(np.array([[0.3]]))[0] == 3
    try:
        from libsvm import svmutil
    except ImportError:
        return
    lib = svmutil.svm_load_model(str(tmp_path / "m3"))
    assert svmutil.svm_predict([0], [{1: 0.3}], lib, "-q")[0] == [2.0]


def _check_refused(tmp_path, capsys, old, new, match):
    """A two-vector RBF model file with ``old`` replaced by ``new``: load_libsvm_model raises ``match`` and gpusvm
    predict exits 1 printing it."""
    text = ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.1\nlabel 1 -1\n"
            "nr_sv 1 1\nSV\n0.5 1:0.2\n-0.5 1:1 2:0.3\n")
    (tmp_path / "m").write_text(text.replace(old, new))
    with pytest.raises(ValueError, match=match):
        load_libsvm_model(tmp_path / "m")
    (tmp_path / "te").write_text("1 1:0.5\n")
    assert main(["predict", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
    assert match in capsys.readouterr().err


@pytest.mark.parametrize("old,new,match", [("label 1 -1", "label inf -1", "bad number in the rho / label / nr_sv"),
                                           ("label 1 -1", "label 1e400 -1", "bad number in the rho / label / nr_sv"),
                                           ("nr_sv 1 1", "nr_sv 99999999999999999999 1", "bad number in the rho"),
                                           ("2:0.3", "99999999999999999999:0.3", "feature index of the support")])
def test_numbers_too_large_in_a_model_file_are_reported(tmp_path, capsys, old, new, match):
    """A label of inf (or 1e400), an nr_sv count or a feature index past int64 raised an OverflowError from
    deep inside the reader, and gpusvm predict ended with its traceback."""
    _check_refused(tmp_path, capsys, old, new, match)


def test_save_warns_of_labels_libsvm_cannot_read(tmp_path):
    """LIBSVM reads model labels as 32-bit ints (2**40 came back as 0 there); saving such labels was silent.
    Now a warning names them; our own reader still gives the model back."""
    import warnings

    X, y = make_classification(60, 4, random_state=0)
    big = np.where(y == 1, 2**40, 3)
    clf = SVC(device="cpu").fit(X, big)
    with pytest.warns(UserWarning, match=r"class labels \[1099511627776\] lie outside the 32-bit int range"):
        save_libsvm_model(clf, tmp_path / "m")
    np.testing.assert_array_equal(load_libsvm_model(tmp_path / "m").predict(X), clf.predict(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save_libsvm_model(SVC(device="cpu").fit(X, np.where(y == 1, 2**31 - 1, -(2**31) + 1)), tmp_path / "ok")


@pytest.mark.parametrize("extra", [[], ["-v", "2"]], ids=["train", "cross-validation"])
def test_train_command_on_an_empty_file(tmp_path, capsys, extra):
    """An empty training file is an error with and without -v (-v printed "Cross Validation Accuracy = nan%"
    with NumPy's empty-mean warnings and exited 0)."""
    (tmp_path / "empty").write_text("")
    assert main(["train", "-q", *extra, str(tmp_path / "empty"), str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert "holds no data lines" in err and "RuntimeWarning" not in err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("old,new,match", [("0.5 1:0.2", "nan 1:0.2", "support vector line 1 has a coefficient"),
                                           ("2:0.3", "2:inf", "support vector line 2 has a coefficient"),
                                           ("-0.5 1:1", "1e400 1:1", "support vector line 2 has a coefficient"),
                                           ("rho 0.1", "rho nan", "'rho' line of the model header"),
                                           ("gamma 0.5", "gamma inf", "The 'gamma' parameter must be")])
def test_non_finite_numbers_in_a_model_file_are_refused(tmp_path, capsys, old, new, match):
    """float() reads nan, inf and 1e400: such a model file loaded silently, its decision values were all NaN and
    every point was predicted as the first class, by the API and by gpusvm predict."""
    _check_refused(tmp_path, capsys, old, new, match)


@pytest.mark.parametrize("value", ["nan", "inf", "-1e400"])
def test_commands_name_the_line_of_a_non_finite_feature_value(tmp_path, capsys, value):
    """The reader takes nan, inf and 1e400 as numbers; train and predict then stopped with the estimator's
    "'X' for SVC contains NaN", which does not say where in the file it is."""
    (tmp_path / "bad").write_text(f"1 1:0.5\n\n-1 1:0.3\n# c\n1 1:0.2 2:{value}\n")
    (tmp_path / "tr").write_text("1 1:0.5\n-1 1:-0.5\n")
    assert main(["train", "-q", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    assert main(["train", str(tmp_path / "bad"), str(tmp_path / "m2")]) == 1
    assert f"can't read {tmp_path / 'bad'}: line 5 has a feature value that is not finite" in capsys.readouterr().err
    assert main(["predict", str(tmp_path / "bad"), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
    assert "line 5 has a feature value that is not finite" in capsys.readouterr().err


@pytest.mark.parametrize("label", ["nan", "inf", "1e30"])
@pytest.mark.parametrize("folds", [[], ["-v", "2"]])
def test_train_names_the_line_of_a_label_that_is_no_integer(tmp_path, capsys, label, folds):
    """A label of nan or inf stopped train with "'y' for SVC contains NaN or infinity", one of 1e30 with
    scikit-learn's "Unknown label type: continuous": neither said which line of the file holds it."""
    (tmp_path / "bad").write_text(f"1 1:0.5\n-1 1:0.3\n\n{label} 1:0.2\n1 1:0.1\n")
    assert main(["train", *folds, str(tmp_path / "bad"), str(tmp_path / "m")]) == 1
    assert "bad: line 4 has a label that is not an integer" in capsys.readouterr().err


@pytest.mark.parametrize("kernel,old,new,match", [("polynomial", "degree 2", "degree 0", "The 'degree' parameter"),
                                                  ("polynomial", "degree 2", "degree -1", "The 'degree' parameter"),
                                                  ("rbf", "gamma 0.5", "gamma 0", "The 'gamma' parameter must be > 0"),
                                                  ("rbf", "gamma 0.5", "gamma -2", "The 'gamma' parameter"),
                                                  ("sigmoid", "coef0 0.1", "coef0 nan", "The 'coef0' parameter")])
def test_gram_parameters_of_a_model_file_are_checked_when_it_is_read(tmp_path, capsys, kernel, old, new, match):
    """A model of degree 0 (svm-train -t 1 -d 0 writes one) or gamma 0 loaded, and the first prediction raised the
    gram's error, which does not name the model file: gpusvm predict printed only "The 'degree' parameter must be
    an int in the range [1, inf). Got 0 instead." """
    text = (f"svm_type c_svc\nkernel_type {kernel}\ndegree 2\ngamma 0.5\ncoef0 0.1\nnr_class 2\ntotal_sv 2\n"
            "rho 0.1\nlabel 1 -1\nnr_sv 1 1\nSV\n0.5 1:0.2\n-0.5 1:1 2:0.3\n")
    (tmp_path / "m").write_text(text.replace(old, new))
    with pytest.raises(ValueError, match=f"m: the model header's .* gram is not one gpusvm computes: {match}"):
        load_libsvm_model(tmp_path / "m")
    (tmp_path / "te").write_text("1 1:0.5\n")
    assert main(["predict", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "m") in err and match in err
    (tmp_path / "m").write_text(text)
    assert main(["predict", "-q", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 0


def test_model_file_errors_give_the_line_number_in_the_file(tmp_path, capsys):
    """"cannot parse support vector line 2" counted the support vectors only: the line to fix was that plus the
    header's length (which varies with the kernel and -b 1) plus any blank lines, for the user to work out."""
    text = ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.1\nlabel 1 -1\n"
            "nr_sv 1 1\nSV\n0.5 1:0.2\n\n-0.5 1:1 2:x\n")
    (tmp_path / "m").write_text(text)
    with pytest.raises(ValueError, match=r"cannot parse support vector line 2 \(line 12 of the file\)"):
        load_libsvm_model(tmp_path / "m")
    (tmp_path / "m").write_text(text.replace("2:x", "1:3"))
    with pytest.raises(ValueError, match=r"line 2 repeats feature index 1 \(line 12 of the file\)"):
        load_libsvm_model(tmp_path / "m")
    (tmp_path / "te").write_text("1 1:0.5\n")
    assert main(["predict", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "o")]) == 1
    assert "(line 12 of the file)" in capsys.readouterr().err
