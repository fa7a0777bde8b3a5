// ALFPGM (gpusvm._solvers.alfpgm): the fast projected gradient pieces and the pWSS pairing.
//
// box_momentum_step: x = clip(z - inv_L * g, lo, hi); z' = x + beta * (x - x_prev); one thread per
// element (grid-stride). Each element is read before it is written, so outputs may alias inputs.
//
// alfpgm_subproblem: the whole working-set subproblem (augmented Lagrangian outer loop, FPGM inner loop
// with adaptive restart, final projection onto {y^T d = 0} within the box) in ONE thread block, one thread per variable
// (nb <= 1024). The algorithm is documented in gpusvm/_backend/ops/pgd.py, whose Numba twin is the
// reference for this kernel. Q is symmetric, so thread t computes (Q v)_t = sum_j Q[j, t] v[j]: at each
// j the block reads one row of Q contiguously (coalesced) while v sits in shared memory.
//
// pwss_assign: greedy pairing of pWSS; row k of S takes the smallest entry among the columns no earlier
// row took (ties: the smallest column), one block-wide argmin per row.
//
// pwss_pairs: the same greedy pairing with the scores -b^2/a computed on the fly from the Gram rows
// (K[slots[k], cand[c]]), so no p x m score matrix is formed.
#include "common.cuh"

// gpusvm:instantiate box_momentum_step<float>
// gpusvm:instantiate box_momentum_step<double>
// gpusvm:instantiate alfpgm_subproblem<float>
// gpusvm:instantiate alfpgm_subproblem<double>
// gpusvm:instantiate pwss_assign<double>
// gpusvm:instantiate pwss_pairs<float>
// gpusvm:instantiate pwss_pairs<double>

template <typename T>
__global__ void box_momentum_step(const T* z, const T* g, const T* x_prev, const T* lo, const T* hi,
                                  T inv_L, T beta, T* x_out, T* z_out, long long m) {
    GPUSVM_GRID_STRIDE(i, m) {
        T zi = z[i], gi = g[i], pi = x_prev[i], l = lo[i], h = hi[i];
        T x = zi - inv_L * gi;
        x = x < l ? l : (x > h ? h : x);
        x_out[i] = x;
        z_out[i] = x + beta * (x - pi);
    }
}

// ---- block reductions (every thread gets the result; contain __syncthreads: call from all threads) ----

__device__ __forceinline__ double pgd_warp_sum(double v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ double pgd_warp_max(double v) {
    for (int off = 16; off > 0; off >>= 1) v = fmax(v, __shfl_down_sync(0xffffffffu, v, off));
    return v;
}

// op 0: sum, op 1: max. red: 32 doubles of shared scratch.
__device__ double pgd_block_reduce(double v, int op, double* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    v = op == 0 ? pgd_warp_sum(v) : pgd_warp_max(v);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double u = lane < nwarps ? red[lane] : (op == 0 ? 0.0 : -INFINITY);
        u = op == 0 ? pgd_warp_sum(u) : pgd_warp_max(u);
        if (lane == 0) red[0] = u;
    }
    __syncthreads();
    double r = red[0];
    __syncthreads();  // scratch may be reused right after
    return r;
}

// out_t = sum_j Q[j, t] v[j] for t < nb (v in shared memory, complete before the call).
template <typename T>
__device__ __forceinline__ double pgd_matvec_col(const T* __restrict__ Q, int nb, const double* v, int t) {
    double acc = 0.0;
    if (t < nb) {
        for (int j = 0; j < nb; ++j) acc += (double)Q[(long long)j * nb + t] * v[j];
    }
    return acc;
}

__device__ __forceinline__ double pgd_clip(double u, double l, double h) {
    return u < l ? l : (u > h ? h : u);
}

