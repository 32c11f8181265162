#include "tools/loupe/graph_inputs.h"

#include <map>
#include <random>

#include "compiler/ir/error.h"
#include "compiler/runtime/npy.h"

namespace loupe::cli {
namespace {

[[noreturn]] void usageError(const std::string& message) {
  throw Error("usage", message);
}

// "s0=8" → bindings; "x=a.npy" / "a.npy" → named or positional inputs.
SymbolBindings parseSymbols(const std::vector<std::string>& items) {
  SymbolBindings bindings;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      usageError("--symbol expects NAME=INT, got '" + item + "'");
    try {
      bindings[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      usageError("--symbol expects NAME=INT, got '" + item + "'");
    }
  }
  return bindings;
}

Tensor randomTensor(const TensorType& type, const std::vector<int64_t>& shape,
                    std::mt19937_64& rng) {
  Tensor t = Tensor::empty(type.dtype, shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 7); // small non-negative ints work as indices
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (isFloating(type.dtype))
      t.set(i, real(rng));
    else if (type.dtype == DType::Bool)
      t.set(i, static_cast<double>(small(rng) & 1));
    else
      t.set(i, static_cast<double>(small(rng)));
  }
  return t;
}

} // namespace

std::vector<Tensor> prepareInputs(const Graph& graph, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& symbols, uint64_t seed) {
  std::map<std::string, std::string> named;
  std::vector<std::string> positional;
  for (const auto& item : inputs) {
    auto eq = item.find('=');
    if (eq != std::string::npos && eq > 0)
      named[item.substr(0, eq)] = item.substr(eq + 1);
    else
      positional.push_back(item);
  }
  if (positional.size() > graph.numInputs())
    usageError(std::to_string(positional.size()) + " positional inputs given for a graph of " +
               std::to_string(graph.numInputs()));
  for (const auto& [name, path] : named) {
    bool found = false;
    for (const auto& in : graph.inputs())
      found |= in->name() == name;
    if (!found) usageError("the graph has no input named %" + name);
  }

  SymbolBindings bindings = parseSymbols(symbols);
  std::vector<Tensor> tensors(graph.numInputs());
  std::vector<bool> given(graph.numInputs(), false);
  for (size_t i = 0; i < graph.numInputs(); ++i) {
    const Value* in = graph.input(i);
    std::string path = i < positional.size()     ? positional[i]
                       : named.count(in->name()) ? named[in->name()]
                                                 : "";
    if (path.empty()) continue;
    tensors[i] = readNpy(path);
    given[i] = true;
    // Symbols bound by given inputs fix the shapes of the random ones.
    if (in->type().isTensor()) {
      const auto& shape = in->tensorType().shape;
      for (size_t d = 0; d < shape.size() && d < tensors[i].rank(); ++d)
        if (shape[d].isSymbol()) bindings.emplace(shape[d].str(), tensors[i].size(d));
    } else if (in->type().indexValue().isSymbol()) {
      bindings.emplace(in->type().indexValue().str(), static_cast<int64_t>(tensors[i].at(0)));
    }
  }
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < graph.numInputs(); ++i) {
    if (given[i]) continue;
    const Value* in = graph.input(i);
    if (in->type().isIndex()) {
      const SymExpr& value = in->type().indexValue();
      int64_t v;
      try {
        v = value.evaluate(bindings);
      } catch (const std::out_of_range&) {
        usageError("index input %" + in->name() + " is " + value.str() +
                   ": bind it with --symbol " + value.str() + "=N or give it as an input");
      }
      tensors[i] = Tensor::fromDoubles({static_cast<double>(v)}, DType::I64, {});
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& d : in->tensorType().shape) {
      try {
        shape.push_back(d.evaluate(bindings));
      } catch (const std::out_of_range&) {
        usageError("input %" + in->name() + " has the symbolic dim " + d.str() +
                   ": give the input as .npy or bind its symbols with --symbol NAME=N");
      }
    }
    tensors[i] = randomTensor(in->tensorType(), shape, rng);
  }
  return tensors;
}

} // namespace loupe::cli
