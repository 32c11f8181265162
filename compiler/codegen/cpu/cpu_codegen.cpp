// CPU code generation: a pointwise or reduction group becomes one C++ function that walks its
// iteration space with loops whose bounds are run-time arguments (cpu_kernel_abi.h).
//
// The group is first analysed (what every value is, in which part of the space it lives),
// then emitted. Op semantics stay in the registry: an Elementwise op contributes the scalar
// expression of its `emitScalar`, a Reduction op its recipe; this file only arranges loops,
// loads, stores and type conversions around them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/cpu_kernel_abi.h"
#include "compiler/ir/error.h"

namespace loupe {

namespace {

// Operand dims of size 1 that index no iteration dim (kept reduced dims with keepdim=true).
constexpr size_t kNoIterationDim = std::numeric_limits<size_t>::max();

struct Unsupported {
  std::string why;
};

// Values before the reduction walk the whole space; values after it only the kept dims.
enum class Space { Full, Kept };

struct GroupAnalysis {
  std::vector<const Value*> inputs;
  std::vector<const Node*> nodes;
  std::vector<const Value*> outputs;
  const Node* reduction = nullptr;
  std::vector<size_t> reducedDims; // sorted
  bool keepdim = false;
  Shape iterationShape;
  std::map<const Value*, Space> space; // inputs and node results; constants have none
};

bool isConstantNode(const Node* node) {
  return node && node->op() == "loupe.constant";
}

bool hasSymbols(const AttrMap& attrs) {
  for (const auto& [name, value] : attrs.values()) {
    if (const auto* dim = std::get_if<SymExpr>(&value); dim && !dim->isConstant()) return true;
    if (const auto* list = std::get_if<IntList>(&value))
      for (const SymExpr& d : *list)
        if (!d.isConstant()) return true;
  }
  return false;
}

std::string valueName(const Value* value) {
  return "%" + (value->name().empty() ? std::string("?") : value->name());
}

void checkNode(const Node& node, const OpRegistry& registry) {
  if (isConstantNode(&node)) {
    if (node.attrs().getFloats("data").size() != 1)
      throw Unsupported{"loupe.constant " + valueName(node.result()) +
                        " holds more than one value"};
    return;
  }
  const OpInfo* info = registry.find(node.op());
  if (!info) throw Unsupported{"op " + node.op() + " is not registered"};
  if (info->kind == OpKind::Elementwise && !info->emitScalar)
    throw Unsupported{"op " + node.op() + " has no scalar expression (emitScalar)"};
  if (info->kind == OpKind::Reduction && !info->reduction)
    throw Unsupported{"op " + node.op() + " has no reduction recipe"};
  if (info->kind != OpKind::Elementwise && info->kind != OpKind::Reduction)
    throw Unsupported{"op " + node.op() + " is a " + std::string(opKindName(info->kind)) +
                      " op, not elementwise or a reduction"};
  if (node.numResults() != 1) throw Unsupported{"op " + node.op() + " has several results"};
  if (hasSymbols(node.attrs())) throw Unsupported{"op " + node.op() + " has a symbolic attribute"};
  for (const Value* operand : node.operands()) {
    if (!operand) throw Unsupported{"op " + node.op() + " has an absent optional operand"};
    if (!operand->type().isTensor())
      throw Unsupported{"op " + node.op() + " has an index operand " + valueName(operand)};
  }
}

std::vector<size_t> reducedDimsOf(const Node& reduction, size_t rank) {
  const Attribute* attr = reduction.attrs().find("dim");
  std::vector<int64_t> dims;
  if (attr && std::holds_alternative<SymExpr>(*attr))
    dims.push_back(reduction.attrs().getInt("dim"));
  else if (attr && std::holds_alternative<IntList>(*attr))
    dims = reduction.attrs().getInts("dim");
  std::set<size_t> out;
  if (dims.empty()) // aten's "no dims" means all of them
    for (size_t d = 0; d < rank; ++d)
      out.insert(d);
  for (int64_t d : dims) {
    int64_t normalized = d < 0 ? d + static_cast<int64_t>(rank) : d;
    if (rank == 0 && (d == 0 || d == -1)) continue; // a 0-d tensor reduces over nothing
    if (normalized < 0 || normalized >= static_cast<int64_t>(rank))
      throw Unsupported{"reduction dim " + std::to_string(d) + " is out of range"};
    out.insert(static_cast<size_t>(normalized));
  }
  return {out.begin(), out.end()};
}

// Splits the group around its reduction: what feeds the reduction's input runs in the full
// space, everything else after it in the kept space.
void classifyAroundReduction(GroupAnalysis& group) {
  const Node& reduction = *group.reduction;
  std::set<const Value*> before{reduction.operand(0)};
  for (auto it = group.nodes.rbegin(); it != group.nodes.rend(); ++it)
    if (before.count((*it)->result()))
      for (const Value* operand : (*it)->operands())
        before.insert(operand);

  const Shape& full = reduction.operand(0)->tensorType().shape;
  group.iterationShape = full;
  group.reducedDims = reducedDimsOf(reduction, full.size());
  group.keepdim = reduction.attrs().getBool("keepdim", false);
  Shape kept;
  for (size_t d = 0; d < full.size(); ++d) {
    bool reduced = std::binary_search(group.reducedDims.begin(), group.reducedDims.end(), d);
    if (!reduced)
      kept.push_back(full[d]);
    else if (group.keepdim)
      kept.push_back(1);
  }
  if (reduction.result()->tensorType().shape != kept)
    throw Unsupported{"reduction result shape [" +
                      shapeStr(reduction.result()->tensorType().shape) +
                      "] does not follow from its dim and keepdim attributes"};

  auto place = [&](const Value* value, Space space) {
    if (isConstantNode(value->definingNode())) return;
    if (space == Space::Kept && before.count(value))
      throw Unsupported{"value " + valueName(value) +
                        " is used both before and after the reduction"};
    group.space[value] = space;
  };
  for (const Value* value : before)
    place(value, Space::Full);
  for (const Node* node : group.nodes) {
    if (before.count(node->result()) || node == &reduction) continue;
    place(node->result(), Space::Kept);
    for (const Value* operand : node->operands())
      place(operand, Space::Kept);
  }
  group.space[reduction.result()] = Space::Kept;
  for (const Value* output : group.outputs) {
    place(output, Space::Kept);
    if (output->tensorType().shape != kept)
      throw Unsupported{"output " + valueName(output) + " has shape [" +
                        shapeStr(output->tensorType().shape) + "], not the reduction's [" +
                        shapeStr(kept) + "]"};
  }
}

GroupAnalysis analyze(const Node& node, const OpRegistry& registry) {
  GroupAnalysis group;
  if (node.op() == "loupe.fused") {
    if (!node.hasBody()) throw Unsupported{"loupe.fused has no body"};
    if (const Attribute* kind = node.attrs().find("kind")) {
      const auto* text = std::get_if<std::string>(kind);
      if (!text || (*text != "pointwise" && *text != "reduction"))
        throw Unsupported{"fused group kind " + attributeStr(*kind) + " is not generated"};
    }
    for (const auto& input : node.body()->inputs())
      group.inputs.push_back(input.get());
    for (const Node* inner : node.body()->nodes())
      group.nodes.push_back(inner);
    for (const Value* output : node.body()->outputs())
      group.outputs.push_back(output);
  } else {
    for (const Value* operand : node.operands())
      group.inputs.push_back(operand);
    group.nodes.push_back(&node);
    for (const Value* result : node.results())
      group.outputs.push_back(result);
  }
  if (group.outputs.empty()) throw Unsupported{"the group has no outputs"};

  for (const Node* inner : group.nodes) {
    checkNode(*inner, registry);
    if (isConstantNode(inner)) continue;
    if (registry.find(inner->op())->kind != OpKind::Reduction) continue;
    if (group.reduction) throw Unsupported{"the group has more than one reduction"};
    group.reduction = inner;
  }
  for (const Value* input : group.inputs)
    if (!input || !input->type().isTensor())
      throw Unsupported{"the group has an absent or index-typed input"};
  for (const Value* output : group.outputs)
    if (!output->type().isTensor()) throw Unsupported{"the group has an index-typed output"};

  if (group.reduction) {
    classifyAroundReduction(group);
    return group;
  }
  group.iterationShape = group.outputs[0]->tensorType().shape;
  for (const Value* output : group.outputs)
    if (output->tensorType().shape != group.iterationShape)
      throw Unsupported{"outputs have different shapes ([" + shapeStr(group.iterationShape) +
                        "] and [" + shapeStr(output->tensorType().shape) + "])"};
  for (const Value* input : group.inputs)
    group.space[input] = Space::Full;
  for (const Node* inner : group.nodes)
    if (!isConstantNode(inner)) group.space[inner->result()] = Space::Full;
  for (const auto& [value, space] : group.space)
    if (value->tensorType().rank() > group.iterationShape.size())
      throw Unsupported{"value " + valueName(value) + " has a higher rank than the output"};
  return group;
}

// For each dim of `value`, the iteration dim it is indexed by (right-aligned broadcasting).
std::vector<size_t> operandDims(const GroupAnalysis& group, const Value* value) {
  size_t rank = value->tensorType().rank();
  auto found = group.space.find(value);
  bool kept = found != group.space.end() && found->second == Space::Kept;
  std::vector<size_t> spaceToIteration; // the dims of the value's space, as iteration dims
  for (size_t d = 0; d < group.iterationShape.size(); ++d) {
    bool reduced = std::binary_search(group.reducedDims.begin(), group.reducedDims.end(), d);
    if (!kept || !reduced)
      spaceToIteration.push_back(d);
    else if (group.keepdim)
      spaceToIteration.push_back(kNoIterationDim);
  }
  if (rank > spaceToIteration.size())
    throw Unsupported{"value " + valueName(value) + " has a higher rank than its iteration space"};
  return {spaceToIteration.end() - static_cast<std::ptrdiff_t>(rank), spaceToIteration.end()};
}

// ---- emission -------------------------------------------------------------------------------

// Everything a kernel needs besides its own function; guarded so that several kernels can share
// one translation unit.
constexpr const char* kPrelude = R"(#ifndef LOUPE_KERNEL_PRELUDE
#define LOUPE_KERNEL_PRELUDE
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

struct LoupeKernelArgs {
  int64_t rank;
  const int64_t* sizes;
  void* const* data;
  const int64_t* const* strides;
};

static inline float loupe_h2f(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) bits = sign | 0x7f800000u | (mantissa << 13);
  else bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t loupe_f2h(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (x < 0x38800000u) {
    float magnitude;
    std::memcpy(&magnitude, &x, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f)));
  }
  x += 0xc8000fffu + ((x >> 13) & 1u);
  return static_cast<uint16_t>(sign | (x >> 13));
}

