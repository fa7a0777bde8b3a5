// Device functions of SV merging for BSGD budget maintenance, shared by merge.cu (the merge-search op)
// and bsgd.cu (the persistent training loop). The CPU twins are in gpusvm/_backend/ops/merge.py and
// follow the same arithmetic step for step (see that module for the formulas and the choices made).
#pragma once
#include "common.cuh"

#define GPUSVM_GOLDEN 0.6180339887498949

// +inf without host headers (NVRTC has none)
template <typename T> __device__ __forceinline__ T gpusvm_merge_inf();
template <> __device__ __forceinline__ double gpusvm_merge_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
template <> __device__ __forceinline__ float gpusvm_merge_inf<float>() { return __int_as_float(0x7f800000); }

// s(h) = m kappa^((1-h)^2) + (1-m) kappa^(h^2), kappa = exp(-gd2)
template <typename T> __device__ __forceinline__ T gpusvm_merge_s(T h, T m, T gd2) {
    T u = (T)1 - h;
    return m * gpusvm_exp<T>(-gd2 * u * u) + ((T)1 - m) * gpusvm_exp<T>(-gd2 * h * h);
}

// Merge (ai, x_i), (aj, x_j), same sign, gamma ||x_i - x_j||^2 = gd2: golden-section search for h in
// [0, 1] with n_gss shrink steps (ties move the bracket left), h = the midpoint, then the endpoints
// h = 1 and h = 0 (free: they need only kappa) replace it when better; z = h x_i + (1 - h) x_j,
// coefficient *az, weight degradation *deg. Same arithmetic as golden_merge in ops/merge.py.
template <typename T>
__device__ void gpusvm_golden_merge(T ai, T aj, T gd2, int n_gss, T* h_out, T* az_out, T* deg_out) {
    const T g = (T)GPUSVM_GOLDEN;
    T tot = ai + aj;
    T m = ai / tot;
    T a = (T)0, b = (T)1;
    T c = b - g * (b - a);
    T d = a + g * (b - a);
    T fc = gpusvm_merge_s<T>(c, m, gd2);
    T fd = gpusvm_merge_s<T>(d, m, gd2);
    for (int it = 0; it < n_gss; ++it) {
        if (fc >= fd) {
            b = d; d = c; fd = fc;
            c = b - g * (b - a);
            fc = gpusvm_merge_s<T>(c, m, gd2);
        } else {
            a = c; c = d; fc = fd;
            d = a + g * (b - a);
            fd = gpusvm_merge_s<T>(d, m, gd2);
        }
    }
    T h = (T)0.5 * (a + b);
    T sh = gpusvm_merge_s<T>(h, m, gd2);
    const T kappa = gpusvm_exp<T>(-gd2);
    const T s1 = m + ((T)1 - m) * kappa;
    const T s0 = m * kappa + ((T)1 - m);
    if (s1 > sh) { h = (T)1; sh = s1; }
    if (s0 > sh) { h = (T)0; sh = s0; }
    T az = tot * sh;
    // ai^2 (1 - p^2) + aj^2 (1 - q^2) + 2 ai aj (kappa - p q), p = k(x_i, z), q = k(x_j, z): no
    // cancellation, so fused multiply-adds cannot move it away from the CPU twin (see ops/merge.py)
    const T u = (T)1 - h;
    const T pq = gpusvm_exp<T>(-gd2 * (u * u + h * h));
    T deg = -(ai * ai * gpusvm_expm1<T>((T)(-2) * gd2 * u * u) + aj * aj * gpusvm_expm1<T>((T)(-2) * gd2 * h * h))
            + (T)2 * ai * aj * pq * gpusvm_expm1<T>((T)(-2) * gd2 * h * u);
    *h_out = h;
    *az_out = az;
    *deg_out = deg < (T)0 ? (T)0 : deg;
}

// Score candidate j as merge partner of SV `first` (rows of length d in sv): degradation and h, or
// +inf for j == first and for coefficients of the other sign.
template <typename T>
__device__ __forceinline__ void gpusvm_merge_candidate(const T* sv, const T* alpha, int d, int first, int j,
                                                       T gamma, int n_gss, T* deg, T* hs) {
    T af = alpha[first], aj = alpha[j];
    if (j == first || aj * af <= (T)0) {
        deg[j] = gpusvm_merge_inf<T>();
        hs[j] = (T)0;
        return;
    }
    const T* xf = sv + (long long)first * d;
    const T* xj = sv + (long long)j * d;
    T d2 = (T)0;
    for (int k = 0; k < d; ++k) {
        T t = xf[k] - xj[k];
        d2 += t * t;
    }
    T h, az, dg;
    gpusvm_golden_merge<T>(af, aj, gamma * d2, n_gss, &h, &az, &dg);
    deg[j] = dg;
    hs[j] = h;
}
