// cuBLASLt matmuls on the GPU against a float64 host reference: f32, bf16 and f16, transposed
// operands, batches, bias and activation epilogues, padded and misaligned operands. Without a
// device, that cuBLASLt reports itself unavailable and refuses to run.
#include "compiler/runtime/cuda/cublaslt_matmul.h"

#include "compiler/tensor/tensor.h"
#include "cuda_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace loupe {
namespace {

#define LOUPE_REQUIRE_CUBLASLT()                                                                   \
  do {                                                                                             \
    LOUPE_REQUIRE_CUDA_DEVICE();                                                                   \
    std::string why_;                                                                              \
    if (!cublasLtAvailable(&why_)) GTEST_SKIP() << why_;                                           \
  } while (0)

// Host values of one dtype: the float each element holds and its bytes.
struct HostBuffer {
  DType dtype;
  std::vector<float> values;
  std::vector<uint8_t> bytes;

  HostBuffer(DType type, size_t count)
      : dtype(type), values(count), bytes(count * dtypeSize(type)) {}

  void set(size_t i, float value) {
    if (dtype == DType::F32) {
      std::memcpy(&bytes[i * 4], &value, 4);
    } else {
      uint16_t bits = dtype == DType::BF16 ? floatToBfloat16(value) : floatToHalf(value);
      std::memcpy(&bytes[i * 2], &bits, 2);
      value = dtype == DType::BF16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
    }
    values[i] = value;
  }

  float get(size_t i) const {
    if (dtype == DType::F32) {
      float value;
      std::memcpy(&value, &bytes[i * 4], 4);
      return value;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[i * 2], 2);
    return dtype == DType::BF16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
  }
};

// The elements a strided operand spans: its last element's offset plus one.
size_t span(int64_t batch, int64_t rows, int64_t cols, const int64_t strides[3]) {
  return size_t((batch - 1) * strides[0] + (rows - 1) * strides[1] + (cols - 1) * strides[2] + 1);
}

double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// d/dx of geluTanh: what the DGELU epilogue multiplies the product by.
double geluTanhDerivative(double x) {
  double inner = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  double t = std::tanh(inner);
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
}

// The epilogue's value of the product `x`, the auxiliary matrix holding `aux` (DGelu's input).
double activate(MatmulEpilogue epilogue, double x, double aux = 0) {
  switch (epilogue) {
  case MatmulEpilogue::Relu:
  case MatmulEpilogue::BiasRelu:
    return x > 0 ? x : 0;
  case MatmulEpilogue::Gelu:
  case MatmulEpilogue::BiasGelu:
  case MatmulEpilogue::GeluAux:
  case MatmulEpilogue::BiasGeluAux:
    return geluTanh(x);
  case MatmulEpilogue::DGelu:
    return x * geluTanhDerivative(aux);
  default:
    return x;
  }
}

struct MatmulRun {
  std::string algorithm;
  HostBuffer a, b, c, bias;
  HostBuffer aux; // hasAux: GELU's input, written by GeluAux, read by DGelu
};

// Fills A, B and the bias with values in [-range, range], runs the problem on the GPU (with A
// placed `aOffset` elements into its buffer, to misalign it) and returns the inputs and the output.
MatmulRun runOnDevice(const MatmulProblem& p, unsigned seed, size_t aOffset = 0, float range = 1) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-range, range);
  MatmulRun run{
      "",
      HostBuffer(p.dtype, aOffset + span(p.batch, p.m, p.k, p.aStrides)),
      HostBuffer(p.dtype, span(p.batch, p.k, p.n, p.bStrides)),
      HostBuffer(p.dtype, span(p.batch, p.m, p.n, p.cStrides)),
      HostBuffer(p.biasDType, size_t(p.n)),
      HostBuffer(p.dtype, hasAux(p.epilogue) ? span(p.batch, p.m, p.n, p.auxStrides) : 1)};
  for (HostBuffer* input : {&run.a, &run.b, &run.bias, &run.aux})
    for (size_t i = 0; i < input->values.size(); ++i)
      input->set(i, uniform(random));

  CudaDeviceMemory a(run.a.bytes.size(), 0), b(run.b.bytes.size(), 0), c(run.c.bytes.size(), 0),
      bias(run.bias.bytes.size(), 0), aux(run.aux.bytes.size(), 0),
      workspace(kCublasLtWorkspaceBytes, 0);
  cudaCopyAsync(a.data(), run.a.bytes.data(), a.bytes(), nullptr);
  cudaCopyAsync(b.data(), run.b.bytes.data(), b.bytes(), nullptr);
  cudaCopyAsync(bias.data(), run.bias.bytes.data(), bias.bytes(), nullptr);
  cudaMemsetAsync(c.data(), 0xff, c.bytes(), nullptr); // NaN: an element not written shows
  bool auxIn = p.epilogue == MatmulEpilogue::DGelu;
  if (auxIn)
    cudaCopyAsync(aux.data(), run.aux.bytes.data(), aux.bytes(), nullptr);
  else
    cudaMemsetAsync(aux.data(), 0xff, aux.bytes(), nullptr);
  const void* aStart = static_cast<const char*>(a.data()) + aOffset * dtypeSize(p.dtype);
  run.algorithm =
      runCublasLtMatmul(p, aStart, b.data(), c.data(), bias.data(), nullptr, workspace.data(),
                        workspace.bytes(), 0, hasAux(p.epilogue) ? aux.data() : nullptr);
  cudaCopyAsync(run.c.bytes.data(), c.data(), c.bytes(), nullptr);
  if (!auxIn) cudaCopyAsync(run.aux.bytes.data(), aux.data(), aux.bytes(), nullptr);
  cudaCheckAsyncErrors(nullptr, "the cuBLASLt matmul");
  return run;
}