// __launch_bounds__(1024): the op launches up to 1,024 threads (2 p <= 1024 variables); at that block size a
// thread may hold at most 64 registers. Without the bound ptxas gave this kernel more (66 for sm_90 with
// nvcc 13.0, 66-72 reported on the GPU), so a launch of more than 512 threads failed with "too many
// resources requested"; with it, 62-64 registers for sm_80/sm_90 and no spills (nvcc -Xptxas -v).
template <typename T>
__global__ void __launch_bounds__(1024) alfpgm_subproblem(const T* __restrict__ Q, int nb, const double* __restrict__ lin,
                                  const double* __restrict__ y, const double* __restrict__ lo,
                                  const double* __restrict__ hi, double* d_out, double* lam_io, double mu,
                                  double eps, int max_inner, int max_outer, int check_every, int n_power,
                                  double safety, int restart, long long* stats, double* info) {
    extern __shared__ double sh[];
    double* x = sh;             // current outer iterate
    double* xp = sh + nb;       // previous inner iterate (x_k)
    double* z = sh + 2 * nb;    // extrapolated point
    double* w = sh + 3 * nb;    // scratch vector (power iterations)
    double* red = sh + 4 * nb;  // 32 doubles of reduction scratch
    const int t = threadIdx.x;
    const bool own = t < nb;
    const double yt = own ? y[t] : 0.0;
    const double lt = own ? lo[t] : 0.0;
    const double ht = own ? hi[t] : 0.0;
    const double ct = own ? lin[t] : 0.0;

    // ---- step size from power iterations on Q ------------------------------------------------
    // start vector v_t = 1 + sin(t + 1) / 2, normalized (not constant: see pgd.py)
    double v0 = own ? 1.0 + 0.5 * sin((double)t + 1.0) : 0.0;
    double v0n = sqrt(pgd_block_reduce(v0 * v0, 0, red));
    if (own) w[t] = v0 / v0n;
    const double dmax = pgd_block_reduce(own ? (double)Q[(long long)t * nb + t] : 0.0, 1, red);
    __syncthreads();
    double est = 0.0;
    for (int it = 0; it < n_power; ++it) {
        double qv = pgd_matvec_col(Q, nb, w, t);
        double nrm = sqrt(pgd_block_reduce(own ? qv * qv : 0.0, 0, red));
        if (!(nrm > 0.0)) break;  // uniform: every thread has the same nrm
        est = nrm;
        if (own) w[t] = qv / nrm;  // all reads of w happened before the reduction's barriers
        __syncthreads();
    }
    double lip = fmax(safety * est, dmax) + mu * (double)nb;
    if (!(lip > 0.0)) lip = 1.0;
    const double inv_l = 1.0 / lip;

    // ---- augmented Lagrangian outer loop, FPGM inner loop -----------------------------------
    if (own) x[t] = 0.0;
    double lam = lam_io[0];
    double nu = INFINITY, gx = 0.0;
    long long n_inner = 0;
    int n_outer = 0, inner_fail = 0;
    bool outer_ok = false;
    __syncthreads();
    for (int outer = 0; outer < max_outer; ++outer) {
        ++n_outer;
        if (own) {
            xp[t] = x[t];
            z[t] = x[t];
        }
        __syncthreads();
        double tk = 1.0;
        int k = 0;
        while (k < max_inner) {
            ++k;
            double qz = pgd_matvec_col(Q, nb, z, t);
            double gz = pgd_block_reduce(own ? yt * z[t] : 0.0, 0, red);  // barriers: all z reads done
            double shift = mu * gz - lam;
            double xn = 0.0;
            double rs_t = 0.0;
            if (own) {
                double gr = qz + ct + yt * shift;
                xn = pgd_clip(z[t] - inv_l * gr, lt, ht);
                rs_t = (z[t] - xn) * (xn - xp[t]);
            }
            double rs = pgd_block_reduce(rs_t, 0, red);
            if (restart && rs > 0.0) tk = 1.0;  // adaptive restart: the momentum points uphill
            double tn = 0.5 * (1.0 + sqrt(1.0 + 4.0 * tk * tk));
            double beta = (tk - 1.0) / tn;
            tk = tn;
            if (own) {
                z[t] = xn + beta * (xn - xp[t]);
                xp[t] = xn;
            }
            __syncthreads();
            if (k % check_every == 0 || k == max_inner) {
                double qx = pgd_matvec_col(Q, nb, xp, t);
                gx = pgd_block_reduce(own ? yt * xp[t] : 0.0, 0, red);
                double viol = 0.0;
                if (own) {
                    double gr = qx + ct + yt * (mu * gx - lam);
                    double xt = xp[t];
                    if (xt <= lt) viol = gr < 0.0 ? -gr : 0.0;
                    else if (xt >= ht) viol = gr > 0.0 ? gr : 0.0;
                    else viol = fabs(gr);
                }
                nu = pgd_block_reduce(viol, 1, red);
                if (nu < eps) break;  // uniform
            }
        }
        n_inner += k;
        if (!(nu < eps)) ++inner_fail;
        if (own) x[t] = xp[t];
        __syncthreads();
        lam = lam - mu * gx;
        if (fmax(nu, fabs(gx)) < eps) {
            outer_ok = true;
            break;
        }
    }

    // ---- projection onto {y^T d = 0} within the box, moving the free variables only -----------
    // pass 0: variables strictly inside the box; pass 1 (fallback when they cannot absorb the
    // residual): all variables. Same bisection as the Numba twin.
    // ---- snap: one projected-gradient step from x, at the final multiplier, decides the bounds ----
    // grad L_mu(x, lam_old) = Q x + lin - y lam_new (gx was computed at x by the last check)
    double xt = own ? x[t] : 0.0;
    {
        double qx = pgd_matvec_col(Q, nb, x, t);  // x is complete (barrier after the outer loop)
        if (own) {
            double u = xt - inv_l * (qx + ct - yt * lam);
            if (xt > lt && u <= lt) xt = lt;
            else if (xt < ht && u >= ht) xt = ht;
        }
    }
    const bool free_t = own && lt < xt && xt < ht;
    double big = pgd_block_reduce(own ? fabs(xt) + fmax(fabs(lt), fabs(ht)) : 0.0, 1, red);
    double dt = xt;
    for (int pass = 0; pass < 2; ++pass) {
        const bool moves = own && (pass == 1 || free_t);
        double a = -big - 1.0, b = big + 1.0;
        for (int it = 0; it < 100; ++it) {
            double s = 0.5 * (a + b);
            double u = moves ? pgd_clip(xt - s * yt, lt, ht) : xt;
            double phi = pgd_block_reduce(own ? yt * u : 0.0, 0, red);
            if (phi > 0.0) a = s;
            else b = s;
        }
        double s = 0.5 * (a + b);
        dt = moves ? pgd_clip(xt - s * yt, lt, ht) : xt;
        double phi = pgd_block_reduce(own ? yt * dt : 0.0, 0, red);
        if (fabs(phi) <= 1e-12 * (1.0 + big)) break;  // uniform
    }
    if (own) d_out[t] = dt;
    if (t == 0) {
        lam_io[0] = lam;
        stats[0] += n_inner;
        stats[1] += n_outer;
        stats[2] += inner_fail;
        stats[3] += outer_ok ? 0 : 1;
        info[0] = nu;
        info[1] = fabs(gx);
        info[2] = lip;
    }
}