static inline float loupe_bf2f(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t loupe_f2bf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
#endif
)";

std::string storageType(DType dtype) {
  switch (dtype) {
  case DType::Bool:
    return "uint8_t";
  case DType::U8:
    return "uint8_t";
  case DType::I8:
    return "int8_t";
  case DType::I16:
    return "int16_t";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  case DType::F16:
    return "uint16_t";
  case DType::BF16:
    return "uint16_t";
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  }
  return "?";
}

// The precision values of a dtype are computed in: half types widen to float.
DType computeDType(DType dtype) {
  if (dtype == DType::F64) return DType::F64;
  if (isFloating(dtype)) return DType::F32;
  if (isIntegral(dtype)) return DType::I64;
  return DType::Bool;
}

std::string computeType(DType dtype) {
  switch (computeDType(dtype)) {
  case DType::F64:
    return "double";
  case DType::F32:
    return "float";
  case DType::I64:
    return "int64_t";
  default:
    return "bool";
  }
}

// The widest category among an op's operands and result: bool < integer < float < double.
DType opComputeDType(const Node& node) {
  auto rank = [](DType d) {
    DType c = computeDType(d);
    return c == DType::Bool ? 0 : c == DType::I64 ? 1 : c == DType::F32 ? 2 : 3;
  };
  DType widest = computeDType(node.result()->tensorType().dtype);
  for (const Value* operand : node.operands())
    if (rank(operand->tensorType().dtype) > rank(widest))
      widest = computeDType(operand->tensorType().dtype);
  return widest;
}

