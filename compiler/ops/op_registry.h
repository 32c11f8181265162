// The op registry: for each op Loupe understands, its schema, shape/dtype inference (symbolic
// dims included), a reference CPU implementation, and what later stages need to know about it
// (kind, purity, a scalar C++ expression for pointwise code generation, a reduction recipe, a
// decomposition into primitives, a zero-copy view rule).
//
// Op names are aten overload names with ".default" dropped: "aten.mm", "aten.add.Tensor".
// An op missing from the registry is not an error: it stays in the graph as an opaque node and
// is executed by the runtime's fallback (the torch frontend provides one).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/type.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

class GraphBuilder;

enum class OpKind {
  Elementwise,   // pointwise, with broadcasting; fusable
  Reduction,     // reduces dims of one input; fusable with pointwise prologues/epilogues
  View,          // result aliases the input (view, permute, expand, slice, ...)
  DataMovement,  // copies data around (cat, clone, constant_pad_nd, gather, ...)
  Matmul,        // mm, bmm, addmm, baddbmm
  Convolution,   // convolution and its backward
  Normalization, // layer norm, batch norm, softmax and their backward
  Pooling,       // max/avg pooling and backward
  Factory,       // full, zeros, arange, ... (no tensor operands)
  Other,
};
std::string_view opKindName(OpKind kind);
// Matrix products (the matmul family, convolution): in f16/bf16 a GPU runs them on its tensor
// cores, whose peak is not the fp32 one (profiling's peak share, launch planning's estimate).
inline bool isMatrixKind(OpKind kind) {
  return kind == OpKind::Matmul || kind == OpKind::Convolution;
}

struct OperandSpec {
  std::string name;
  bool optional = false; // may be a `none` slot
  bool variadic = false; // the last spec only: zero or more tensors (cat)
};

struct AttrSpec {
  std::string name;
  std::optional<Attribute> defaultValue; // nullopt: required
};

// Shape and dtype inference. `operands` is aligned with the node's operands (nullptr for none).
// Throws Error("shape", ...) with a message naming the mismatch.
using InferFn = std::function<std::vector<Type>(const std::vector<const Type*>& operands,
                                                const AttrMap& attrs)>;

// Reference implementation: `outputs` are preallocated, contiguous, with the inferred shapes
// and dtypes; `attrs` have their symbols bound. Straightforward code, computing in double
// where that is the simplest correct choice: this is the oracle that check mode compares
// every kernel against.
using ReferenceFn = std::function<void(const std::vector<const Tensor*>& inputs,
                                       const AttrMap& attrs, std::vector<Tensor>& outputs)>;

// For View ops: the result as a view of input 0 (shape, strides, offset), sharing its storage.
using ViewFn = std::function<Tensor(const Tensor& input, const AttrMap& attrs)>;

// For Elementwise ops: a C++ expression computing one element from the operands' scalar
// expressions, in `compute` precision ("float" or "double"; ints and bools as int64_t/bool).
using ScalarEmitFn = std::function<std::string(const std::vector<std::string>& args,
                                               const AttrMap& attrs, DType compute)>;

// For Reduction ops: how generated code accumulates (acc starts at init(dtype), then
// acc = combine(acc, x), and the result is finalize(acc, count)).
struct ReductionRecipe {
  std::function<std::string(DType)> init;
  std::function<std::string(const std::string& acc, const std::string& x)> combine;
  std::function<std::string(const std::string& acc, const std::string& count)> finalize;
};

// Rewrites `node` as primitive ops built with `builder` (inserted before the node, inheriting
// its source location) and returns the values replacing its results, or an empty vector when
// this instance is not decomposed (e.g. unsupported attribute combination).
using DecomposeFn = std::function<std::vector<Value*>(Node& node, GraphBuilder& builder)>;

struct OpInfo {
  std::string name;
  OpKind kind = OpKind::Other;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  int numResults = 1;  // -1: decided by inference (split)
  bool pure = true;    // no side effects or randomness: CSE, DCE and folding may touch it
  std::string summary; // one line for docs and `loupe-opt --list-ops`

  InferFn infer;
  ReferenceFn reference;
  ViewFn view;                              // View ops
  ScalarEmitFn emitScalar;                  // Elementwise ops
  std::optional<ReductionRecipe> reduction; // Reduction ops that generated code supports
  DecomposeFn decompose;                    // composite ops
};

class OpRegistry {
public:
  // The registry of all built-in ops (populated on first use).
  static const OpRegistry& global();

  void add(OpInfo info); // throws on a duplicate name
  const OpInfo* find(std::string_view name) const;
  std::vector<const OpInfo*> all() const; // sorted by name

private:
  std::map<std::string, std::unique_ptr<OpInfo>, std::less<>> ops_;
};

// Each op family registers itself here (compiler/ops/<family>.cpp); OpRegistry::global() calls
// them all in order. Adding a family is adding a line to op_registry.cpp.
void registerElementwiseOps(OpRegistry& registry);
void registerReductionOps(OpRegistry& registry);
void registerNormalizationOps(OpRegistry& registry);
void registerViewOps(OpRegistry& registry);
void registerDataMovementOps(OpRegistry& registry);
void registerMatmulOps(OpRegistry& registry);
void registerConvolutionOps(OpRegistry& registry);
void registerPoolingOps(OpRegistry& registry);
void registerAttentionOps(OpRegistry& registry);
void registerFactoryOps(OpRegistry& registry);
void registerLoupeOps(OpRegistry& registry); // loupe.constant, loupe.fused, ...

// ---- helpers shared by op definitions, passes and the runtime ----

// Runs `info.infer` for a node's operand types and attributes, adding the node to errors.
std::vector<Type> inferTypes(const OpInfo& info, const Node& node);
std::vector<Type> inferTypes(const OpInfo& info, const std::vector<Value*>& operands,
                             const AttrMap& attrs);

// Runs the reference implementation on concrete inputs: allocates outputs from the inferred
// types evaluated with `bindings`, calls `info.reference`.
std::vector<Tensor> runReference(const OpInfo& info, const std::vector<const Tensor*>& inputs,
                                 const AttrMap& attrs, const std::vector<Type>& resultTypes,
                                 const SymbolBindings& bindings);

std::vector<int64_t> evaluateShape(const Shape& shape, const SymbolBindings& bindings);

} // namespace loupe
