// Batched working-set decomposition for C-SVC (gpusvm._solvers.smo_batched).
//
// local_smo: the dual restricted to a working set of q <= 1024 variables, solved in ONE thread block
// (one thread per variable) with SMO steps (second-order working-set selection, Fan, Chen & Lin 2005)
// or planning-ahead SMO steps (Glasmachers 2008). The algorithm is the one documented in
// gpusvm/_backend/ops/local_smo.py, whose Numba twin is the reference for this kernel: the arithmetic
// that decides working sets uses round-to-nearest intrinsics (no FMA contraction) so that both make the
// same choices.
//
// local_smo_batched: many independent such problems in one launch, one thread block each (DC-SVM's
// cluster subproblems, gpusvm._solvers.dcsvm): segment c holds variables seg[c]..seg[c+1]-1 and its
// Gram block at K + k_off[c]; a block may hold more variables than threads (each thread owns the
// variables t, t + blockDim.x, ...), and the state lives in global memory. Both kernels run the same
// device function, smo_block_solve.
//
// grad_update_rows: G[c] += y[c] * sum_k coef[k] * K[rows[k], c], accumulated in double, one thread per
// column (reads of the rows are coalesced); rows with coef[k] == 0 are skipped (the branch is uniform).
#include "common.cuh"

// gpusvm:instantiate local_smo<float>
// gpusvm:instantiate local_smo<double>
// gpusvm:instantiate local_smo_batched<float>
// gpusvm:instantiate local_smo_batched<double>
// gpusvm:instantiate grad_update_rows<float>
// gpusvm:instantiate grad_update_rows<double>

#define GPUSVM_TAU 1e-12
#define PA_COND_ 1e-8
// +inf without <math.h> (NVRTC, which CuPy uses, has no host headers)
#define SMO_INF __longlong_as_double(0x7ff0000000000000LL)

__device__ __forceinline__ bool smo_in_up(double y, double a, double c) {
    return (y > 0.0 && a < c) || (y < 0.0 && a > 0.0);
}
__device__ __forceinline__ bool smo_in_low(double y, double a, double c) {
    return (y > 0.0 && a > 0.0) || (y < 0.0 && a < c);
}

// (v, i) pairs: larger v wins, ties go to the smaller index (= the first maximum of a serial scan).
__device__ __forceinline__ void smo_argmax_merge(double& v, int& i, double v2, int i2) {
    if (v2 > v || (v2 == v && i2 < i)) {
        v = v2;
        i = i2;
    }
}

__device__ __forceinline__ void smo_warp_argmax(double& v, int& i) {
    for (int off = 16; off > 0; off >>= 1) {
        double v2 = __shfl_down_sync(0xffffffffu, v, off);
        int i2 = __shfl_down_sync(0xffffffffu, i, off);
        smo_argmax_merge(v, i, v2, i2);
    }
}

__device__ __forceinline__ double smo_warp_min(double v) {
    for (int off = 16; off > 0; off >>= 1) v = fmin(v, __shfl_down_sync(0xffffffffu, v, off));
    return v;
}

// Block-wide argmax (and optionally min of a second value); result valid in every thread after return.
// red_v / red_i / red_m: shared scratch of 32 entries each. Contains __syncthreads: call from all threads.
__device__ void smo_block_argmax_min(double& v, int& i, double& mn, double* red_v, int* red_i, double* red_m) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    smo_warp_argmax(v, i);
    mn = smo_warp_min(mn);
    if (lane == 0) {
        red_v[warp] = v;
        red_i[warp] = i;
        red_m[warp] = mn;
    }
    __syncthreads();
    if (warp == 0) {
        double vv = lane < nwarps ? red_v[lane] : -SMO_INF;
        int ii = lane < nwarps ? red_i[lane] : 0x7fffffff;
        double mm = lane < nwarps ? red_m[lane] : SMO_INF;
        smo_warp_argmax(vv, ii);
        mm = smo_warp_min(mm);
        if (lane == 0) {
            red_v[0] = vv;
            red_i[0] = ii;
            red_m[0] = mm;
        }
    }
    __syncthreads();
    v = red_v[0];
    i = red_i[0];
    mn = red_m[0];
    __syncthreads();  // scratch may be reused right after
}

