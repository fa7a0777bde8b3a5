// The BSGD training loop (fused op bsgd_train, gpusvm/_backend/ops/bsgd.py) as one persistent thread
// block: every SGD step, margin test, SV insertion and budget maintenance (merge search with one thread
// per candidate, partner selection, cascade or gradient merge) runs on the device, so the host never
// waits per sample; it reads the counters once at the end. The rules (ties, fallbacks) are those of
// the CPU twin; only the summation order of the margin f(x) and of distances inside the merges
// differs (warp/block reductions), so CPU and GPU models agree closely but not bit for bit.
//
// One block uses one SM: the sequential semantics need a barrier after every step, which a single
// block gets from __syncthreads. Several binary problems could run as several blocks. The per-step
// margin (B kernel values) is the loop's cost: on an H100 (row margins, 747d92b) about 2.6 us per step
// on ijcnn1 (22 features, B=248, a thread per SV) but about 70 us on a9a (123 features, B=569, a warp
// per SV, each warp walking its SVs one after another on global-memory latency); hence the column
// margins (use_cols): a thread per SV over the nonzeros of x, coalesced down the columns of svT.
#include "merge.cuh"

// gpusvm:instantiate bsgd_train<float>
// gpusvm:instantiate bsgd_train<double>

#define BSGD_THREADS 256
#define BSGD_GREEDY_SHORTLIST 8  // = GREEDY_SHORTLIST of gpusvm/_backend/ops/bsgd.py (a test checks)
#define BSGD_HEAVY_RATIO 1.5  // = HEAVY_RATIO of gpusvm/_backend/ops/bsgd.py (a test checks)

template <typename T> __device__ __forceinline__ T bsgd_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; every thread gets the result. red: >= 32 entries of shared memory.
template <typename T> __device__ T bsgd_block_sum(T v, T* red) {
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = bsgd_warp_sum<T>(v);
    __syncthreads();  // earlier readers of red are done
    if (lane == 0) red[wid] = v;
    __syncthreads();
    T r = (T)0;
    for (int w = 0; w < nw; ++w) r += red[w];  // same order in every thread
    return r;
}

// Squared distance ||z - x||^2 over the block (x: one SV row, z: shared); every thread gets it. The block
// sum ends with a barrier, so all reads of z are done on return: call from block-uniform control flow.
template <typename T> __device__ T bsgd_sqdist(const T* z, const T* x, int d, T* red) {
    T part = (T)0;
    for (int k = threadIdx.x; k < d; k += blockDim.x) { T u = z[k] - x[k]; part += u * u; }
    return bsgd_block_sum<T>(part, red);
}

// Argmin of (v, i) over the block, lower index on ties; every thread gets the index (-1 if all +inf).
template <typename T> __device__ int bsgd_block_argmin(T v, int i, T* redv, int* redi) {
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        T ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (ov < v || (ov == v && oi >= 0 && (i < 0 || oi < i))) { v = ov; i = oi; }
    }
    __syncthreads();
    if (lane == 0) { redv[wid] = v; redi[wid] = i; }
    __syncthreads();
    T bv = redv[0];
    int bi = redi[0];
    for (int w = 1; w < nw; ++w) {
        T ov = redv[w];
        int oi = redi[w];
        if (ov < bv || (ov == bv && oi >= 0 && (bi < 0 || oi < bi))) { bv = ov; bi = oi; }
    }
    return bv < gpusvm_merge_inf<T>() ? bi : -1;
}

// Column j of the transposed SV copy svT (d x cap) and its squared norm svsq[j], from row j of sv. Each
// thread reads the entries of row j with the stride it uses to write rows (tid, tid + nt, ...), so it
// reads its own writes; the block sum synchronizes: call from block-uniform control flow.
template <typename T> __device__ void bsgd_set_column(const T* sv, T* svT, T* svsq, int d, long long cap, int j,
                                                      T* red) {
    T part = (T)0;
    for (int k = threadIdx.x; k < d; k += blockDim.x) {
        const T v = sv[(long long)j * d + k];
        svT[(long long)k * cap + j] = v;
        part += v * v;
    }
    const T q = bsgd_block_sum<T>(part, red);
    if (threadIdx.x == 0) svsq[j] = q;
}

