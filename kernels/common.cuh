// Shared helpers for gpusvm's CUDA kernels. Included (inlined by the Python loader) by each .cu file.
#pragma once

// C99's INFINITY for NVRTC (which CuPy's RawModule uses): NVRTC has no host <math.h>, so kernels that
// use INFINITY compiled with nvcc (CI's check) but failed to compile under CuPy. nvcc builds keep the
// math.h definition. A float infinity, as in C99; it converts exactly to a double infinity.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// Grid-stride loop over [0, n).
#define GPUSVM_GRID_STRIDE(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)blockDim.x * gridDim.x)

template <typename T> __device__ __forceinline__ T gpusvm_exp(T x);
template <> __device__ __forceinline__ float gpusvm_exp<float>(float x) { return expf(x); }
template <> __device__ __forceinline__ double gpusvm_exp<double>(double x) { return exp(x); }

template <typename T> __device__ __forceinline__ T gpusvm_expm1(T x);
template <> __device__ __forceinline__ float gpusvm_expm1<float>(float x) { return expm1f(x); }
template <> __device__ __forceinline__ double gpusvm_expm1<double>(double x) { return expm1(x); }

template <typename T> __device__ __forceinline__ T gpusvm_tanh(T x);
template <> __device__ __forceinline__ float gpusvm_tanh<float>(float x) { return tanhf(x); }
template <> __device__ __forceinline__ double gpusvm_tanh<double>(double x) { return tanh(x); }

// x ** n for a small positive integer n, by repeated squaring (exact for the polynomial gram).
template <typename T> __device__ __forceinline__ T gpusvm_ipow(T x, int n) {
    T r = (T)1;
    while (n > 0) {
        if (n & 1) r *= x;
        x *= x;
        n >>= 1;
    }
    return r;
}

// The SVM kernel ("gram") applied to a dot product <x, y> and the squared norms of x and y.
// code: 0 linear, 1 poly, 2 rbf, 3 sigmoid (gpusvm._gram.GRAM_CODES).
template <typename T>
__device__ __forceinline__ T gpusvm_gram_value(T dot, T xn, T yn, int code, T gamma, T coef0, int degree) {
    switch (code) {
        case 1: return gpusvm_ipow<T>(gamma * dot + coef0, degree);
        case 2: {
            T d = xn + yn - (T)2 * dot;
            d = d > (T)0 ? d : (T)0;  // clip rounding below zero
            return gpusvm_exp<T>(-gamma * d);
        }
        case 3: return gpusvm_tanh<T>(gamma * dot + coef0);
        default: return dot;
    }
}