std::string loadExpr(DType dtype, const std::string& element) {
  if (dtype == DType::F16) return "loupe_h2f(" + element + ")";
  if (dtype == DType::BF16) return "loupe_bf2f(" + element + ")";
  if (dtype == DType::Bool) return "(" + element + " != 0)";
  return element;
}

std::string storeExpr(DType dtype, const std::string& value) {
  if (dtype == DType::F16) return "loupe_f2h(static_cast<float>(" + value + "))";
  if (dtype == DType::BF16) return "loupe_f2bf(static_cast<float>(" + value + "))";
  if (dtype == DType::Bool) return "static_cast<uint8_t>(" + value + " != 0)";
  return "static_cast<" + storageType(dtype) + ">(" + value + ")";
}

std::string literal(double value, DType dtype) {
  std::string type = computeType(dtype);
  if (std::isnan(value)) return "std::numeric_limits<" + type + ">::quiet_NaN()";
  if (std::isinf(value))
    return std::string(value < 0 ? "-" : "") + "std::numeric_limits<" + type + ">::infinity()";
  if (computeDType(dtype) == DType::Bool) return value != 0 ? "true" : "false";
  if (computeDType(dtype) == DType::I64)
    return "static_cast<int64_t>(" + std::to_string(static_cast<int64_t>(value)) + "LL)";
  return "static_cast<" + type + ">(" + formatFloat(value) + ")";
}

