// Dual coordinate descent sweeps for the linear SVM, in ONE persistent thread block.
//
// The GPU twin of gpusvm/_backend/ops/dcd.py (read its docstring for the problem, the state arrays and
// the two methods: LIBLINEAR's DCD with shrinking, and AVSF). The block's threads share each row's
// inner product <w, x_i> (warp shuffles, then one value per warp in shared memory) and the update
// w += delta * y_i * x_i; thread 0 does the scalar work: the step, shrinking, the AVSF schedule and
// preference update, and the end-of-sweep test. The random stream is the CPU twin's SplitMix64, so both
// visit the coordinates in the same order and differ only in the order of floating-point sums.
// Why one block: see gpusvm/_solvers/dcd.py ("GPU design").
//
// Launch: grid (1,), block (32, 128 or 256) threads (a multiple of 32, at most 1024).
#include "common.cuh"

// gpusvm:instantiate dcd_sweeps<float, false>
// gpusvm:instantiate dcd_sweeps<float, true>
// gpusvm:instantiate dcd_sweeps<double, false>
// gpusvm:instantiate dcd_sweeps<double, true>

#define DCD_CHANGE_RATE 0.2
#define DCD_PREF_MIN 0.05
#define DCD_PREF_MAX 20.0
#define DCD_PG_EPS 1e-12

