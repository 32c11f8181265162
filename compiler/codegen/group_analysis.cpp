// The analysis of a group before emission (group_analysis.h).
#include "compiler/codegen/group_analysis.h"

#include <algorithm>
#include <optional>
#include <set>

#include "compiler/codegen/kernel_signature.h"
#include "compiler/codegen/scalar_expression.h"
#include "compiler/ops/broadcast_view.h"
#include "compiler/ops/in_place_gather.h"

namespace loupe::codegen {

int GroupAnalysis::passOf(const Value* value) const {
  auto found = pass.find(value);
  return found == pass.end() ? 0 : found->second;
}

bool GroupAnalysis::isReduction(const Node* node) const {
  return std::find(reductions.begin(), reductions.end(), node) != reductions.end();
}

bool GroupAnalysis::isGathered(const Value* input) const {
  for (size_t i = 0; i < inputs.size() && i < gathered.size(); ++i)
    if (inputs[i] == input) return gathered[i];
  return false;
}

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
  if (isInPlaceGather(node)) return; // its operands are checked by analyzeGathers
  if (isBroadcastView(node)) return; // its value is its operand's, broadcast
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

// Marks the inputs the group's in-place gathers read, checking that each is read by gathers only
// (a kernel addresses it through its own strides), and adds the symbolic sizes of its gathered
// dims to the run-time scalars (the kernel clamps indices into them).
void analyzeGathers(GroupAnalysis& group) {
  group.gathered.assign(group.inputs.size(), false);
  for (const Node* node : group.nodes)
    if (!isConstantNode(node) && isInPlaceGather(*node)) group.gathers.push_back(node);
  if (group.gathers.empty()) return;
  if (group.reduction)
    throw Unsupported{"gather " + valueName(group.gathers.front()->result()) +
                      " is in a reduction group (gathers are read by pointwise groups only)"};
  for (const Node* gather : group.gathers) {
    const Value* source = gather->operand(0);
    auto input = std::find(group.inputs.begin(), group.inputs.end(), source);
    if (input == group.inputs.end())
      throw Unsupported{"gather " + valueName(gather->result()) + " reads " + valueName(source) +
                        ", which the group computes"};
    group.gathered[static_cast<size_t>(input - group.inputs.begin())] = true;
    const Shape& shape = source->tensorType().shape;
    for (size_t d = *inPlaceGatherFirstDim(*gather); d < shape.size(); ++d)
      if (!shape[d].isConstant() &&
          std::find(group.scalars.begin(), group.scalars.end(), shape[d]) == group.scalars.end())
        group.scalars.push_back(shape[d]);
  }
  for (const Node* node : group.nodes)
    for (size_t k = 0; k < node->numOperands(); ++k)
      if (bool sourceSlot = k == 0 && isInPlaceGather(*node);
          !sourceSlot && node->operand(k) && group.isGathered(node->operand(k)))
        throw Unsupported{"value " + valueName(node->operand(k)) +
                          " is gathered from and also read in place by " +
                          valueName(node->result())};
  for (const Value* output : group.outputs)
    if (group.isGathered(output))
      throw Unsupported{"gathered value " + valueName(output) + " is an output of the group"};
}

// Whether each index of every gather is proven within its dim: the index operand is a group input
// that stands for a loupe.constant of the enclosing graph (the fused node's operand at the same
// place; a lone node's operand itself), every value of it an integer in [0, size).
void proveGatherIndicesInBounds(GroupAnalysis& group, const Node& node) {
  auto constantData = [&](const Value* operand) -> std::optional<std::vector<double>> {
    auto input = std::find(group.inputs.begin(), group.inputs.end(), operand);
    if (input == group.inputs.end()) return std::nullopt; // computed inside the group
    auto position = static_cast<size_t>(input - group.inputs.begin());
    const Value* outer = node.op() == "loupe.fused" ? node.operand(position) : operand;
    const Node* producer = outer ? outer->definingNode() : nullptr;
    if (!isConstantNode(producer)) return std::nullopt;
    return producer->attrs().getFloats("data");
  };
  for (const Node* gather : group.gathers) {
    const Shape& shape = gather->operand(0)->tensorType().shape;
    bool proven = true;
    for (size_t d = *inPlaceGatherFirstDim(*gather); d < shape.size() && proven; ++d) {
      auto data = constantData(gather->operand(d + 1));
      proven = data && shape[d].isConstant();
      for (size_t i = 0; proven && i < data->size(); ++i) {
        double index = (*data)[i];
        proven = index >= 0 && index < static_cast<double>(*shape[d].constant()) &&
                 index == static_cast<double>(static_cast<int64_t>(index));
      }
    }
    group.gatherIndicesInBounds.push_back(proven);
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

std::string shapeText(const Shape& shape) {
  return "[" + shapeStr(shape) + "]";
}

// Which values walk the rows (the full space: the reductions' input shape) and which are one
// per row (the kept space: the reductions' result shape), and the pass over the rows each is
// available from (group_analysis.h).
void classifyRows(GroupAnalysis& group) {
  const Node& first = *group.reduction;
  const Shape& full = first.operand(0)->tensorType().shape;
  group.iterationShape = full;
  group.reducedDims = reducedDimsOf(first, full.size());
  group.keepdim = first.attrs().getBool("keepdim", false);
  Shape kept;
  for (size_t d = 0; d < full.size(); ++d) {
    bool reduced = std::binary_search(group.reducedDims.begin(), group.reducedDims.end(), d);
    if (!reduced)
      kept.push_back(full[d]);
    else if (group.keepdim)
      kept.push_back(1);
  }
  for (const Node* reduction : group.reductions) {
    if (reduction->operand(0)->tensorType().shape != full ||
        reducedDimsOf(*reduction, full.size()) != group.reducedDims ||
        reduction->attrs().getBool("keepdim", false) != group.keepdim)
      throw Unsupported{"reductions " + valueName(first.result()) + " and " +
                        valueName(reduction->result()) + " do not reduce the same rows"};
    if (reduction->result()->tensorType().shape != kept)
      throw Unsupported{"reduction result shape " +
                        shapeText(reduction->result()->tensorType().shape) +
                        " does not follow from its dim and keepdim attributes"};
  }

  // A node's space by its shape. Where the shapes cannot tell (every reduced dim has size 1 and
  // is kept), what depends on a reduction is kept.
  bool ambiguous = full == kept;
  std::set<const Value*> afterReduction;
  for (const Node* node : group.nodes) {
    if (isConstantNode(node)) continue;
    const Value* result = node->result();
    bool dependent = group.isReduction(node);
    for (const Value* operand : node->operands())
      dependent = dependent || afterReduction.count(operand);
    if (dependent) afterReduction.insert(result);
    const Shape& shape = result->tensorType().shape;
    if (group.isReduction(node) || (ambiguous ? dependent : shape == kept))
      group.space[result] = Space::Kept;
    else if (shape == full)
      group.space[result] = Space::Full;
    else
      throw Unsupported{"value " + valueName(result) + " has shape " + shapeText(shape) +
                        ", neither the rows' " + shapeText(full) + " nor the results' " +
                        shapeText(kept)};
  }
  // An input is kept when a kept node reads it, else full.
  for (const Value* input : group.inputs)
    group.space[input] = Space::Full;
  for (const Node* node : group.nodes)
    if (!isConstantNode(node) && group.space.at(node->result()) == Space::Kept &&
        !group.isReduction(node))
      for (const Value* operand : node->operands())
        if (std::find(group.inputs.begin(), group.inputs.end(), operand) != group.inputs.end())
          group.space[operand] = Space::Kept;

  // Every read is legal: a reduction folds a full value; a kept node reads kept values; a full
  // node may read a kept value (one per row, broadcast along the reduced dims) where its shape
  // broadcasts that way. Passes follow the reads.
  for (const Value* input : group.inputs)
    group.pass[input] = 0;
  for (const Node* node : group.nodes) {
    if (isConstantNode(node)) continue;
    Space space = group.space.at(node->result());
    int pass = 0;
    for (const Value* operand : node->operands()) {
      auto found = group.space.find(operand);
      if (found == group.space.end()) continue; // a constant
      pass = std::max(pass, group.pass.at(operand));
      if (group.isReduction(node) && found->second == Space::Kept)
        throw Unsupported{"reduction " + valueName(node->result()) + " folds " +
                          valueName(operand) + ", which is one value per row"};
      if (!group.isReduction(node) && space == Space::Kept && found->second == Space::Full)
        throw Unsupported{"value " + valueName(operand) + " walks the rows but feeds " +
                          valueName(node->result()) + ", one value per row"};
      if (space == Space::Full && found->second == Space::Kept) {
        group.rowGroup = true;
        std::vector<size_t> perRow = operandDims(group, operand);
        const Shape& shape = operand->tensorType().shape;
        for (size_t k = 0; k < shape.size(); ++k)
          if (!(shape[k] == SymExpr(1)) && perRow[k] != full.size() - shape.size() + k)
            throw Unsupported{"value " + valueName(operand) + " of shape " + shapeText(shape) +
                              " does not broadcast along the reduced dims of " + shapeText(full)};
      }
    }
    group.pass[node->result()] = group.isReduction(node) ? pass + 1 : pass;
  }

  int last = 0;
  for (const Node* reduction : group.reductions)
    last = std::max(last, group.pass.at(reduction->operand(0)));
  for (const Value* output : group.outputs) {
    if (std::find(group.inputs.begin(), group.inputs.end(), output) != group.inputs.end())
      throw Unsupported{"output " + valueName(output) + " is an input of the group"};
    if (group.space.at(output) == Space::Full) {
      group.rowGroup = true;
      last = std::max(last, group.pass.at(output));
    }
  }
  group.passes = last + 1;
  group.rowGroup = group.rowGroup || group.reductions.size() > 1;
}

} // namespace

GroupAnalysis analyzeGroup(const Node& node, const OpRegistry& registry) {
  GroupAnalysis group;
  if (node.op() == "loupe.fused") {
    if (!node.hasBody()) throw Unsupported{"loupe.fused has no body"};
    if (const Attribute* kind = node.attrs().find("kind")) {
      const auto* text = std::get_if<std::string>(kind);
      if (!text || (*text != "pointwise" && *text != "reduction" && *text != "row"))
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
    group.reductions.push_back(inner);
  }
  if (!group.reductions.empty()) group.reduction = group.reductions.front();
  bool rowKind = false;
  if (const Attribute* kind = node.attrs().find("kind"))
    rowKind = std::get_if<std::string>(kind) && std::get<std::string>(*kind) == "row";
  if (group.reductions.size() > 1 && !rowKind)
    throw Unsupported{"the group has more than one reduction (only a row group may)"};
  collectScalars(group, registry);
  analyzeGathers(group);
  proveGatherIndicesInBounds(group, node);
  for (const Value* input : group.inputs)
    if (!input || !input->type().isTensor())
      throw Unsupported{"the group has an absent or index-typed input"};
  for (const Value* output : group.outputs)
    if (!output->type().isTensor()) throw Unsupported{"the group has an index-typed output"};

  if (group.reduction) {
    classifyRows(group);
    return group;
  }
  group.iterationShape = group.outputs[0]->tensorType().shape;
  for (const Value* output : group.outputs)
    if (output->tensorType().shape != group.iterationShape)
      throw Unsupported{"outputs have different shapes ([" + shapeStr(group.iterationShape) +
                        "] and [" + shapeStr(output->tensorType().shape) + "])"};
  for (const Value* input : group.inputs)
    if (!group.isGathered(input)) group.space[input] = Space::Full;
  for (const Node* inner : group.nodes)
    if (!isConstantNode(inner)) group.space[inner->result()] = Space::Full;
  // A gather's address is its loop indices: it walks the whole space, never broadcasts into it.
  for (const Node* gather : group.gathers)
    if (gather->result()->tensorType().shape != group.iterationShape)
      throw Unsupported{"gather " + valueName(gather->result()) + " has shape " +
                        shapeText(gather->result()->tensorType().shape) +
                        ", not the iteration space's " + shapeText(group.iterationShape)};
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