// Round-to-nearest arithmetic without FMA contraction, so that the kernel computes exactly what the
// Numba twin computes (it evaluates left to right, no contraction).
__device__ __forceinline__ double M_(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double A_(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double S_(double a, double b) { return __dsub_rn(a, b); }

template <typename T>
__device__ __forceinline__ double smo_k(const T* K, int q, int r, int c) {
    return (double)K[(long long)r * q + c];
}

// a = K_uu + K_vv - 2 K_uv (replaced by tau when not positive), without contraction.
template <typename T>
__device__ __forceinline__ double smo_curv(const T* K, const double* diag, int q, int u, int v) {
    double a = __dsub_rn(__dadd_rn(diag[u], diag[v]), __dmul_rn(2.0, smo_k(K, q, u, v)));
    return a <= 0.0 ? GPUSVM_TAU : a;
}

// (e_i - e_j)^T K (e_p - e_r)
template <typename T>
__device__ __forceinline__ double smo_cross(const T* K, int q, int i, int j, int p, int r) {
    return S_(S_(smo_k(K, q, i, p), smo_k(K, q, i, r)), S_(smo_k(K, q, j, p), smo_k(K, q, j, r)));
}

// Largest t >= 0 keeping alpha_u + y_u t and alpha_v - y_v t in their boxes (per variable).
__device__ __forceinline__ void smo_limit(const double* sy, const double* sa, const double* sc, int u, int v,
                                          double& lu, double& lv) {
    lu = sy[u] > 0.0 ? S_(sc[u], sa[u]) : sa[u];
    lv = sy[v] > 0.0 ? sa[v] : S_(sc[v], sa[v]);
}

// The pair {u, v} in the order a step takes it: (i, j) with s_i >= s_j, s = -y g.
__device__ __forceinline__ void smo_oriented(const double* sy, const double* sg, int u, int v, int& i, int& j) {
    const bool keep = -sy[u] * sg[u] >= -sy[v] * sg[v];
    i = keep ? u : v;
    j = keep ? v : u;
}

// Gain of the clipped Newton step on the pair {u, v}, oriented so that b >= 0.
template <typename T>
__device__ double smo_clipped_gain(const T* K, int q, const double* sd, const double* sy, const double* sa,
                                   const double* sg, const double* sc, int u, int v) {
    smo_oriented(sy, sg, u, v, u, v);
    const double b = S_(-sy[u] * sg[u], -sy[v] * sg[v]);
    double lu, lv;
    smo_limit(sy, sa, sc, u, v, lu, lv);
    const double ub = fmin(lu, lv);
    if (!(b > 0.0) || !(ub > 0.0)) return 0.0;
    const double a = smo_curv(K, sd, q, u, v);
    double t = b / a;
    if (t > ub) t = ub;
    return S_(M_(t, b), M_(M_(M_(0.5, a), t), t));
}

// Block-shared scratch and the state thread 0 keeps across the iterations of smo_block_solve.
struct SmoBlockState {
    double red_v[32], red_m[32];
    int red_i[32];
    double b_step;  // step size t of this iteration
    int b_i, b_j;   // the pair of this iteration
    int hist_i[3], hist_j[3];
    int n_hist, last_free, last_plan, n_partner;
    double gain1;
};

// The local solve of one block. sa (alpha) and sg (gradient) are read and updated in place; sy, sc, sd
// (labels, upper bounds, gram diagonal) are read only; all five hold q entries, in shared or in global
// memory. Thread t owns the variables t, t + blockDim.x, ...; a thread scans its own variables in
// increasing order and the block reductions break ties to the smaller index, so the selections are
// those of the serial scan of the Numba twin. Contains __syncthreads: call from every thread.
template <typename T>
__device__ void smo_block_solve(const T* __restrict__ K, int q, const double* sy, double* sa, double* sg,
                                const double* sc, const double* sd, double eps, double rel_eps, int max_steps,
                                int mode, int pa_recent, double eta, SmoBlockState& S, int& steps_out,
                                double& gap_out) {
    const int nt = blockDim.x;
    const int t = threadIdx.x;
    if (t == 0) {
        S.n_hist = 0;
        S.last_free = 0;
        S.last_plan = 0;
        S.n_partner = 0;
        S.gain1 = 0.0;
        for (int h = 0; h < 3; ++h) S.hist_i[h] = S.hist_j[h] = -1;
    }
    __syncthreads();

    double eps_eff = eps, gap = 0.0;
    int steps = 0;
    while (true) {
        // ---- maximal violating pair: i (and the gap) ------------------------------------------
        double v = -SMO_INF, mn = SMO_INF;
        int idx = 0x7fffffff;
        for (int u = t; u < q; u += nt) {
            const double s_u = -sy[u] * sg[u];
            if (smo_in_up(sy[u], sa[u], sc[u]) && s_u > v) {
                v = s_u;
                idx = u;
            }
            if (smo_in_low(sy[u], sa[u], sc[u]) && s_u < mn) mn = s_u;
        }
        smo_block_argmax_min(v, idx, mn, S.red_v, S.red_i, S.red_m);
        const double m = v;
        int i = idx;
        gap = m - mn;
        if (steps == 0) eps_eff = fmax(eps, rel_eps * gap);
        if (i == 0x7fffffff || !(gap > eps_eff) || steps >= max_steps) break;

        // ---- WSS2: j by second-order gain against i ----------------------------------------------
        double gv = -SMO_INF;
        int gj = 0x7fffffff;
        for (int u = t; u < q; u += nt) {
            if (!smo_in_low(sy[u], sa[u], sc[u])) continue;
            // explicit round-to-nearest: s_u is a product, and nvcc/NVRTC may contract m - s_u into an
            // FMA (-fmad=true by default), which would round differently from the Numba twin
            const double b = __dsub_rn(m, -sy[u] * sg[u]);
            if (b > 0.0) {
                const double a = smo_curv(K, sd, q, i, u);
                const double val = __dmul_rn(b, b) / a;
                if (val > gv) {
                    gv = val;
                    gj = u;
                }
            }
        }
        double unused = SMO_INF;
        smo_block_argmax_min(gv, gj, unused, S.red_v, S.red_i, S.red_m);
        if (gj == 0x7fffffff) break;  // uniform: every thread sees the same reduction result

        // ---- thread 0: PA-SMO selection, the step, the two alpha updates ----------------------------
        if (t == 0) {
            int j = gj;
            if (mode == 1 && S.last_plan) {  // modified selection after a planning step (eta safeguard)
                const double gw = smo_clipped_gain(K, q, sd, sy, sa, sg, sc, i, j);
                double pbest = -SMO_INF;
                int pu = -1, pv = -1;
                for (int h = 1; h <= S.n_partner; ++h) {
                    const double gr = smo_clipped_gain(K, q, sd, sy, sa, sg, sc, S.hist_i[h], S.hist_j[h]);
                    if (gr > pbest) {
                        pbest = gr;
                        pu = S.hist_i[h];
                        pv = S.hist_j[h];
                    }
                }
                double g_ch = gw;
                if (pu >= 0 && pbest > 0.0 && A_(S.gain1, gw) < M_(eta, A_(S.gain1, pbest))) {
                    g_ch = pbest;
                    smo_oriented(sy, sg, pu, pv, i, j);
                }
                // the planning step's own working set (slot 0): the step along it lands where the plain
                // SMO step would have, so that double step gains gain1 + g0 > 0; taken when the chosen
                // pair's would gain less than eta times that (as the CPU twin)
                const int p0 = S.hist_i[0], r0 = S.hist_j[0];
                const double g0 = smo_clipped_gain(K, q, sd, sy, sa, sg, sc, p0, r0);
                if (A_(S.gain1, g_ch) < M_(eta, A_(S.gain1, g0))) smo_oriented(sy, sg, p0, r0, i, j);
            }
            const double si = -sy[i] * sg[i], sj = -sy[j] * sg[j];
            const double b = S_(si, sj);
            const double a = smo_curv(K, sd, q, i, j);
            double ui, uj;
            smo_limit(sy, sa, sc, i, j, ui, uj);
            const double ub = fmin(ui, uj);
            bool planned = false;
            double step = 0.0;
            int npart = 0;
            if (mode == 1 && S.last_free && !S.last_plan && S.n_hist > 0 &&
                !((S.hist_i[0] == i && S.hist_j[0] == j) || (S.hist_i[0] == j && S.hist_j[0] == i))) {
                const int p0 = S.hist_i[0], r0 = S.hist_j[0];
                const double H01 = smo_cross(K, q, i, j, p0, r0);
                const double H11 = smo_curv(K, sd, q, p0, r0);
                const double g0 = S_(-sy[p0] * sg[p0], -sy[r0] * sg[r0]);
                double mu = 0.0;
                if (pa_recent == 3 && S.n_hist > 1) {
                    const int p1 = S.hist_i[1], r1 = S.hist_j[1];
                    const double H02 = smo_cross(K, q, i, j, p1, r1);
                    const double H12 = smo_cross(K, q, p0, r0, p1, r1);
                    const double H22 = smo_curv(K, sd, q, p1, r1);
                    const double g1 = S_(-sy[p1] * sg[p1], -sy[r1] * sg[r1]);
                    const double det = A_(S_(M_(a, S_(M_(H11, H22), M_(H12, H12))),
                                             M_(H01, S_(M_(H01, H22), M_(H12, H02)))),
                                          M_(H02, S_(M_(H01, H12), M_(H11, H02))));
                    const double m2 = S_(M_(a, H11), M_(H01, H01));
                    if (m2 > M_(M_(PA_COND_, a), H11) && det > M_(M_(M_(PA_COND_, a), H11), H22)) {
                        const double num = A_(S_(M_(b, S_(M_(H11, H22), M_(H12, H12))),
                                                 M_(H01, S_(M_(g0, H22), M_(H12, g1)))),
                                              M_(H02, S_(M_(g0, H12), M_(H11, g1))));
                        mu = num / det;
                        if (mu > 0.0 && mu < ub) npart = 2;
                    }
                }
                if (npart == 0) {
                    const double det = S_(M_(a, H11), M_(H01, H01));
                    if (det > M_(M_(PA_COND_, a), H11)) {
                        mu = S_(M_(H11, b), M_(H01, g0)) / det;
                        if (mu > 0.0 && mu < ub) npart = 1;
                    }
                }
                if (npart > 0) {
                    step = mu;
                    planned = true;
                }
            }
            if (!planned) {
                step = b / a;
                if (step > ub) step = ub;
            }
            const bool is_free = step < ub;
            double ai = A_(sa[i], M_(sy[i], step));
            double aj = S_(sa[j], M_(sy[j], step));
            if (!is_free) {
                if (step >= ui) ai = sy[i] > 0.0 ? sc[i] : 0.0;
                if (step >= uj) aj = sy[j] > 0.0 ? 0.0 : sc[j];
            }
            sa[i] = ai;
            sa[j] = aj;
            S.hist_i[2] = S.hist_i[1]; S.hist_j[2] = S.hist_j[1];
            S.hist_i[1] = S.hist_i[0]; S.hist_j[1] = S.hist_j[0];
            S.hist_i[0] = i; S.hist_j[0] = j;
            S.n_hist = S.n_hist + 1 < 3 ? S.n_hist + 1 : 3;
            S.gain1 = S_(M_(step, b), M_(M_(M_(0.5, a), step), step));
            S.last_plan = planned;
            S.last_free = is_free && !planned;
            S.n_partner = npart;
            S.b_step = step;
            S.b_i = i;
            S.b_j = j;
        }
        __syncthreads();

        // ---- every thread updates its own gradient entries from rows i and j of K_BB ---------------
        const int bi = S.b_i, bj = S.b_j;
        const double bs = S.b_step;
        for (int u = t; u < q; u += nt) {
            const double d = __dsub_rn(smo_k(K, q, bi, u), smo_k(K, q, bj, u));
            sg[u] = __dadd_rn(sg[u], __dmul_rn(__dmul_rn(sy[u], bs), d));
        }
        ++steps;
        __syncthreads();
    }
    steps_out = steps;
    gap_out = gap;
}

// One block; blockDim.x = a power of two >= max(q, 32); dynamic shared memory: 5 * blockDim.x doubles.
// K: q x q (row-major, symmetric); y, C, diag: q; alpha: q, in: start, out: solution; G: q (read only).
// out_steps[0]: SMO steps taken; out_gap[0]: local gap at the last selection.
// __launch_bounds__(1024): a block of 1,024 threads may use at most 64 registers per thread; without the
// bound ptxas allocates 72 and the launch fails with "too many resources requested".
template <typename T>
__global__ void __launch_bounds__(1024) local_smo(const T* __restrict__ K, int q, const double* __restrict__ y_g, double* alpha_g,
                          const double* __restrict__ G_g, const double* __restrict__ C_g,
                          const double* __restrict__ diag_g, double eps, double rel_eps, int max_steps,
                          int mode, int pa_recent, double eta, long long* out_steps, double* out_gap) {
    extern __shared__ double smem[];
    const int nt = blockDim.x;
    double* sa = smem;           // alpha
    double* sg = smem + nt;      // gradient
    double* sy = smem + 2 * nt;  // labels
    double* sc = smem + 3 * nt;  // upper bounds
    double* sd = smem + 4 * nt;  // gram diagonal
    __shared__ SmoBlockState S;

    const int t = threadIdx.x;
    if (t < q) {
        sa[t] = alpha_g[t];
        sg[t] = G_g[t];
        sy[t] = y_g[t];
        sc[t] = C_g[t];
        sd[t] = diag_g[t];
    }
    __syncthreads();
    int steps;
    double gap;
    smo_block_solve(K, q, sy, sa, sg, sc, sd, eps, rel_eps, max_steps, mode, pa_recent, eta, S, steps, gap);
    if (t < q) alpha_g[t] = sa[t];
    if (t == 0) {
        out_steps[0] = steps;
        out_gap[0] = gap;
    }
}

// One block per segment c (gridDim.x = number of segments; blockDim.x a power of two, 32..512: the
// launch bound, under which ptxas spills a few bytes, as many as under 1,024; any segment size).
// Segment c: variables seg[c] .. seg[c + 1] - 1 of y, C, diag, alpha and G; its Gram block is the
// row-major q_c x q_c matrix at K + k_off[c]. alpha: in, the start; out, the solution.
// G: out, the final gradient Q alpha - 1 of the segment's problem; the start is computed here from
// the starting alpha as G_u = y_u * sum_k (y_k alpha_k) K[k, u] - 1 (k in increasing order, zero alphas
// skipped; column u of the symmetric block, so a warp's reads are coalesced). The solve is the exact
// local SMO (rel_eps = 0) to the gap eps or max_steps steps; out_steps[c], out_gap[c] per segment.
// A segment of at most smem_q variables keeps its state (alpha, G, y, C, diag) in dynamic shared memory
// (5 * smem_q doubles, as local_smo), a larger one works in place in global memory; the arithmetic is
// the same either way.
template <typename T>
__global__ void __launch_bounds__(512) local_smo_batched(const T* __restrict__ K, const long long* __restrict__ k_off,
                                  const long long* __restrict__ seg, const double* __restrict__ y_g,
                                  double* alpha_g, double* G_g, const double* __restrict__ C_g,
                                  const double* __restrict__ diag_g, double eps, int max_steps, int mode,
                                  int pa_recent, double eta, int smem_q, long long* out_steps,
                                  double* out_gap) {
    extern __shared__ double smem[];
    __shared__ SmoBlockState S;
    const int c = blockIdx.x;
    const int t = threadIdx.x, nt = blockDim.x;
    const long long s0 = seg[c];
    const int q = (int)(seg[c + 1] - s0);
    const T* Kc = K + k_off[c];
    const bool local = q <= smem_q;  // uniform over the block
    double* sa = alpha_g + s0;
    double* sg = G_g + s0;
    const double* sy = y_g + s0;
    const double* sc = C_g + s0;
    const double* sd = diag_g + s0;
    if (local) {
        double* la = smem;
        double* lg = smem + smem_q;
        double* ly = smem + 2 * smem_q;
        double* lc = smem + 3 * smem_q;
        double* ld = smem + 4 * smem_q;
        for (int u = t; u < q; u += nt) {
            la[u] = sa[u];
            ly[u] = sy[u];
            lc[u] = sc[u];
            ld[u] = sd[u];
        }
        sa = la;
        sg = lg;
        sy = ly;
        sc = lc;
        sd = ld;
        __syncthreads();
    }
    for (int u = t; u < q; u += nt) {
        double acc = 0.0;
        for (int k = 0; k < q; ++k) {
            const double ak = sa[k];
            if (ak != 0.0) acc = __dadd_rn(acc, __dmul_rn(__dmul_rn(sy[k], ak), smo_k(Kc, q, k, u)));
        }
        sg[u] = __dsub_rn(__dmul_rn(sy[u], acc), 1.0);
    }
    __syncthreads();
    int steps;
    double gap;
    smo_block_solve(Kc, q, sy, sa, sg, sc, sd, eps, 0.0, max_steps, mode, pa_recent, eta, S, steps, gap);
    if (local) {
        for (int u = t; u < q; u += nt) {
            alpha_g[s0 + u] = sa[u];
            G_g[s0 + u] = sg[u];
        }
    }
    if (t == 0) {
        out_steps[c] = steps;
        out_gap[c] = gap;
    }
}

// K: m x ldk (row-major); rows, coef: k; y and G: n.  G[c] += y[c] * sum_r coef[r] K[rows[r], c].
template <typename T>
__global__ void grad_update_rows(const T* __restrict__ K, long long ldk, const long long* __restrict__ rows,
                                 const double* __restrict__ coef, int k, const double* __restrict__ y, double* G,
                                 long long n) {
    GPUSVM_GRID_STRIDE(c, n) {
        double acc = 0.0;
        for (int r = 0; r < k; ++r) {
            const double cr = coef[r];
            if (cr != 0.0) acc += cr * (double)K[rows[r] * ldk + c];
        }
        G[c] += y[c] * acc;
    }
}