// SplitMix64, identical to _next() in gpusvm/_backend/ops/dcd.py.
__device__ __forceinline__ unsigned long long dcd_next(unsigned long long& s) {
    s += 0x9E3779B97F4A7C15ULL;
    unsigned long long z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Uniform integer in [0, k) for 0 < k < 2^31 (multiply-shift on the top 31 bits), as _randint().
__device__ __forceinline__ long long dcd_randint(unsigned long long& s, long long k) {
    unsigned long long r = dcd_next(s) >> 33;
    return (long long)((r * (unsigned long long)k) >> 31);
}

__device__ __forceinline__ double dcd_uniform(unsigned long long& s) {
    return (double)(dcd_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ double dcd_warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Xd: dense rows (SPARSE == false), row i at Xd + i * ldx. data/indices/indptr: CSR (SPARSE == true),
// indices sorted and unique within a row (the threads update w[indices[p]] in parallel).
// w has d + 1 entries, w[d] being the weight of the constant feature of value `bias`.
// fstate/istate/rng_state: the CPU twin's layout (see the module docstring of ops/dcd.py).
template <typename T, bool SPARSE>
__global__ void dcd_sweeps(const T* __restrict__ Xd, const T* __restrict__ data,
                           const int* __restrict__ indices, const long long* __restrict__ indptr,
                           long long ldx, long long d,
                           const double* __restrict__ y, const double* __restrict__ qd,
                           const double* __restrict__ upper, const double* __restrict__ diag,
                           double bias, double* alpha, double* w, long long* order, double* pref,
                           double* fstate, long long* istate, unsigned long long* rng_state,
                           long long n, long long n_sweeps, double tol, int avsf, int shrinking) {
    __shared__ double red[32];
    __shared__ long long sh_i;  // the variable of the current step
    __shared__ double sh_coef;  // w += sh_coef * x_i after the step (0: no change)
    __shared__ int sh_go;       // 1 while the current sweep has steps left
    __shared__ int sh_stop;     // 1 once the solver has converged

    const int tid = threadIdx.x;
    const int nthreads = blockDim.x;
    const int lane = tid & 31;
    const int wid = tid >> 5;
    const int nwarps = (nthreads + 31) >> 5;
    const double INF = __longlong_as_double(0x7ff0000000000000LL);

    // Scalar state, meaningful in thread 0 only.
    unsigned long long rng = 0;
    long long active = 0, s = 0, sweeps = 0, updates = 0;
    int converged = 0, canstop = 0, first = 0;
    double pgmax_old = 0.0, pgmin_old = 0.0, pgmax_new = 0.0, pgmin_new = 0.0;
    double ref = 0.0, prefsum = 0.0, gap = 0.0;
    const double inv_n = 1.0 / (double)n;
    if (tid == 0) {
        rng = rng_state[0];
        active = istate[0];
        sweeps = istate[1];
        updates = istate[2];
        converged = (int)istate[3];
        canstop = (int)istate[4];
        pgmax_old = fstate[0];
        pgmin_old = fstate[1];
        ref = fstate[2];
        prefsum = fstate[3];
        gap = fstate[4];
    }

    for (long long sweep = 0; sweep < n_sweeps; ++sweep) {
        if (tid == 0) {
            sh_stop = converged;
            if (!converged) {
                if (avsf) {
                    // Algorithm 4: sequential randomized rounding of n * p_i / sum(p).
                    double psum = prefsum;
                    double newsum = 0.0;
                    long long pos = 0;
                    for (long long i = 0; i < n; ++i) {
                        double p = pref[i];
                        long long rem = n - pos;
                        long long k;
                        if (i == n - 1) {
                            k = rem;
                        } else {
                            double num = (psum < 1e-6) ? (double)rem : fmin((double)rem, rem * p / psum);
                            k = (long long)floor(num);
                            if (dcd_uniform(rng) < num - (double)k) ++k;
                            if (k > rem) k = rem;
                        }
                        for (long long j = 0; j < k; ++j) order[pos + j] = i;
                        pos += k;
                        psum -= p;
                        newsum += p;
                    }
                    prefsum = newsum;
                    active = n;
                }
                for (long long q = 0; q < active - 1; ++q) {  // Fisher-Yates
                    long long j = q + dcd_randint(rng, active - q);
                    long long t = order[q];
                    order[q] = order[j];
                    order[j] = t;
                }
                pgmax_new = 0.0;  // the range includes 0, as the CPU loop's (ops/dcd.py)
                pgmin_new = 0.0;
                first = (sweeps == 0);
                s = 0;
            }
        }
        __syncthreads();
        if (sh_stop) break;

        while (true) {
            if (tid == 0) {
                sh_go = s < active;
                if (sh_go) sh_i = order[s];
            }
            __syncthreads();  // also orders the previous step's writes to w before this dot product
            if (!sh_go) break;
            const long long i = sh_i;
            double part = 0.0;
            if (SPARSE) {
                const long long p1 = indptr[i + 1];
                for (long long p = indptr[i] + tid; p < p1; p += nthreads) part += (double)data[p] * w[indices[p]];
            } else {
                const T* row = Xd + i * ldx;
                for (long long j = tid; j < d; j += nthreads) part += (double)row[j] * w[j];
            }
            part = dcd_warp_sum(part);
            if (lane == 0) red[wid] = part;
            __syncthreads();
            if (tid == 0) {
                double dot = 0.0;
                for (int k = 0; k < nwarps; ++k) dot += red[k];
                const double yi = y[i];
                const double a = alpha[i];
                const double ub = upper[i];
                const double g = yi * (dot + bias * w[d]) - 1.0 + diag[i] * a;
                ++updates;
                double pg = 0.0;
                int shrink = 0;
                if (a == 0.0) {
                    if (shrinking && g > pgmax_old) shrink = 1;
                    else if (g < 0.0) pg = g;
                } else if (a >= ub) {
                    if (shrinking && g < pgmin_old) shrink = 1;
                    else if (g > 0.0) pg = g;
                } else {
                    pg = g;
                }
                sh_coef = 0.0;
                if (shrink) {
                    --active;
                    order[s] = order[active];
                    order[active] = i;
                } else {
                    pgmax_new = fmax(pgmax_new, pg);
                    pgmin_new = fmin(pgmin_new, pg);
                    double gain = 0.0;
                    if (fabs(pg) > DCD_PG_EPS) {
                        const double q = qd[i];
                        double na = (q > 0.0) ? fmin(fmax(a - g / q, 0.0), ub) : (g < 0.0 ? ub : 0.0);
                        const double delta = na - a;
                        if (delta != 0.0) {
                            alpha[i] = na;
                            sh_coef = delta * yi;
                            w[d] += sh_coef * bias;
                            gain = -(g * delta + 0.5 * q * delta * delta);
                        }
                    }
                    if (avsf) {  // Algorithm 5
                        if (first) {
                            ref += gain * inv_n;
                        } else {
                            const double change = ref > 0.0 ? DCD_CHANGE_RATE * (gain / ref - 1.0) : 0.0;
                            const double p_old = pref[i];
                            const double p_new = fmin(DCD_PREF_MAX, fmax(DCD_PREF_MIN, p_old * exp(change)));
                            pref[i] = p_new;
                            prefsum += p_new - p_old;
                            ref = (1.0 - inv_n) * ref + inv_n * gain;
                        }
                    }
                    ++s;
                }
            }
            __syncthreads();
            const double coef = sh_coef;
            if (coef != 0.0) {
                if (SPARSE) {
                    const long long p1 = indptr[i + 1];
                    for (long long p = indptr[i] + tid; p < p1; p += nthreads) w[indices[p]] += coef * (double)data[p];
                } else {
                    const T* row = Xd + i * ldx;
                    for (long long j = tid; j < d; j += nthreads) w[j] += coef * (double)row[j];
                }
            }
        }

        if (tid == 0) {  // end of the sweep: the stopping rule, shrinking bounds, canstop
            ++sweeps;
            gap = pgmax_new - pgmin_new;
            if (avsf) {
                if (gap <= tol) {
                    if (canstop) {
                        converged = 1;
                    } else {
                        for (long long i = 0; i < n; ++i) pref[i] = 1.0;
                        prefsum = (double)n;
                        canstop = 1;
                    }
                } else {
                    canstop = 0;
                }
            } else {
                if (gap <= tol) {
                    if (active == n) {
                        converged = 1;
                    } else {
                        active = n;
                        pgmax_old = INF;
                        pgmin_old = -INF;
                    }
                } else {
                    pgmax_old = pgmax_new > 0.0 ? pgmax_new : INF;
                    pgmin_old = pgmin_new < 0.0 ? pgmin_new : -INF;
                }
            }
        }
    }

    __syncthreads();
    if (tid == 0) {
        rng_state[0] = rng;
        istate[0] = active;
        istate[1] = sweeps;
        istate[2] = updates;
        istate[3] = converged;
        istate[4] = canstop;
        fstate[0] = pgmax_old;
        fstate[1] = pgmin_old;
        fstate[2] = ref;
        fstate[3] = prefsum;
        fstate[4] = gap;
    }
}
