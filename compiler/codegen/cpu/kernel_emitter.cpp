// The emitter of generated kernels' C++ (kernel_emitter.h).
#include "compiler/codegen/cpu/kernel_emitter.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "compiler/codegen/cpu/kernel_prelude.h"
#include "compiler/codegen/gather_load.h"
#include "compiler/codegen/scalar_expression.h"
#include "compiler/ops/broadcast_view.h"
#include "compiler/ops/in_place_gather.h"
#include "compiler/ops/pointwise.h"

namespace loupe::cpu_codegen {

using namespace codegen; // the group analysis and scalar expressions the CUDA emitter shares

namespace {

// Below this many elements a kernel runs on one thread: starting a parallel region costs a few
// microseconds, more than small kernels take.
constexpr int64_t kParallelThreshold = 32768;

// Independent partial accumulators in a contiguous reduction: eight doubles fill four SSE2
// registers, two AVX2 ones or one AVX-512 one (cpu_isa.h), so the loop neither waits on one
// accumulator nor reassociates it.
constexpr int kLanes = 8;

// The most elements of a kept innermost dim one column-reduction chunk covers: its accumulators
// (doubles) then take 4 KiB each on the stack and stay in the L1 cache.
constexpr int kColumnChunk = 512;

// A row group's full-space value read again by a later pass is kept in a row buffer when
// computing it again takes at least this many ops (exp(x - max) in a softmax: the subtraction
// and the exp); a single op (layer norm's x - mean) costs less than the store and the load.
constexpr int kRowCacheMinOps = 2;

class KernelEmitter {
public:
  KernelEmitter(const GroupAnalysis& group, const OpRegistry& registry)
      : group_(group), registry_(registry) {}

  std::string emit(const std::string& entry) {
    line("extern \"C\" void " + entry + "(const LoupeKernelArgs* args) {");
    ++indent_;
    line("const int64_t* n = args->sizes;");
    for (size_t k = 0; k < group_.scalars.size(); ++k)
      line("const double " + scalarName(k) + " = static_cast<double>(args->scalars[" +
           std::to_string(k) + "]);");
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
             constantLiteral(node->attrs().getFloats("data")[0],
                             node->result()->tensorType().dtype) +
             ";");
      }
    std::string total = "1";
    for (size_t d = 0; d < group_.iterationShape.size(); ++d)
      total += " * n[" + std::to_string(d) + "]";
    line("const int64_t total = " + total + ";");
    line("(void)total;");
    group_.reduction ? emitReduction() : emitPointwise();
    --indent_;
    line("}");
    return std::string(kernelPrelude()) + "\n" + out_;
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

  // How the loop body reaches element (i0, ..., ik) of operand p: through its strides, or
  // through a row pointer when the innermost dim is contiguous (see emitInnerLoop).
  using Addressing = std::function<std::string(size_t operand)>;

  Addressing strided(const std::vector<size_t>& dims) const {
    return [this, dims](size_t p) { return "p" + std::to_string(p) + "[" + offset(p, dims) + "]"; };
  }