// Checks every output element against the float64 reference: the error of a dot product is
// bounded relative to the sum of its terms' magnitudes, so that is the scale `tolerance` is of.
void expectMatchesReference(const MatmulProblem& p, const MatmulRun& run, double tolerance,
                            size_t aOffset = 0) {
  auto at = [](const int64_t strides[3], int64_t b, int64_t i, int64_t j) {
    return size_t(b * strides[0] + i * strides[1] + j * strides[2]);
  };
  bool bias = hasBias(p.epilogue);
  int failures = 0;
  for (int64_t batch = 0; batch < p.batch; ++batch)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = bias ? run.bias.values[j] : 0, magnitude = bias ? std::abs(sum) : 0;
        for (int64_t k = 0; k < p.k; ++k) {
          double term = double(run.a.values[aOffset + at(p.aStrides, batch, i, k)]) *
                        run.b.values[at(p.bStrides, batch, k, j)];
          sum += term;
          magnitude += std::abs(term);
        }
        size_t auxAt = at(p.auxStrides, batch, i, j);
        bool auxIn = p.epilogue == MatmulEpilogue::DGelu;
        double expected = activate(p.epilogue, sum, auxIn ? run.aux.values[auxAt] : 0);
        double got = run.c.get(at(p.cStrides, batch, i, j));
        if (!(std::abs(got - expected) <= tolerance * std::max(magnitude, 1.0)) && ++failures < 5)
          ADD_FAILURE() << "C[" << batch << ", " << i << ", " << j << "] = " << got << ", expected "
                        << expected << " (" << run.algorithm << ")";
        // GeluAux stores the GELU's input, the product (plus the bias), beside C.
        if (!hasAux(p.epilogue) || auxIn) continue;
        double stored = run.aux.get(auxAt);
        if (!(std::abs(stored - sum) <= tolerance * std::max(magnitude, 1.0)) && ++failures < 5)
          ADD_FAILURE() << "aux[" << batch << ", " << i << ", " << j << "] = " << stored
                        << ", expected " << sum << " (" << run.algorithm << ")";
      }
  EXPECT_EQ(failures, 0);
}

MatmulProblem problem(DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k) {
  MatmulProblem p;
  p.dtype = dtype;
  p.biasDType = dtype;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  int64_t a[3] = {m * k, k, 1}, b[3] = {k * n, n, 1}, c[3] = {m * n, n, 1};
  std::copy(a, a + 3, p.aStrides);
  std::copy(b, b + 3, p.bStrides);
  std::copy(c, c + 3, p.cStrides);
  return p;
}

void transposeA(MatmulProblem& p) { // A is the transpose of a contiguous k x m matrix
  int64_t strides[3] = {p.m * p.k, 1, p.m};
  std::copy(strides, strides + 3, p.aStrides);
}

void transposeB(MatmulProblem& p) { // B is the transpose of a contiguous n x k matrix
  int64_t strides[3] = {p.k * p.n, 1, p.k};
  std::copy(strides, strides + 3, p.bStrides);
}

TEST(CudaCublasLtMissing, UnavailableWithoutTheDriver) {
  LOUPE_REQUIRE_NO_CUDA_DRIVER();
  std::string why;
  EXPECT_FALSE(cublasLtAvailable(&why));
  EXPECT_NE(why.find("cuBLASLt is not used: CUDA is not available"), std::string::npos) << why;
  MatmulProblem p = problem(DType::F32, 1, 2, 2, 2);
  try {
    runCublasLtMatmul(p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0);
    ADD_FAILURE() << "ran without a driver";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "cuda");
    EXPECT_NE(error.message().find("CUDA is not available"), std::string::npos) << error.what();
  }
}

TEST(CudaCublasLt, RefusesWhatItCannotRun) {
  MatmulProblem p = problem(DType::I32, 1, 2, 2, 2);
  try {
    runCublasLtMatmul(p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0);
    ADD_FAILURE() << "ran an i32 matmul";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("cuBLASLt cannot run the i32 matmul"), std::string::npos)
        << error.what();
  }
}

TEST(CudaCublasLt, AvailableOnAGpuMachine) {
  LOUPE_REQUIRE_CUDA_DEVICE();
  std::string why;
  EXPECT_TRUE(cublasLtAvailable(&why)) << why;
}

