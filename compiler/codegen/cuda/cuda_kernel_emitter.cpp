// The emitter of generated CUDA kernels (cuda_kernel_emitter.h). Every entry starts the same
// way (operand pointers, run-time scalars, constants), then walks its part of the iteration
// space: a grid-stride loop over elements, vectors of elements, rows or outputs. Index
// arithmetic is 64-bit, so tensors past 2^31 elements need no other kernel, but for the strided
// pointwise entry's narrow twin (32-bit coordinates and offsets, which the host chooses where
// they fit), and every entry divides by a size that is constant in the IR as a literal (a
// multiply and a shift). docs/cuda-codegen.md has why and the measurements.
#include "compiler/codegen/cuda/cuda_kernel_emitter.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "compiler/codegen/cuda/cuda_kernel_layout.h"
#include "compiler/codegen/cuda/cuda_prelude.h"
#include "compiler/codegen/gather_load.h"
#include "compiler/codegen/scalar_expression.h"
#include "compiler/ops/broadcast_view.h"
#include "compiler/ops/in_place_gather.h"

namespace loupe::cuda_codegen {

using namespace codegen;

namespace {

// Elements each thread of the split entry loads per step of its chunk.
constexpr int kSplitUnroll = 4;

// Elements each thread of the vectorised row entry loads per step of a row it streams from
// global memory, before it computes any: four f32 vectors, two of bf16 or f16, at most four
// vectors (docs/cuda-codegen.md has the measurements).
constexpr int kRowElementsInFlight = 16;
constexpr int kRowMaxVectorsInFlight = 4;

class CudaKernelEmitter {
public:
  CudaKernelEmitter(const GroupAnalysis& group, const CudaKernelLayout& layout,
                    const OpRegistry& registry, const std::string& kernelName)
      : group_(group), layout_(layout), registry_(registry), kernelName_(kernelName),
        argsType_("LoupeArgs_" + entryName(kernelName, CudaEntryRole::Pointwise)) {
    for (size_t d = 0; d < group_.iterationShape.size(); ++d) {
      all_.push_back(d);
      if (!std::binary_search(group_.reducedDims.begin(), group_.reducedDims.end(), d))
        kept_.push_back(d);
    }
  }

  std::string emit() {
    out_ = std::string(cudaPrelude()) + "\n";
    emitArgsStruct();
    for (CudaEntryRole role : layout_.entries) {
      names_.clear();
      counter_ = 0;
      switch (role) {
      case CudaEntryRole::Pointwise:
        entry(role, kCudaPointwiseBlock, [&] { emitPointwise(false); });
        break;
      case CudaEntryRole::PointwiseNarrow:
        entry(role, kCudaPointwiseBlock, [&] { emitPointwise(true); });
        break;
      case CudaEntryRole::PointwiseVectorised:
        entry(role, kCudaPointwiseBlock, [&] { emitVectorised(); });
        break;
      case CudaEntryRole::ReductionRow:
        entry(role, kCudaRowBlock, [&] { emitRowReduction(false); });
        break;
      case CudaEntryRole::ReductionRowVectorised:
        entry(role, kCudaRowBlock, [&] { emitRowReduction(true); });
        break;
      case CudaEntryRole::ReductionPerOutput:
        entry(role, kCudaPointwiseBlock, [&] { emitPerOutputReduction(); });
        break;
      case CudaEntryRole::ReductionSplit:
        entry(role, kCudaRowBlock, [&] { emitSplitReduction(); });
        break;
      }
    }
    return out_;
  }

private:
  void line(const std::string& text) { out_ += std::string(2 * indent_, ' ') + text + "\n"; }
  void open(const std::string& text) {
    line(text);
    ++indent_;
  }
  void close(const std::string& text = "}") {
    --indent_;
    line(text);
  }

  size_t operandCount() const { return group_.inputs.size() + group_.outputs.size(); }
  const Value* operandValue(size_t p) const {
    return p < group_.inputs.size() ? group_.inputs[p] : group_.outputs[p - group_.inputs.size()];
  }
  DType dtypeOf(size_t p) const { return operandValue(p)->tensorType().dtype; }
  static std::string size(size_t d) { return "args.sizes[" + std::to_string(d) + "]"; }
  static std::string stride(size_t p, size_t d) {
    return "args.strides[" + std::to_string(p) + "][" + std::to_string(d) + "]";
  }
  static std::string product(const std::vector<size_t>& dims) {
    std::string text = "int64_t(1)";
    for (size_t d : dims)
      text += " * " + size(d);
    return text;
  }