  // Opens one loop per dim, all of them collapsed into one OpenMP loop when `parallel` (shared
  // by the threads of the enclosing parallel region when `inRegion`, else a region of its own).
  void openLoops(const std::vector<size_t>& dims, bool parallel, bool inRegion = false) {
    if (parallel && !dims.empty())
      line(inRegion ? "#pragma omp for collapse(" + std::to_string(dims.size()) + ")"
                    : "#pragma omp parallel for collapse(" + std::to_string(dims.size()) +
                          ") if (total > " + std::to_string(kParallelThreshold) + ")");
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

  void emitLoads(Space space, const Addressing& element) {
    for (size_t i = 0; i < group_.inputs.size(); ++i) {
      const Value* value = group_.inputs[i];
      auto found = group_.space.find(value);
      if (found == group_.space.end() || found->second != space || names_.count(value)) continue;
      names_[value] = "x" + std::to_string(i);
      DType dtype = value->tensorType().dtype;
      line("const " + computeType(dtype) + " " + names_[value] + " = " +
           loadExpr(dtype, element(i)) + ";");
    }
  }

  std::string operandAs(const Value* value, DType compute) {
    std::string name = names_.at(value);
    if (computeType(value->tensorType().dtype) == computeType(compute)) return name;
    return "static_cast<" + computeType(compute) + ">(" + name + ")";
  }

  // The nodes of `space` available by pass `upto` (group_analysis.h) that have no name yet.
  void emitNodes(Space space, int upto = std::numeric_limits<int>::max()) {
    for (const Node* node : group_.nodes) {
      if (isConstantNode(node) || group_.isReduction(node) || names_.count(node->result()))
        continue;
      if (group_.space.at(node->result()) != space || group_.passOf(node->result()) > upto)
        continue;
      if (isBroadcastView(*node)) { // its operand's value at this element
        names_[node->result()] = names_.at(node->operand(0));
        continue;
      }
      std::string expr = isInPlaceGather(*node) ? gather(*node) : computed(*node);
      std::string name = "v" + std::to_string(counter_++);
      std::string type = computeType(node->result()->tensorType().dtype);
      line("const " + type + " " + name + " = static_cast<" + type + ">(" + expr + ");");
      names_[node->result()] = name;
    }
  }

  std::string computed(const Node& node) {
    DType compute = opComputeDType(node);
    std::vector<std::string> args;
    for (const Value* operand : node.operands())
      args.push_back(operandAs(operand, compute));
    return scalarExpression(node, args, group_.scalars, registry_);
  }

  // An in-place gather reads its input at the address its indices give (gather_load.h).
  std::string gather(const Node& node) {
    return gatherLoad(node, group_, names_, [](size_t p, size_t d) {
      return "s" + std::to_string(p) + "[" + std::to_string(d) + "]";
    });
  }

  // Stores the outputs (of `space` only, in a reduction group).
  void emitStores(const Addressing& element, std::optional<Space> space = std::nullopt) {
    size_t base = group_.inputs.size();
    for (size_t i = 0; i < group_.outputs.size(); ++i) {
      const Value* output = group_.outputs[i];
      if (space && group_.space.at(output) != *space) continue;
      line(element(base + i) + " = " + storeExpr(output->tensorType().dtype, names_.at(output)) +
           ";");
    }
  }

  // Operands the innermost loop touches: the full-space inputs, and the outputs when they are
  // written in the same loop (pointwise kernels).
  std::vector<size_t> innerOperands(bool withOutputs) const {
    std::vector<size_t> operands;
    for (size_t i = 0; i < group_.inputs.size(); ++i)
      if (auto found = group_.space.find(group_.inputs[i]);
          found != group_.space.end() && found->second == Space::Full)
        operands.push_back(i);
    if (withOutputs)
      for (size_t i = 0; i < group_.outputs.size(); ++i)
        operands.push_back(group_.inputs.size() + i);
    return operands;
  }

  const Value* operandValue(size_t p) const {
    return p < group_.inputs.size() ? group_.inputs[p] : group_.outputs[p - group_.inputs.size()];
  }

  // Whether operand p is broadcast along the innermost dim, as far as its type says: it does not
  // reach that dim, or has size 1 there. Its stride there is then 0 on the contiguous path, else 1.
  bool broadcastAlongInnermost(size_t p) const {
    const Value* value = operandValue(p);
    size_t last = group_.iterationShape.size() - 1;
    std::vector<size_t> dims = operandDims(group_, value);
    if (dims.empty() || dims.back() != last) return true;
    return value->tensorType().shape.back() == SymExpr(1) &&
           group_.iterationShape[last] != SymExpr(1);
  }

  // Declares `contiguous`: whether every operand in `operands` moves by its expected stride
  // along the innermost dim (a single-element innermost dim makes any stride fine).
  void declareContiguity(const std::vector<size_t>& operands) {
    std::string last = std::to_string(group_.iterationShape.size() - 1);
    std::string condition = "n[" + last + "] <= 1";
    std::string all;
    for (size_t p : operands)
      all += (all.empty() ? "" : " && ") + ("s" + std::to_string(p) + "[" + last + "] == ") +
             (broadcastAlongInnermost(p) ? "0" : "1");
    line("const bool contiguous = " + condition + (all.empty() ? "" : " || (" + all + ")") + ";");
  }

  // Declares one restrict-qualified row pointer per operand, at the start of the current row
  // (innermost index 0), and returns the addressing through them at innermost index `index`.
  Addressing declareRows(const std::vector<size_t>& operands, const std::vector<size_t>& outer,
                         const std::string& index) {
    for (size_t p : operands) {
      std::string i = std::to_string(p);
      bool input = p < group_.inputs.size();
      line(std::string(input ? "const " : "") + storageType(operandValue(p)->tensorType().dtype) +
           "* __restrict r" + i + " = p" + i + " + " + offset(p, outer) + ";");
    }
    return [this, index](size_t p) {
      return "r" + std::to_string(p) + "[" + (broadcastAlongInnermost(p) ? "0" : index) + "]";
    };
  }

  // Emits a block one level deeper whose names stay local to it.
  void scoped(const std::function<void()>& emitBody) {
    auto names = names_;
    ++indent_;
    emitBody();
    --indent_;
    names_ = std::move(names);
  }

  // Emits the innermost loop twice: `fast` over row pointers when `contiguous`, which the
  // compiler vectorises, and `general` through the strides otherwise. Names bound by either are
  // local to it.
  void
  emitInnerLoop(const std::vector<size_t>& operands, const std::vector<size_t>& outer,
                const std::function<void(const Addressing& fast, const std::string& index)>& fast,
                const std::function<void()>& general) {
    line("if (contiguous) {");
    scoped([&] {
      std::string last = "i" + std::to_string(group_.iterationShape.size() - 1);
      fast(declareRows(operands, outer, last), last);
    });
    line("} else {");
    scoped(general);
    line("}");
  }

  void emitPointwise() {
    std::vector<size_t> all;
    for (size_t d = 0; d < group_.iterationShape.size(); ++d)
      all.push_back(d);
    if (all.empty()) {
      openLoops(all, false);
      emitLoads(Space::Full, strided(all));
      emitNodes(Space::Full);
      emitStores(strided(all));
      closeLoops();
      return;
    }
    std::vector<size_t> outer(all.begin(), all.end() - 1);
    std::vector<size_t> operands = innerOperands(true);
    declareContiguity(operands);
    openLoops(outer, true);
    // Without outer dims the innermost loop is the one to share between threads. On the
    // combined construct the threshold names `parallel`: an `if` without that modifier applies
    // to `simd` too (OpenMP 5.0), so below the threshold the loop ran without SIMD, and its
    // vector math calls scalar, at 27 ns an element against 1.3 on one thread (a sigmoid, tanh
    // and multiply-add chain over 4096 floats, AVX-512).
    std::string above = "total > " + std::to_string(kParallelThreshold);
    std::string parallel = "#pragma omp parallel for if (" + above + ")";
    std::string vectorised = outer.empty()
                                 ? "#pragma omp parallel for simd if (parallel: " + above + ")"
                                 : std::string("#pragma omp simd");
    auto body = [&](const Addressing& element) {
      emitLoads(Space::Full, element);
      emitNodes(Space::Full);
      emitStores(element);
    };
    std::string last = std::to_string(all.back());
    std::string innerLoop =
        "for (int64_t i" + last + " = 0; i" + last + " < n[" + last + "]; ++i" + last + ") {";
    emitInnerLoop(
        operands, outer,
        [&](const Addressing& fast, const std::string&) {
          line(vectorised);
          line(innerLoop);
          ++indent_;
          body(fast);
          --indent_;
          line("}");
        },
        [&] {
          if (outer.empty()) line(parallel);
          line(innerLoop);
          ++indent_;
          body(strided(all));
          --indent_;
          line("}");
        });
    closeLoops();
  }

  // A reduction group: per row (the kept dims, shared between threads), its kept inputs and
  // what they alone compute, then each pass over the row's reduced elements (group_analysis.h:
  // pass k recomputes the full-space values it needs and folds the reductions whose inputs are
  // available by then; the last pass also stores the full-space outputs), each pass's results
  // and the kept values they make available; the kept outputs last. A plain reduction group
  // is one pass.
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

    bool innermostReduced = !all.empty() && (kept.empty() || kept.back() != all.back());
    // Reductions over outer dims (column sums) walk the kept innermost dim innermost when it is
    // contiguous, else each kept element's reduced elements one by one (below).
    bool columns =
        !innermostReduced && !all.empty() && !group_.reducedDims.empty() && group_.passes == 1;
    if (!columns) {
      emitRows(all, kept, innermostReduced);
      return;
    }
    declareContiguity(columnOperands());
    line("if (contiguous) {");
    scoped([&] { emitColumns(all, kept); });
    line("} else {");
    scoped([&] { emitRows(all, kept, false); });
    line("}");
  }

