// Transcendental pointwise ops in generated kernels, for every instruction set this machine
// runs: the kernels call the vector math library's variant for that instruction set, and agree
// with the float64 reference within a few ulp over wide ranges, special values included (inf,
// NaN, signed zeros, subnormals, overflow), at a size with a vector body and a tail and at one
// shorter than a vector.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <sstream>

#include "compiler/codegen/cpu/cpu_compiler.h"
#include "compiler/codegen/cpu/cpu_isa.h"
#include "compiler/ir/error.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// Every instruction set this machine runs, lowest first.
std::vector<std::string> runnableIsas() {
  std::vector<std::string> isas;
  for (const char* name : {"portable", "x86-64-v3", "x86-64-v4"}) {
    try {
      isas.push_back(cpuIsaNamed(name).name);
    } catch (const Error&) {
    }
  }
  return isas;
}

// Special values first and last (so they land in a vector body and in the tail), between them
// magnitudes from 1e-30 to `largest` of both signs and a dense stretch of [-20, 20].
std::vector<double> wideInputs(DType dtype, int64_t size, double largest) {
  double subnormal = dtype == DType::F32 ? 1e-40 : 1e-310;
  std::vector<double> specials = {INFINITY, -INFINITY, NAN, 0.0,  -0.0, subnormal, -subnormal,
                                  largest,  -largest,  1.0, -1.0, 88.5, -88.5,     710.0};
  std::vector<double> values;
  double decades = std::log10(largest) + 30;
  for (int64_t i = 0; i < size; ++i) {
    double t = static_cast<double>(i) / static_cast<double>(size);
    if (i < static_cast<int64_t>(specials.size()))
      values.push_back(specials[i]);
    else if (size - i <= static_cast<int64_t>(specials.size()))
      values.push_back(specials[size - i - 1]);
    else if (i % 2)
      values.push_back((i % 4 == 1 ? 1 : -1) * std::pow(10.0, -30 + decades * t));
    else
      values.push_back(-20 + 40 * t);
  }
  return values;
}

// How far `actual` is from `expected`, in units in the last place of `expected` in `dtype`: 0
// when both are the same infinity or both NaN, infinite when only one is.
double ulpDistance(double actual, double expected, DType dtype) {
  if (std::isnan(expected) || std::isnan(actual))
    return std::isnan(expected) && std::isnan(actual) ? 0 : INFINITY;
  if (std::isinf(expected) || std::isinf(actual)) return actual == expected ? 0 : INFINITY;
  int digits = dtype == DType::F32 ? FLT_MANT_DIG : DBL_MANT_DIG;
  int minExponent = dtype == DType::F32 ? FLT_MIN_EXP : DBL_MIN_EXP;
  int exponent = expected == 0 ? minExponent : std::ilogb(expected) + 1;
  double ulp = std::ldexp(1.0, std::max(exponent, minExponent) - digits);
  return std::fabs(actual - expected) / ulp;
}

struct Case {
  std::string op;
  std::string function; // the C function behind it (for the vector symbol check), or empty
  AttrMap attrs = {};
  bool binary = false; // over x and y (pow's exponent, or a backward's incoming gradient)
};

AttrMap attr(const std::string& name, const Attribute& value) {
  AttrMap attrs;
  attrs.set(name, value);
  return attrs;
}

