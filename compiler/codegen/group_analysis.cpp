// The analysis of a group before emission (group_analysis.h).
#include "compiler/codegen/group_analysis.h"

#include <algorithm>
#include <set>

#include "compiler/codegen/kernel_signature.h"
#include "compiler/codegen/scalar_expression.h"

namespace loupe::codegen {

bool isConstantNode(const Node* node) {
  return node && node->op() == "loupe.constant";
}

namespace {

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
  // Symbolic ints become run-time scalars, which only scalar expressions can take.
  for (const auto& [name, value] : node.attrs().values()) {
    const auto* list = std::get_if<IntList>(&value);
    if (list &&
        !std::all_of(list->begin(), list->end(), [](const SymExpr& d) { return d.isConstant(); }))
      throw Unsupported{"op " + node.op() + " has a symbolic list attribute " + name};
    const auto* dim = std::get_if<SymExpr>(&value);
    if (dim && !dim->isConstant() && info->kind != OpKind::Elementwise)
      throw Unsupported{"op " + node.op() + " has a symbolic attribute " + name};
  }
  for (const Value* operand : node.operands()) {
    if (!operand) throw Unsupported{"op " + node.op() + " has an absent optional operand"};
    if (!operand->type().isTensor())
      throw Unsupported{"op " + node.op() + " has an index operand " + valueName(operand)};
  }
}

// Collects the group's symbolic attribute values, and checks that every op using one can
// take it at run time.
void collectScalars(GroupAnalysis& group, const OpRegistry& registry) {
  for (const Node* node : group.nodes) {
    bool symbolic = false;
    for (const auto& [name, value] : node->attrs().values())
      if (const auto* dim = std::get_if<SymExpr>(&value); dim && !dim->isConstant()) {
        symbolic = true;
        if (std::find(group.scalars.begin(), group.scalars.end(), *dim) == group.scalars.end())
          group.scalars.push_back(*dim);
      }
    if (symbolic)
      scalarExpression(*node, std::vector<std::string>(node->numOperands(), "x"), group.scalars,
                       registry);
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

} // namespace

GroupAnalysis analyzeGroup(const Node& node, const OpRegistry& registry) {
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
  collectScalars(group, registry);
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

} // namespace loupe::codegen