class KernelEmitter {
public:
  KernelEmitter(const GroupAnalysis& group, const OpRegistry& registry)
      : group_(group), registry_(registry) {}

  std::string emit(const std::string& entry) {
    line("extern \"C\" void " + entry + "(const LoupeKernelArgs* args) {");
    ++indent_;
    line("const int64_t* n = args->sizes;");
    size_t operand = 0;
    for (const Value* value : group_.inputs)
      declareOperand(operand++, value, true);
    for (const Value* value : group_.outputs)
      declareOperand(operand++, value, false);
    for (const Node* node : group_.nodes)
      if (isConstantNode(node)) {
        names_[node->result()] = "c" + std::to_string(counter_++);
        line("const " + computeType(node->result()->tensorType().dtype) + " " +
             names_[node->result()] + " = " +
             literal(node->attrs().getFloats("data")[0], node->result()->tensorType().dtype) + ";");
      }
    std::string total = "1";
    for (size_t d = 0; d < group_.iterationShape.size(); ++d)
      total += " * n[" + std::to_string(d) + "]";
    line("const int64_t total = " + total + ";");
    line("(void)total;");
    group_.reduction ? emitReduction() : emitPointwise();
    --indent_;
    line("}");
    return std::string(kPrelude) + "\n" + out_;
  }

private:
  void line(const std::string& text) { out_ += std::string(2 * indent_, ' ') + text + "\n"; }

  void declareOperand(size_t index, const Value* value, bool input) {
    std::string i = std::to_string(index);
    std::string type = storageType(value->tensorType().dtype);
    std::string constness = input ? "const " : "";
    line(constness + type + "* p" + i + " = static_cast<" + constness + type + "*>(args->data[" +
         i + "]);");
    line("const int64_t* s" + i + " = args->strides[" + i + "];");
  }

  std::string offset(size_t operand, const std::vector<size_t>& dims) const {
    std::string s;
    for (size_t d : dims)
      s += (s.empty() ? "" : " + ") + ("i" + std::to_string(d)) + " * s" + std::to_string(operand) +
           "[" + std::to_string(d) + "]";
    return s.empty() ? "0" : s;
  }

  // Opens one loop per dim; the first `parallel` of them collapsed into one OpenMP loop.
  void openLoops(const std::vector<size_t>& dims, bool parallel) {
    if (parallel && !dims.empty())
      line("#pragma omp parallel for collapse(" + std::to_string(dims.size()) +
           ") if (total > 32768)");
    for (size_t d : dims) {
      std::string i = "i" + std::to_string(d);
      line("for (int64_t " + i + " = 0; " + i + " < n[" + std::to_string(d) + "]; ++" + i + ")");
    }
    line("{");
    ++indent_;
  }

