// Gram blocks: the elementwise transform of a tile of dot products into kernel values.
// The dot products come from cuBLAS/cuSPARSE (one matrix product per tile); this kernel applies
// the gram function with the rows' squared norms and writes the tile into its place in the output,
// so the transform and the copy are one pass over memory.
#include "common.cuh"

// gpusvm:instantiate gram_transform<float>
// gpusvm:instantiate gram_transform<double>

// src: tile of dot products, nrows x ncols, C order (leading dimension ncols).
// dst: output block, row r of the tile at dst + r * ldd (dst may equal src when ldd == ncols).
// xn: squared norms of the tile's rows (nrows), yn: of its columns (ncols); read only for rbf.
// Launch: any 1-d grid (grid-stride loop over the tile's elements).
template <typename T>
__global__ void gram_transform(const T* src, T* dst, long long ldd,
                               const T* __restrict__ xn, const T* __restrict__ yn,
                               long long nrows, long long ncols, int code, T gamma, T coef0, int degree) {
    const long long total = nrows * ncols;
    if (total <= 0x7fffffffLL && (long long)blockDim.x * gridDim.x <= 0x7fffffffLL) {
        // Tiles are bounded by gram's byte budget, so this is the path taken: 32-bit index arithmetic,
        // because a 64-bit division per element (emulated, ~10x the instructions of a 32-bit one) costs
        // about as much as the element's memory traffic. k < 2**31 and stride <= 2**31 - 1: k + stride
        // never wraps.
        const unsigned int tot = (unsigned int)total, nc = (unsigned int)ncols;
        for (unsigned int k = blockIdx.x * blockDim.x + threadIdx.x; k < tot; k += blockDim.x * gridDim.x) {
            const unsigned int r = k / nc;
            const unsigned int c = k - r * nc;
            const T xr = code == 2 ? xn[r] : (T)0;
            const T yc = code == 2 ? yn[c] : (T)0;
            dst[(long long)r * ldd + c] = gpusvm_gram_value<T>(src[k], xr, yc, code, gamma, coef0, degree);
        }
        return;
    }
    GPUSVM_GRID_STRIDE(k, total) {
        const long long r = k / ncols;
        const long long c = k - r * ncols;
        const T xr = code == 2 ? xn[r] : (T)0;
        const T yc = code == 2 ? yn[c] : (T)0;
        dst[r * ldd + c] = gpusvm_gram_value<T>(src[k], xr, yc, code, gamma, coef0, degree);
    }
}

// gpusvm:instantiate csr_row_sqnorms<float, int>
// gpusvm:instantiate csr_row_sqnorms<double, int>
// gpusvm:instantiate csr_row_sqnorms<float, long long>
// gpusvm:instantiate csr_row_sqnorms<double, long long>

// out[r] = sum of data[p]^2 over the stored entries of CSR row r, accumulated in double.
// One warp per row (grid-stride over rows, the row loop is uniform within a warp): lanes stride over the
// row's entries, then a fixed-order shuffle reduction, so the result is the same on every run (a
// bincount / atomicAdd formulation is not). blockDim.x must be a multiple of 32.
template <typename T, typename I>
__global__ void csr_row_sqnorms(const T* __restrict__ data, const I* __restrict__ indptr, long long nrows,
                                double* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long r = warp; r < nrows; r += nwarps) {
        const long long p0 = (long long)indptr[r], p1 = (long long)indptr[r + 1];
        double acc = 0.0;
        for (long long p = p0 + lane; p < p1; p += 32) {
            const double v = (double)data[p];
            acc += v * v;
        }
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) out[r] = acc;
    }
}
