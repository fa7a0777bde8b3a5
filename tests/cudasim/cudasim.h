// cudasim: runs gpusvm's CUDA C kernels on the CPU, for tests on machines without a GPU.
//
// Compiled with g++ in front of a kernels/*.cu source (see tests/cudasim/__init__.py). Each CUDA thread
// of a block is a fiber (ucontext) on ONE host thread; blocks of a grid run one after another. A fiber
// runs until it reaches a barrier (__syncthreads, or a warp shuffle) or returns; the scheduler releases
// a warp once all its live lanes wait at a shuffle, and the block once all its live threads wait at
// __syncthreads. Nothing runs truly in parallel, so a result is deterministic for a given schedule;
// the schedule order (threads forward or in reverse between barriers) is a launch option, and running a
// kernel under both orders exposes a missing __syncthreads (a read of shared memory that another thread
// of the same phase writes gives different results).
//
// Checked here and reported as launch errors: a barrier that not every live thread of the block reaches
// (a deadlock on the GPU), a thread that returns while the others still wait at __syncthreads (undefined
// behaviour in CUDA), a shuffle with a lane mask other than the full warp. Shared memory, dynamic and
// static, is filled with 0xFF bytes (NaN for floats, -1 for integers) before each block, so reading it
// before writing it shows up (a static __shared__ variable is registered, and filled, when the first
// thread passes its declaration). NOT modelled: the GPU's memory model and
// timing, out-of-bounds accesses (see the AddressSanitizer mode in __init__.py).
#pragma once
#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace cudasim {

enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_SYNC, DONE };

struct Fiber {
    ucontext_t ctx;  // only to start the fiber on its stack; switches use _setjmp/_longjmp (no syscall)
    jmp_buf env;
    bool started;
    dim3 tid;
    int linear;
    State state;
    unsigned long long xval;  // value offered at a shuffle
    int xsrc;                 // lane (within the block) it reads from; -1: its own value
    unsigned long long xres;  // value received
};

inline Fiber* cur = nullptr;
inline ucontext_t sched_ctx;
inline jmp_buf sched_env;
inline dim3 g_blockIdx, g_blockDim, g_gridDim;
inline unsigned char* dyn_smem = nullptr;
inline int error = 0;
inline char error_msg[1024];
inline void (*body)() = nullptr;

// static __shared__ variables (registered the first time a thread passes their declaration; the
// Python builder rewrites each declaration): filled with 0xFF bytes then and before every later block,
// as dynamic shared memory, since on the GPU they start as garbage in every block
inline std::vector<std::pair<void*, size_t>> shared_regions;
inline bool register_shared(void* p, size_t n) {
    std::memset(p, 0xFF, n);
    shared_regions.emplace_back(p, n);
    return true;
}

constexpr size_t STACK = 256 * 1024;
inline std::vector<char*> stacks;

inline void fail(int code, const char* msg) {
    if (!error) {
        error = code;
        std::snprintf(error_msg, sizeof error_msg, "%s (block %u,%u,%u)", msg, g_blockIdx.x, g_blockIdx.y,
                      g_blockIdx.z);
    }
}

inline void trampoline() {
    body();
    cur->state = DONE;
    _longjmp(sched_env, 1);
}

inline void block_yield(State s) {
    cur->state = s;
    if (!_setjmp(cur->env)) _longjmp(sched_env, 1);
}

inline void resume(Fiber& f) {
    cur = &f;
    if (_setjmp(sched_env)) return;  // back from the fiber
    if (!f.started) {
        f.started = true;
        setcontext(&f.ctx);
    }
    _longjmp(f.env, 1);
}

// Runs one block of nthreads fibers to completion; mode 0: forward order, 1: reverse.
inline void run_block(int nthreads, int mode) {
    static std::vector<Fiber> fibers;
    fibers.assign(nthreads, Fiber{});
    while ((int)stacks.size() < nthreads) stacks.push_back(static_cast<char*>(std::malloc(STACK)));
    for (int t = 0; t < nthreads; ++t) {
        Fiber& f = fibers[t];
        f.linear = t;
        f.tid = dim3(t % g_blockDim.x, (t / g_blockDim.x) % g_blockDim.y, t / (g_blockDim.x * g_blockDim.y));
        f.state = RUNNABLE;
        f.started = false;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks[t];
        f.ctx.uc_stack.ss_size = STACK;
        f.ctx.uc_link = &sched_ctx;
        makecontext(&f.ctx, trampoline, 0);
    }
    for (;;) {
        for (int k = 0; k < nthreads; ++k) {
            Fiber& f = fibers[mode == 1 ? nthreads - 1 - k : k];
            if (f.state == RUNNABLE) resume(f);
        }
        cur = nullptr;
        int live = 0, at_block = 0;
        for (auto& f : fibers) {
            live += f.state != DONE;
            at_block += f.state == AT_BLOCK_BARRIER;
        }
        if (live == 0) return;
        bool released = false;
        for (int w0 = 0; w0 < nthreads; w0 += 32) {
            int w1 = std::min(nthreads, w0 + 32), wlive = 0, wsync = 0;
            for (int t = w0; t < w1; ++t) {
                wlive += fibers[t].state != DONE;
                wsync += fibers[t].state == AT_WARP_SYNC;
            }
            if (wsync == 0) continue;
            if (wsync != wlive) continue;  // lanes still at the block barrier: maybe later
            for (int t = w0; t < w1; ++t) {
                Fiber& f = fibers[t];
                if (f.state != AT_WARP_SYNC) continue;
                int s = f.xsrc;
                f.xres = (s >= 0 && s < nthreads && fibers[s].state == AT_WARP_SYNC) ? fibers[s].xval : f.xval;
            }
            for (int t = w0; t < w1; ++t)
                if (fibers[t].state == AT_WARP_SYNC) fibers[t].state = RUNNABLE;
            released = true;
        }
        if (released) continue;
        if (at_block == live) {
            if (live != nthreads) {
                fail(3, "a thread returned while others of its block wait at __syncthreads (undefined in CUDA)");
                return;
            }
            for (auto& f : fibers) f.state = RUNNABLE;
            continue;
        }
        fail(2, "deadlock: a warp shuffle or __syncthreads that not every live thread reaches");
        return;
    }
}