// Each case as a node of its own over inputs x (`values`) and y (exponents and
// gradients between -4 and 7.5, integers among them), all in one graph, run as generated kernels
// compiled for `isa` and as the reference. Per case: its output both ways, and its kernel's
// library.
struct Outcome {
  std::vector<double> x;
  std::vector<Tensor> actual, expected;
  std::vector<std::string> libraries;
};
Outcome run(const std::vector<Case>& cases, DType dtype, const std::vector<double>& values,
            const std::string& isa) {
  auto size = static_cast<int64_t>(values.size());
  Graph graph("vector_math");
  Value* x = graph.addInput(tensorType(dtype, {size}), "x");
  Value* y = graph.addInput(tensorType(dtype, {size}), "y");
  std::vector<Value*> outputs;
  for (const Case& c : cases) {
    bool backward = c.op.find("backward") != std::string::npos;
    std::vector<Value*> operands =
        c.binary ? (backward ? std::vector{y, x} : std::vector{x, y}) : std::vector{x};
    outputs.push_back(GraphBuilder(graph, nullptr).op(c.op, operands, c.attrs));
  }
  graph.setOutputs(outputs);
  Outcome outcome{values, {}, {}, {}};
  // Not 2, 3, 0.5, -1 or -2, the exponents loupe_pow has short forms for when they are
  // constants (their error is the short form's, not the library's).
  const double kExponents[] = {-4, -3.5, -3, -1.5, -0.75, -0.5, 0, 0.25, 1, 1.5, 2.5, 4, 7.5};
  std::vector<double> exponents;
  for (int64_t i = 0; i < size; ++i)
    exponents.push_back(kExponents[i % std::size(kExponents)]);
  std::vector<Tensor> inputs = {Tensor::fromDoubles(outcome.x, dtype, {size}),
                                Tensor::fromDoubles(exponents, dtype, {size})};
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  options.compiler.isa = isa;
  Plan plan = generatedPlan(graph);
  EXPECT_EQ(plan.kernels.size(), cases.size());
  Executable generated(graph, plan, options);
  Executable reference(graph, Plan{}, options);
  outcome.actual = generated.run(inputs);
  outcome.expected = reference.run(inputs);
  CpuCompiler compiler(options.compiler);
  for (const Node* node : graph.nodes())
    outcome.libraries.push_back(compiler.libraryOf(generateCpuKernel(*node, "k")));
  return outcome;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Whether `library` calls the vector variant of the C function `name` (taking `arity`
// vectors) for `isa`, by its x86-64 vector function ABI name: _ZGV, the ISA's letter (SSE b,
// AVX2 d, AVX-512 e), N (unmasked), the lanes, a v per argument, _ and the name.
bool callsVectorVariant(const std::string& library, const std::string& isa, const std::string& name,
                        int arity) {
  char letter = isa == "x86-64-v4" ? 'e' : isa == "x86-64-v3" ? 'd' : 'b';
  std::string bytes = readBytes(library);
  for (int lanes : {2, 4, 8, 16})
    if (bytes.find(std::string("_ZGV") + letter + "N" + std::to_string(lanes) +
                   std::string(arity, 'v') + "_" + name + std::string(1, '\0')) !=
        std::string::npos)
      return true;
  return false;
}

// libmvec's functions are within 4 ulp of the exact result; the reference is that result
// rounded once more.
constexpr double kMaxUlp = 4.5;

// 4099 elements have a vector body and a tail under every instruction set (16, 8, 4 or 2
// lanes); 7 are fewer than one AVX-512 vector of floats.
constexpr int64_t kSizes[] = {4099, 7};

TEST(VectorMathKernel, EveryTranscendentalFunctionIsWithinAFewUlpAndCallsTheVectorVariant) {
  const std::vector<Case> cases = {
      {"aten.exp", "exp"},
      {"aten.log", "log"},
      {"aten.log1p", "log1p"},
      {"aten.expm1", "expm1"},
      {"aten.sin", "sin"},
      {"aten.cos", "cos"},
      {"aten.tanh", "tanh"},
      {"aten.erf", "erf"},
      {"aten.tan", "tan"},
      {"aten.asin", "asin"},
      {"aten.acos", "acos"},
      {"aten.atan", "atan"},
      {"aten.sinh", "sinh"},
      {"aten.cosh", "cosh"},
      {"aten.asinh", "asinh"},
      {"aten.acosh", "acosh"},
      {"aten.atanh", "atanh"},
      {"aten.log2", "log2"},
      {"aten.log10", "log10"},
      {"aten.exp2", "exp2"},
      {"aten.erfc", "erfc"},
      {"aten.pow.Tensor_Tensor", "pow", {}, true},
      {"aten.pow.Tensor_Scalar", "pow", attr("exponent", 2.5)},
  };
  for (const std::string& isa : runnableIsas())
    for (DType dtype : {DType::F32, DType::F64})
      for (int64_t size : kSizes) {
        SCOPED_TRACE(isa + " " + std::string(dtypeName(dtype)) + " size " + std::to_string(size));
        Outcome outcome = run(
            cases, dtype, wideInputs(dtype, size, dtype == DType::F32 ? FLT_MAX : DBL_MAX), isa);
        for (size_t k = 0; k < cases.size(); ++k) {
          const Case& c = cases[k];
          double worst = 0;
          int64_t at = 0;
          for (int64_t i = 0; i < size; ++i)
            if (double distance =
                    ulpDistance(outcome.actual[k].at(i), outcome.expected[k].at(i), dtype);
                distance > worst)
              worst = distance, at = i;
          EXPECT_LE(worst, kMaxUlp)
              << c.op << " at x = " << outcome.x[at] << ": " << outcome.actual[k].at(at) << " vs "
              << outcome.expected[k].at(at);
          if (cpuIsaNamed(isa).vectorMath && size > 16) {
            std::string name = c.function + (dtype == DType::F32 ? "f" : "");
            EXPECT_TRUE(
                callsVectorVariant(outcome.libraries[k], isa, name, c.function == "pow" ? 2 : 1))
                << c.op << ": " << outcome.libraries[k] << " does not call a vector " << name;
          }
        }
      }
}

// exp where its result is subnormal or zero (the prelude computes exp(x / 2) squared there, and
// zero further down, so that no vector lane takes libmvec's slow path): a dense stretch from
// above the smallest normal result's logarithm to below the smallest subnormal's, both signs of
// infinity and NaN, within the same few ulp (of the subnormal result) as elsewhere, and exactly 0
// where the reference is.
TEST(VectorMathKernel, ExpIsExactToAFewUlpWhereItsResultIsSubnormalOrZero) {
  for (const std::string& isa : runnableIsas())
    for (DType dtype : {DType::F32, DType::F64})
      for (int64_t size : kSizes) {
        SCOPED_TRACE(isa + " " + std::string(dtypeName(dtype)) + " size " + std::to_string(size));
        double first = dtype == DType::F32 ? -80 : -700, last = dtype == DType::F32 ? -110 : -760;
        std::vector<double> values = {-INFINITY, NAN, INFINITY};
        for (int64_t i = 3; i < size; ++i)
          values.push_back(first +
                           (last - first) * static_cast<double>(i) / static_cast<double>(size));
        values.back() = -INFINITY;
        Outcome outcome = run({{"aten.exp", "exp"}}, dtype, values, isa);
        for (int64_t i = 0; i < size; ++i) {
          double a = outcome.actual[0].at(i), e = outcome.expected[0].at(i);
          EXPECT_LE(ulpDistance(a, e, dtype), kMaxUlp)
              << "x = " << values[i] << ": " << a << " vs " << e;
          if (e == 0) {
            EXPECT_EQ(a, 0) << "x = " << values[i];
          }
        }
      }
}

// Ops composed of the functions above (sigmoid, silu, gelu and its backward, both forms) over
// the same kind of values: close to the reference in absolute and relative terms, and NaN and
// infinities where it has them. Up to 1e4 only: beyond, gelu_backward's x^3 overflows in float
// (as in torch's kernel) where the reference computes in double.
TEST(VectorMathKernel, ComposedActivationsMatchTheReferenceOverWideRanges) {
  const std::vector<Case> cases = {
      {"aten.sigmoid", ""},
      {"aten.silu", ""},
      {"aten.gelu", "", attr("approximate", std::string("none"))},
      {"aten.gelu", "", attr("approximate", std::string("tanh"))},
      {"aten.gelu_backward", "", attr("approximate", std::string("none")), true},
      {"aten.gelu_backward", "", attr("approximate", std::string("tanh")), true},
  };
  for (const std::string& isa : runnableIsas())
    for (DType dtype : {DType::F32, DType::F64})
      for (int64_t size : kSizes) {
        SCOPED_TRACE(isa + " " + std::string(dtypeName(dtype)) + " size " + std::to_string(size));
        Outcome outcome = run(cases, dtype, wideInputs(dtype, size, 1e4), isa);
        double tolerance = dtype == DType::F32 ? 1e-5 : 1e-13;
        for (size_t k = 0; k < cases.size(); ++k)
          for (int64_t i = 0; i < size; ++i) {
            double a = outcome.actual[k].at(i), e = outcome.expected[k].at(i);
            if (std::isnan(e) || std::isinf(e))
              EXPECT_EQ(ulpDistance(a, e, dtype), 0)
                  << cases[k].op << " at x = " << outcome.x[i] << ": " << a << " vs " << e;
            else
              EXPECT_LE(std::fabs(a - e), tolerance * (1 + std::fabs(e)))
                  << cases[k].op << " at x = " << outcome.x[i] << ": " << a << " vs " << e;
          }
      }
}

// f16 loads and stores: every half converts to the float the reference gives, a sweep of floats
// (every 4099th bit pattern of both signs: normals, subnormals of both types, infinities, NaNs)
// to the half it gives, bit for bit; and a kernel over f16 values calls the vector exp, which
// it can only when its conversions vectorise.
TEST(VectorMathKernel, HalfConversionsAreExactAndVectorise) {
  constexpr int64_t kHalves = 65536;
  std::vector<float> floats;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099)
    floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  const int64_t count = static_cast<int64_t>(floats.size());
  for (const std::string& isa : runnableIsas()) {
    SCOPED_TRACE(isa);
    Graph graph("half");
    Value* h = graph.addInput(tensorType(DType::F16, {kHalves}), "h");
    Value* f = graph.addInput(tensorType(DType::F32, {count}), "f");
    GraphBuilder builder(graph, nullptr);
    graph.setOutputs({builder.op("prims.convert_element_type", {h}, attr("dtype", DType::F32)),
                      builder.op("prims.convert_element_type", {f}, attr("dtype", DType::F16)),
                      builder.op("aten.exp", {h})});
    Tensor halves = Tensor::empty(DType::F16, {kHalves});
    for (int64_t i = 0; i < kHalves; ++i)
      halves.dataAs<uint16_t>()[i] = static_cast<uint16_t>(i);
    Tensor sweep = Tensor::empty(DType::F32, {count});
    std::copy(floats.begin(), floats.end(), sweep.dataAs<float>());
    ExecutableOptions options;
    options.compiler.cacheDir = testCacheDir();
    options.compiler.isa = isa;
    Plan plan = generatedPlan(graph);
    Executable generated(graph, plan, options), reference(graph, Plan{}, options);
    std::vector<Tensor> actual = generated.run({halves, sweep});
    std::vector<Tensor> expected = reference.run({halves, sweep});
    for (int64_t i = 0; i < kHalves; ++i)
      EXPECT_EQ(ulpDistance(actual[0].at(i), expected[0].at(i), DType::F32), 0)
          << "half 0x" << std::hex << i << ": " << actual[0].at(i) << " vs " << expected[0].at(i);
    for (int64_t i = 0; i < count; ++i)
      EXPECT_EQ(actual[1].dataAs<uint16_t>()[i] == expected[1].dataAs<uint16_t>()[i] ||
                    (std::isnan(actual[1].at(i)) && std::isnan(expected[1].at(i))),
                true)
          << floats[i] << ": 0x" << std::hex << actual[1].dataAs<uint16_t>()[i] << " vs 0x"
          << expected[1].dataAs<uint16_t>()[i];
    if (cpuIsaNamed(isa).vectorMath) {
      std::string library =
          CpuCompiler(options.compiler).libraryOf(generateCpuKernel(*graph.nodes().back(), "k"));
      EXPECT_TRUE(callsVectorVariant(library, isa, "expf", 1)) << library;
    }
  }
}

} // namespace
} // namespace loupe::testing
