#include "unit_tests/compiler/codegen/codegen_test_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>

#include "compiler/codegen/cpu/cpu_codegen.h"

namespace loupe::testing {

const std::string& testCacheDir() {
  struct Directory {
    std::string path = (std::filesystem::temp_directory_path() /
                        ("loupe-codegen-tests-" + std::to_string(getpid())))
                           .string();
    ~Directory() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Directory directory;
  return directory.path;
}

ScratchFolder::ScratchFolder() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "loupe-codegen-scratch-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path = std::filesystem::canonical(pattern).string();
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

ScopedEnvironment::~ScopedEnvironment() {
  for (const auto& [name, value] : saved_)
    value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
}

void ScopedEnvironment::set(const std::string& name, const std::optional<std::string>& value) {
  if (!saved_.count(name)) {
    const char* old = std::getenv(name.c_str());
    saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
  }
  value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
}

TensorType tensorType(DType dtype, Shape shape) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

BinaryKernel::BinaryKernel(const std::string& op) {
  Value* a = graph.addInput(tensorType(DType::F32, {SymExpr::symbol("n")}), "a");
  Value* b = graph.addInput(tensorType(DType::F32, {1}), "b");
  node = GraphBuilder(graph, nullptr).op(op, {a, b})->definingNode();
}

GeneratedKernel BinaryKernel::kernel(const std::string& name) const {
  return generateCpuKernel(*node, name);
}

std::vector<double> BinaryKernel::call(CpuKernelFn fn, std::vector<double> a, double b) const {
  Tensor x = Tensor::fromDoubles(a, DType::F32, {static_cast<int64_t>(a.size())});
  Tensor y = Tensor::fromDoubles({b}, DType::F32, {1});
  Tensor out = Tensor::empty(DType::F32, x.shape());
  launchCpuKernel(fn, describeKernel(*node), {{"n", x.size(0)}}, {&x, &y}, {&out});
  return out.toDoubles();
}

Tensor randomTensor(DType dtype, const std::vector<int64_t>& shape, unsigned seed) {
  std::mt19937 generator(seed);
  Tensor t = Tensor::empty(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (isFloating(dtype))
      t.set(i, std::uniform_real_distribution<double>(-2, 2)(generator));
    else if (isIntegral(dtype))
      t.set(i, std::uniform_int_distribution<int>(-5, 5)(generator));
    else
      t.set(i, std::uniform_int_distribution<int>(0, 1)(generator));
  }
  return t;
}

Node* addFused(Graph& outer, std::unique_ptr<Graph> body, const std::vector<Value*>& operands,
               const std::string& kind) {
  std::vector<Type> results;
  for (const Value* output : body->outputs())
    results.push_back(output->type());
  AttrMap attrs;
  attrs.set("kind", kind);
  Node* node = outer.createNode("loupe.fused", operands, results, attrs);
  node->setBody(std::move(body));
  for (size_t i = 0; i < node->numResults(); ++i)
    node->result(i)->setName("fused" + std::to_string(outer.numNodes()) + "_" + std::to_string(i));
  return node;
}

Plan generatedPlan(Graph& graph) {
  Plan plan;
  int position = 0;
  for (Node* node : graph.nodes()) {
    std::string why;
    bool supported = canGenerateCpuKernel(*node, &why);
    if (node->op() == "loupe.fused") {
      EXPECT_TRUE(supported) << node->describe() << ": " << why;
    }
    if (!supported) continue;
    std::string name = "k" + std::to_string(position++);
    node->attrs().set("kernel", name);
    plan.kernels.push_back({.name = name, .op = node->op(), .kind = KernelKind::Generated});
  }
  return plan;
}

double maxAbsDifference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  for (int64_t i = 0; i < a.numel() && a.shape() == b.shape(); ++i)
    if (a.at(i) != b.at(i)) worst = std::max(worst, std::fabs(a.at(i) - b.at(i)));
  return worst;
}

Tensor permutedRandom(DType dtype, const std::vector<int64_t>& shape,
                      const std::vector<size_t>& storageOrder, unsigned seed) {
  std::vector<int64_t> stored;
  for (size_t d : storageOrder)
    stored.push_back(shape[d]);
  Tensor packed = randomTensor(dtype, stored, seed);
  std::vector<int64_t> strides(shape.size());
  for (size_t i = 0; i < storageOrder.size(); ++i)
    strides[storageOrder[i]] = packed.strides()[i];
  return packed.view(shape, strides, 0);
}

Tensor transposedRandom(DType dtype, const std::vector<int64_t>& shape, unsigned seed) {
  // Its last two dims swap: a rank below 2 has none to swap (and indexed past the order).
  if (shape.size() < 2)
    throw std::invalid_argument("transposedRandom needs a rank of 2 or more, got " +
                                std::to_string(shape.size()));
  std::vector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[order.size() - 1], order[order.size() - 2]);
  return permutedRandom(dtype, shape, order, seed);
}

std::unique_ptr<Graph> singleOp(const std::string& op, const std::vector<TensorType>& inputTypes,
                                const AttrMap& attrs) {
  auto graph = std::make_unique<Graph>(op);
  std::vector<Value*> operands;
  for (size_t i = 0; i < inputTypes.size(); ++i)
    operands.push_back(graph->addInput(inputTypes[i], "in" + std::to_string(i)));
  graph->setOutputs(GraphBuilder(*graph, nullptr).opResults(op, operands, attrs));
  return graph;
}

std::vector<TensorType> typesOf(const std::vector<Tensor>& tensors) {
  std::vector<TensorType> types;
  for (const Tensor& t : tensors)
    types.push_back(tensorType(t.dtype(), Shape(t.shape().begin(), t.shape().end())));
  return types;
}

std::unique_ptr<Executable> libraryExecutable(Graph& graph, const std::string& op, bool check) {
  for (Node* node : graph.nodes())
    node->attrs().set("kernel", "lib");
  Plan plan;
  plan.kernels.push_back({.name = "lib", .op = op, .kind = KernelKind::Library});
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  options.check = check;
  return std::make_unique<Executable>(graph, plan, options);
}

KernelStats runLibraryKernel(Graph& graph, const std::string& op,
                             const std::vector<Tensor>& inputs) {
  std::unique_ptr<Executable> executable = libraryExecutable(graph, op, /*check=*/true);
  executable->run(inputs);
  return executable->stats().kernels.at("lib");
}

void expectGeneratedMatchesReference(Graph& graph, const std::vector<Tensor>& inputs,
                                     double tolerance) {
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  Plan plan = generatedPlan(graph);
  ASSERT_FALSE(plan.kernels.empty()) << "nothing in the graph is generated";
  Executable generated(graph, plan, options);
  Executable reference(graph, Plan{}, options);
  std::vector<Tensor> actual = generated.run(inputs), expected = reference.run(inputs);
  for (const KernelChoice& choice : plan.kernels)
    EXPECT_EQ(generated.stats().kernels.at(choice.name).implementation, "generated:" + choice.op);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_EQ(actual[i].dtype(), expected[i].dtype()) << "output " << i;
    ASSERT_EQ(actual[i].shape(), expected[i].shape()) << "output " << i;
    for (int64_t j = 0; j < expected[i].numel(); ++j) {
      double a = actual[i].at(j), e = expected[i].at(j);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(a)) << "output " << i << " element " << j;
      } else {
        EXPECT_LE(std::fabs(a - e), tolerance * (1 + std::fabs(e)))
            << "output " << i << " element " << j << ": " << a << " vs " << e;
      }
    }
  }
}

} // namespace loupe::testing