inline int launch(dim3 grid, dim3 block, size_t shmem, void (*fn)(), int mode) {
    error = 0;
    error_msg[0] = 0;
    g_gridDim = grid;
    g_blockDim = block;
    body = fn;
    int nthreads = (int)(block.x * block.y * block.z);
    if (nthreads <= 0 || nthreads > 1024) {
        fail(1, "block size must be 1..1024 threads");
        return error;
    }
    std::vector<unsigned char> smem(shmem + 16);
    dyn_smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem.data()) + 15) & ~uintptr_t(15));
    for (unsigned bz = 0; bz < grid.z && !error; ++bz)
        for (unsigned by = 0; by < grid.y && !error; ++by)
            for (unsigned bx = 0; bx < grid.x && !error; ++bx) {
                g_blockIdx = dim3(bx, by, bz);
                std::memset(dyn_smem, 0xFF, shmem);
                for (auto& r : shared_regions) std::memset(r.first, 0xFF, r.second);
                run_block(nthreads, mode);
            }
    return error;
}

// ---- shuffles -------------------------------------------------------------------------------------
template <typename T>
inline T shuffle(unsigned mask, T v, int src_in_warp) {
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    if (mask != 0xffffffffu) fail(4, "warp shuffle with a partial lane mask (not modelled)");
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    cur->xval = bits;
    cur->xsrc = src_in_warp < 0 ? -1 : (cur->linear & ~31) + src_in_warp;
    block_yield(AT_WARP_SYNC);
    T out;
    std::memcpy(&out, &cur->xres, sizeof(T));
    return out;
}

// ---- kernel signatures (checked against the Python arguments before a launch) -------------------------
template <typename T>
constexpr int type_code() {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>) return 1;
    else if constexpr (std::is_same_v<U, double>) return 2;
    else if constexpr (std::is_same_v<U, bool>) return 7;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 4) return std::is_signed_v<U> ? 3 : 5;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 8) return std::is_signed_v<U> ? 4 : 6;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 1) return 8;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 2) return 10;
    else return 9;
}

template <typename A>
constexpr int param_code() {
    if constexpr (std::is_pointer_v<A>) {
        using E = std::remove_pointer_t<A>;
        return 100 + type_code<E>() + (std::is_const_v<E> ? 1000 : 0);
    } else {
        return type_code<A>();
    }
}

template <typename... A>
int signature(void (*)(A...), int* codes, int cap) {
    int c[] = {param_code<A>()..., 0};
    int n = (int)sizeof...(A);
    for (int i = 0; i < n && i < cap; ++i) codes[i] = c[i];
    return n;
}

template <typename... A, size_t... I>
void call_impl(void (*k)(A...), void** args, std::index_sequence<I...>) {
    k(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}

template <typename... A>
void call(void (*k)(A...), void** args) {
    call_impl(k, args, std::index_sequence_for<A...>{});
}

}  // namespace cudasim

// ---- the CUDA names the kernels use --------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define threadIdx (cudasim::cur->tid)
#define blockIdx (cudasim::g_blockIdx)
#define blockDim (cudasim::g_blockDim)
#define gridDim (cudasim::g_gridDim)
#define warpSize 32

inline void __syncthreads() { cudasim::block_yield(cudasim::AT_BLOCK_BARRIER); }

template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    int lane = cudasim::cur->linear & 31;
    int seg = lane & ~(width - 1), within = lane - seg;
    int src = within + (int)delta < width ? lane + (int)delta : -1;
    return cudasim::shuffle(mask, v, src);
}

template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    int lane = cudasim::cur->linear & 31;
    int seg = lane & ~(width - 1), within = lane - seg;
    int s = within ^ lane_mask;
    return cudasim::shuffle(mask, v, s < width ? seg + s : -1);
}

template <typename T>
inline T atomicAdd(T* p, T v) {  // fibers never run at the same time: a plain read-modify-write
    T old = *p;
    *p = old + v;
    return old;
}

inline long long clock64() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __longlong_as_double(long long v) {
    double d;
    std::memcpy(&d, &v, 8);
    return d;
}
inline float __int_as_float(int v) {
    float f;
    std::memcpy(&f, &v, 4);
    return f;
}

using std::exp;
using std::expm1;
using std::fabs;
using std::fmax;
using std::fmin;
using std::sqrt;
using std::tanh;
using std::sin;
inline float expf(float x) { return std::exp(x); }
inline float expm1f(float x) { return std::expm1(x); }
inline float tanhf(float x) { return std::tanh(x); }

// CUDA's integer min/max overloads (mixed int / long long arguments promote, as in CUDA's headers)
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long long min(int a, long long b) { return min((long long)a, b); }
inline long long min(long long a, int b) { return min(a, (long long)b); }
inline long long max(int a, long long b) { return max((long long)a, b); }
inline long long max(long long a, int b) { return max(a, (long long)b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
