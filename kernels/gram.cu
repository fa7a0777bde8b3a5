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
template <typename T>
__global__ void gram_transform(const T* src, T* dst, long long ldd,
                               const T* __restrict__ xn, const T* __restrict__ yn,
                               long long nrows, long long ncols, int code, T gamma, T coef0, int degree) {
    GPUSVM_GRID_STRIDE(k, nrows * ncols) {
        long long r = k / ncols;
        long long c = k - r * ncols;
        T xr = code == 2 ? xn[r] : (T)0;
        T yc = code == 2 ? yn[c] : (T)0;
        dst[r * ldd + c] = gpusvm_gram_value<T>(src[k], xr, yc, code, gamma, coef0, degree);
    }
}
