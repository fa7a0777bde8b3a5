"""Full-size recheck of the CPU decomposition choice (pairwise vs batched SMO) on the current code.

Usage: PYTHONPATH=. python benchmarks/smo_decomposition_recheck.py phishing ijcnn1 a9a
Writes /tmp/decomp_<names>.json; process CPU time is the robust measure on a shared machine.
"""
import time, json, sys
from gpusvm import SVC
from gpusvm.datasets import load_svmlight
from sklearn.model_selection import train_test_split
from gpusvm.datasets import find_data_dir
D=str(find_data_dir()) + "/"
sets = {"ijcnn1": (32, 2.0), "a9a": (32, 0.008), "phishing": (8, 8.0), "w8a": (8, 0.03)}
out = []
for name in sys.argv[1:]:
    C, g = sets[name]
    X, y = load_svmlight(D + name + ".xz")
    if name in ("phishing", "w8a"):
        X, _, y, _ = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    for dec in ("pairwise", "batched"):
        for solver in ("smo",):
            clf = SVC(C=C, gamma=g, solver=solver, decomposition=dec, device="cpu")
            t0 = time.process_time(); w0 = time.perf_counter()
            clf.fit(X, y)
            r = dict(data=name, dec=dec, solver=solver, cpu=time.process_time() - t0, wall=time.perf_counter() - w0,
                     obj=float(clf.objective_[0]), nsv=int(clf.support_.shape[0]))
            print(r, flush=True); out.append(r)
json.dump(out, open("/tmp/decomp_%s.json" % "_".join(sys.argv[1:]), "w"))
