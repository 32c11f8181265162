// The text every generated CUDA translation unit starts with: what NVRTC compiles besides the
// kernel itself. NVRTC here has no system headers, so nothing is included: the fixed-width
// integer types are typedefs, the math that op patterns call (loupe_exp, loupe_pow, ...) maps onto
// the CUDA math functions NVRTC knows without headers (expf, tanhf, erff, ...), and the half
// conversions are PTX (f16) or bit operations (bf16). The names and semantics are those of the CPU
// prelude (cpu/kernel_prelude.cpp), so the registry's scalar expressions compile unchanged.
//
// Also here: 16-byte vector loads and stores, and the warp and block reductions of the row
// reduction entry (docs/cuda-codegen.md).
#include "compiler/codegen/cuda/cuda_prelude.h"

namespace loupe::cuda_codegen {

namespace {

constexpr const char* kPrelude = R"(#ifndef LOUPE_CUDA_PRELUDE
#define LOUPE_CUDA_PRELUDE
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INFINITY (__int_as_float(0x7f800000))
#define NAN (__int_as_float(0x7fc00000))

#define LOUPE_MATH_1(name)                                                                       \
  __device__ __forceinline__ float loupe_##name(float x) { return name##f(x); }          \
  __device__ __forceinline__ double loupe_##name(double x) { return name(x); }
LOUPE_MATH_1(exp)
LOUPE_MATH_1(log)
LOUPE_MATH_1(log1p)
LOUPE_MATH_1(expm1)
LOUPE_MATH_1(sqrt)
LOUPE_MATH_1(sin)
LOUPE_MATH_1(cos)
LOUPE_MATH_1(tanh)
LOUPE_MATH_1(erf)
LOUPE_MATH_1(tan)
LOUPE_MATH_1(asin)
LOUPE_MATH_1(acos)
LOUPE_MATH_1(atan)
LOUPE_MATH_1(sinh)
LOUPE_MATH_1(cosh)
LOUPE_MATH_1(asinh)
LOUPE_MATH_1(acosh)
LOUPE_MATH_1(atanh)
LOUPE_MATH_1(log2)
LOUPE_MATH_1(log10)
LOUPE_MATH_1(exp2)
LOUPE_MATH_1(erfc)
LOUPE_MATH_1(floor)
LOUPE_MATH_1(ceil)
LOUPE_MATH_1(trunc)
LOUPE_MATH_1(nearbyint)
#undef LOUPE_MATH_1
__device__ __forceinline__ float loupe_fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double loupe_fmod(double x, double y) { return fmod(x, y); }
__device__ __forceinline__ float loupe_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double loupe_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float loupe_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double loupe_abs(double x) { return fabs(x); }
// An in-place gather's index (compiler/codegen/gather_load.h): a negative one counted from
// the end, then clamped into [0, size) so that no read leaves the gathered input.
__device__ __forceinline__ int64_t loupe_gather_index(int64_t index, int64_t size) {
  index = index < 0 ? index + size : index;
  return index < 0 ? 0 : (index >= size ? size - 1 : index);
}
// Integers (and bool) as std::abs has them: promoted to int at least.
template <typename T>
__device__ __forceinline__ auto loupe_abs(T x) { return x < 0 ? -x : +x; }

template <typename T> struct loupe_is_floating { static constexpr bool value = false; };
template <> struct loupe_is_floating<float> { static constexpr bool value = true; };
template <> struct loupe_is_floating<double> { static constexpr bool value = true; };

// As the CPU prelude: torch's special cases for constant exponents fold to multiplies; other
// type pairs compute in double, as std::pow's mixed overloads do.
template <typename T, typename E>
__device__ __forceinline__ auto loupe_pow(T x, E e) {
  if constexpr (loupe_is_floating<T>::value && loupe_is_floating<E>::value) {
    if (e == E(2)) return x * x;
    if (e == E(3)) return x * x * x;
    if (e == E(0.5)) return loupe_sqrt(x);
    if (e == E(-1)) return T(1) / x;
    if (e == E(-2)) return T(1) / (x * x);
    if constexpr (sizeof(T) == sizeof(float)) return powf(x, static_cast<T>(e));
    else return pow(x, static_cast<T>(e));
  } else {
    return pow(static_cast<double>(x), static_cast<double>(e));
  }
}

// Half types travel as their bits (uint16_t). Both conversions to them round to nearest even
// with one PTX cvt, as torch's own CUDA kernels do on sm_80 and later (__float2bfloat16): a NaN
// becomes the canonical NaN. The bit trick the CPU prelude uses took six instructions a value,
// a tenth of a bf16 layer norm's time on an H100 (docs/cuda-codegen.md).
__device__ __forceinline__ float loupe_h2f(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ uint16_t loupe_f2h(float value) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(value));
  return h;
}
__device__ __forceinline__ float loupe_bf2f(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}
__device__ __forceinline__ uint16_t loupe_f2bf(float value) {
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(value));
  return b;
}