  void emitArgsStruct() {
    size_t rank = std::max<size_t>(group_.iterationShape.size(), 1), p = operandCount();
    size_t scalars = std::max<size_t>(group_.scalars.size(), 1);
    line("// The parameter block (cuda_kernel_abi.h): sizes, data, strides, scalars, and for a");
    line("// reduction the split entry's workspace.");
    open("struct " + argsType_ + " {");
    line("int64_t sizes[" + std::to_string(rank) + "];");
    line("int64_t data[" + std::to_string(p) + "];");
    line("int64_t strides[" + std::to_string(p) + "][" + std::to_string(rank) + "];");
    line("int64_t scalars[" + std::to_string(scalars) + "];");
    if (group_.reduction) line("int64_t workspace;");
    close("};");
  }

  // One __global__ function: the common declarations, then `body`.
  void entry(CudaEntryRole role, unsigned maxThreads, const std::function<void()>& body) {
    line("");
    open("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(maxThreads) + ") " +
         entryName(kernelName_, role) + "(const " + argsType_ + " args) {");
    for (size_t p = 0; p < operandCount(); ++p) {
      std::string constness = p < group_.inputs.size() ? "const " : "";
      std::string type = constness + storageType(dtypeOf(p));
      line(type + "* __restrict__ p" + std::to_string(p) + " = reinterpret_cast<" + type +
           "*>(args.data[" + std::to_string(p) + "]);");
    }
    for (size_t k = 0; k < group_.scalars.size(); ++k)
      line("const double " + scalarName(k) + " = static_cast<double>(args.scalars[" +
           std::to_string(k) + "]);");
    for (const Node* node : group_.nodes)
      if (isConstantNode(node)) {
        DType dtype = node->result()->tensorType().dtype;
        names_[node->result()] = "c" + std::to_string(counter_++);
        line("const " + computeType(dtype) + " " + names_[node->result()] + " = " +
             constantLiteral(node->attrs().getFloats("data")[0], dtype) + ";");
      }
    line("const int64_t total = " + product(all_) + ";");
    line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
    line("const int64_t step = int64_t(gridDim.x) * blockDim.x;");
    line("(void)total;");
    line("(void)first;");
    line("(void)step;");
    body();
    close();
  }

  // Declares i<d> for each of `dims` from the linear index `linear` over them (row-major).
  // `narrow`: the linear index is below 2^31 (so is every size): the divisions are 32-bit and
  // the coordinates int32_t.
  void decompose(const std::string& linear, const std::vector<size_t>& dims, bool narrow = false) {
    if (dims.empty()) return;
    std::string coordinate = narrow ? "const int32_t i" : "const int64_t i";
    if (dims.size() == 1) {
      line(coordinate + std::to_string(dims[0]) + " = " + linear + ";");
      return;
    }
    std::string rest = "rest" + std::to_string(counter_++);
    std::string type = narrow ? "uint32_t" : "int64_t";
    // A constant size is a literal: the compiler divides by it with a multiply and a shift.
    auto sizeOf = [&](size_t d) {
      if (std::optional<int64_t> constant = group_.iterationShape[d].constant())
        return (narrow ? "uint32_t(" : "int64_t(") + std::to_string(*constant) + ")";
      return narrow ? "static_cast<uint32_t>(" + size(d) + ")" : size(d);
    };
    line(type + " " + rest + " = static_cast<" + type + ">(" + linear + ");");
    for (size_t k = dims.size(); k-- > 1;) {
      std::string d = std::to_string(dims[k]);
      line(coordinate + d + " = " + rest + " % " + sizeOf(dims[k]) + ";");
      line(rest + " /= " + sizeOf(dims[k]) + ";");
    }
    line(coordinate + std::to_string(dims[0]) + " = " + rest + ";");
  }

  // How an operation reaches operand p's element: an index expression into p<p>, or a name.
  using Addressing = std::function<std::string(size_t operand)>;

  // `narrow`: the offsets are int32_t (the narrow entry).
  Addressing strided(const std::vector<size_t>& dims, bool narrow = false) const {
    return [dims, narrow](size_t p) {
      std::string offset;
      for (size_t d : dims) {
        std::string s = narrow ? "static_cast<int32_t>(" + stride(p, d) + ")" : stride(p, d);
        offset += (offset.empty() ? "" : " + ") + ("i" + std::to_string(d)) + " * " + s;
      }
      return "p" + std::to_string(p) + "[" + (offset.empty() ? "0" : offset) + "]";
    };
  }