TEST(CudaCublasLt, F32IsExact) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::F32, 1, 37, 53, 300);
  MatmulRun run = runOnDevice(p, 1);
  EXPECT_EQ(run.algorithm.rfind("cublasLt algo ", 0), 0u) << run.algorithm;
  // 1e-4 of the terms' magnitude is far above fp32's rounding and far below TF32's (10-bit
  // mantissa: about 1e-3 per product).
  expectMatchesReference(p, run, 1e-4);
  // The tighter bound TF32 would break: a few fp32 roundings over 300 terms.
  expectMatchesReference(p, run, 2e-6);
}

TEST(CudaCublasLt, F32TransposedOperandsBatchBiasRelu) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::F32, 3, 19, 40, 33);
  transposeA(p);
  transposeB(p);
  p.epilogue = MatmulEpilogue::BiasRelu;
  expectMatchesReference(p, runOnDevice(p, 2), 1e-4);
}

TEST(CudaCublasLt, F32PaddedMisalignedAndBroadcastBatch) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::F32, 4, 17, 24, 29);
  int64_t a[3] = {0, 31, 1}; // one A for every batch (a weight), rows padded to 31
  std::copy(a, a + 3, p.aStrides);
  p.epilogue = MatmulEpilogue::Bias;
  expectMatchesReference(p, runOnDevice(p, 3, 1), 1e-4, 1); // A one element (4 bytes) in
}

TEST(CudaCublasLt, Bf16BatchBiasGelu) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::BF16, 2, 64, 72, 96);
  transposeB(p);
  p.epilogue = MatmulEpilogue::BiasGelu;
  expectMatchesReference(p, runOnDevice(p, 4), 2e-2);
}

TEST(CudaCublasLt, F16ColumnMajorOutputRelu) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::F16, 3, 24, 40, 56);
  int64_t c[3] = {24 * 40, 1, 24};
  std::copy(c, c + 3, p.cStrides);
  transposeA(p);
  p.epilogue = MatmulEpilogue::Relu;
  expectMatchesReference(p, runOnDevice(p, 5), 1e-2);
}

TEST(CudaCublasLt, GeluIsTheTanhApproximation) {
  LOUPE_REQUIRE_CUBLASLT();
  // k = 1 and n = 1: C is gelu(A * b), so the activation itself is compared, over [-4, 4] where
  // the two GELUs differ by up to about 1e-3.
  MatmulProblem p = problem(DType::F32, 1, 256, 1, 1);
  p.epilogue = MatmulEpilogue::Gelu;
  MatmulRun run = runOnDevice(p, 6, 0, 2);
  double fromErf = 0;
  for (int64_t i = 0; i < p.m; ++i) {
    double x = double(run.a.values[i]) * run.b.values[0];
    EXPECT_NEAR(run.c.get(i), geluTanh(x), 1e-5) << x;
    fromErf = std::max(fromErf, std::abs(run.c.get(i) - 0.5 * x * (1 + std::erf(x / M_SQRT2))));
  }
  EXPECT_GT(fromErf, 1e-4) << "the inputs do not tell the two GELUs apart";
}

void denseAux(MatmulProblem& p) {
  int64_t strides[3] = {p.m * p.n, p.n, 1};
  std::copy(strides, strides + 3, p.auxStrides);
}

TEST(CudaCublasLt, Bf16BiasGeluAlsoStoresItsInput) {
  // A training forward: the GELU's input, the biased product, is saved for GELU's backward.
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::BF16, 1, 48, 72, 96);
  transposeB(p);
  p.epilogue = MatmulEpilogue::BiasGeluAux;
  denseAux(p);
  expectMatchesReference(p, runOnDevice(p, 9), 2e-2);
  p.epilogue = MatmulEpilogue::GeluAux;
  expectMatchesReference(p, runOnDevice(p, 10), 2e-2);
}

TEST(CudaCublasLt, F16GeluAuxIntoPaddedRows) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::F16, 1, 40, 64, 32);
  p.epilogue = MatmulEpilogue::GeluAux;
  int64_t padded[3] = {0, 72, 1}; // rows 72 elements apart, a multiple of 8
  std::copy(padded, padded + 3, p.auxStrides);
  expectMatchesReference(p, runOnDevice(p, 11), 1e-2);
}

TEST(CudaCublasLt, Bf16DgeluScalesTheProductByGelusDerivative) {
  // GELU's backward: grad_input = (grad @ W) * gelu'(saved input), the saved input read as the
  // auxiliary matrix, over [-3, 3] where the derivative runs from about -0.1 to 1.1.
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::BF16, 1, 64, 80, 48);
  transposeB(p);
  p.epilogue = MatmulEpilogue::DGelu;
  denseAux(p);
  expectMatchesReference(p, runOnDevice(p, 12, 0, 3), 3e-2);
}

TEST(CudaCublasLt, PlansAreReused) {
  LOUPE_REQUIRE_CUBLASLT();
  MatmulProblem p = problem(DType::F32, 2, 48, 64, 80);
  MatmulRun first = runOnDevice(p, 7), second = runOnDevice(p, 8);
  EXPECT_EQ(first.algorithm, second.algorithm);
  expectMatchesReference(p, second, 1e-4);
}

} // namespace
} // namespace loupe
