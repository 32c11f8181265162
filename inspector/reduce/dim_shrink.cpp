#include "inspector/reduce/dim_shrink.h"

#include <algorithm>
#include <set>

#include "compiler/ops/verifier.h"
#include "compiler/pass/plan.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

// Attributes that hold sizes, so they follow the dims they were written for: view and expand
// sizes, reshape shapes, factories' sizes, slice and arange ends, split sizes, layer norm's
// normalized shape, a view backward's input sizes. A constant's shape describes its data and
// stays.
constexpr std::string_view kSizeAttributes[] = {
    "size", "shape", "end", "split_size", "split_sizes", "normalized_shape", "input_sizes"};

SymExpr resizedDim(const SymExpr& dim, const std::map<int64_t, int64_t>& sizes) {
  if (std::optional<int64_t> value = dim.constant())
    if (auto it = sizes.find(*value); it != sizes.end()) return SymExpr(it->second);
  return dim;
}

void resizeAttribute(Attribute& attribute, const std::map<int64_t, int64_t>& sizes) {
  if (auto* dim = std::get_if<SymExpr>(&attribute)) *dim = resizedDim(*dim, sizes);
  if (auto* dims = std::get_if<IntList>(&attribute))
    for (SymExpr& dim : *dims)
      dim = resizedDim(dim, sizes);
}

void resizeSizeAttributes(Graph& graph, const std::map<int64_t, int64_t>& sizes) {
  for (Node* node : graph.nodes()) {
    if (node->op() == "loupe.constant") continue;
    AttrMap& attrs = node->attrs();
    for (std::string_view name : kSizeAttributes)
      if (attrs.has(name)) {
        Attribute value = *attrs.find(name);
        resizeAttribute(value, sizes);
        attrs.set(std::string(name), std::move(value));
      }
  }
}

// Shape propagation, run on its own: every registered node's result types from its operands'.
void propagateShapes(Graph& graph) {
  PipelineOptions options;
  PassInstrumentation instrumentation;
  Plan plan;
  PassContext context(options, instrumentation, plan);
  createPass("shape-propagation")->run(graph, context);
}

// The first `shape` elements of `tensor` along each dim, packed.
Tensor prefixSlice(const Tensor& tensor, const std::vector<int64_t>& shape) {
  if (shape == tensor.shape()) return tensor;
  return tensor.view(shape, tensor.strides(), tensor.offset()).clone();
}

// Sizes to try for a variable now at `size`: 1, 2, a quarter, a half; below `size`, ascending.
std::vector<int64_t> smallerSizes(int64_t size) {
  std::set<int64_t> sizes;
  for (int64_t candidate : {int64_t(1), int64_t(2), size / 4, size / 2})
    if (candidate >= 1 && candidate < size) sizes.insert(candidate);
  return {sizes.begin(), sizes.end()};
}

std::vector<DimChange> changes(const std::vector<int64_t>& variables,
                               const std::map<int64_t, int64_t>& sizes) {
  std::vector<DimChange> dims;
  for (int64_t variable : variables)
    dims.push_back({variable, sizes.at(variable)});
  return dims;
}

} // namespace

std::vector<int64_t> dimVariables(const Graph& graph) {
  std::set<int64_t> variables, pinned;
  for (const auto& input : graph.inputs()) {
    if (!input->type().isTensor()) continue;
    const TensorType& type = input->tensorType();
    for (const SymExpr& dim : type.shape)
      if (std::optional<int64_t> value = dim.constant(); value && *value > 1)
        (type.isContiguous() ? variables : pinned).insert(*value);
  }
  std::vector<int64_t> free;
  std::set_difference(variables.begin(), variables.end(), pinned.begin(), pinned.end(),
                      std::back_inserter(free));
  return free;
}

NodeSubset resizeDims(const Graph& graph, const std::vector<Tensor>& inputs,
                      const std::map<int64_t, int64_t>& sizes) {
  NodeSubset result{graph.clone(), {}};
  Graph& resized = *result.graph;
  for (size_t i = 0; i < resized.numInputs(); ++i) {
    Value& input = *resized.input(i);
    const Tensor& given = inputs.at(i);
    if (!input.type().isTensor()) {
      result.inputs.push_back(given);
      continue;
    }
    TensorType type = input.tensorType();
    std::vector<int64_t> shape = given.shape();
    for (size_t d = 0; d < type.shape.size(); ++d) {
      type.shape[d] = resizedDim(type.shape[d], sizes);
      if (std::optional<int64_t> value = type.shape[d].constant()) shape.at(d) = *value;
    }
    if (type.isContiguous()) type.strides.reset(); // the slice is packed
    input.setType(type);
    result.inputs.push_back(prefixSlice(given, shape));
  }
  resizeSizeAttributes(resized, sizes);
  propagateShapes(resized);
  verify(resized);
  return result;
}

ShrunkDims shrinkDims(const Graph& graph, const std::vector<Tensor>& inputs,
                      const DimShrinkOptions& options) {
  std::vector<int64_t> variables = dimVariables(graph);
  std::map<int64_t, int64_t> sizes;
  for (int64_t variable : variables)
    sizes[variable] = variable;
  std::set<std::map<int64_t, int64_t>> tried{sizes};
  bool shrunk = true, outOfTime = false;
  while (shrunk && !outOfTime) {
    shrunk = false;
    for (auto variable = variables.rbegin(); variable != variables.rend() && !outOfTime;
         ++variable) {
      for (int64_t size : smallerSizes(sizes[*variable])) {
        if ((outOfTime = options.outOfTime())) break;
        std::map<int64_t, int64_t> candidate = sizes;
        candidate[*variable] = size;
        if (!tried.insert(candidate).second) continue;
        NodeSubset resized;
        try {
          resized = resizeDims(graph, inputs, candidate);
        } catch (const std::exception&) {
          continue; // the sizes do not fit the graph (a product of dims, a constant): not a trial
        }
        if (!options.diverges(std::move(resized.graph), resized.inputs)) continue;
        sizes = std::move(candidate);
        shrunk = true;
        if (options.shrunk) options.shrunk(changes(variables, sizes));
        break;
      }
    }
  }
  ShrunkDims result;
  result.dims = changes(variables, sizes);
  bool anyShrunk = std::any_of(result.dims.begin(), result.dims.end(),
                               [](const DimChange& dim) { return dim.after != dim.before; });
  if (anyShrunk) {
    NodeSubset smallest = resizeDims(graph, inputs, sizes);
    result.graph = std::move(smallest.graph);
    result.inputs = std::move(smallest.inputs);
  } else {
    result.graph = graph.clone();
    result.inputs = inputs;
  }
  return result;
}

std::string describeDimChanges(const std::vector<DimChange>& dims) {
  std::string text;
  for (const DimChange& dim : dims)
    if (dim.after != dim.before)
      text += (text.empty() ? "" : ", ") + std::to_string(dim.before) + " -> " +
              std::to_string(dim.after);
  return text;
}

} // namespace loupe
