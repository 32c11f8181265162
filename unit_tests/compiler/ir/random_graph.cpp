#include "random_graph.h"

#include <cstring>
#include <limits>
#include <random>
#include <set>

namespace loupe::testing {

namespace {

class RandomGraphBuilder {
public:
  explicit RandomGraphBuilder(uint64_t seed) : rng_(seed) {}

  std::unique_ptr<Graph> graph() {
    auto g = std::make_unique<Graph>(
        pick<std::string>({"forward", "backward_0", "g.1", "my graph", "7"}));
    fill(*g, 0, 1 + below(3));
    return g;
  }

private:
  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  T pick(std::initializer_list<T> options) {
    return *(options.begin() + below(options.size()));
  }

  // Fills `g` with inputs, nodes (some fused, up to depth 2) and outputs; names are unique
  // within the graph, as the parser requires.
  void fill(Graph& g, int depth, size_t numInputs) {
    std::set<std::string> used;
    std::vector<Value*> visible;
    for (size_t i = 0; i < numInputs; ++i)
      visible.push_back(g.addInput(type(), name(used)));
    size_t numNodes = below(6);
    for (size_t i = 0; i < numNodes; ++i) {
      std::vector<Value*> operands;
      size_t numOperands = below(4);
      for (size_t k = 0; k < numOperands; ++k)
        operands.push_back(visible.empty() || chance(0.15) ? nullptr
                                                           : visible[below(visible.size())]);
      std::vector<Type> types;
      size_t numResults = pick<size_t>({0, 1, 1, 1, 2, 3});
      for (size_t k = 0; k < numResults; ++k)
        types.push_back(type());
      bool fused = depth < 2 && chance(0.2);
      Node* n = g.createNode(fused ? "loupe.fused" : opName(), operands, types, attrs(), loc());
      if (fused) {
        auto body = std::make_unique<Graph>();
        fill(*body, depth + 1, operands.size());
        n->setBody(std::move(body));
      }
      for (Value* r : n->results()) {
        r->setName(name(used));
        visible.push_back(r);
      }
    }
    std::vector<Value*> outputs;
    if (!visible.empty())
      for (size_t k = below(3); k > 0; --k)
        outputs.push_back(visible[below(visible.size())]);
    g.setOutputs(outputs);
  }

  std::string name(std::set<std::string>& used) {
    if (chance(0.5)) return {}; // numbered when printed
    std::string n = pick<std::string>({"x", "0", "3", "a.b", "_t", "my name", "%", "q\"uote",
                                       "tab\there", "\xc3\xa9t\xc3\xa9", "-1", "1.5", "x.", ".x"});
    n += chance(0.5) ? std::to_string(below(4)) : "";
    return used.insert(n).second ? n : std::string{};
  }

  std::string opName() {
    return pick<std::string>({"aten.mm", "aten.add.Tensor", "prims.convert_element_type",
                              "aten.foo_", "return", "yield", "weird op", "x", "_.y"});
  }

  SymExpr dim() {
    const SymExpr s0 = SymExpr::symbol("s0"), s1 = SymExpr::symbol("s1");
    switch (below(9)) {
    case 0:
      return SymExpr(static_cast<int64_t>(below(300)));
    case 1:
      return s0;
    case 2:
      return 2 * s0 + static_cast<int64_t>(below(5));
    case 3:
      return s0 * s1;
    case 4:
      return SymExpr::floorDiv(s0 - 3, 2) + 1;
    case 5:
      return SymExpr::mod(s1, 8) * s0;
    case 6:
      return s0 * s0 - s1;
    case 7:
      return SymExpr::floorDiv(s0, s1);
    default:
      return SymExpr(-static_cast<int64_t>(below(100)));
    }
  }

  Shape shape() {
    Shape s;
    for (size_t k = below(4); k > 0; --k)
      s.push_back(dim());
    return s;
  }

  Type type() {
    if (chance(0.1)) return Type::index(dim());
    TensorType t;
    t.dtype = static_cast<DType>(below(10));
    t.shape = shape();
    if (chance(0.3)) {
      t.strides = t.shape;
      for (auto& stride : *t.strides)
        stride = dim();
    }
    if (chance(0.2)) t.device = Device{Device::Kind::CUDA, static_cast<int>(below(4))};
    return t;
  }

  double awkwardFloat() {
    if (chance(0.3)) {
      uint64_t bits = rng_();
      double d;
      static_assert(sizeof d == sizeof bits);
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
    return pick<double>({0.0, -0.0, 1.0, 0.1, 1e-05, -2.5, 1e300, 1e21, 123456789.0, 5e-324,
                         2.2250738585072014e-308, std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN(), 0.30000000000000004});
  }

  std::string awkwardString() {
    std::string s;
    for (size_t k = below(8); k > 0; --k)
      s += static_cast<char>(below(256));
    return pick<std::string>({"", "tanh", "a \"quoted\" \\ back", "line\nbreak\ttab"}) + s;
  }

  Attribute attribute() {
    switch (below(9)) {
    case 0:
      return NoneAttr{};
    case 1:
      return chance(0.5);
    case 2:
      return dim();
    case 3:
      return awkwardFloat();
    case 4:
      return awkwardString();
    case 5:
      return static_cast<DType>(below(10));
    case 6:
      return shape();
    case 7: {
      FloatList l;
      for (size_t k = 1 + below(3); k > 0; --k)
        l.push_back(awkwardFloat());
      return l;
    }
    default: {
      BoolList l;
      for (size_t k = 1 + below(3); k > 0; --k)
        l.push_back(chance(0.5));
      return l;
    }
    }
  }

  AttrMap attrs() {
    AttrMap a;
    for (size_t k = below(4); k > 0; --k)
      a.set(pick<std::string>({"dim", "eps", "alpha", "my attr", "x.y", "_k", "none", "9lives"}),
            attribute());
    return a;
  }

  SourceLoc loc() {
    switch (below(4)) {
    case 0:
      return {};
    case 1:
      return {"model.py", static_cast<int>(below(500))};
    case 2:
      return {"", 0, "encoder.layers.0"};
    default:
      return {"dir/my \"file\".py", -1, awkwardString() + "x"};
    }
  }

  std::mt19937_64 rng_;
};

} // namespace

std::unique_ptr<Graph> randomGraph(uint64_t seed) {
  return RandomGraphBuilder(seed).graph();
}

} // namespace loupe::testing
