#include "gui/tools/graph_generator.h"

#include <algorithm>
#include <map>

#include "compiler/pass/memory_layout.h"

namespace loupe::view {
namespace {

constexpr int kNodesPerLayer = 23;
constexpr int kBatch = 8, kWidth = 64, kHidden = 256;

struct Tensor {
  int rows = 0, cols = 0; // cols 0: a vector of `rows`
  std::string str() const {
    return "f32[" + std::to_string(rows) + (cols > 0 ? "," + std::to_string(cols) : "") + "]";
  }
  int64_t bytes() const { return 4LL * rows * std::max(cols, 1); }
};

struct Op {
  std::string name, op;
  std::vector<std::string> operands;
  std::string attrs; // inside the braces, without the kernel
  Tensor type;
  int line = 0;
  std::string module;
};

// A top-level node: one op, or a fused group of ops.
struct Item {
  std::vector<Op> ops; // more than one: a fused group named after its last op
  const Op& result() const { return ops.back(); }
};

struct Model {
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<Item> items;
};

// Where an op's text came from: each role has its own line in an imagined model.py.
Op op(std::string name, std::string opName, std::vector<std::string> operands, Tensor type,
      int line, std::string module, std::string attrs = {}) {
  return Op{std::move(name),  std::move(opName), std::move(operands), std::move(attrs), type, line,
            std::move(module)};
}

Model buildModel(int nodes, bool fused) {
  Model model;
  const Tensor act{kBatch, kWidth}, square{kWidth, kWidth};
  model.inputs.emplace_back("x", act);
  std::string in = "x";
  const int layers = std::max(1, nodes / kNodesPerLayer);
  for (int i = 0; i < layers; ++i) {
    const std::string p = "L" + std::to_string(i) + "_";
    const std::string layer = "model.layers." + std::to_string(i);
    auto weight = [&](const std::string& name, Tensor t) {
      model.inputs.emplace_back(p + name, t);
      return p + name;
    };
    const std::string nw = weight("nw", {kWidth, 0}), wq = weight("wq", square),
                      wk = weight("wk", square), wv = weight("wv", square),
                      wo = weight("wo", square), w1 = weight("w1", {kHidden, kWidth}),
                      w2 = weight("w2", {kWidth, kHidden});
    auto add = [&](std::vector<Op> ops) {
      if (fused || ops.size() == 1)
        model.items.push_back({std::move(ops)});
      else
        for (Op& o : ops)
          model.items.push_back({{std::move(o)}});
    };
    const std::string norm = layer + ".norm", attn = layer + ".attn", mlp = layer + ".mlp";
    add({op(p + "m", "aten.mean.dim", {in}, {kBatch, 1}, 20, norm, "dim=[1], keepdim=true")});
    add({op(p + "c", "aten.sub.Tensor", {in, p + "m"}, act, 21, norm),
         op(p + "n", "aten.mul.Tensor", {p + "c", nw}, act, 21, norm)});
    for (const auto& [proj, w] : {std::pair{"q", wq}, std::pair{"k", wk}, std::pair{"v", wv}}) {
      add({op(p + "t" + proj, "aten.t", {w}, square, 24, attn + "." + proj)});
      add({op(p + proj, "aten.mm", {p + "n", p + "t" + proj}, act, 24, attn + "." + proj)});
    }
    add({op(p + "kt", "aten.t", {p + "k"}, {kWidth, kBatch}, 25, attn)});
    add({op(p + "s", "aten.mm", {p + "q", p + "kt"}, {kBatch, kBatch}, 25, attn)});
    add({op(p + "p", "aten._softmax", {p + "s"}, {kBatch, kBatch}, 26, attn,
            "dim=1, half_to_float=false")});
    add({op(p + "a", "aten.mm", {p + "p", p + "v"}, act, 27, attn)});
    add({op(p + "to", "aten.t", {wo}, square, 28, attn + ".o")});
    add({op(p + "o", "aten.mm", {p + "a", p + "to"}, act, 28, attn + ".o")});
    add({op(p + "r1", "aten.add.Tensor", {in, p + "o"}, act, 29, layer)});
    add({op(p + "t1", "aten.t", {w1}, {kWidth, kHidden}, 31, mlp + ".fc1")});
    add({op(p + "f1", "aten.mm", {p + "r1", p + "t1"}, {kBatch, kHidden}, 31, mlp + ".fc1")});
    add({op(p + "g", "aten.gelu", {p + "f1"}, {kBatch, kHidden}, 32, mlp + ".act")});
    add({op(p + "t2", "aten.t", {w2}, {kHidden, kWidth}, 33, mlp + ".fc2")});
    add({op(p + "f2", "aten.mm", {p + "g", p + "t2"}, act, 33, mlp + ".fc2")});
    add({op(p + "r2", "aten.add.Tensor", {p + "r1", p + "f2"}, act, 34, layer)});
    in = p + "r2";
  }
  return model;
}

std::string attrsText(std::string attrs, const std::string& extra) {
  if (!extra.empty()) attrs += (attrs.empty() ? "" : ", ") + extra;
  return attrs.empty() ? "" : " {" + attrs + "}";
}

std::string loc(const Op& o) {
  return "  loc(\"model.py\":" + std::to_string(o.line) + " \"" + o.module + "\")";
}

std::string operandList(const std::vector<std::string>& operands) {
  std::string out;
  for (const std::string& name : operands)
    out += (out.empty() ? "%" : ", %") + name;
  return out;
}

std::string printModel(const Model& model, bool kernels) {
  std::map<std::string, Tensor> typeOf(model.inputs.begin(), model.inputs.end());
  std::string text = "graph @generated(";
  for (size_t i = 0; i < model.inputs.size(); ++i)
    text += (i ? ", %" : "%") + model.inputs[i].first + ": " + model.inputs[i].second.str();
  text += ") -> (" + model.items.back().result().type.str() + ") {\n";
  for (size_t k = 0; k < model.items.size(); ++k) {
    const Item& item = model.items[k];
    const std::string kernel = kernels ? "kernel=\"k" + std::to_string(k) + "\"" : "";
    if (item.ops.size() == 1) {
      const Op& o = item.ops[0];
      text += "  %" + o.name + " = " + o.op + "(" + operandList(o.operands) + ")" +
              attrsText(o.attrs, kernel) + " : " + o.type.str() + loc(o) + "\n";
    } else {
      // The group's operands are the values its ops read from outside it.
      std::vector<std::string> outside;
      for (const Op& o : item.ops)
        for (const std::string& operand : o.operands)
          if (std::none_of(item.ops.begin(), item.ops.end(),
                           [&](const Op& x) { return x.name == operand; }) &&
              std::find(outside.begin(), outside.end(), operand) == outside.end())
            outside.push_back(operand);
      const Op& last = item.result();
      text += "  %" + last.name + " = loupe.fused(" + operandList(outside) + ")" +
              attrsText(kernel, "kind=\"pointwise\"") + " : " + last.type.str() + loc(last) +
              " {\n    ^(";
      for (size_t i = 0; i < outside.size(); ++i)
        text += (i ? ", %" : "%") + outside[i] + ": " + typeOf.at(outside[i]).str();
      text += "):\n";
      for (const Op& o : item.ops)
        text += "      %" + o.name + " = " + o.op + "(" + operandList(o.operands) + ")" +
                attrsText(o.attrs, "") + " : " + o.type.str() + loc(o) + "\n";
      text += "      yield %" + last.name + "\n  }\n";
    }
    for (const Op& o : item.ops)
      typeOf[o.name] = o.type;
  }
  return text + "  return %" + model.items.back().result().name + "\n}\n";
}

size_t countOps(const Model& model) {
  size_t n = 0;
  for (const Item& item : model.items)
    n += item.ops.size() + (item.ops.size() > 1 ? 1 : 0);
  return n;
}

} // namespace

std::string generateGraphLir(int nodes, GeneratedStage stage) {
  return printModel(buildModel(nodes, stage != GeneratedStage::Traced),
                    stage == GeneratedStage::Kernels);
}

std::vector<PassRecord> generatedPasses(int nodes) {
  struct Step {
    const char* name;
    GeneratedStage stage;
    double wallMs;
  };
  constexpr Step kPipeline[] = {{"shape-propagation", GeneratedStage::Traced, 0.4},
                                {"decomposition", GeneratedStage::Traced, 0.9},
                                {"cse", GeneratedStage::Traced, 0.6},
                                {"pointwise-fusion", GeneratedStage::Fused, 2.1},
                                {"kernel-selection", GeneratedStage::Kernels, 1.3},
                                {"memory-planning", GeneratedStage::Kernels, 0.8}};
  std::vector<PassRecord> passes;
  const double scale = nodes / 1000.0;
  int64_t before = static_cast<int64_t>(countOps(buildModel(nodes, false)));
  for (size_t i = 0; i < std::size(kPipeline); ++i) {
    const Step& step = kPipeline[i];
    const int64_t after =
        static_cast<int64_t>(countOps(buildModel(nodes, step.stage != GeneratedStage::Traced)));
    const bool changed = i > 0 && step.stage != kPipeline[i - 1].stage;
    passes.push_back({PassInfo{.name = step.name,
                               .ordinal = static_cast<int>(i),
                               .wall_ms = step.wallMs * scale,
                               .changed = changed,
                               .nodes_before = before,
                               .nodes_after = after},
                      SnapshotRecord{.lir = generateGraphLir(nodes, step.stage)}});
    before = after;
  }
  return passes;
}

std::vector<BufferRecord> generatedBuffers(int nodes, MemoryPlanRecord& plan) {
  const Model model = buildModel(nodes, true);
  const int last = static_cast<int>(model.items.size()) - 1;
  std::map<std::string, int> stepOf, lastUse;
  for (const auto& input : model.inputs)
    stepOf[input.first] = 0;
  for (int k = 0; k <= last; ++k) {
    for (const Op& o : model.items[static_cast<size_t>(k)].ops)
      for (const std::string& operand : o.operands)
        lastUse[operand] = std::max(lastUse[operand], k);
    stepOf[model.items[static_cast<size_t>(k)].result().name] = k;
  }
  std::vector<BufferRecord> buffers;
  for (const auto& [name, type] : model.inputs)
    buffers.push_back({.name = name,
                       .size_bytes = type.bytes(),
                       .first_use = 0,
                       .last_use = lastUse[name],
                       .is_graph_input = true});
  std::vector<BufferInterval> intervals;
  for (const Item& item : model.items) {
    const Op& o = item.result();
    const bool output = &item == &model.items.back();
    const int first = stepOf[o.name];
    const int end = output ? last : std::max(first, lastUse[o.name]);
    buffers.push_back({.name = o.name,
                       .size_bytes = o.type.bytes(),
                       .first_use = first,
                       .last_use = end,
                       .is_graph_output = output});
    intervals.push_back({o.type.bytes(), first, end});
  }
  const ArenaLayout arena = layoutArena(intervals);
  for (size_t i = 0; i < intervals.size(); ++i)
    buffers[model.inputs.size() + i].offset = arena.offsets[i];
  plan = MemoryPlanRecord{.arena_bytes = arena.arenaBytes, .peak_bytes = arena.peakBytes};
  return buffers;
}

} // namespace loupe::view