  // Each kept element (a row: the kept dims, shared between threads) in turn: see emitReduction.
  void emitRows(const std::vector<size_t>& all, const std::vector<size_t>& kept,
                bool innermostReduced) {
    std::vector<size_t> operands = innerOperands(false); // full inputs, and full outputs
    for (size_t i = 0; i < group_.outputs.size(); ++i)
      if (group_.space.at(group_.outputs[i]) == Space::Full)
        operands.push_back(group_.inputs.size() + i);
    if (innermostReduced) declareContiguity(operands);
    if (innermostReduced && group_.reducedDims.size() == 1) chooseRowCaches();
    // Each thread's row buffers, allocated once per kernel call; a kernel without kept dims is
    // one row on one thread.
    bool region = !rowCaches_.empty() && !kept.empty();
    if (region) {
      line("#pragma omp parallel if (total > " + std::to_string(kParallelThreshold) + ")");
      line("{");
      ++indent_;
    }
    for (const RowCache& cache : rowCaches_)
      line(cache.type + "* __restrict " + cache.buffer + " = static_cast<" + cache.type +
           "*>(malloc(static_cast<__SIZE_TYPE__>(count) * sizeof(" + cache.type + ")));");
    openLoops(kept, true, region);
    emitLoads(Space::Kept, strided(kept));
    emitNodes(Space::Kept, 0);
    for (int pass = 0; pass < group_.passes; ++pass) {
      std::vector<Accumulator> folded;
      for (size_t r = 0; r < group_.reductions.size(); ++r)
        if (group_.passOf(group_.reductions[r]->operand(0)) == pass)
          folded.push_back(accumulator(r));
      for (const Accumulator& acc : folded)
        line(acc.type + " " + acc.name + " = " + acc.init + ";");
      emitPass(pass, folded, operands, all, innermostReduced);
      for (const Accumulator& acc : folded) {
        std::string result = "v" + std::to_string(counter_++);
        std::string type = computeType(acc.reduction->result()->tensorType().dtype);
        line("const " + type + " " + result + " = static_cast<" + type + ">(" +
             acc.recipe->finalize(acc.name, "count") + ");");
        names_[acc.reduction->result()] = result;
      }
      emitNodes(Space::Kept, pass + 1);
    }
    emitStores(strided(kept), Space::Kept);
    closeLoops();
    for (const RowCache& cache : rowCaches_)
      line("free(" + cache.buffer + ");");
    if (region) {
      --indent_;
      line("}");
    }
  }