  bool inSpace(const Value* value, Space space) const {
    auto found = group_.space.find(value);
    return found != group_.space.end() && found->second == space;
  }

  // Names the inputs of `space` (those pass `pass` reads, when given: a walk over a row).
  void emitLoads(Space space, const Addressing& element, std::optional<int> pass = std::nullopt) {
    for (size_t i = 0; i < group_.inputs.size(); ++i) {
      const Value* value = group_.inputs[i];
      if (!inSpace(value, space) || names_.count(value)) continue;
      if (pass && !(layout_.readInPasses[i] & passBit(*pass))) continue;
      names_[value] = "x" + std::to_string(i);
      DType dtype = value->tensorType().dtype;
      line("const " + computeType(dtype) + " " + names_[value] + " = " +
           loadExpr(dtype, element(i)) + ";");
    }
  }

  std::string operandAs(const Value* value, DType compute) const {
    std::string name = names_.at(value);
    if (computeType(value->tensorType().dtype) == computeType(compute)) return name;
    return "static_cast<" + computeType(compute) + ">(" + name + ")";
  }

  // The nodes of `space` available by pass `upto` that have no name yet, in order. A node whose
  // operands are not all named is left out: a pass that does not read an input computes
  // nothing from it (a use of such a node would find no name, and throw).
  void emitNodes(Space space, int upto = std::numeric_limits<int>::max()) {
    for (const Node* node : group_.nodes) {
      if (isConstantNode(node) || group_.isReduction(node) || names_.count(node->result()))
        continue;
      if (group_.space.at(node->result()) != space || group_.passOf(node->result()) > upto)
        continue;
      if (isBroadcastView(*node)) { // its operand's value at this element
        if (names_.count(node->operand(0))) names_[node->result()] = names_.at(node->operand(0));
        continue;
      }
      std::optional<size_t> gathered = inPlaceGatherFirstDim(*node);
      // A gather's input is addressed, not named: its indices are what it reads.
      auto firstRead = node->operands().begin() + (gathered ? *gathered + 1 : 0);
      if (!std::all_of(firstRead, node->operands().end(),
                       [&](const Value* operand) { return names_.count(operand) > 0; }))
        continue;
      std::string expr = gathered ? gather(*node) : computed(*node);
      std::string name = "v" + std::to_string(counter_++);
      std::string type = computeType(node->result()->tensorType().dtype);
      line("const " + type + " " + name + " = static_cast<" + type + ">(" + expr + ");");
      names_[node->result()] = name;
    }
  }

  std::string computed(const Node& node) const {
    DType compute = opComputeDType(node);
    std::vector<std::string> args;
    for (const Value* operand : node.operands())
      args.push_back(operandAs(operand, compute));
    return scalarExpression(node, args, group_.scalars, registry_);
  }