// Block-wide argmin of (v, i) pairs: the smallest v, ties to the smallest i >= 0. Result valid in thread 0.
__device__ __forceinline__ void pgd_block_argmin(double& bv, long long& bi, double* red_v, long long* red_i) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    for (int off = 16; off > 0; off >>= 1) {
        double v2 = __shfl_down_sync(0xffffffffu, bv, off);
        long long i2 = __shfl_down_sync(0xffffffffu, bi, off);
        if (v2 < bv || (v2 == bv && i2 >= 0 && (bi < 0 || i2 < bi))) {
            bv = v2;
            bi = i2;
        }
    }
    if (lane == 0) {
        red_v[warp] = bv;
        red_i[warp] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int wi = 1; wi < nwarps; ++wi) {
            double v2 = red_v[wi];
            long long i2 = red_i[wi];
            if (v2 < bv || (v2 == bv && i2 >= 0 && (bi < 0 || i2 < bi))) {
                bv = v2;
                bi = i2;
            }
        }
    }
}

// The block's argmin column becomes out[0] and is marked used (-1 when no column is left); every
// thread sees used[] after the closing barrier.
__device__ __forceinline__ void pgd_take_argmin(double bv, long long bi, double* red_v, long long* red_i,
                                                int* used, long long* out) {
    pgd_block_argmin(bv, bi, red_v, red_i);
    if (threadIdx.x == 0) {
        if (bv < INFINITY && bi >= 0) {
            out[0] = bi;
            used[bi] = 1;
        } else {
            out[0] = -1;
        }
    }
    __syncthreads();
}

// __launch_bounds__(1024) on pwss_assign and pwss_pairs: the ops launch exactly 1,024 threads (one block), which
// fails with "too many resources requested" once a kernel uses more than 64 registers per thread; the bound
// makes ptxas keep them within 64 (spilling if need be) instead of a later change breaking every launch.
template <typename T>
__global__ void __launch_bounds__(1024) pwss_assign(const T* __restrict__ S, int p, long long m, int* used,
                                                    long long* out) {
    __shared__ double red_v[32];
    __shared__ long long red_i[32];
    for (int k = 0; k < p; ++k) {
        double bv = INFINITY;
        long long bi = -1;
        for (long long c = threadIdx.x; c < m; c += blockDim.x) {
            double v = used[c] ? INFINITY : (double)S[(long long)k * m + c];
            if (v < bv) {  // columns visited in increasing order: the first minimum is kept
                bv = v;
                bi = c;
            }
        }
        pgd_take_argmin(bv, bi, red_v, red_i, used, out + k);
    }
}

template <typename T>
__global__ void __launch_bounds__(1024) pwss_pairs(const T* __restrict__ K, long long ld,
                                                   const long long* __restrict__ slots,
                                                   const long long* __restrict__ cand, const double* __restrict__ qi,
                                                   const double* __restrict__ qc, const double* __restrict__ di,
                                                   const double* __restrict__ dc, const signed char* __restrict__ ok_i,
                                                   const signed char* __restrict__ ok_c, double tau, int p,
                                                   long long m, int* used, long long* out) {
    __shared__ double red_v[32];
    __shared__ long long red_i[32];
    for (int k = 0; k < p; ++k) {
        if (!ok_i[k]) {  // uniform over the block
            if (threadIdx.x == 0) out[k] = -1;
            continue;
        }
        const T* row = K + slots[k] * ld;
        const double q_k = qi[k], d_k = di[k];
        double bv = INFINITY;
        long long bi = -1;
        for (long long c = threadIdx.x; c < m; c += blockDim.x) {
            if (used[c] || !ok_c[c]) continue;
            double b = q_k - qc[c];
            if (!(b > 0.0)) continue;
            double a = (d_k + dc[c]) - 2.0 * (double)row[cand[c]];
            if (!(a > 0.0)) a = tau;
            double v = -__dmul_rn(b, b) / a;
            if (v < bv) {  // columns visited in increasing order: the first minimum is kept
                bv = v;
                bi = c;
            }
        }
        pgd_take_argmin(bv, bi, red_v, red_i, used, out + k);
    }
}
