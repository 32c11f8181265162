// algebraic-simplification: removes operations that provably do nothing: x*1, x+0, x-0, x/1,
// neg(neg(x)), a permute/transpose pair that composes to the identity, a view of a view
// (composed into one), a view/expand/conversion to what the value already is, alias and detach,
// a clone of a value nothing mutates, an exact widening conversion that an arithmetic op's
// type promotion makes anyway, and an expand an elementwise op's own broadcasting makes anyway.
//
// Every rule is exact in IEEE arithmetic (x+0 may turn a -0.0 result into +0.0, which compares
// equal) and is only applied when the replacement has exactly the type of the result it
// replaces (dtype, shape, strides, device), so no broadcast or type promotion is lost.
// x*0 is deliberately absent: inf*0 and NaN*0 are NaN, not 0. Each rule is one entry in the
// table below; its name is the decision kind, so a trace counts the hits per rule, and its row
// is the rule location its decisions carry (not the loop that applies the table). Nodes left
// without users (the inner neg of neg(neg(x))) are removed by dce.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <source_location>

#include "compiler/ir/error.h"
#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {
namespace {

// What a rule found: either a value that replaces the node's result, or a new operand for the
// node itself (view(view(x)) becomes view(x)).
struct Rewrite {
  Value* replacement = nullptr;
  Value* newInput = nullptr;
  size_t operand = 0; // which operand newInput replaces
};

using Rule = std::function<std::optional<Rewrite>(Node&)>;

std::optional<double> scalarAttr(const Node& node, std::string_view name, double fallback) {
  const Attribute* value = node.attrs().find(name);
  if (!value || std::holds_alternative<NoneAttr>(*value)) return fallback;
  if (const auto* f = std::get_if<double>(value)) return *f;
  if (const auto* i = std::get_if<SymExpr>(value))
    if (auto c = i->constant()) return static_cast<double>(*c);
  return std::nullopt; // symbolic
}

bool scalarAttrIs(const Node& node, std::string_view name, double expected) {
  return scalarAttr(node, name, expected) == expected;
}

bool finiteAlpha(const Node& node) {
  auto alpha = scalarAttr(node, "alpha", 1.0);
  return alpha && std::isfinite(*alpha);
}

std::optional<Rewrite> replaceBy(Value* value) {
  return Rewrite{.replacement = value};
}

// x OP c → x when c is a splat of `identity` (and, for add/sub, alpha keeps it an identity).
Rule rightIdentity(double identity, bool usesAlpha) {
  return [=](Node& n) -> std::optional<Rewrite> {
    if (n.numOperands() == 1 && n.attrs().has("other") && scalarAttrIs(n, "other", identity) &&
        (!usesAlpha || finiteAlpha(n)))
      return replaceBy(n.operand(0));
    if (n.numOperands() == 2 && isSplatConstant(n.operand(1), identity) &&
        (!usesAlpha || finiteAlpha(n)))
      return replaceBy(n.operand(0));
    return std::nullopt;
  };
}

// c OP x → x when c is a splat of `identity` (and alpha, when the op has one, is 1).
Rule leftIdentity(double identity) {
  return [=](Node& n) -> std::optional<Rewrite> {
    if (n.numOperands() == 2 && isSplatConstant(n.operand(0), identity) &&
        scalarAttrIs(n, "alpha", 1.0))
      return replaceBy(n.operand(1));
    return std::nullopt;
  };
}

// The operand of `n` when it is produced by one of `ops`.
Node* producerIn(const Node& n, std::initializer_list<std::string_view> ops) {
  Value* input = n.numOperands() ? n.operand(0) : nullptr;
  Node* producer = input ? input->definingNode() : nullptr;
  if (!producer || !isRewritable(*producer)) return nullptr;
  return std::find(ops.begin(), ops.end(), producer->op()) != ops.end() ? producer : nullptr;
}

Rule involution(std::string_view op) {
  return [=](Node& n) -> std::optional<Rewrite> {
    if (Node* inner = producerIn(n, {op})) return replaceBy(inner->operand(0));
    return std::nullopt;
  };
}

// The dims permutation a permute, transpose or t applies (result dim i = input dim p[i]).
std::optional<std::vector<int64_t>> permutationOf(const Node& n) {
  if (!n.numOperands() || !n.operand(0) || !n.operand(0)->type().isTensor()) return std::nullopt;
  auto rank = static_cast<int64_t>(n.operand(0)->tensorType().rank());
  auto normalize = [&](int64_t d) { return d < 0 ? d + rank : d; };
  std::vector<int64_t> p(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    p[static_cast<size_t>(i)] = i;
  if (n.op() == "aten.permute") {
    auto dims = n.attrs().getInts("dims");
    if (static_cast<int64_t>(dims.size()) != rank) return std::nullopt;
    std::transform(dims.begin(), dims.end(), p.begin(), normalize);
  } else if (n.op() == "aten.transpose.int" || n.op() == "aten.t") {
    int64_t a = n.op() == "aten.t" ? 0 : normalize(n.attrs().getInt("dim0"));
    int64_t b = n.op() == "aten.t" ? rank - 1 : normalize(n.attrs().getInt("dim1"));
    if (rank == 0 || a < 0 || b < 0 || a >= rank || b >= rank) return std::nullopt;
    std::swap(p[static_cast<size_t>(a)], p[static_cast<size_t>(b)]);
  } else {
    return std::nullopt;
  }
  return p;
}

std::optional<Rewrite> inversePermutes(Node& n) {
  Node* inner = producerIn(n, {"aten.permute", "aten.transpose.int", "aten.t"});
  auto outerP = permutationOf(n);
  auto innerP = inner ? permutationOf(*inner) : std::nullopt;
  if (!outerP || !innerP) return std::nullopt;
  for (size_t i = 0; i < outerP->size(); ++i)
    if ((*innerP)[static_cast<size_t>((*outerP)[i])] != static_cast<int64_t>(i))
      return std::nullopt;
  return replaceBy(inner->operand(0));
}

// view(view(x)) → view(x); reshape(view-or-reshape(x)) → reshape(x). A view of a reshape is
// left alone: the reshape may have copied a layout the view cannot express.
std::optional<Rewrite> composedViews(Node& n) {
  Node* inner = n.op() == "aten.view"
                    ? producerIn(n, {"aten.view", "aten._unsafe_view"})
                    : producerIn(n, {"aten.view", "aten._unsafe_view", "aten.reshape"});
  if (!inner) return std::nullopt;
  return Rewrite{.newInput = inner->operand(0)};
}

// x OP convert(w) → x OP w, for an arithmetic OP and a conversion that widens exactly (bf16 or
// f16 to f32 or f64, f32 to f64): type promotion widens w the same way, so the result is the
// same, and a fused kernel reads w as it is rather than a converted copy of it (torch's
// layer-norm decomposition converts a bf16 weight and bias to f32, kernels of their own for
// tensors of another shape than the group's). keepsType checks that promotion still gives the
// result's dtype (a 0-d operand may not take part in promotion).
bool widensExactly(DType from, DType to) {
  return (isReducedFloat(from) && (to == DType::F32 || to == DType::F64)) ||
         (from == DType::F32 && to == DType::F64);
}

std::optional<Rewrite> promotedConversion(Node& n) {
  if (n.numOperands() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    Value* operand = n.operand(i);
    Node* convert = operand ? operand->definingNode() : nullptr;
    if (!convert || !isRewritable(*convert) || convert->op() != "prims.convert_element_type" ||
        !convert->operand(0)->type().isTensor())
      continue;
    if (widensExactly(convert->operand(0)->tensorType().dtype, operand->tensorType().dtype))
      return Rewrite{.newInput = convert->operand(0), .operand = i};
  }
  return std::nullopt;
}

// elementwise(expand(x), ...) → elementwise(x, ...): an elementwise op broadcasts its operands
// as expand does (right-aligned), so where the result keeps its shape (keepsType) the op reads x
// itself; a fused kernel then reads one value per row from x instead of a zero-stride view of
// the full shape, which its contiguous fast path does not take (a cross-entropy backward's
// label-smoothing term: the whole row kernel ran strided, 8x slower).
std::optional<Rewrite> broadcastReadInPlace(Node& n) {
  const OpInfo* info = registeredOp(n);
  if (!info || info->kind != OpKind::Elementwise) return std::nullopt;
  for (size_t i = 0; i < n.numOperands(); ++i) {
    Value* operand = n.operand(i);
    Node* expand = operand ? operand->definingNode() : nullptr;
    if (expand && isRewritable(*expand) && expand->op() == "aten.expand" &&
        expand->operand(0)->type().isTensor())
      return Rewrite{.newInput = expand->operand(0), .operand = i};
  }
  return std::nullopt;
}

std::optional<Rewrite> sameTypeNoOp(Node& n) {
  return replaceBy(n.operand(0));
}

// A copy may be dropped only when neither the original nor the copy is written to, and the copy
// is not returned (the caller may rely on getting memory of its own).
std::optional<Rewrite> unmutatedCopy(Node& n) {
  Value* source = n.operand(0);
  Value* copy = n.result();
  if (!source || copy->isGraphOutput() || isMutated(*source) || isMutated(*copy))
    return std::nullopt;
  return replaceBy(source);
}

struct RuleEntry {
  std::string_view name;             // the decision kind
  std::vector<std::string_view> ops; // empty: any op (the rule checks what it takes)
  Rule rule;
  std::source_location where; // the row: what a decision names as the rule that made it
};

// One row of the table; the default argument is the row's own line.
RuleEntry row(std::string_view name, std::vector<std::string_view> ops, Rule rule,
              std::source_location where = std::source_location::current()) {
  return {name, std::move(ops), std::move(rule), where};
}

const std::vector<RuleEntry>& rules() {
  static const std::vector<RuleEntry> table = {
      row("mul-by-one", {"aten.mul.Tensor", "aten.mul.Scalar"}, rightIdentity(1.0, false)),
      row("one-times", {"aten.mul.Tensor"}, leftIdentity(1.0)),
      row("add-zero", {"aten.add.Tensor", "aten.add.Scalar"}, rightIdentity(0.0, true)),
      row("zero-plus", {"aten.add.Tensor"}, leftIdentity(0.0)),
      row("sub-zero", {"aten.sub.Tensor", "aten.sub.Scalar"}, rightIdentity(0.0, true)),
      row("div-by-one", {"aten.div.Tensor", "aten.div.Scalar"}, rightIdentity(1.0, false)),
      row("double-negation", {"aten.neg"}, involution("aten.neg")),
      row("inverse-permutes", {"aten.permute", "aten.transpose.int", "aten.t"}, inversePermutes),
      row("view-of-view", {"aten.view", "aten.reshape", "aten._unsafe_view"}, composedViews),
      row("same-shape-view", {"aten.view", "aten.reshape", "aten._unsafe_view", "aten.expand"},
          sameTypeNoOp),
      row("same-dtype-conversion", {"prims.convert_element_type", "aten.to.dtype"}, sameTypeNoOp),
      row("alias", {"aten.alias", "aten.detach"}, sameTypeNoOp),
      row("promoted-conversion",
          {"aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor"},
          promotedConversion),
      row("unmutated-copy", {"aten.clone", "aten._to_copy"}, unmutatedCopy),
      row("broadcast-read-in-place", {}, broadcastReadInPlace),
  };
  return table;
}

// The rewrite keeps the result type identical, or it is not made.
bool keepsType(Node& n, const Rewrite& rewrite) {
  if (rewrite.replacement) return rewrite.replacement->type() == n.result()->type();
  try {
    std::vector<Value*> operands = n.operands();
    operands[rewrite.operand] = rewrite.newInput;
    auto types = inferTypes(*registeredOp(n), operands, n.attrs());
    return types.size() == 1 && types[0] == n.result()->type();
  } catch (const Error&) {
    return false; // the composed view is not expressible on this input
  }
}

enum class Outcome { None, Rewired, Replaced, Refused };

Outcome applyFirstRule(Graph& graph, Node& n, PassContext& ctx) {
  for (const RuleEntry& entry : rules()) {
    if (!entry.ops.empty() &&
        std::find(entry.ops.begin(), entry.ops.end(), n.op()) == entry.ops.end())
      continue;
    std::optional<Rewrite> rewrite = entry.rule(n);
    if (!rewrite || !keepsType(n, *rewrite)) continue;
    auto describe = [&] {
      return describeCall(n) + (rewrite->replacement ? " → " + valueRef(rewrite->replacement)
                                                     : " reads " + valueRef(rewrite->newInput));
    };
    if (!ctx.decide(entry.name, describe, resultNames(n), entry.where)) return Outcome::Refused;
    if (!rewrite->replacement) {
      n.setOperand(rewrite->operand, rewrite->newInput);
      return Outcome::Rewired;
    }
    replaceNode(graph, n, {rewrite->replacement});
    return Outcome::Replaced;
  }
  return Outcome::None;
}

// A rewired node may match another rule (view(view(x)) to x's own shape is then a no-op).
void simplify(Graph& graph, Node& n, PassContext& ctx) {
  while (applyFirstRule(graph, n, ctx) == Outcome::Rewired) {
  }
}

class AlgebraicSimplificationPass : public TablePass<PassId::AlgebraicSimplificationPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    for (Node* node : graph.nodes())
      if (isRewritable(*node) && node->numResults() == 1 && node->numOperands() > 0)
        simplify(graph, *node, ctx);
  }
};

} // namespace

std::unique_ptr<Pass> createAlgebraicSimplificationPass() {
  return std::make_unique<AlgebraicSimplificationPass>();
}

} // namespace loupe