  // An in-place gather reads its input at the address its indices give (gather_load.h).
  std::string gather(const Node& node) const {
    if (narrow_)
      return gatherLoad(
          node, group_, names_,
          [](size_t p, size_t d) { return "static_cast<int32_t>(" + stride(p, d) + ")"; },
          "int32_t");
    return gatherLoad(node, group_, names_, [](size_t p, size_t d) { return stride(p, d); });
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

  // A block whose value names are its own.
  void scoped(const std::string& header, const std::function<void()>& body) {
    auto names = names_;
    open(header);
    body();
    close();
    names_ = std::move(names);
  }

  // `narrow`: coordinates and offsets in 32 bits (the host checked they fit: fitsNarrowIndex).
  void emitPointwise(bool narrow) {
    scoped("for (int64_t linear = first; linear < total; linear += step) {", [&] {
      decompose("linear", all_, narrow);
      narrow_ = narrow;
      emitLoads(Space::Full, strided(all_, narrow));
      emitNodes(Space::Full);
      emitStores(strided(all_, narrow));
      narrow_ = false;
    });
  }

  // Each thread takes `width` consecutive elements: inputs are loaded as whole vectors (a
  // broadcast input from its repeated row, at linear % span; a single-element one once),
  // computed element by element, and the outputs stored as whole vectors. The elements past
  // the last whole vector are the tail, one per thread. The host checked the layout
  // (planCudaLaunch): every output dense, every input dense or repeating whole rows, aligned.
  void emitVectorised() {
    std::string width = std::to_string(layout_.vectorWidth);
    size_t inputs = group_.inputs.size();
    for (size_t p = 0; p < inputs; ++p) {
      std::string span = "int64_t(1)";
      for (size_t d : all_)
        span += " + (" + size(d) + " - 1) * " + stride(p, d);
      line("const int64_t span" + std::to_string(p) + " = " + span + ";");
    }
    scoped("for (int64_t vector = first; vector < total / " + width + "; vector += step) {", [&] {
      line("const int64_t e = vector * " + width + ";");
      for (size_t p = 0; p < operandCount(); ++p) {
        std::string i = std::to_string(p);
        line("alignas(16) " + storageType(dtypeOf(p)) + " r" + i + "[" + width + "];");
        if (p >= inputs) continue;
        line("if (span" + i + " == 1) {");
        line("  for (int l = 0; l < " + width + "; ++l) r" + i + "[l] = p" + i + "[0];");
        line("} else {");
        line("  loupe_vload(r" + i + ", p" + i + " + (e < span" + i + " ? e : e % span" + i +
             "));");
        line("}");
      }
      line("#pragma unroll");
      scoped("for (int l = 0; l < " + width + "; ++l) {", [&] {
        Addressing lane = [](size_t p) { return "r" + std::to_string(p) + "[l]"; };
        emitLoads(Space::Full, lane);
        emitNodes(Space::Full);
        emitStores(lane);
      });
      for (size_t p = inputs; p < operandCount(); ++p)
        line("loupe_vstore(p" + std::to_string(p) + " + e, r" + std::to_string(p) + ");");
    });
    scoped("for (int64_t e = total / " + width + " * " + width +
               " + first; e < total; e += step) {",
           [&] {
             Addressing element = [inputs](size_t p) {
               std::string i = std::to_string(p);
               return "p" + i + "[" + (p < inputs ? "e % span" + i : std::string("e")) + "]";
             };
             emitLoads(Space::Full, element);
             emitNodes(Space::Full);
             emitStores(element);
           });
  }

  // A reduction's accumulator: float for f32 and half inputs, double for f64, int64_t for
  // integers and bool; the recipe's combine as a function, for the loop and the shuffles.
  // `serial`: one thread folds the whole row (the per-output entry). A serial fp32 sum of n
  // terms errs by up to n ulps where the row entry's tree (and torch's) errs by log n, so a
  // serial entry accumulates floating values in double: it is bound by memory, not by the adds.
  struct Accumulator {
    const Node* reduction;
    DType dtype;
    std::string type, init, name, combine;
  };
  std::vector<Accumulator> declareAccumulators(bool serial) {
    line("const int64_t count = " + product(group_.reducedDims) + ";");
    line("(void)count;");
    std::vector<Accumulator> accumulators;
    for (const Node* reduction : group_.reductions) {
      const ReductionRecipe& recipe = *registry_.find(reduction->op())->reduction;
      DType input = reduction->operand(0)->tensorType().dtype;
      DType dtype = input == DType::F64 || (serial && isFloating(input)) ? DType::F64
                    : isFloating(input)                                  ? DType::F32
                                                                         : DType::I64;
      std::string index = std::to_string(accumulators.size());
      Accumulator acc{reduction,          dtype,         computeType(dtype),
                      recipe.init(dtype), "acc" + index, "combine" + index};
      line("const auto " + acc.combine + " = [](" + acc.type + " acc, " + acc.type + " x) -> " +
           acc.type + " { return " + recipe.combine("acc", "x") + "; };");
      accumulators.push_back(acc);
    }
    return accumulators;
  }

  // One row: its kept inputs and what they alone compute, then each pass over the row's reduced
  // elements (group_analysis.h): pass k recomputes the full-space values it needs and folds the
  // reductions whose inputs are available by then; the last pass also stores the full-space
  // outputs. After a pass, the row's results are combined (`combinePass`, given the pass's
  // accumulators: across the row's threads for the row entry, across the splits too for the
  // split entry) and the kept values they make available are computed, by every thread.
  // The kept outputs are stored at the end, under `storeGuard` (one thread of the row).
  // `walk(body, stores, pass)` opens the loop over the row's reduced elements around
  // body(element), `element` addressing each operand's element there; `stores`: the body stores
  // the full-space outputs (through `element`).
  using RowWalk = std::function<void(const std::function<void(const Addressing&)>&, bool, int)>;

  void emitRow(const std::vector<Accumulator>& accumulators, const RowWalk& walk,
               const std::function<void(const std::vector<const Accumulator*>&)>& combinePass,
               const std::string& storeGuard) {
    emitLoads(Space::Kept, strided(kept_));
    emitNodes(Space::Kept, 0);
    for (int pass = 0; pass < group_.passes; ++pass) {
      std::vector<const Accumulator*> folded;
      for (const Accumulator& acc : accumulators)
        if (group_.passOf(acc.reduction->operand(0)) == pass) folded.push_back(&acc);
      for (const Accumulator* acc : folded)
        line(acc->type + " " + acc->name + " = " + acc->init + ";");
      bool last = pass == group_.passes - 1;
      walk(
          [&](const Addressing& element) {
            auto names = names_;
            emitLoads(Space::Full, element, pass);
            emitNodes(Space::Full, pass);
            for (const Accumulator* acc : folded)
              line(acc->name + " = " + acc->combine + "(" + acc->name + ", " +
                   operandAs(acc->reduction->operand(0), acc->dtype) + ");");
            if (last) emitStores(element, Space::Full);
            names_ = std::move(names);
          },
          last, pass);
      combinePass(folded);
      for (const Accumulator* acc : folded) {
        const ReductionRecipe& recipe = *registry_.find(acc->reduction->op())->reduction;
        std::string result = "v" + std::to_string(counter_++);
        std::string type = computeType(acc->reduction->result()->tensorType().dtype);
        line("const " + type + " " + result + " = static_cast<" + type + ">(" +
             recipe.finalize(acc->name, "count") + ");");
        names_[acc->reduction->result()] = result;
      }
      emitNodes(Space::Kept, pass + 1);
    }
    bool keptOutputs =
        std::any_of(group_.outputs.begin(), group_.outputs.end(),
                    [&](const Value* v) { return group_.space.at(v) == Space::Kept; });
    if (!keptOutputs) return;
    if (storeGuard.empty()) {
      emitStores(strided(kept_), Space::Kept);
      return;
    }
    scoped(storeGuard, [&] { emitStores(strided(kept_), Space::Kept); });
  }

  // One thread per output, its reduced dims walked by nested loops: correct for any strides,
  // coalesced when the innermost iteration dim is kept (neighbouring threads, neighbouring
  // outputs).
  void emitPerOutputReduction() {
    std::vector<Accumulator> accumulators = declareAccumulators(true);
    line("const int64_t rows = " + product(kept_) + ";");
    scoped("for (int64_t row = first; row < rows; row += step) {", [&] {
      decompose("row", kept_);
      auto walk = [&](const std::function<void(const Addressing&)>& body, bool, int) {
        for (size_t d : group_.reducedDims)
          open("for (int64_t i" + std::to_string(d) + " = 0; i" + std::to_string(d) + " < " +
               size(d) + "; ++i" + std::to_string(d) + ") {");
        body(strided(all_));
        for (size_t k = 0; k < group_.reducedDims.size(); ++k)
          close();
      };
      emitRow(
          accumulators, walk, [](const std::vector<const Accumulator*>&) {}, "");
    });
  }

  // One row of threads (threadIdx.x; a warp, or the whole block) per output, its reduced dims
  // the innermost: each thread folds every blockDim.x-th element, neighbours reading neighbours,
  // then the row combines its partial results (loupe_row_allreduce) so that every thread of the
  // row holds the result for the next pass.
  // The operands the row loop reads or writes: full-space inputs and outputs.
  std::vector<size_t> rowOperands() const {
    std::vector<size_t> operands;
    for (size_t p = 0; p < operandCount(); ++p)
      if (inSpace(operandValue(p), Space::Full)) operands.push_back(p);
    return operands;
  }

  // The vectorised walk over one row (one innermost reduced dim; the host checked that every
  // row operand is dense and aligned along it, or an input broadcast along it): each thread
  // takes `width` consecutive elements at a time, moved as whole vectors, and computes them
  // lane by lane. A pass that streams an input from global memory (one that differs by row,
  // read from global memory) takes kRowElementsInFlight elements' worth of vectors per step, a
  // block's width apart (the order it folds them in is unchanged), and loads them all before it
  // computes any: one vector's load at a time leaves too few bytes in flight to cover the
  // memory's latency. Other passes read shared memory or L1 and take one vector a step: more
  // would only cost registers.
  //
  // A pass loads only the inputs it reads (CudaKernelLayout::readInPasses). With several
  // passes, the cached inputs' rows may be kept in shared memory (the planner sizes the dynamic
  // shared memory for them, or gives none: `rowCached`): the first pass that reads one loads it
  // from global memory and keeps it, later passes read it back. Each thread reads the same
  // elements in every pass, so the cache needs no barrier.
  void walkRowVectors(const std::function<void(const Addressing&)>& body, bool stores, int pass) {
    if (group_.passes > 1) {
      scoped("{", [&] {
        rowCachePointers();
        walkRowVectorsFrom(body, stores, pass);
      });
      return;
    }
    walkRowVectorsFrom(body, stores, pass);
  }

  // Where pass `pass` gets input p's row: not at all, from global memory (and whether it keeps
  // it in the cache), or from the cache.
  enum class RowSource { None, Global, GlobalKept, Cache };
  RowSource rowSource(size_t p, int pass) const {
    uint64_t reads = layout_.readInPasses[p], bit = passBit(pass);
    if (!(reads & bit)) return RowSource::None;
    if (!layout_.rowCached[p]) return RowSource::Global;
    return (reads & (bit - 1)) == 0 ? RowSource::GlobalKept : RowSource::Cache;
  }

  void walkRowVectorsFrom(const std::function<void(const Addressing&)>& body, bool stores,
                          int pass) {
    std::string width = std::to_string(layout_.vectorWidth);
    size_t inner = group_.iterationShape.size() - 1, inputs = group_.inputs.size();
    std::vector<size_t> operands;
    for (size_t p : rowOperands())
      if (p >= inputs ? stores : rowSource(p, pass) != RowSource::None) operands.push_back(p);
    bool streams = std::any_of(operands.begin(), operands.end(), [&](size_t p) {
      if (p >= inputs || !layout_.differsByRow[p]) return false;
      RowSource source = rowSource(p, pass);
      return source == RowSource::Global || source == RowSource::GlobalKept;
    });
    int vectors = std::clamp(kRowElementsInFlight / layout_.vectorWidth, 1, kRowMaxVectorsInFlight);
    std::string inFlight = std::to_string(streams ? vectors : 1);
    // The u-th vector of this step, when the row has it: c, its first element e.
    auto eachVector = [&](const std::function<void()>& perVector) {
      line("#pragma unroll");
      scoped("for (int u = 0; u < " + inFlight + "; ++u) {", [&] {
        line("const int64_t c = c0 + u * int64_t(blockDim.x);");
        scoped("if (c < count / " + width + ") {", [&] {
          line("const int64_t e = c * " + width + ";");
          perVector();
        });
      });
    };
    scoped("for (int64_t c0 = threadIdx.x; c0 < count / " + width + "; c0 += " + inFlight +
               " * int64_t(blockDim.x)) {",
           [&] {
             for (size_t p : operands) {
               std::string i = std::to_string(p), start;
               for (size_t d : kept_)
                 start += "i" + std::to_string(d) + " * " + stride(p, d) + " + ";
               line("alignas(16) " + storageType(dtypeOf(p)) + " r" + i + "[" + inFlight + "][" +
                    width + "];");
               line("const int64_t row" + i + " = " + start + "0;");
             }
             eachVector([&] {
               for (size_t p : operands) {
                 if (p >= inputs) continue;
                 std::string i = std::to_string(p), r = "r" + i + "[u]";
                 line("if (" + stride(p, inner) + " == 0) {");
                 line("  for (int l = 0; l < " + width + "; ++l) " + r + "[l] = p" + i + "[row" +
                      i + "];");
                 if (rowSource(p, pass) == RowSource::Cache) {
                   line("} else if (rowCached) {");
                   line("  loupe_vload(" + r + ", cache" + i + " + e);");
                 }
                 line("} else {");
                 line("  loupe_vload(" + r + ", p" + i + " + row" + i + " + e);");
                 line("}");
               }
             });
             eachVector([&] {
               for (size_t p : operands)
                 if (p < inputs && rowSource(p, pass) == RowSource::GlobalKept)
                   line("if (rowCached && " + stride(p, inner) + " != 0) loupe_vstore(cache" +
                        std::to_string(p) + " + e, r" + std::to_string(p) + "[u]);");
               line("#pragma unroll");
               scoped("for (int l = 0; l < " + width + "; ++l) {",
                      [&] { body([](size_t p) { return "r" + std::to_string(p) + "[u][l]"; }); });
               for (size_t p : operands)
                 if (p >= inputs)
                   line("loupe_vstore(p" + std::to_string(p) + " + row" + std::to_string(p) +
                        " + e, r" + std::to_string(p) + "[u]);");
             });
           });
  }

  void emitRowReduction(bool vectorised) {
    std::vector<Accumulator> accumulators = declareAccumulators(false);
    for (const Accumulator& acc : accumulators)
      line("__shared__ " + acc.type + " partials" + acc.name.substr(3) + "[32];");
    if (vectorised && group_.passes > 1) declareRowCache();
    line("const int64_t rows = " + product(kept_) + ";");
    scoped("for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows; "
           "row += int64_t(gridDim.x) * blockDim.y) {",
           [&] {
             decompose("row", kept_);
             auto walk = [&](const std::function<void(const Addressing&)>& body, bool stores,
                             int pass) {
               if (vectorised) return walkRowVectors(body, stores, pass);
               scoped("for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {", [&] {
                 decompose("r", group_.reducedDims);
                 body(strided(all_));
               });
             };
             auto combinePass = [&](const std::vector<const Accumulator*>& folded) {
               for (const Accumulator* acc : folded)
                 combineInBlock(*acc, "loupe_row_allreduce");
             };
             emitRow(accumulators, walk, combinePass, "if (threadIdx.x == 0) {");
           });
  }

  // The shared-memory row cache of the vectorised row entry (cuda_kernel_abi.h, "row cache").
  // `rowCached`: the launch gave the dynamic shared memory for it.
  void declareRowCache() {
    line("extern __shared__ __align__(16) unsigned char loupe_row_cache[];");
    line("unsigned loupe_cache_bytes;");
    line("asm(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"(loupe_cache_bytes));");
    line("const bool rowCached = loupe_cache_bytes != 0;");
  }

  // Per row of the block (threadIdx.y), one region per cached input (CudaKernelLayout::rowCached),
  // `count` elements of its storage type rounded up to 16 bytes, in input order: cache<p> points
  // at input p's. Declared in each pass's walk, so that the pointers hold no registers between
  // passes.
  void rowCachePointers() {
    std::vector<size_t> cached;
    for (size_t p = 0; p < group_.inputs.size(); ++p)
      if (layout_.rowCached[p]) cached.push_back(p);
    auto region = [&](size_t p) {
      return "((count * int64_t(sizeof(" + storageType(dtypeOf(p)) + ")) + 15) / 16 * 16)";
    };
    std::string slot = "int64_t(0)";
    for (size_t p : cached)
      slot += " + " + region(p);
    line("unsigned char* cacheAt = loupe_row_cache + threadIdx.y * (" + slot + ");");
    for (size_t p : cached) {
      std::string type = storageType(dtypeOf(p)), i = std::to_string(p);
      line(type + "* const cache" + i + " = reinterpret_cast<" + type + "*>(cacheAt);");
      line("cacheAt += " + region(p) + ";");
    }
    line("(void)cacheAt;");
  }

  // acc = <reduce>(acc, ...) over the threads of the row (loupe_row_reduce: the result in
  // thread 0; loupe_row_allreduce: in every thread), through its shared partials.
  void combineInBlock(const Accumulator& acc, const std::string& reduce) {
    line(acc.name + " = " + reduce + "(" + acc.name + ", " + acc.type + "(" + acc.init + "), " +
         acc.combine + ", partials" + acc.name.substr(3) + ");");
  }

  // The split entry (single-pass groups): block (x, y) folds chunk y of the reduced range of
  // its outputs, and combines its threads' results; the outputs are row x when the reduced dims
  // are innermost (the threads stride through the chunk, neighbours reading neighbours), or,
  // when the innermost dim is kept (layout.splitColumns), the tile of blockDim.x neighbouring
  // outputs from x * blockDim.x (threadIdx.x the output, threadIdx.y striding through the
  // chunk: a warp reads neighbouring elements). The partials go to the workspace
  // (cuda_kernel_abi.h) at [row][y]; after a fence, the block counts itself in counter x. The
  // block that counts last reads the partials of its outputs, combines them in split order with
  // the same tree (the result does not depend on the order the blocks finish in), resets the
  // counter for the next launch, and finishes as the row entry does: finalize, epilogue, stores.
  void emitSplitReduction() {
    bool columns = layout_.splitColumns;
    // Within the block: the threads of one output, and their reduction (cuda_prelude.cpp).
    std::string lane = columns ? "threadIdx.y" : "threadIdx.x";
    std::string lanes = columns ? "int64_t(blockDim.y)" : "int64_t(blockDim.x)";
    std::string reduce = columns ? "loupe_column_reduce" : "loupe_row_reduce";
    std::string writer = columns ? "threadIdx.y == 0 && active" : "threadIdx.x == 0";
    std::vector<Accumulator> accumulators = declareAccumulators(false);
    line("__shared__ bool lastSplit;");
    for (const Accumulator& acc : accumulators)
      line("__shared__ " + acc.type + " partials" + acc.name.substr(3) +
           (columns ? "[512];" : "[32];"));
    line("const int64_t rows = " + product(kept_) + ";");
    line(columns ? "const int64_t tiles = (rows + blockDim.x - 1) / blockDim.x;"
                 : "const int64_t tiles = rows;");
    line("const int64_t splits = gridDim.y;");
    line("const int64_t chunk = (count + splits - 1) / splits;");
    line("const int64_t begin = int64_t(blockIdx.y) * chunk;");
    line("const int64_t end = count - begin < chunk ? count : begin + chunk;");
    line("uint32_t* const counters = reinterpret_cast<uint32_t*>(args.workspace);");
    for (size_t k = 0; k < accumulators.size(); ++k)
      line(accumulators[k].type + "* const " + splitPartials(accumulators[k]) +
           " = reinterpret_cast<" + accumulators[k].type + "*>(args.workspace + " +
           std::to_string(kSplitPartialsOffset) + " + " + std::to_string(k) +
           " * rows * splits * 8);");
    scoped("for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {", [&] {
      // Past the last output, a tile's threads fold nothing and store nothing; they read the
      // last output's kept inputs (a valid address) and take part in the barriers.
      line(columns ? "const int64_t wanted = tile * blockDim.x + threadIdx.x;"
                   : "const int64_t wanted = tile;");
      line("const bool active = wanted < rows;");
      line("const int64_t row = active ? wanted : rows - 1;");
      decompose("row", kept_);
      // Four elements a thread per step, then the rest one by one: the four loads are
      // independent, so each thread keeps four in flight (a split grid is one wave over the
      // SMs: only loads in flight hide the memory latency), and the order stays fixed.
      auto walk = [&](const std::function<void(const Addressing&)>& body, bool, int) {
        line("int64_t r = (active ? begin : end) + " + lane + ";");
        scoped("for (; r + " + std::to_string(kSplitUnroll - 1) + " * " + lanes +
                   " < end; r += " + std::to_string(kSplitUnroll) + " * " + lanes + ") {",
               [&] {
                 line("#pragma unroll");
                 scoped("for (int u = 0; u < " + std::to_string(kSplitUnroll) + "; ++u) {", [&] {
                   decompose("r + u * " + lanes, group_.reducedDims);
                   body(strided(all_));
                 });
               });
        scoped("for (; r < end; r += " + lanes + ") {", [&] {
          decompose("r", group_.reducedDims);
          body(strided(all_));
        });
      };
      auto combinePass = [&](const std::vector<const Accumulator*>& folded) {
        for (const Accumulator* acc : folded)
          combineInBlock(*acc, reduce);
        scoped("if (" + writer + ") {", [&] {
          for (const Accumulator* acc : folded)
            line(splitPartials(*acc) + "[row * splits + blockIdx.y] = " + acc->name + ";");
          line("__threadfence(); // the partials are visible before the count is");
        });
        line("__syncthreads();");
        line("if (threadIdx.x == 0 && threadIdx.y == 0)");
        line("  lastSplit = atomicAdd(counters + tile, 1u) == uint32_t(splits - 1);");
        line("__syncthreads();");
        line("if (!lastSplit) continue;");
        line("__threadfence(); // every other split's partials are visible now");
        for (const Accumulator* acc : folded) {
          line(acc->name + " = " + acc->init + ";");
          // volatile: past L1, which is not coherent between SMs.
          line("for (int64_t s = " + lane + "; s < splits; s += " + lanes + ") " + acc->name +
               " = " + acc->combine + "(" + acc->name + ", *reinterpret_cast<volatile " +
               acc->type + "*>(" + splitPartials(*acc) + " + row * splits + s));");
          combineInBlock(*acc, reduce);
        }
        line("if (threadIdx.x == 0 && threadIdx.y == 0) counters[tile] = 0;");
      };
      emitRow(accumulators, walk, combinePass, "if (" + writer + ") {");
    });
  }

  static std::string splitPartials(const Accumulator& acc) {
    return "splitPartials" + acc.name.substr(3);
  }

  const GroupAnalysis& group_;
  const CudaKernelLayout& layout_;
  const OpRegistry& registry_;
  std::string kernelName_, argsType_;
  std::vector<size_t> all_, kept_;
  std::map<const Value*, std::string> names_;
  std::string out_;
  int indent_ = 0;
  int counter_ = 0;
  bool narrow_ = false; // emitting the narrow strided entry: gathers address in 32 bits
};

} // namespace

std::string emitCudaKernelSource(const GroupAnalysis& group, const CudaKernelLayout& layout,
                                 const OpRegistry& registry, const std::string& kernelName) {
  return CudaKernelEmitter(group, layout, registry, kernelName).emit();
}

} // namespace loupe::cuda_codegen
