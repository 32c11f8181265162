// Helpers for the code generation tests: graphs with a fused group or single op built by hand,
// random inputs, and a runner that executes a graph once through generated kernels and once
// through reference implementations so the two can be compared.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/runtime/executable.h"

namespace loupe::testing {

// A kernel cache private to this test process, removed at exit.
const std::string& testCacheDir();

// A fresh folder (canonical path) under the temporary directory, removed with everything in it.
struct ScratchFolder {
  std::string path;
  ScratchFolder();
  ~ScratchFolder();
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// Environment variables set or unset for a test, put back as they were by the destructor.
class ScopedEnvironment {
public:
  ~ScopedEnvironment();
  void set(const std::string& name, const std::optional<std::string>& value);

private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TensorType tensorType(DType dtype, Shape shape);

// The generated kernel of out = a <op> b for a f32[n] and b f32[1], and a way to call it: the
// smallest kernel the cache tests build.
struct BinaryKernel {
  Graph graph{"binary"};
  Node* node;
  explicit BinaryKernel(const std::string& op = "aten.mul.Tensor");
  GeneratedKernel kernel(const std::string& name) const;
  std::vector<double> call(CpuKernelFn fn, std::vector<double> a, double b) const;
};

// Uniform values in [-2, 2] (floats), [-5, 5] (ints) or {0, 1} (bool), from a fixed seed.
Tensor randomTensor(DType dtype, const std::vector<int64_t>& shape, unsigned seed);

// Turns `body` (a standalone graph) into a loupe.fused node at the end of `outer`, whose
// operands are `operands` (one per body input) and whose results mirror the body outputs.
Node* addFused(Graph& outer, std::unique_ptr<Graph> body, const std::vector<Value*>& operands,
               const std::string& kind);

// A plan asking for a generated kernel for every top-level node that supports one (and
// naming each node's kernel "k<position>"). Every fused node must support one.
Plan generatedPlan(Graph& graph);

// Runs `graph` on `inputs` twice, with generated kernels and with the empty plan (reference
// implementations), and expects every output to agree within `tolerance` (absolute, plus the
// same relative to the expected value).
void expectGeneratedMatchesReference(Graph& graph, const std::vector<Tensor>& inputs,
                                     double tolerance = 1e-5);

double maxAbsDifference(const Tensor& a, const Tensor& b);

// A random tensor of logical `shape` stored in memory with its dims in `storageOrder` (a
// permutation: storageOrder[0] is the outermost dim in memory), so a strided view.
Tensor permutedRandom(DType dtype, const std::vector<int64_t>& shape,
                      const std::vector<size_t>& storageOrder, unsigned seed);

// permutedRandom with the last two dims swapped in memory, as autograd often hands gradients
// over. Throws std::invalid_argument below rank 2.
Tensor transposedRandom(DType dtype, const std::vector<int64_t>& shape, unsigned seed);

// A graph of one `op` node over fresh inputs of `inputTypes`, returning every result.
std::unique_ptr<Graph> singleOp(const std::string& op, const std::vector<TensorType>& inputTypes,
                                const AttrMap& attrs);

std::vector<TensorType> typesOf(const std::vector<Tensor>& tensors);

// An executable of `graph` whose every node runs as the library kernel "lib" for `op` (in check
// mode with `check`).
std::unique_ptr<Executable> libraryExecutable(Graph& graph, const std::string& op,
                                              bool check = false);

// Runs every node of `graph` (all named kernel "lib") once as a library kernel in check mode and
// returns the shared stats: the error against the reference over every result.
KernelStats runLibraryKernel(Graph& graph, const std::string& op,
                             const std::vector<Tensor>& inputs);

} // namespace loupe::testing
