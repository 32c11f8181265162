#include "compiler/pass/fingerprint.h"

#include <bit>
#include <string_view>
#include <unordered_map>

namespace loupe {
namespace {

// 64-bit FNV-1a over what is added. Strings add their length first, so ("ab", "c") and
// ("a", "bc") differ.
class Hasher {
public:
  void bytes(const void* data, size_t size) {
    for (const auto* p = static_cast<const unsigned char*>(data); size--; ++p)
      hash_ = (hash_ ^ *p) * 0x100000001b3ULL;
  }
  void add(uint64_t value) { bytes(&value, sizeof value); }
  void add(std::string_view text) {
    add(text.size());
    bytes(text.data(), text.size());
  }
  void add(const SymExpr& e) { add(static_cast<uint64_t>(e.hash())); }
  void add(double value) { add(std::bit_cast<uint64_t>(value)); }
  uint64_t value() const { return hash_; }

private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// As Type's equality: contiguous strides are no strides, and a size-1 dim's stride never counts.
void addType(Hasher& h, const Type& type) {
  h.add(uint64_t{type.isIndex()});
  if (type.isIndex()) return h.add(type.indexValue());
  const TensorType& t = type.tensor();
  h.add(static_cast<uint64_t>(t.dtype));
  h.add(t.shape.size());
  for (const SymExpr& dim : t.shape)
    h.add(dim);
  h.add(static_cast<uint64_t>(t.device.kind));
  h.add(static_cast<uint64_t>(t.device.index));
  bool contiguous = t.isContiguous();
  h.add(uint64_t{contiguous});
  if (contiguous) return;
  Shape strides = t.effectiveStrides();
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] != SymExpr(1)) h.add(strides[i]);
}

void addAttribute(Hasher& h, const Attribute& attribute) {
  h.add(static_cast<uint64_t>(attribute.index()));
  std::visit(
      [&](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, NoneAttr>) {
        } else if constexpr (std::is_same_v<T, bool>) {
          h.add(uint64_t{value});
        } else if constexpr (std::is_same_v<T, DType>) {
          h.add(static_cast<uint64_t>(value));
        } else if constexpr (std::is_same_v<T, SymExpr> || std::is_same_v<T, double> ||
                             std::is_same_v<T, std::string>) {
          h.add(value);
        } else { // the lists
          h.add(value.size());
          for (const auto& item : value) {
            if constexpr (std::is_same_v<T, BoolList>)
              h.add(uint64_t{item});
            else
              h.add(item);
          }
        }
      },
      attribute);
}

void addLoc(Hasher& h, const SourceLoc& loc) {
  h.add(loc.file);
  h.add(static_cast<uint64_t>(loc.line));
  h.add(loc.module_path);
}

// One graph scope; a fused body is a scope of its own, as it is in the printed form.
void addGraph(Hasher& h, const Graph& graph) {
  std::unordered_map<const Value*, uint64_t> position;
  auto define = [&](const Value* value) {
    position.emplace(value, position.size());
    h.add(value->name());
    addType(h, value->type());
  };
  // An absent operand, and a value of another scope (only a broken graph has one).
  constexpr uint64_t kNone = ~uint64_t{0}, kForeign = ~uint64_t{1};
  auto use = [&](const Value* value) {
    if (!value) return h.add(kNone);
    auto it = position.find(value);
    h.add(it != position.end() ? it->second : kForeign);
    if (it == position.end()) h.add(value->name());
  };

  h.add(graph.name());
  h.add(graph.numInputs());
  for (const auto& input : graph.inputs())
    define(input.get());
  h.add(graph.numNodes());
  for (const Node* node : graph.nodes()) {
    h.add(node->op());
    h.add(node->numOperands());
    for (const Value* operand : node->operands())
      use(operand);
    h.add(node->attrs().values().size());
    for (const auto& [name, value] : node->attrs().values()) {
      h.add(name);
      addAttribute(h, value);
    }
    addLoc(h, node->loc());
    h.add(node->numResults());
    for (const Value* result : node->results())
      define(result);
    h.add(uint64_t{node->hasBody()});
    if (node->hasBody()) addGraph(h, *node->body());
  }
  h.add(graph.outputs().size());
  for (const Value* output : graph.outputs())
    use(output);
}

void addKernel(Hasher& h, const KernelChoice& k) {
  for (std::string_view text :
       {std::string_view(k.name), std::string_view(k.node), std::string_view(k.op),
        std::string_view(k.target), std::string_view(k.implementation), std::string_view(k.reason),
        std::string_view(k.source)})
    h.add(text);
  h.add(static_cast<uint64_t>(k.kind));
  h.add(k.rejected.size());
  for (const RejectedAlternative& alt : k.rejected) {
    h.add(static_cast<uint64_t>(alt.kind));
    h.add(alt.target);
    h.add(alt.why);
  }
  h.add(k.fusedOps.size());
  for (const std::string& op : k.fusedOps)
    h.add(op);
  h.add(k.scratchBytes);
}

void addMemoryPlan(Hasher& h, const MemoryPlan& m) {
  h.add(m.buffers.size());
  for (const BufferAssignment& b : m.buffers) {
    h.add(b.value);
    h.add(b.bytes);
    h.add(static_cast<uint64_t>(b.offset));
    h.add(static_cast<uint64_t>(b.firstUse));
    h.add(static_cast<uint64_t>(b.lastUse));
    h.add(uint64_t{b.graphInput});
    h.add(uint64_t{b.graphOutput});
    h.add(b.scratchOf);
  }
  h.add(m.arenaBytes);
  h.add(m.peakBytes);
  h.add(uint64_t{m.concrete});
}

} // namespace

uint64_t graphFingerprint(const Graph& graph) {
  Hasher h;
  addGraph(h, graph);
  return h.value();
}

uint64_t planFingerprint(const Plan& plan) {
  Hasher h;
  h.add(plan.kernels.size());
  for (const KernelChoice& kernel : plan.kernels)
    addKernel(h, kernel);
  addMemoryPlan(h, plan.memory);
  h.add(uint64_t{plan.cudaGraph});
  return h.value();
}

} // namespace loupe