// N elements of T at p, which is aligned to the chunk used: 16 bytes at a time when N * sizeof(T)
// is a multiple of 16, else the largest power of two that divides it (host-checked alignment).
template <typename Chunk, typename T, int N>
__device__ __forceinline__ void loupe_copy_chunks(T (&to)[N], const T* from) {
  #pragma unroll
  for (int i = 0; i < int(N * sizeof(T) / sizeof(Chunk)); ++i)
    reinterpret_cast<Chunk*>(to)[i] = reinterpret_cast<const Chunk*>(from)[i];
}
template <typename Chunk, typename T, int N>
__device__ __forceinline__ void loupe_store_chunks(T* to, const T (&from)[N]) {
  #pragma unroll
  for (int i = 0; i < int(N * sizeof(T) / sizeof(Chunk)); ++i)
    reinterpret_cast<Chunk*>(to)[i] = reinterpret_cast<const Chunk*>(from)[i];
}
template <typename T, int N>
__device__ __forceinline__ void loupe_vload(T (&to)[N], const T* from) {
  constexpr int bytes = N * sizeof(T);
  if constexpr (bytes % 16 == 0) loupe_copy_chunks<uint4>(to, from);
  else if constexpr (bytes % 8 == 0) loupe_copy_chunks<uint2>(to, from);
  else if constexpr (bytes % 4 == 0) loupe_copy_chunks<uint32_t>(to, from);
  else if constexpr (bytes % 2 == 0) loupe_copy_chunks<uint16_t>(to, from);
  else loupe_copy_chunks<uint8_t>(to, from);
}
template <typename T, int N>
__device__ __forceinline__ void loupe_vstore(T* to, const T (&from)[N]) {
  constexpr int bytes = N * sizeof(T);
  if constexpr (bytes % 16 == 0) loupe_store_chunks<uint4>(to, from);
  else if constexpr (bytes % 8 == 0) loupe_store_chunks<uint2>(to, from);
  else if constexpr (bytes % 4 == 0) loupe_store_chunks<uint32_t>(to, from);
  else if constexpr (bytes % 2 == 0) loupe_store_chunks<uint16_t>(to, from);
  else loupe_store_chunks<uint8_t>(to, from);
}

// Lane exchange for every accumulator type (bool travels as an int).
__device__ __forceinline__ float loupe_shfl_xor(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ double loupe_shfl_xor(double v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ int64_t loupe_shfl_xor(int64_t v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ bool loupe_shfl_xor(bool v, int mask) {
  return __shfl_xor_sync(0xffffffffu, static_cast<int>(v), mask) != 0;
}

// Every lane of the warp ends with the combination of all 32 lanes' values.
template <typename T, typename Combine>
__device__ __forceinline__ T loupe_warp_reduce(T v, Combine combine) {
  #pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) v = combine(v, loupe_shfl_xor(v, mask));
  return v;
}

// The combination of the values of the blockDim.x threads of one row (a multiple of 32, at most
// 1024), valid in thread x = 0. Rows of one warp (blockDim.x == 32) need no shared memory or
// barrier, so a block may hold several; a wider row is the whole block (blockDim.y == 1), whose
// threads all call this. `partials` holds 32 values; it is free again on return.
template <typename T, typename Combine>
__device__ __forceinline__ T loupe_row_reduce(T v, T identity, Combine combine, T* partials) {
  v = loupe_warp_reduce(v, combine);
  if (blockDim.x == 32) return v;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  if (warp == 0) v = loupe_warp_reduce(lane < int(blockDim.x / 32) ? partials[lane] : identity, combine);
  __syncthreads();
  return v;
}

// loupe_row_reduce's combination, in every thread of the row: the next pass over the row reads
// it. The butterfly of loupe_warp_reduce leaves it in every lane of a warp row already.
template <typename T, typename Combine>
__device__ __forceinline__ T loupe_row_allreduce(T v, T identity, Combine combine, T* partials) {
  v = loupe_row_reduce(v, identity, combine, partials);
  if (blockDim.x == 32) return v;
  if (threadIdx.x == 0) partials[0] = v;
  __syncthreads();
  v = partials[0];
  __syncthreads();
  return v;
}

// The combination of the values of the blockDim.y threads that share threadIdx.x (one output
// each: the split entry's tiles), valid where threadIdx.y == 0. blockDim.x is a power of two of
// at most 32, and the block whole warps (at most 512 threads), all of which call this: a warp
// holds 32 / blockDim.x rows of threads, combined by the shuffles across rows, then thread
// (x, 0) combines the warps' values in warp order. `partials` holds 512 values; it is free again
// on return.
template <typename T, typename Combine>
__device__ __forceinline__ T loupe_column_reduce(T v, T identity, Combine combine, T* partials) {
  for (int mask = 16; mask >= int(blockDim.x); mask /= 2) v = combine(v, loupe_shfl_xor(v, mask));
  const int thread = threadIdx.y * blockDim.x + threadIdx.x;
  const int lane = thread % 32, warp = thread / 32, warps = blockDim.x * blockDim.y / 32;
  if (lane < int(blockDim.x)) partials[warp * 32 + lane] = v;
  __syncthreads();
  if (threadIdx.y == 0) {
    v = identity;
    for (int w = 0; w < warps; ++w) v = combine(v, partials[w * 32 + threadIdx.x]);
  }
  __syncthreads();
  return v;
}
#endif
)";

} // namespace

std::string_view cudaPrelude() {
  return kPrelude;
}

} // namespace loupe::cuda_codegen
