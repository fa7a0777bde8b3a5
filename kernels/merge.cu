// Merge search of BSGD budget maintenance (fused op merge_search, gpusvm/_backend/ops/merge.py):
// one thread per candidate SV, each running its own golden-section search on h, all independent.
#include "merge.cuh"

// gpusvm:instantiate merge_search<float>
// gpusvm:instantiate merge_search<double>

// sv: n_sv x d (C order), alpha: n_sv; writes deg[j], hs[j] for j < n_sv.
template <typename T>
__global__ void merge_search(const T* __restrict__ sv, const T* __restrict__ alpha, int n_sv, int d, int first,
                             T gamma, int n_gss, T* __restrict__ deg, T* __restrict__ hs) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_sv) return;
    gpusvm_merge_candidate<T>(sv, alpha, d, first, j, gamma, n_gss, deg, hs);
}
