// The prelude: the text every generated kernel source starts with, everything a kernel needs
// besides its own function (the ABI struct, fixed-width integer types, the math op patterns call,
// half conversions); guarded so that several kernels can share one translation unit.
//
// The prelude includes no header: parsing <cmath> and <algorithm> cost the compiler about 0.1 s
// per translation unit, more than many kernels take to optimise, and every graph's first call
// waits for it. Math goes through the compiler's builtins (GCC and Clang both have them), which
// are what <cmath>'s overloads call: `loupe_exp(float)` is expf, `loupe_exp(double)` is exp.
// Kernel patterns call these loupe_ names.
//
// Compiled with LOUPE_VECTOR_MATH (cpu_isa.h), the transcendental ones are declared
// `omp declare simd` under their C names instead, so that in an `omp simd` loop GCC calls
// glibc's libmvec vector variants (up to 4 ulp, where the scalar functions are within 1), and
// the scalar code outside such loops calls the same C functions as before. `loupe_exp(float)`
// also steers clear of libmvec's slow path for results below the smallest normal float (below).
//
// Only the guard's closing line is a bare "#endif": readers of a kernel's source (the viewer's
// kernels panel, gui/viewmodel/source_highlight.cpp) find the end of the prelude by it, so the
// conditionals inside end with a comment.
#include "compiler/codegen/cpu/kernel_prelude.h"

namespace loupe::cpu_codegen {

namespace {

constexpr const char* kPrelude = R"(#ifndef LOUPE_KERNEL_PRELUDE
#define LOUPE_KERNEL_PRELUDE
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
// As <math.h> defines them.
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))

// A row group's row buffers (kernel_emitter.cpp), one per thread and call.
extern "C" void* malloc(__SIZE_TYPE__) noexcept;
extern "C" void free(void*) noexcept;
// How many threads a parallel loop gets (a column reduction's chunks, kernel_emitter.cpp).
extern "C" int omp_get_max_threads(void) noexcept;

// A float's bits and back (what std::bit_cast does), for exp's lane masks and the half and
// bfloat16 conversions.
static inline uint32_t loupe_bits(float x) {
  uint32_t b;
  __builtin_memcpy(&b, &x, 4);
  return b;
}
static inline float loupe_float(uint32_t b) {
  float x;
  __builtin_memcpy(&x, &b, 4);
  return x;
}

struct LoupeKernelArgs {
  int64_t rank;
  const int64_t* sizes;
  void* const* data;
  const int64_t* const* strides;
  const int64_t* scalars;
};

#define LOUPE_MATH_1(name)                                                                       \
  static inline float loupe_##name(float x) { return __builtin_##name##f(x); }                  \
  static inline double loupe_##name(double x) { return __builtin_##name(x); }
#ifdef LOUPE_VECTOR_MATH
// libmvec has unmasked variants only, hence notinbranch. The declarations match <math.h>'s,
// so the compiler still knows them as the builtins (constant folding, no errno).
#define LOUPE_VECTOR_MATH_1(name)                                                                \
  extern "C" {                                                                                 \
  _Pragma("omp declare simd notinbranch") float name##f(float) noexcept;                       \
  _Pragma("omp declare simd notinbranch") double name(double) noexcept;                        \
  }                                                                                            \
  static inline float loupe_##name(float x) { return name##f(x); }                              \
  static inline double loupe_##name(double x) { return name(x); }
// libmvec's vector expf computes the whole vector again with the scalar function when one
// lane's result is not a normal float (x below -87.34, the smallest normal's logarithm): 10 to 40
// times slower a vector, and every softmax row that a causal mask fills with -inf hits it. There
// exp(x) is exp(x / 2) squared (x / 2 is in the fast range; the square is subnormal, within 3 of
// its ulps), and zero below -104, where the square rounds to zero (-inf included). The lanes are
// picked with bit masks, not selects: GCC threads a select before the call and one after it on
// the same condition into two calls, one of them on the slow input. (The same for double, below
// -708.4, kept the baseline's loops scalar: SSE2 has no 64-bit integer compares for its masks.)
extern "C" {
_Pragma("omp declare simd notinbranch") float expf(float) noexcept;
_Pragma("omp declare simd notinbranch") double exp(double) noexcept;
}
static inline float loupe_exp(float x) {
  uint32_t keep = -static_cast<uint32_t>(!(x < -104.0f));  // all ones unless the result is 0
  uint32_t fast = -static_cast<uint32_t>(!(x < -87.33654f)); // all ones where expf is fast
  float half = loupe_float((loupe_bits(0.5f) & ~fast) | (loupe_bits(1.0f) & fast));
  float e = expf(loupe_float(loupe_bits(x) & keep) * half);
  float r = loupe_float((loupe_bits(e * e) & ~fast) | (loupe_bits(e) & fast));
  return loupe_float(loupe_bits(r) & keep);
}
static inline double loupe_exp(double x) { return exp(x); }
#else
#define LOUPE_VECTOR_MATH_1(name) LOUPE_MATH_1(name)
LOUPE_MATH_1(exp)
#endif // LOUPE_VECTOR_MATH
LOUPE_VECTOR_MATH_1(log)
LOUPE_VECTOR_MATH_1(log1p)
LOUPE_VECTOR_MATH_1(expm1)
LOUPE_VECTOR_MATH_1(sin)
LOUPE_VECTOR_MATH_1(cos)
LOUPE_VECTOR_MATH_1(tanh)
LOUPE_VECTOR_MATH_1(erf)
LOUPE_VECTOR_MATH_1(tan)
LOUPE_VECTOR_MATH_1(asin)
LOUPE_VECTOR_MATH_1(acos)
LOUPE_VECTOR_MATH_1(atan)
LOUPE_VECTOR_MATH_1(sinh)
LOUPE_VECTOR_MATH_1(cosh)
LOUPE_VECTOR_MATH_1(asinh)
LOUPE_VECTOR_MATH_1(acosh)
LOUPE_VECTOR_MATH_1(atanh)
LOUPE_VECTOR_MATH_1(log2)
LOUPE_VECTOR_MATH_1(log10)
LOUPE_VECTOR_MATH_1(exp2)
LOUPE_VECTOR_MATH_1(erfc)
#undef LOUPE_VECTOR_MATH_1
// Single instructions (or short inline sequences): they vectorise as they are.
LOUPE_MATH_1(sqrt)
LOUPE_MATH_1(floor)
LOUPE_MATH_1(ceil)
LOUPE_MATH_1(trunc)
LOUPE_MATH_1(nearbyint)
#undef LOUPE_MATH_1
static inline float loupe_fmod(float x, float y) { return __builtin_fmodf(x, y); }
static inline double loupe_fmod(double x, double y) { return __builtin_fmod(x, y); }
static inline float loupe_fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline double loupe_fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
static inline float loupe_abs(float x) { return __builtin_fabsf(x); }
static inline double loupe_abs(double x) { return __builtin_fabs(x); }
// An in-place gather's index (compiler/codegen/gather_load.h): a negative one counted from
// the end, then clamped into [0, size) so that no read leaves the gathered input.
static inline int64_t loupe_gather_index(int64_t index, int64_t size) {
  index = index < 0 ? index + size : index;
  return index < 0 ? 0 : (index >= size ? size - 1 : index);
}
// Integers (and bool) as std::abs has them: promoted to int at least.
template <typename T>
static inline auto loupe_abs(T x) { return x < 0 ? -x : +x; }