  // Operands of a column reduction's loops: every input and output, each reaching the innermost
  // dim (or broadcast along it).
  std::vector<size_t> columnOperands() const {
    std::vector<size_t> operands;
    for (size_t i = 0; i < group_.inputs.size(); ++i)
      if (group_.space.count(group_.inputs[i])) operands.push_back(i);
    for (size_t i = 0; i < group_.outputs.size(); ++i)
      operands.push_back(group_.inputs.size() + i);
    return operands;
  }

  // A one-pass reduction whose innermost dim is kept (a column sum: a bias gradient, a
  // statistic over every dim but the last), every operand contiguous along it. The kept
  // innermost dim is cut into chunks of at most kColumnChunk elements, shared between threads
  // with the outer kept dims; a chunk keeps its accumulators in arrays and adds each reduced
  // element's row of the chunk to them in a vectorised loop, so memory is read a row at a time
  // instead of a column at a time (one cache line per element). Kept values are computed again
  // per reduced element, in the same vector loop, rather than kept in more arrays.
  void emitColumns(const std::vector<size_t>& all, const std::vector<size_t>& kept) {
    std::vector<size_t> keptOuter(kept.begin(), kept.end() - 1);
    std::vector<size_t> allOuter(all.begin(), all.end() - 1);
    std::string width = "n[" + std::to_string(all.back()) + "]";
    std::string most = std::to_string(kColumnChunk);
    std::string threshold = std::to_string(kParallelThreshold);
    std::string rows = "1";
    for (size_t d : keptOuter)
      rows += " * n[" + std::to_string(d) + "]";
    // Enough chunks for every thread when the outer kept dims alone are fewer than the
    // threads, in whole vectors (16 floats fill an AVX-512 register).
    line("const int64_t threads = total > " + threshold + " ? omp_get_max_threads() : 1;");
    line("int64_t chunk = (" + width + " * (" + rows + ") + threads - 1) / threads;");
    line("chunk = (chunk + 15) / 16 * 16;");
    line("if (chunk > " + most + ") chunk = " + most + ";");
    line("if (chunk > " + width + ") chunk = " + width + ";");
    line("if (chunk < 1) chunk = 1;");
    line("const int64_t chunks = (" + width + " + chunk - 1) / chunk;");
    line("#pragma omp parallel for collapse(" + std::to_string(keptOuter.size() + 1) +
         ") if (total > " + threshold + ")");
    for (size_t d : keptOuter) {
      std::string i = "i" + std::to_string(d);
      line("for (int64_t " + i + " = 0; " + i + " < n[" + std::to_string(d) + "]; ++" + i + ")");
    }
    line("for (int64_t chunk_i = 0; chunk_i < chunks; ++chunk_i) {");
    ++indent_;
    line("const int64_t j0 = chunk_i * chunk;");
    line("const int64_t m = " + width + " - j0 < chunk ? " + width + " - j0 : chunk;");
    // Row pointers at the chunk's first element: `k` for kept operands (fixed for the chunk),
    // `r` for full ones (per reduced element).
    auto isKept = [this](size_t p) {
      auto found = group_.space.find(operandValue(p));
      return found != group_.space.end() && found->second == Space::Kept;
    };
    auto declareRow = [&](size_t p, const std::vector<size_t>& dims, const std::string& prefix) {
      std::string i = std::to_string(p);
      bool input = p < group_.inputs.size();
      line(std::string(input ? "const " : "") + storageType(operandValue(p)->tensorType().dtype) +
           "* __restrict " + prefix + i + " = p" + i + " + " + offset(p, dims) +
           (broadcastAlongInnermost(p) ? "" : " + j0") + ";");
    };
    std::vector<size_t> operands = columnOperands();
    for (size_t p : operands)
      if (isKept(p)) declareRow(p, keptOuter, "k");
    Addressing element = [&, isKept](size_t p) {
      return (isKept(p) ? "k" : "r") + std::to_string(p) + "[" +
             (broadcastAlongInnermost(p) ? "0" : "j") + "]";
    };
    std::vector<Accumulator> folded;
    for (size_t r = 0; r < group_.reductions.size(); ++r)
      folded.push_back(accumulator(r));
    for (const Accumulator& acc : folded) {
      line(acc.type + " " + acc.name + "[" + most + "];");
      line("for (int64_t j = 0; j < m; ++j) " + acc.name + "[j] = " + acc.init + ";");
    }
    openLoops(group_.reducedDims, false);
    for (size_t p : operands)
      if (!isKept(p)) declareRow(p, allOuter, "r");
    line("#pragma omp simd");
    line("for (int64_t j = 0; j < m; ++j) {");
    scoped([&] {
      emitLoads(Space::Kept, element);
      emitNodes(Space::Kept, 0);
      emitLoads(Space::Full, element);
      emitNodes(Space::Full, 0);
      for (const Accumulator& acc : folded) {
        std::string into = acc.name + "[j]";
        line(into + " = " +
             acc.recipe->combine(into, operandAs(acc.reduction->operand(0), acc.dtype)) + ";");
      }
      emitStores(element, Space::Full);
    });
    line("}");
    closeLoops();
    line("#pragma omp simd");
    line("for (int64_t j = 0; j < m; ++j) {");
    scoped([&] {
      emitLoads(Space::Kept, element);
      emitNodes(Space::Kept, 0);
      for (const Accumulator& acc : folded) {
        std::string result = "v" + std::to_string(counter_++);
        std::string type = computeType(acc.reduction->result()->tensorType().dtype);
        line("const " + type + " " + result + " = static_cast<" + type + ">(" +
             acc.recipe->finalize(acc.name + "[j]", "count") + ");");
        names_[acc.reduction->result()] = result;
      }
      emitNodes(Space::Kept, 1);
      emitStores(element, Space::Kept);
    });
    line("}");
    --indent_;
    line("}");
  }