// X: n x d (C order); y: signed sample weights (label in {-1, +1} times weight >= 0); order: sample of each
// of the n_steps steps; steps t0+1 .. t0+n_steps.
// sv: (budget+1) x d, alpha: budget+1, state[0]: number of SVs in/out; work_deg, work_h: budget+1.
// stats (+=): violations, merges, clock cycles in maintenance, clock cycles in total.
// use_cols: margins from the nonzeros of x (xptr, xidx, xval: CSR of X; xsq: squared row norms) against
// svT (d x (budget+1), column j = SV j) and svsq, both kept in step with sv; else from the rows of sv.
// Dynamic shared memory: x, z (2 d values of T), w (n_merge values of T), partners (n_merge ints);
// the host sizes it as (2 d + n_merge) sizeof(T) + n_merge sizeof(int).
template <typename T>
// (256 threads: launchable at any register count, 255 x 256 < 64K registers, so no __launch_bounds__)
__global__ void bsgd_train(const T* __restrict__ X, const T* __restrict__ y, const long long* __restrict__ order,
           long long n_steps, long long t0, int d, T lam, T gamma, int budget, int n_merge, int merge_code,
           int n_gss, int n_gd, T* sv, T* alpha, int* state, T* work_deg, T* work_h,
           unsigned long long* stats, const long long* __restrict__ xptr, const long long* __restrict__ xidx,
           const T* __restrict__ xval, const T* __restrict__ xsq, T* svT, T* svsq, int use_cols) {
    extern __shared__ __align__(16) unsigned char bsgd_smem[];
    T* xs = reinterpret_cast<T*>(bsgd_smem);
    T* z = xs + d;
    T* w = z + d;
    int* partners = reinterpret_cast<int*>(w + n_merge);
    __shared__ T red[32];
    __shared__ T redv[32];
    __shared__ int redi[32];

    const int tid = threadIdx.x, nt = blockDim.x;
    const int lane = tid & 31, wid = tid >> 5, nw = (nt + 31) >> 5;
    int nsv = state[0];  // uniform across the block
    const long long cap = (long long)budget + 1;
    unsigned long long c_start = clock64(), c_merge = 0, viol = 0, merges = 0;

    for (long long s = 0; s < n_steps; ++s) {
        const long long i = order[s];
        const T t = (T)(t0 + s + 1);
        __syncthreads();  // everyone is done with xs of the previous step
        for (int k = tid; k < d; k += nt) xs[k] = X[i * d + k];
        __syncthreads();

        // margin f(x) = sum_j alpha_j exp(-gamma ||sv_j - x||^2)
        T acc = (T)0;
        if (use_cols) {  // thread per SV: ||sv_j||^2 + ||x||^2 - 2 <sv_j, x> over the nonzeros of x
            const long long q0 = xptr[i], q1 = xptr[i + 1];
            const T xq = xsq[i];
            for (int j = tid; j < nsv; j += nt) {
                T dot = (T)0;
                for (long long q = q0; q < q1; ++q) dot += svT[xidx[q] * cap + j] * xval[q];
                T d2 = svsq[j] + xq - (T)2 * dot;
                if (d2 < (T)0) d2 = (T)0;
                acc += alpha[j] * gpusvm_exp<T>(-gamma * d2);
            }
        } else if (d < 32) {  // thread per SV
            for (int j = tid; j < nsv; j += nt) {
                const T* r = sv + (long long)j * d;
                T d2 = (T)0;
                for (int k = 0; k < d; ++k) { T u = r[k] - xs[k]; d2 += u * u; }
                acc += alpha[j] * gpusvm_exp<T>(-gamma * d2);
            }
        } else {  // warp per SV, lanes over features (coalesced rows)
            for (int j = wid; j < nsv; j += nw) {
                const T* r = sv + (long long)j * d;
                T d2 = (T)0;
                for (int k = lane; k < d; k += 32) { T u = r[k] - xs[k]; d2 += u * u; }
                d2 = bsgd_warp_sum<T>(d2);
                if (lane == 0) acc += alpha[j] * gpusvm_exp<T>(-gamma * d2);
            }
        }
        const T f = bsgd_block_sum<T>(acc, red);  // ends with a barrier: all reads of alpha are done

        const T scale = (T)1 - (T)1 / t;
        for (int j = tid; j < nsv; j += nt) alpha[j] *= scale;
        const T yi = y[i];
        if (yi * f < fabs(yi)) {  // yi = label x weight: y f < 1 for a positive weight, never for zero
            ++viol;
            for (int k = tid; k < d; k += nt) sv[(long long)nsv * d + k] = xs[k];
            if (use_cols) bsgd_set_column<T>(sv, svT, svsq, d, cap, nsv, red);
            if (tid == 0) alpha[nsv] = yi / (lam * t);
            ++nsv;
        }
        __syncthreads();
        if (nsv <= budget) continue;

        // ---- budget maintenance ------------------------------------------------------------
        unsigned long long c0 = clock64();
        ++merges;
        // first candidate: minimal |alpha|
        T bv = gpusvm_merge_inf<T>();
        int bi = -1;
        for (int j = tid; j < nsv; j += nt) {
            T a = fabs(alpha[j]);
            if (a < bv) { bv = a; bi = j; }
        }
        const int first = bsgd_block_argmin<T>(bv, bi, redv, redi);
        // merge search: one thread per candidate
        for (int j = tid; j < nsv; j += nt)
            gpusvm_merge_candidate<T>(sv, alpha, d, first, j, gamma, n_gss, work_deg, work_h);
        __syncthreads();
        // the n_merge - 1 best partners, increasing degradation, lower index on ties; "greedy" (code 2):
        // the BSGD_GREEDY_SHORTLIST (n_merge - 1) best, kept in work_h (its search values are not needed)
        const int n_pick = merge_code == 2 ? min(nsv - 1, BSGD_GREEDY_SHORTLIST * (n_merge - 1)) : n_merge - 1;
        // "cascade-light" (code 3): at most one partner with |alpha| > BSGD_HEAVY_RATIO |alpha_first|
        int found = 0;
        const T heavy_thr = (T)BSGD_HEAVY_RATIO * fabs(alpha[first]);
        bool heavy_taken = false;
        for (int r = 0; r < n_pick; ++r) {
            T v = gpusvm_merge_inf<T>();
            int vi = -1;
            for (int j = tid; j < nsv; j += nt) {
                T dj = work_deg[j];
                if (dj < v && !(heavy_taken && fabs(alpha[j]) > heavy_thr)) { v = dj; vi = j; }
            }
            int best = bsgd_block_argmin<T>(v, vi, redv, redi);
            if (best < 0) break;
            if (merge_code == 3 && fabs(alpha[best]) > heavy_thr) heavy_taken = true;
            if (tid == 0) {
                if (merge_code == 2) work_h[found] = (T)best;
                else partners[found] = best;
                work_deg[best] = gpusvm_merge_inf<T>();
            }
            ++found;
            __syncthreads();
        }
        __syncthreads();

        if (found == 0) {  // no same-sign SV: drop the first candidate
            const int last = nsv - 1;
            if (first != last) {
                for (int k = tid; k < d; k += nt) sv[(long long)first * d + k] = sv[(long long)last * d + k];
                if (use_cols) bsgd_set_column<T>(sv, svT, svsq, d, cap, first, red);
                if (tid == 0) alpha[first] = alpha[last];
            }
            --nsv;
            __syncthreads();
        } else {
            for (int k = tid; k < d; k += nt) z[k] = sv[(long long)first * d + k];
            T az = alpha[first];
            __syncthreads();
            if (merge_code == 2) {  // greedy: each next partner re-chosen against z among the shortlist
                const int n_cand = found;
                found = 0;
                for (int q = 0; q < n_merge - 1; ++q) {
                    T v = gpusvm_merge_inf<T>();
                    int vi = -1;
                    for (int c = tid; c < n_cand; c += nt) {  // one thread per shortlisted SV
                        const int pc = (int)work_h[c];
                        if (pc < 0) continue;  // merged already
                        const T* xc = sv + (long long)pc * d;
                        T d2c = (T)0;
                        for (int k = 0; k < d; ++k) { T u = z[k] - xc[k]; d2c += u * u; }
                        T hc, azc, dgc;
                        gpusvm_golden_merge<T>(az, alpha[pc], gamma * d2c, n_gss, &hc, &azc, &dgc);
                        if (dgc < v) { v = dgc; vi = c; }
                    }
                    const int bc = bsgd_block_argmin<T>(v, vi, redv, redi);
                    if (bc < 0) break;
                    const int p = (int)work_h[bc];
                    const T* xp = sv + (long long)p * d;
                    const T d2 = bsgd_sqdist<T>(z, xp, d, red);  // ends with a barrier: z reads are done
                    T h, az_new, dg;
                    gpusvm_golden_merge<T>(az, alpha[p], gamma * d2, n_gss, &h, &az_new, &dg);
                    for (int k = tid; k < d; k += nt) z[k] = h * z[k] + ((T)1 - h) * xp[k];
                    az = az_new;
                    if (tid == 0) { partners[found] = p; work_h[bc] = (T)(-1); }
                    ++found;
                    __syncthreads();
                }
            } else if (merge_code == 0 || merge_code == 3) {  // cascade: merge partners one after the other
                for (int q = 0; q < found; ++q) {
                    const int p = partners[q];
                    const T* xp = sv + (long long)p * d;
                    const T d2 = bsgd_sqdist<T>(z, xp, d, red);
                    T h, az_new, dg;
                    gpusvm_golden_merge<T>(az, alpha[p], gamma * d2, n_gss, &h, &az_new, &dg);
                    for (int k = tid; k < d; k += nt) z[k] = h * z[k] + ((T)1 - h) * xp[k];
                    az = az_new;
                    __syncthreads();
                }
            } else {  // gradient: all M at once, fixed-point (mean-shift step) ascent on g(z)
                T tot = az;
                for (int q = 0; q < found; ++q) tot += alpha[partners[q]];
                for (int k = tid; k < d; k += nt) {
                    T v = az * z[k];
                    for (int q = 0; q < found; ++q) {
                        const int p = partners[q];
                        v += alpha[p] * sv[(long long)p * d + k];
                    }
                    z[k] = v / tot;
                }
                __syncthreads();
                T g = (T)0;
                for (int it = 0; it <= n_gd; ++it) {
                    g = (T)0;
                    for (int q = 0; q <= found; ++q) {
                        const int p = q == 0 ? first : partners[q - 1];
                        const T* xp = sv + (long long)p * d;
                        const T d2 = bsgd_sqdist<T>(z, xp, d, red);
                        const T wq = alpha[p] * gpusvm_exp<T>(-gamma * d2);
                        if (tid == 0) w[q] = wq;
                        g += wq;
                    }
                    T norm = g;
                    if (g == (T)0) {  // (the same g in every thread: a uniform branch)
                        // every a_i k(x_i, z) underflowed: the weights relative to the largest exponent give
                        // the same step without 0 / 0 (NaN SVs), as the CPU loop (ops/bsgd.py, _maintain)
                        T emax = (T)0;
                        for (int q = 0; q <= found; ++q) {
                            const int p = q == 0 ? first : partners[q - 1];
                            const T* xp = sv + (long long)p * d;
                            const T e = -gamma * bsgd_sqdist<T>(z, xp, d, red);
                            emax = (q == 0 || e > emax) ? e : emax;
                        }
                        norm = (T)0;
                        for (int q = 0; q <= found; ++q) {
                            const int p = q == 0 ? first : partners[q - 1];
                            const T* xp = sv + (long long)p * d;
                            const T e = -gamma * bsgd_sqdist<T>(z, xp, d, red);
                            const T wq = alpha[p] * gpusvm_exp<T>(e - emax);
                            if (tid == 0) w[q] = wq;
                            norm += wq;
                        }
                        g = norm * gpusvm_exp<T>(emax);
                    }
                    if (it == n_gd) break;
                    __syncthreads();  // w visible; all reads of z for the distances are done
                    for (int k = tid; k < d; k += nt) {
                        T v = (T)0;
                        for (int q = 0; q <= found; ++q) {
                            const int p = q == 0 ? first : partners[q - 1];
                            v += w[q] * sv[(long long)p * d + k];
                        }
                        z[k] = v / norm;
                    }
                    __syncthreads();
                }
                az = g;
            }
            // merged point into the first candidate's slot
            for (int k = tid; k < d; k += nt) sv[(long long)first * d + k] = z[k];
            if (use_cols) bsgd_set_column<T>(sv, svT, svsq, d, cap, first, red);
            if (tid == 0) {
                alpha[first] = az;
                // partners in decreasing slot order (insertion sort; found < n_merge is small)
                for (int a = 1; a < found; ++a) {
                    int v = partners[a], b = a - 1;
                    while (b >= 0 && partners[b] < v) { partners[b + 1] = partners[b]; --b; }
                    partners[b + 1] = v;
                }
            }
            __syncthreads();
            for (int q = 0; q < found; ++q) {
                const int p = partners[q];
                const int last = nsv - 1;
                if (p != last) {
                    for (int k = tid; k < d; k += nt) sv[(long long)p * d + k] = sv[(long long)last * d + k];
                    if (use_cols) bsgd_set_column<T>(sv, svT, svsq, d, cap, p, red);
                    if (tid == 0) alpha[p] = alpha[last];
                }
                --nsv;
                __syncthreads();
            }
        }
        c_merge += clock64() - c0;
    }
    __syncthreads();
    if (tid == 0) {
        state[0] = nsv;
        stats[0] += viol;
        stats[1] += merges;
        stats[2] += c_merge;
        stats[3] += clock64() - c_start;
    }
}