  void closeLoops() {
    --indent_;
    line("}");
  }

  void emitLoads(Space space, const std::vector<size_t>& dims) {
    for (size_t i = 0; i < group_.inputs.size(); ++i) {
      const Value* value = group_.inputs[i];
      auto found = group_.space.find(value);
      if (found == group_.space.end() || found->second != space || names_.count(value)) continue;
      names_[value] = "x" + std::to_string(i);
      DType dtype = value->tensorType().dtype;
      line("const " + computeType(dtype) + " " + names_[value] + " = " +
           loadExpr(dtype, "p" + std::to_string(i) + "[" + offset(i, dims) + "]") + ";");
    }
  }

  std::string operandAs(const Value* value, DType compute) {
    std::string name = names_.at(value);
    if (computeType(value->tensorType().dtype) == computeType(compute)) return name;
    return "static_cast<" + computeType(compute) + ">(" + name + ")";
  }

  void emitNodes(Space space) {
    for (const Node* node : group_.nodes) {
      if (isConstantNode(node) || node == group_.reduction) continue;
      if (group_.space.at(node->result()) != space) continue;
      DType compute = opComputeDType(*node);
      std::vector<std::string> args;
      for (const Value* operand : node->operands())
        args.push_back(operandAs(operand, compute));
      std::string expr = registry_.find(node->op())->emitScalar(args, node->attrs(), compute);
      std::string name = "v" + std::to_string(counter_++);
      std::string type = computeType(node->result()->tensorType().dtype);
      line("const " + type + " " + name + " = static_cast<" + type + ">(" + expr + ");");
      names_[node->result()] = name;
    }
  }

  void emitStores(const std::vector<size_t>& dims) {
    size_t base = group_.inputs.size();
    for (size_t i = 0; i < group_.outputs.size(); ++i) {
      const Value* value = group_.outputs[i];
      line("p" + std::to_string(base + i) + "[" + offset(base + i, dims) +
           "] = " + storeExpr(value->tensorType().dtype, names_.at(value)) + ";");
    }
  }

  void emitPointwise() {
    std::vector<size_t> all;
    for (size_t d = 0; d < group_.iterationShape.size(); ++d)
      all.push_back(d);
    openLoops(all, true);
    emitLoads(Space::Full, all);
    emitNodes(Space::Full);
    emitStores(all);
    closeLoops();
  }

  void emitReduction() {
    std::vector<size_t> all, kept;
    for (size_t d = 0; d < group_.iterationShape.size(); ++d) {
      all.push_back(d);
      if (!std::binary_search(group_.reducedDims.begin(), group_.reducedDims.end(), d))
        kept.push_back(d);
    }
    std::string count = "1";
    for (size_t d : group_.reducedDims)
      count += " * n[" + std::to_string(d) + "]";
    line("const int64_t count = " + count + ";");
    line("(void)count;");

    const Node& reduction = *group_.reduction;
    const ReductionRecipe& recipe = *registry_.find(reduction.op())->reduction;
    // Floating reductions accumulate in double whatever the input precision (docs/cpu-codegen.md).
    DType accumulate =
        isFloating(reduction.operand(0)->tensorType().dtype) ? DType::F64 : DType::I64;
    std::string accType = computeType(accumulate);

    openLoops(kept, true);
    line(accType + " acc = " + recipe.init(accumulate) + ";");
    openLoops(group_.reducedDims, false);
    emitLoads(Space::Full, all);
    emitNodes(Space::Full);
    line("acc = " + recipe.combine("acc", operandAs(reduction.operand(0), accumulate)) + ";");
    closeLoops();
    std::string result = "v" + std::to_string(counter_++);
    std::string type = computeType(reduction.result()->tensorType().dtype);
    line("const " + type + " " + result + " = static_cast<" + type + ">(" +
         recipe.finalize("acc", "count") + ");");
    names_[reduction.result()] = result;
    emitLoads(Space::Kept, kept);
    emitNodes(Space::Kept);
    emitStores(kept);
    closeLoops();
  }