  // A full-space value of pass k that a later pass reads (a node of that pass uses it, or it is
  // an output, stored by the last pass), kept per row in a buffer of the row's length instead of
  // computed again by each later pass when that takes kRowCacheMinOps ops or more (counting back
  // to the inputs, the kept values and the values kept in buffers). Its pass stores it at the
  // row's index, the later passes load it there.
  struct RowCache {
    const Value* value;
    std::string buffer, type;
  };
  void chooseRowCaches() {
    std::map<const Value*, int> readLater; // the last pass reading each value
    auto read = [&](const Value* value, int pass) {
      if (pass > group_.passOf(value)) readLater[value] = std::max(readLater[value], pass);
    };
    for (const Node* node : group_.nodes)
      if (!isConstantNode(node) && !group_.isReduction(node))
        for (const Value* operand : node->operands())
          read(operand, group_.passOf(node->result()));
    for (const Value* output : group_.outputs)
      if (group_.space.at(output) == Space::Full) read(output, group_.passes - 1);
    std::map<const Value*, int> ops; // to compute a value again in a later pass
    for (const Node* node : group_.nodes) {
      if (isConstantNode(node) || group_.isReduction(node)) continue;
      const Value* value = node->result();
      if (group_.space.at(value) != Space::Full) continue;
      int count = 1;
      for (const Value* operand : node->operands())
        if (auto found = ops.find(operand); found != ops.end()) count += found->second;
      bool cached = readLater.count(value) && count >= kRowCacheMinOps;
      ops[value] = cached ? 0 : count;
      if (cached)
        rowCaches_.push_back({value, "row" + std::to_string(rowCaches_.size()),
                              computeType(value->tensorType().dtype)});
    }
  }

