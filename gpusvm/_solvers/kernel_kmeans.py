"""Two-step kernel k-means (the division step of DC-SVM), written once over ``be.xp`` and ``be.gram``.

Kernel k-means clusters points by their distance to cluster means in the gram's feature space::

    d(x, c) = k(x, x) - 2 / |S_c| sum_{j in S_c} k(x, x_j) + 1 / |S_c|^2 sum_{i, j in S_c} k(x_i, x_j).

Running it on all n points needs the n x n Gram matrix, so DC-SVM (Hsieh, Si and Dhillon, "A
Divide-and-Conquer Solver for Kernel Support Vector Machines", ICML 2014, section 3 "two-step kernel
k-means") runs it on ``m`` sampled points only and then puts every point into the cluster whose
(sample) mean is nearest in feature space. From the second level on DC-SVM samples the ``m`` points
from the current support vectors ("adaptive clustering"); the caller passes them as ``candidates``.

Every distance is computed from Gram blocks (``be.gram``, a matrix product plus a fused transform on the
GPU): the sample's m x m block for the Lloyd iterations, and (rows x m) blocks of the data against the
sample for the assignment. The per-cluster sums ``sum_{j in S_c} k(x, x_j)`` are taken with one pass of
contiguous slab sums over the sample rows grouped by cluster on the CPU (O(rows x m)), and as one
product with the cluster-indicator matrix on the GPU (cuBLAS).

The random choices (sample, k-means++ seeds) are drawn on the host from a NumPy ``Generator`` the
estimator passes in, so CPU and GPU runs with the same ``random_state`` pick the same points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._parallel import map_threads
from ._common import resolve_gram_dtype

__all__ = ["KernelClustering", "two_step_kernel_kmeans", "kernel_kmeans_sample", "cluster_distances",
           "assign_clusters"]

# bound on the elements of one (rows x m) Gram block in the assignment step
_BLOCK_ELEMS = 8 * 2**20


@dataclass
class KernelClustering:
    """The result of kernel k-means on a sample: what is needed to assign any point to a cluster.

    Attributes
    ----------
    spec : GramSpec
    sample_X : {array, CSR matrix} of shape (m, d) on the backend
        The sample's rows, grouped by cluster (cluster 0 first).
    sample_sqnorm : array of shape (m,) or None
        Squared row norms of ``sample_X`` (RBF only).
    starts : list of int, length k + 1
        Cluster c holds rows ``starts[c]:starts[c + 1]`` of ``sample_X``.
    center_sqnorm : array of shape (k,)
        ||mu_c||^2 = 1 / |S_c|^2 sum_{i, j in S_c} k(x_i, x_j) (``inf`` for an empty cluster).
    sample_index : array of shape (m,)
        Row indices (into the clustered data) of ``sample_X``.
    n_iter : int
        Lloyd iterations run on the sample.
    assign : {"center", "nearest"}
        How :func:`assign_clusters` places a point: into the cluster with the nearest mean in feature
        space ("center", the paper's rule), or into the cluster of the nearest sampled point in
        feature space ("nearest"); see :func:`assign_clusters`.
    sample_diag : array of shape (m,) or None
        k(x_j, x_j) of the sample's rows (the "nearest" rule).
    gram_dtype : {"float32", "float64"}
        Type of the Gram blocks of the assignment (:func:`kernel_kmeans_sample` chooses).
    """

    spec: Any
    sample_X: Any
    sample_sqnorm: Any
    starts: list
    center_sqnorm: Any
    sample_index: Any
    n_iter: int = 0
    assign: str = "center"
    sample_diag: Any = None
    gram_dtype: str = "float32"

    @property
    def n_clusters(self) -> int:
        return len(self.starts) - 1

    @property
    def sizes(self) -> list:
        """The number of sampled points of each cluster (host ints, from ``starts``)."""
        return [self.starts[c + 1] - self.starts[c] for c in range(self.n_clusters)]


def _group_sums(be, K, starts):
    """``S[c, :] = K[starts[c]:starts[c+1], :].sum(axis=0)`` for rows grouped by cluster: shape (k, cols).

    CPU: one sum per group over its contiguous slab of rows (one pass over K in all).
    GPU: one product with the k x rows 0/1 group-indicator matrix (cuBLAS; k x rows x cols flops,
    which the device does faster than a segmented scan at these sizes), in float64 as the CPU's sums:
    a float32 product (float32 K, the assignment's default Gram blocks) accumulated in float32 (2e-7
    relative over 6,000 rows with the emulator's BLAS; cuBLAS's order is not measured), so that
    near-tied points could go to another cluster than on the CPU.
    """
    xp = be.xp
    k = len(starts) - 1
    out = xp.zeros((k, K.shape[1]), dtype=xp.float64)
    nonempty = [c for c in range(k) if starts[c + 1] > starts[c]]
    if not nonempty:
        return out
    if be.is_gpu:
        # the indicator in one scatter (row c: ones over cluster c's rows), not one launch per cluster: the
        # assignment forms it for every block of rows, and k launches (256 at the finest default level)
        # are more than the block's Gram product and sums
        W = xp.zeros((k, K.shape[0]), dtype=xp.float64)
        W[xp.repeat(xp.arange(k), [starts[c + 1] - starts[c] for c in range(k)]), xp.arange(starts[k])] = 1
        return W @ K.astype(xp.float64, copy=False)
    for c in nonempty:  # k contiguous slab sums: one pass over K (numpy's reduceat on axis 0 is far slower)
        K[starts[c]:starts[c + 1]].sum(axis=0, dtype=xp.float64, out=out[c])
    return out


def _distances_from_sums(be, sums, counts, center_sqnorm):
    """-2 mean_c k(x, S_c) + ||mu_c||^2 (the feature-space distance less the constant k(x, x)), +inf for
    an empty cluster, from the (k, rows) sums of :func:`_group_sums`, which it overwrites and returns: in
    place and in that layout, no transposed (rows, k) copies or temporaries (100k rows against 256
    clusters of 1,024 sampled points, one thread, assignment: 1.59 -> 1.48-1.53 CPU-s)."""
    xp = be.xp
    safe = xp.maximum(counts, 1).astype(xp.float64)
    sums *= -2.0
    sums /= safe[:, None]
    sums += center_sqnorm[:, None]
    sums[counts == 0] = xp.inf
    return sums


def _sample_gram(be, clustering, X, x_sqnorm, r0, r1, dtype):
    """The (m, r1 - r0) Gram block of the k-means sample against rows ``r0:r1`` of ``X``."""
    return be.gram(clustering.sample_X, X[r0:r1], clustering.spec, x_sqnorm=clustering.sample_sqnorm,
                   y_sqnorm=None if x_sqnorm is None else x_sqnorm[r0:r1], dtype=be.xp.dtype(dtype))


def cluster_distances(be, clustering: KernelClustering, X, *, x_sqnorm=None, rows=None, dtype=None):
    """Feature-space distance (less ``k(x, x)``) of each row of ``X`` to each cluster mean.

    Returns a float64 array of shape (len(X), k). ``rows`` bounds the rows of one Gram block; ``dtype``
    is the type of the Gram blocks (default: the clustering's ``gram_dtype``, float32 unless float32
    values cannot describe the data: the distances only choose a nearest mean, and float32 halves the
    cost of the largest step of the division; the per-cluster sums accumulate in float64).
    """
    xp = be.xp
    dtype = clustering.gram_dtype if dtype is None else dtype
    n = X.shape[0]
    m = clustering.sample_X.shape[0]
    k = clustering.n_clusters
    counts = xp.asarray(clustering.sizes)
    if rows is None:
        rows = max(1, _BLOCK_ELEMS // max(m, 1))
    out = xp.empty((n, k), dtype=xp.float64)
    if x_sqnorm is None and clustering.spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        sums = _group_sums(be, _sample_gram(be, clustering, X, x_sqnorm, r0, r1, dtype), clustering.starts)
        out[r0:r1] = _distances_from_sums(be, sums, counts, clustering.center_sqnorm).T
    return out


def assign_clusters(be, clustering: KernelClustering, X, *, x_sqnorm=None, dtype=None, block_elems=None, threads=1):
    """The cluster of each row of ``X``: array of shape (n,), by the clustering's ``assign`` rule.

    * "center" (the paper's second step): the cluster whose sample mean is nearest in feature space,
      ``argmin_c -2 mean_{j in S_c} k(x, x_j) + ||mu_c||^2``.
    * "nearest": the cluster of the sampled point nearest in feature space,
      ``argmin_j k(x_j, x_j) - 2 k(x, x_j)`` (for the RBF gram: the largest ``k(x, x_j)``, i.e. the
      nearest sampled point in input space). The Voronoi cells of the sampled points, merged by
      cluster.

    Why "nearest" exists: with a narrow gram the mean rule sends every point with little kernel
    mass near any cluster to the cluster with the smallest ``||mu_c||^2``, the one whose sampled
    points are the most spread out, because ``-2 mean k(x, S_c)`` is then about 0 for every c. On a
    100k-row skin_nonskin subset (gamma 0.03, 64 clusters from a uniform sample of 500) that cluster
    got 41% of the points (every point whose largest kernel value to the sample was below 0.1, and
    more), against 20% by the nearest sampled point; and the nearest rule also left *less* kernel mass
    between clusters (0.42 vs 0.44 of sum k(x_i, x_j) over random pairs), the quantity the paper's
    error bound is stated in. See :class:`gpusvm.DCSVC` (``assign``) for the timings.

    ``block_elems`` bounds the elements of one (rows x m) Gram block (default ``_BLOCK_ELEMS``);
    ``threads`` > 1 (CPU only) assigns the blocks in that many threads with BLAS held to one thread
    (:func:`gpusvm._parallel.single_blas_thread`, process-wide: call it so from the main thread only).
    Early prediction does so (:func:`gpusvm._solvers.dcsvm.local_decision`): a block's thin product
    (d columns) gains little from BLAS threads, and its transform and per-cluster sums have none.
    The rule is the same for any block shape; the shape can change the last bits of the Gram values
    (the BLAS product's order), so a point that two clusters tie to that precision may change cluster.
    """
    xp = be.xp
    dtype = clustering.gram_dtype if dtype is None else dtype
    n = X.shape[0]
    m = clustering.sample_X.shape[0]
    rows = max(1, (_BLOCK_ELEMS if block_elems is None else int(block_elems)) // max(m, 1))
    labels = xp.empty(n, dtype=xp.int64)
    if x_sqnorm is None and clustering.spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    if clustering.assign == "nearest":
        k = clustering.n_clusters
        sample_label = xp.repeat(xp.arange(k, dtype=xp.int64), clustering.sizes)
        diag = clustering.sample_diag

        def block(r0):
            r1 = min(n, r0 + rows)
            score = diag[:, None] - 2.0 * _sample_gram(be, clustering, X, x_sqnorm, r0, r1, dtype)  # float64
            labels[r0:r1] = sample_label[xp.argmin(score, axis=0)]
    else:  # cluster_distances, block by block, and its argmin
        counts = xp.asarray(clustering.sizes)

        def block(r0):
            r1 = min(n, r0 + rows)
            sums = _group_sums(be, _sample_gram(be, clustering, X, x_sqnorm, r0, r1, dtype), clustering.starts)
            labels[r0:r1] = xp.argmin(_distances_from_sums(be, sums, counts, clustering.center_sqnorm), axis=0)

    map_threads(block, range(0, n, rows), 1 if be.is_gpu else threads)
    return labels


def _kmeanspp(be, K, diag, k, rng):
    """k-means++ seeds (Arthur and Vassilvitskii, 2007) in feature space, from the sample's Gram block.

    Returns a host list of k distinct row indices. Draws happen on the host (one copy of m distances
    per seed; k is small).
    """
    xp = be.xp
    m = K.shape[0]
    first = int(rng.integers(m))
    seeds = [first]
    dmin = xp.maximum(diag - 2.0 * K[:, first] + diag[first], 0.0)
    for _ in range(1, k):
        w = be.to_host(dmin).astype("float64")
        w[seeds] = 0.0
        tot = float(w.sum())
        if not tot > 0.0:  # duplicates only: pick uniformly among the unpicked rows
            w = (w * 0.0) + 1.0
            w[seeds] = 0.0
            tot = float(w.sum())
        nxt = int(rng.choice(m, p=w / tot))
        seeds.append(nxt)
        dmin = xp.minimum(dmin, xp.maximum(diag - 2.0 * K[:, nxt] + diag[nxt], 0.0))
    return seeds


def _group_starts(counts_h):
    """Where each cluster's group begins in the label-sorted order, and the end: ``[0, c_0, c_0 + c_1, ...]``
    from the clusters' sizes on the host (a host int array)."""
    return [0] + [int(s) for s in counts_h.cumsum().tolist()]


def _lloyd(be, K, diag, k, rng, max_iter):
    """Kernel k-means (Lloyd iterations) on a precomputed m x m Gram block.

    Returns (labels on the device, n_iter, the clusters' sizes as a host int array).

    One copy to the host per iteration: the new cluster sizes (the next iteration's group boundaries)
    with whether any label changed (the stop), not the boundaries, the sizes and the stop apart (three GPU
    syncs an iteration). Re-seeding an empty cluster, which is rare, reads more.
    """
    xp = be.xp
    m = K.shape[0]
    seeds = xp.asarray(_kmeanspp(be, K, diag, k, rng))
    # initial assignment: nearest seed
    D0 = diag[:, None] - 2.0 * K[:, seeds] + diag[seeds][None, :]
    labels = xp.argmin(D0, axis=1)
    labels[seeds] = xp.arange(k)
    ar = xp.arange(m)
    n_iter = 0
    counts_h = be.to_host(xp.bincount(labels, minlength=k))
    for it in range(max_iter):
        n_iter = it + 1
        counts = xp.bincount(labels, minlength=k)
        # group columns by cluster (stable order: by label, then by index)
        order = xp.argsort(labels * m + ar)
        starts = _group_starts(counts_h)
        sums = _group_sums(be, K[order], starts)  # (k, m): sum_{j in S_c} K[j, i] = K[i, j]
        safe = xp.maximum(counts, 1).astype(xp.float64)
        within = xp.bincount(labels, weights=sums[labels, ar], minlength=k)
        csq = within / (safe * safe)
        D = _distances_from_sums(be, sums, counts, csq).T + diag[:, None]
        new = xp.argmin(D, axis=1)
        new_bc = xp.bincount(new, minlength=k)
        h = be.to_host(xp.concatenate([new_bc, xp.stack([xp.any(new != labels).astype(new_bc.dtype)])]))
        new_counts, changed = h[:k], bool(h[k])
        # re-seed empty clusters with the points farthest from their own cluster mean
        empty = [c for c in range(k) if new_counts[c] == 0]
        if empty:
            far = D[ar, new]
            far_order = be.to_host(xp.argsort(-far)).tolist()
            new_h = be.to_host(new).tolist()
            taken = 0
            for c in empty:
                while taken < m:
                    i = far_order[taken]
                    taken += 1
                    if new_counts[new_h[i]] > 1:
                        new_counts[new_h[i]] -= 1
                        new[i] = new_h[i] = c
                        new_counts[c] = 1
                        break
            changed = bool(xp.any(new != labels))
        labels, counts_h = new, new_counts  # (new_counts are the sizes of the re-seeded labels)
        if not changed:
            break
    return labels, n_iter, counts_h


def two_step_kernel_kmeans(be, X, spec, n_clusters, sample_size, rng, *, candidates=None, x_sqnorm=None,
                           max_iter=30, assign="center"):
    """Two-step kernel k-means of DC-SVM: Lloyd's kernel k-means on a sample
    (:func:`kernel_kmeans_sample`), then every row of ``X`` joins the cluster whose sample mean is
    nearest in feature space, or the cluster of the nearest sampled point (``assign``, see
    :func:`assign_clusters`).

    Parameters and the random draws are those of :func:`kernel_kmeans_sample`.

    Returns
    -------
    clustering : KernelClustering
    labels : array of shape (n,) on ``be``, values in [0, n_clusters)
    """
    if x_sqnorm is None and spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, be.xp.float64)
    clustering = kernel_kmeans_sample(be, X, spec, n_clusters, sample_size, rng, candidates=candidates,
                                      x_sqnorm=x_sqnorm, max_iter=max_iter, assign=assign)
    return clustering, assign_clusters(be, clustering, X, x_sqnorm=x_sqnorm)


def kernel_kmeans_sample(be, X, spec, n_clusters, sample_size, rng, *, candidates=None, x_sqnorm=None,
                         max_iter=30, assign="center"):
    """The first step of two-step kernel k-means: Lloyd's kernel k-means on ``sample_size`` sampled
    rows of ``X``; no row outside the sample is assigned (its ``m x m`` Gram block is all it computes,
    against the ``n x m`` block of the assignment). The sample's cluster sizes
    (``clustering.starts``) let a caller decide whether the assignment is worth doing.

    Parameters
    ----------
    be : Backend
    X : {array, CSR matrix} of shape (n, d) on ``be``
    spec : GramSpec
    n_clusters : int
        k, at most ``sample_size``.
    sample_size : int
        m, the number of points clustered by Lloyd's iterations (clipped to n).
    rng : numpy.random.Generator
        Host generator for the sample and the k-means++ seeds.
    candidates : array of int, optional
        Rows to sample from first (DC-SVM's adaptive clustering samples from the current support
        vectors); when fewer than ``sample_size``, all of them are taken and the sample is filled up
        with other rows drawn uniformly.
    x_sqnorm : array of shape (n,), optional
        Squared row norms of X (RBF).
    max_iter : int
        Bound on the Lloyd iterations.
    assign : {"center", "nearest"}
        The rule :func:`assign_clusters` will use for this clustering.

    Returns
    -------
    KernelClustering
    """
    if assign not in ("center", "nearest"):
        raise ValueError(f"assign must be 'center' or 'nearest', got {assign!r}")
    xp = be.xp
    n = int(X.shape[0])
    m = int(min(sample_size, n))
    k = int(n_clusters)
    if k > m:
        raise ValueError(f"kernel k-means needs at least as many sampled points as clusters: {m} points, "
                         f"{k} clusters")
    if candidates is None:
        sample = rng.choice(n, size=m, replace=False)
    else:
        cand = be.to_host(xp.asarray(candidates)).astype("int64")
        if cand.shape[0] >= m:
            sample = rng.choice(cand, size=m, replace=False)
        else:
            mask = [True] * n
            for i in cand.tolist():
                mask[i] = False
            rest = [i for i in range(n) if mask[i]]
            extra = rng.choice(len(rest), size=m - cand.shape[0], replace=False)
            sample = list(cand.tolist()) + [rest[int(j)] for j in extra.tolist()]
    sample = xp.asarray(sorted(int(i) for i in sample), dtype=xp.int64)
    if x_sqnorm is None and spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    Xs = be.take_rows(X, sample)
    sqs = None if x_sqnorm is None else x_sqnorm[sample]
    K = be.gram(Xs, None, spec, x_sqnorm=sqs, dtype=xp.float64)
    diag = xp.diagonal(K).copy()
    labels_s, n_iter, counts_h = _lloyd(be, K, diag, k, rng, max_iter)
    counts = xp.bincount(labels_s, minlength=k)
    order = xp.argsort(labels_s * m + xp.arange(m))
    starts = _group_starts(counts_h)  # (from the sizes _lloyd read, not another copy to the host)
    sums = _group_sums(be, K[order], starts).T[order]
    lab_sorted = labels_s[order]
    within = xp.bincount(lab_sorted, weights=sums[xp.arange(m), lab_sorted], minlength=k)
    safe = xp.maximum(counts, 1).astype(xp.float64)
    csq = xp.where(counts > 0, within / (safe * safe), xp.inf)
    # The assignment's Gram blocks are float32 unless float32 values cannot describe the data (see
    # resolve_gram_dtype): the float32 gram op computes ||x - z||^2 as ||x||^2 + ||z||^2 - 2 x.z, which
    # cancels far from the origin. Gaussian blobs of spread 1 shifted by 1,000 (10 features) had 10% of
    # the points assigned to another cluster than by float64 values ("nearest": 25%), shifted by 10,000
    # 81% ("nearest": 81%, 90% of the points in 2 of the 8 clusters); scaled data keep float32.
    gram_dtype = resolve_gram_dtype(be, Xs, spec, sqs, "float32", computed_in="float32")
    clustering = KernelClustering(
        spec=spec, sample_X=be.take_rows(Xs, order), sample_sqnorm=None if sqs is None else sqs[order],
        starts=starts, center_sqnorm=csq, sample_index=sample[order], n_iter=n_iter, assign=assign,
        sample_diag=diag[order], gram_dtype=gram_dtype)
    return clustering