  const GroupAnalysis& group_;
  const OpRegistry& registry_;
  std::map<const Value*, std::string> names_;
  std::string out_;
  int indent_ = 0;
  int counter_ = 0;
};

} // namespace

bool canGenerateCpuKernel(const Node& node, std::string* whyNot, const OpRegistry& registry) {
  try {
    GroupAnalysis group = analyze(node, registry);
    for (const Value* input : group.inputs)
      operandDims(group, input);
    return true;
  } catch (const Unsupported& unsupported) {
    if (whyNot) *whyNot = unsupported.why;
  } catch (const Error& error) {
    if (whyNot) *whyNot = error.message();
  }
  return false;
}

GeneratedKernel generateCpuKernel(const Node& node, const std::string& kernelName,
                                  const OpRegistry& registry) {
  std::string why;
  if (!canGenerateCpuKernel(node, &why, registry))
    throw Error("codegen", "cannot generate a CPU kernel: " + why,
                ErrorContext{.node = node.describe()});
  std::string entry = "loupe_kernel_" + kernelName;
  std::replace_if(
      entry.begin(), entry.end(), [](char c) { return !std::isalnum(c) && c != '_'; }, '_');
  GroupAnalysis group = analyze(node, registry);
  return {entry, KernelEmitter(group, registry).emit(entry)};
}

CpuKernelSignature describeCpuKernel(const Node& node, const OpRegistry& registry) {
  try {
    GroupAnalysis group = analyze(node, registry);
    CpuKernelSignature signature{group.iterationShape, {}};
    for (const Value* input : group.inputs)
      signature.operandDims.push_back(operandDims(group, input));
    for (const Value* output : group.outputs)
      signature.operandDims.push_back(operandDims(group, output));
    return signature;
  } catch (const Unsupported& unsupported) {
    throw Error("codegen", "cannot generate a CPU kernel: " + unsupported.why,
                ErrorContext{.node = node.describe()});
  }
}

void launchCpuKernel(CpuKernelFn kernel, const CpuKernelSignature& signature,
                     const SymbolBindings& bindings, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs) {
  std::vector<int64_t> sizes = evaluateShape(signature.iterationShape, bindings);
  std::vector<const Tensor*> operands = inputs;
  operands.insert(operands.end(), outputs.begin(), outputs.end());
  if (operands.size() != signature.operandDims.size())
    throw Error("runtime", "kernel expects " + std::to_string(signature.operandDims.size()) +
                               " operands, got " + std::to_string(operands.size()));
  std::vector<std::vector<int64_t>> strides(operands.size(), std::vector<int64_t>(sizes.size(), 0));
  std::vector<void*> data;
  std::vector<const int64_t*> stridePointers;
  for (size_t p = 0; p < operands.size(); ++p) {
    const Tensor& tensor = *operands[p];
    const std::vector<size_t>& dims = signature.operandDims[p];
    bool isInput = p < inputs.size();
    std::string which = (isInput ? "input " : "output ") +
                        std::to_string(isInput ? p : p - inputs.size()) + " (" + tensor.describe() +
                        ")";
    if (tensor.rank() != dims.size())
      throw Error("runtime",
                  "kernel " + which + " should have rank " + std::to_string(dims.size()));
    for (size_t j = 0; j < dims.size(); ++j) {
      bool walks = dims[j] != kNoIterationDim;
      if (walks && tensor.size(j) == sizes[dims[j]])
        strides[p][dims[j]] = tensor.strides()[j];
      else if (tensor.size(j) != 1 || (!isInput && walks && sizes[dims[j]] != 1))
        throw Error("runtime", "kernel " + which + " dim " + std::to_string(j) + " has size " +
                                   std::to_string(tensor.size(j)) +
                                   " where the iteration space has " +
                                   (walks ? std::to_string(sizes[dims[j]]) : std::string("1")));
    }
    data.push_back(tensor.data());
    stridePointers.push_back(strides[p].data());
  }
  LoupeKernelArgs args{static_cast<int64_t>(sizes.size()), sizes.data(), data.data(),
                       stridePointers.data()};
  kernel(&args);
}

} // namespace loupe