  // Floating reductions accumulate in double whatever the input precision (docs/cpu-codegen.md),
  // except those whose result is one of their inputs (amax, amin): exact in the input's own
  // precision, they accumulate in it, which halves the vector work of a softmax's max pass.
  struct Accumulator {
    const Node* reduction;
    const ReductionRecipe* recipe;
    DType dtype;
    std::string type, init, name;
  };
  Accumulator accumulator(size_t r) const {
    const Node* reduction = group_.reductions[r];
    const ReductionRecipe* recipe = &*registry_.find(reduction->op())->reduction;
    DType input = reduction->operand(0)->tensorType().dtype;
    bool picksAnInput = reduction->op() == "aten.amax" || reduction->op() == "aten.amin";
    DType dtype = !isFloating(input) ? DType::I64 : picksAnInput ? input : DType::F64;
    return {reduction,
            recipe,
            dtype,
            computeType(dtype),
            recipe->init(dtype),
            "acc" + std::to_string(r)};
  }

  // One pass over the row's reduced elements: loads, the full-space values of the pass, each
  // folded reduction's combine into `into(acc)`, and in the last pass the full-space stores.
  void emitPass(int pass, const std::vector<Accumulator>& folded,
                const std::vector<size_t>& operands, const std::vector<size_t>& all,
                bool innermostReduced) {
    bool last = pass == group_.passes - 1;
    // `row`: the index along the row, where the row caches are read and written.
    auto body = [&](const Addressing& element,
                    const std::function<std::string(const Accumulator&)>& into,
                    const std::string& row) {
      auto names = names_;
      emitLoads(Space::Full, element);
      for (const RowCache& cache : rowCaches_)
        if (group_.passOf(cache.value) < pass) {
          names_[cache.value] = "v" + std::to_string(counter_++);
          line("const " + cache.type + " " + names_[cache.value] + " = " + cache.buffer + "[" +
               row + "];");
        }
      emitNodes(Space::Full, pass);
      if (!last)
        for (const RowCache& cache : rowCaches_)
          if (group_.passOf(cache.value) == pass)
            line(cache.buffer + "[" + row + "] = " + names_.at(cache.value) + ";");
      for (const Accumulator& acc : folded)
        line(into(acc) + " = " +
             acc.recipe->combine(into(acc), operandAs(acc.reduction->operand(0), acc.dtype)) + ";");
      if (last) emitStores(element, Space::Full);
      names_ = std::move(names);
    };
    auto whole = [](const Accumulator& acc) { return acc.name; };
    if (!innermostReduced) {
      // Row caches are kept only when the innermost dim is reduced: no row index is read here
      // (and a 0-d group has no dims at all).
      openLoops(group_.reducedDims, false);
      body(strided(all), whole, all.empty() ? "0" : "i" + std::to_string(all.back()));
      closeLoops();
      return;
    }
    std::string last_ = std::to_string(all.back());
    std::vector<size_t> outerReduced(group_.reducedDims.begin(), group_.reducedDims.end() - 1);
    std::vector<size_t> outer(all.begin(), all.end() - 1);
    openLoops(outerReduced, false);
    emitInnerLoop(
        operands, outer,
        [&](const Addressing& fast, const std::string& index) {
          // kLanes independent partial results, so the loop vectorises without reassociating
          // one accumulator; the recipe's combine is associative (it also merges the lanes).
          std::string lanes = std::to_string(kLanes);
          for (const Accumulator& acc : folded) {
            line(acc.type + " lane_" + acc.name + "[" + lanes + "];");
            line("for (int l = 0; l < " + lanes + "; ++l) lane_" + acc.name + "[l] = " + acc.init +
                 ";");
          }
          line("int64_t " + index + " = 0;");
          line("for (; " + index + " + " + lanes + " <= n[" + last_ + "]; " + index +
               " += " + lanes + ") {");
          ++indent_;
          line("#pragma omp simd");
          line("for (int l = 0; l < " + lanes + "; ++l) {");
          ++indent_;
          body(
              [&](size_t p) {
                std::string element = fast(p);
                return element.substr(0, element.size() - 1) +
                       (element.ends_with("[0]") ? "]" : " + l]");
              },
              [](const Accumulator& acc) { return "lane_" + acc.name + "[l]"; }, index + " + l");
          --indent_;
          line("}");
          --indent_;
          line("}");
          for (const Accumulator& acc : folded)
            line("for (int l = 0; l < " + lanes + "; ++l) " + acc.name + " = " +
                 acc.recipe->combine(acc.name, "lane_" + acc.name + "[l]") + ";");
          line("for (; " + index + " < n[" + last_ + "]; ++" + index + ") {");
          ++indent_;
          body(fast, whole, index);
          --indent_;
          line("}");
        },
        [&] {
          openLoops({all.back()}, false);
          body(strided(all), whole, "i" + last_);
          closeLoops();
        });
    closeLoops();
  }

  const GroupAnalysis& group_;
  const OpRegistry& registry_;
  std::vector<RowCache> rowCaches_;
  std::map<const Value*, std::string> names_;
  std::string out_;
  int indent_ = 0;
  int counter_ = 0;
};

} // namespace

std::string emitKernelSource(const GroupAnalysis& group, const OpRegistry& registry,
                             const std::string& entry) {
  return KernelEmitter(group, registry).emit(entry);
}

} // namespace loupe::cpu_codegen