template <typename T> inline constexpr bool loupe_is_floating = false;
template <> inline constexpr bool loupe_is_floating<float> = true;
template <> inline constexpr bool loupe_is_floating<double> = true;

#ifdef LOUPE_VECTOR_MATH
extern "C" {
_Pragma("omp declare simd notinbranch") float powf(float, float) noexcept;
_Pragma("omp declare simd notinbranch") double pow(double, double) noexcept;
}
static inline float loupe_powf(float x, float e) { return powf(x, e); }
static inline double loupe_powd(double x, double e) { return pow(x, e); }
#else
static inline float loupe_powf(float x, float e) { return __builtin_powf(x, e); }
static inline double loupe_powd(double x, double e) { return __builtin_pow(x, e); }
#endif // LOUPE_VECTOR_MATH

// Floating pow as torch's CPU kernel computes it: with a constant exponent (pow.Tensor_Scalar)
// the exponents it special-cases take their short forms, so a cube is two multiplies, which
// vectorize, instead of a libm call per element; any other exponent, and every tensor exponent
// (pow.Tensor_Tensor, whose torch kernel calls pow throughout), calls pow, which then vectorises
// too (in a branch it could not: libmvec has no masked variants). Other type pairs compute in
// double, as std::pow's mixed overloads do.
template <typename T, typename E>
static inline auto loupe_pow(T x, E e) {
  if constexpr (loupe_is_floating<T> && loupe_is_floating<E>) {
    if (__builtin_constant_p(e)) {
      if (e == E(2)) return x * x;
      if (e == E(3)) return x * x * x;
      if (e == E(0.5)) return loupe_sqrt(x);
      if (e == E(-1)) return T(1) / x;
      if (e == E(-2)) return T(1) / (x * x);
    }
    if constexpr (sizeof(T) == sizeof(float)) return loupe_powf(x, static_cast<T>(e));
    else return loupe_powd(x, static_cast<T>(e));
  } else {
    return loupe_powd(static_cast<double>(x), static_cast<double>(e));
  }
}

// The half conversions select between their cases instead of branching, so that loops
// loading or storing f16 vectorise.
static inline float loupe_h2f(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  // A subnormal half (or zero) is mantissa * 2^-24, exactly.
  uint32_t subnormal =
      loupe_bits(static_cast<float>(static_cast<int32_t>(mantissa)) * 5.9604644775390625e-8f);
  uint32_t bits = exponent == 0    ? sign | subnormal
                  : exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)
                                   : sign | ((exponent + 112) << 23) | (mantissa << 13);
  return loupe_float(bits);
}

static inline uint16_t loupe_f2h(float value) {
  uint32_t x = loupe_bits(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  float magnitude = loupe_float(x);
  // Below the smallest normal half: a multiple of 2^-24, under 1024 of them, rounded as
  // nearbyint would (adding and taking away 2^23 rounds away the fraction in the current
  // rounding mode, to nearest even by default).
  uint32_t small = static_cast<uint32_t>(
      static_cast<int32_t>((magnitude * 16777216.0f + 8388608.0f) - 8388608.0f));
  uint32_t normal = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
  uint32_t half = x > 0x7f800000u    ? 0x7e00u
                  : x >= 0x477ff000u ? 0x7c00u
                  : x < 0x38800000u  ? small
                                     : normal;
  return static_cast<uint16_t>(sign | half);
}

static inline float loupe_bf2f(uint16_t b) { return loupe_float(static_cast<uint32_t>(b) << 16); }

static inline uint16_t loupe_f2bf(float value) {
  uint32_t x = loupe_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
#endif
)";

} // namespace

std::string_view kernelPrelude() {
  return kPrelude;
}

} // namespace loupe::cpu_codegen
