"""Gram-row cache: rows ``K[i, :]`` of the training Gram matrix kept on the device under a byte budget.

Least-recently-used rows are evicted first. Misses of one request are computed together with a single
``be.gram`` call (one matrix product), which is what the batched decomposition and ALFPGM need: they ask
for the rows of a whole working set at once. When the full n x n matrix fits the budget, every row
stays, so the matrix is formed only when it fits and is reused (a row is never computed twice).

Bookkeeping (which row sits in which slot) is on the host: one device-to-host copy of the requested
indices per request, not per element.
"""

from __future__ import annotations

from collections import OrderedDict

from .._backend.base import reserve_rows
from .._backend.ops.gram import densify_for_gram


def _host_ints(be, idx):
    """``idx`` as a list of Python ints: a device array in one copy to the host; a host list or tuple as it is,
    without a round trip through the device (a solver that already read the indices passes them so)."""
    if isinstance(idx, (list, tuple)):
        return [int(i) for i in idx]
    return [int(i) for i in be.to_host(be.xp.asarray(idx)).tolist()]


class GramRowCache:
    """LRU cache of Gram rows of ``X`` on backend ``be``.

    Parameters
    ----------
    be : Backend
    X : {array, CSR matrix} of shape (n, d) on ``be``
    spec : GramSpec
    cache_bytes : int
        Budget for the stored rows (a row costs ``n * itemsize`` bytes).
    dtype : float32 or float64
        Type of the stored Gram values.
    x_sqnorm : array of shape (n,), optional
        Squared row norms of X (RBF), computed when absent.

    Notes
    -----
    The right operand of every row product is ``X`` converted once to ``dtype`` and, on the CPU, densified
    once where ``be.gram`` would densify it in every call (``densify_for_gram``: CSR at least 10% dense, up
    to 256 MB): ``be.gram`` did both to all of X for each request, a cost that does not shrink with the rows
    asked (ALFPGM on a9a CSR, 20,000 rows: 1,041 requests, 151 of them for one row). Dense X gives the same
    values as before. CSR X that is densified now also meets the requested rows densified (one dense product), where
    a request of rows under 10% dense was a sparse x dense product: its Gram values can differ in the last bits
    (the batched SMO then took another path to the same tolerance: 22 of 153 synthetic CPU fits at 12% density;
    2% and 50% dense X, ALFPGM and the GPU were unchanged), and a row no longer depends on the rows requested
    with it. That copy (``n x d`` values of ``dtype``, dense where it was densified) lives as long as the
    cache; there is none when ``X`` is dense and already of ``dtype``, nor for a precomputed gram (whose X
    are point indices, used as they are).
    """

    def __init__(self, be, X, spec, *, cache_bytes, dtype=None, x_sqnorm=None):
        xp = be.xp
        self.be, self.X, self.spec = be, X, spec
        self.n = int(X.shape[0])
        self.dtype = xp.dtype(dtype or xp.float64)
        if x_sqnorm is None and spec.kind == "rbf":
            x_sqnorm = be.row_sqnorms(X, self.dtype)
        self.x_sqnorm = None if x_sqnorm is None else xp.asarray(x_sqnorm, dtype=self.dtype)
        Xg = X
        if spec.kind != "precomputed":
            Xg = densify_for_gram(be, X if X.dtype == self.dtype else X.astype(self.dtype))
        self._Xg = Xg  # the products' operand (see Notes)
        row_bytes = self.n * self.dtype.itemsize
        self.capacity = int(min(self.n, max(0, int(cache_bytes) // max(row_bytes, 1))))
        self._store = None  # allocated on first store, capacity x n
        self._slot: OrderedDict[int, int] = OrderedDict()  # row index -> slot, in LRU order
        self._free = list(range(self.capacity - 1, -1, -1))
        self.hits = 0
        self.misses = 0

    def _compute(self, idx_dev):
        be, Xg = self.be, self._Xg
        return be.gram(be.take_rows(Xg, idx_dev), Xg, self.spec,
                       x_sqnorm=None if self.x_sqnorm is None else self.x_sqnorm[idx_dev],
                       y_sqnorm=self.x_sqnorm, dtype=self.dtype)

    def rows(self, idx):
        """Gram rows ``K[idx, :]`` as a new (len(idx), n) array on the device.

        ``idx`` may be a device array or a sequence of ints (no device round trip); duplicates are allowed.
        """
        be, xp = self.be, self.be.xp
        idx_host = _host_ints(be, idx)
        k = len(idx_host)
        if k == 0:
            return xp.empty((0, self.n), dtype=self.dtype)
        if self.capacity == 0:
            self.misses += k
            return self._compute(xp.asarray(idx_host))  # (a new array: no copy into another block)
        if self._store is None:
            self._reserve()
        requested = set(idx_host)
        hit_pos, hit_slots, miss_rows, miss_pos = [], [], [], []
        for p, i in enumerate(idx_host):
            s = self._slot.get(i)
            if s is None:
                miss_rows.append(i)
                miss_pos.append(p)
            else:
                self._slot.move_to_end(i)
                hit_pos.append(p)
                hit_slots.append(s)
        self.hits += len(hit_pos)
        # At most two k x n blocks at a time, ``out`` and the computed misses ``K`` (one when all rows
        # miss): no gathered copy of ``K`` when its rows are the misses in request order (no repeated
        # index), and none of ``out``'s rows when every row misses, which then is ``K`` itself
        out = None
        if hit_pos:
            out = xp.empty((k, self.n), dtype=self.dtype)
            out[xp.asarray(hit_pos)] = self._store[xp.asarray(hit_slots)]
        if miss_rows:
            uniq = list(dict.fromkeys(miss_rows))
            self.misses += len(uniq)
            K = self._compute(xp.asarray(uniq))
            if len(uniq) < len(miss_rows):  # repeated misses: gather their rows
                where = {i: r for r, i in enumerate(uniq)}
                if out is None:
                    out = xp.empty((k, self.n), dtype=self.dtype)
                out[xp.asarray(miss_pos)] = K[xp.asarray([where[i] for i in miss_rows])]
            elif out is None:
                out = K
            else:
                out[xp.asarray(miss_pos)] = K
            # store as many new rows as fit, evicting least recently used rows not in this request
            store_slots = []
            for i in uniq:
                slot = self._take_slot(requested)
                if slot is None:
                    break
                self._slot[i] = slot
                store_slots.append(slot)
            if store_slots:  # the first rows of K (a view, not a gathered copy)
                self._store[xp.asarray(store_slots)] = K[:len(store_slots)]
        return out

    def resident(self, idx):
        """Make rows ``idx`` resident in the cache and return their slots, without copying rows out.

        Returns a device int64 array ``slots`` (same order as ``idx``, duplicates allowed) such that
        ``self.store[slots[p]]`` is row ``idx[p]``, valid until the next call that may evict rows
        (``rows`` or ``resident``). Misses are computed together with one ``be.gram`` call and written
        straight into their slots. Returns None when the budget cannot hold all requested rows at once;
        use :meth:`rows` then. ``idx`` as in :meth:`rows`.
        """
        xp = self.be.xp
        idx_host = _host_ints(self.be, idx)
        slots = self._make_resident(idx_host)
        return None if slots is None else xp.asarray(slots, dtype=xp.int64)

    def resident_row(self, i):
        """Row ``i`` (a host int) made resident, as a view of its slot in :attr:`store` (no copy, no index
        array on the device), valid as :meth:`resident`'s slots; None when the budget holds no row."""
        slots = self._make_resident([int(i)])
        return None if slots is None else self._store[slots[0]]

    def _make_resident(self, idx_host):
        """:meth:`resident` with host ints in and out: the slots as a list, or None."""
        xp = self.be.xp
        uniq = list(dict.fromkeys(idx_host))
        if self._store is None and len(uniq) <= self.capacity:
            self._reserve()  # (which may lower the capacity)
        if len(uniq) > self.capacity:
            return None
        requested = set(uniq)
        miss = []
        for i in uniq:
            if i in self._slot:
                self._slot.move_to_end(i)
                self.hits += 1
            else:
                miss.append(i)
        if miss:
            self.misses += len(miss)
            slots = [self._take_slot(requested) for _ in miss]  # never None: capacity >= len(uniq)
            self._store[xp.asarray(slots)] = self._compute(xp.asarray(miss))
            for i, sl in zip(miss, slots):
                self._slot[i] = sl
        return [self._slot[i] for i in idx_host]

    def _reserve(self):
        """Allocate the store: ``capacity`` rows, or on the CPU as many as can be reserved
        (:func:`gpusvm._backend.base.reserve_rows`: ``SVC(cache_size=20000, decomposition="batched")`` on full
        ijcnn1 under a 6 GB address-space limit failed for 49,990 x 49,990 float32 values). On the GPU an
        exhausted device still raises (the estimators turn it into a MemoryError that says what to lower)."""
        xp = self.be.xp
        if self.be.is_gpu:
            self._store = xp.empty((self.capacity, self.n), dtype=self.dtype)
            return
        self._store = reserve_rows(xp, self.capacity, self.n, self.dtype)
        if self._store.shape[0] < self.capacity:
            self.capacity = int(self._store.shape[0])
            self._free = list(range(self.capacity - 1, -1, -1))  # (no row is stored yet)

    @property
    def store(self):
        """The (capacity, n) array of cached rows (None before the first store); see :meth:`resident`."""
        return self._store

    def _take_slot(self, protected):
        if self._free:
            return self._free.pop()
        for i in self._slot:  # oldest first
            if i not in protected:
                return self._slot.pop(i)
        return None

    def __contains__(self, i) -> bool:
        return int(i) in self._slot

    @property
    def nbytes(self) -> int:
        return 0 if self._store is None else int(self._store.nbytes)
