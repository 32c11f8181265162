// View ops: results that alias their input's storage with a new shape, strides and offset.
//
// Each op is one rule over a StridedLayout (sizes, strides and offset as SymExprs). The same rule
// gives shape inference (from the input type's effective strides, so the result type's strides
// tell the layout pass what is contiguous), the zero-copy ViewFn (from the input tensor's concrete
// layout) and the reference implementation (the view copied into the contiguous output).
//
// Choices that differ from a literal reading of torch:
// - aten.reshape is DataMovement: its result type is always contiguous. It decomposes into
//   aten.view when the input is contiguous (no copy) and into aten.clone + aten._unsafe_view
//   otherwise, even where torch would find a strided view; graphs from aot_autograd are
//   functional, so only the layout differs, never the values.
// - aten.as_strided is derived from the input's storage, not from its logical layout: its
//   storage_offset is absolute (none keeps the input's offset), so it is only meaningful on the
//   tensor whose storage the graph saw, which is how aot_autograd emits it.
// - Multi-result views (split, unbind) have no ViewFn, which returns one tensor: they decompose
//   into one aten.slice.Tensor / aten.select.int per result, which have.
// - Strides of size-1 dims do not address anything; they are normalised to the contiguous value
//   so that a permuted [1,8] is still recognised as contiguous, as torch does.
#include <algorithm>
#include <cstdlib>

#include "compiler/ir/error.h"
#include "compiler/ops/dims.h"
#include "compiler/ops/graph_builder.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"

namespace loupe {
namespace {

struct StridedLayout {
  Shape sizes;
  Shape strides;
  SymExpr offset;
};

using ViewRule = std::function<StridedLayout(const StridedLayout& input, const AttrMap& attrs)>;

std::string listStr(const Shape& shape) {
  return "[" + shapeStr(shape) + "]";
}

[[noreturn]] void shapeError(std::string_view op, const std::string& message) {
  throw Error("shape", std::string(op) + ": " + message);
}

size_t dimAttr(std::string_view op, const AttrMap& attrs, std::string_view name, size_t rank) {
  return normalizeDim(attrs.getInt(name, 0), rank, op);
}

// No dimension of a real tensor reaches 2^62 elements, so a constant that large (torch spells
// "to the end" as INT64_MAX) compares above every dim, symbolic or not.
constexpr int64_t kBeyondAnyDim = int64_t{1} << 62;

// The sign of a - b where it is decidable: a constant difference, or a huge constant.
std::optional<int> compareDims(const SymExpr& a, const SymExpr& b) {
  auto sign = [](int64_t x, int64_t y) { return x < y ? -1 : x > y ? 1 : 0; };
  auto ca = a.constant();
  auto cb = b.constant();
  if (ca && cb) return sign(*ca, *cb);
  if (ca && std::abs(*ca) >= kBeyondAnyDim) return sign(*ca, 0);
  if (cb && std::abs(*cb) >= kBeyondAnyDim) return sign(0, *cb);
  if (auto diff = (a - b).constant()) return sign(*diff, 0);
  return std::nullopt;
}

bool knownLess(const SymExpr& a, const SymExpr& b) {
  auto c = compareDims(a, b);
  return c && *c < 0;
}

bool knownGreaterOrEqual(const SymExpr& a, const SymExpr& b) {
  auto c = compareDims(a, b);
  return c && *c >= 0;
}

bool isOne(const SymExpr& dim) {
  return dim == SymExpr(1);
}

// A constant negative bound counts from the end; bounds are then clamped into [0, size] where the
// comparison is decidable (like torch), and kept as written where it is not.
SymExpr clampSliceBound(SymExpr bound, const SymExpr& size) {
  if (auto c = bound.constant(); c && *c < 0 && *c > -kBeyondAnyDim) bound = bound + size;
  if (knownLess(bound, 0)) return 0;
  if (knownGreaterOrEqual(bound, size)) return size;
  return bound;
}

// ---- sizes with -1 and the strides of a view (torch's computeStride) -------------------------

Shape resolveViewSizes(std::string_view op, const Shape& input, const IntList& requested) {
  Shape sizes = requested;
  std::optional<size_t> inferred;
  SymExpr known = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == SymExpr(-1)) {
      if (inferred) shapeError(op, "only one dimension of " + listStr(requested) + " can be -1");
      inferred = i;
    } else {
      known *= sizes[i];
    }
  }
  SymExpr total = numel(input);
  auto invalid = [&] {
    shapeError(op, "shape " + listStr(requested) + " is invalid for an input of shape " +
                       listStr(input) + " (" + total.str() + " elements)");
  };
  if (inferred) {
    if (known == SymExpr(0)) invalid();
    // A symbolic numel that does not divide term by term (4*s0 by 8) is divisible under the
    // frontend's guards when it is divisible at all; the run-time sizes are checked again.
    auto quotient = total.exactDiv(known);
    sizes[*inferred] = quotient ? *quotient : SymExpr::floorDiv(total, known);
  }
  if (!SymExpr::equalWhenDivisionsExact(numel(sizes), total)) invalid();
  return sizes;
}

// The strides that view `sizes` as `newSizes` without copying, or nullopt. Dims are matched in
// chunks of contiguous memory, with exact (symbolic) equality of element counts.
std::optional<Shape> viewStrides(const Shape& sizes, const Shape& strides, const Shape& newSizes) {
  if (sizes.empty() || numel(sizes) == SymExpr(0)) return contiguousStrides(newSizes);
  Shape newStrides(newSizes.size());
  int64_t viewDim = static_cast<int64_t>(newSizes.size()) - 1;
  SymExpr chunkBaseStride = strides.back();
  SymExpr tensorNumel = 1;
  SymExpr viewNumel = 1;
  // Chunk sizes compare under the frontend's divisibility guards (see resolveViewSizes).
  auto same = [](const SymExpr& a, const SymExpr& b) {
    return SymExpr::equalWhenDivisionsExact(a, b);
  };
  for (size_t d = sizes.size(); d-- > 0;) {
    tensorNumel *= sizes[d];
    bool chunkEnds =
        d == 0 || (!isOne(sizes[d - 1]) && strides[d - 1] != tensorNumel * chunkBaseStride);
    if (!chunkEnds) continue;
    while (viewDim >= 0 &&
           (!same(viewNumel, tensorNumel) || isOne(newSizes[static_cast<size_t>(viewDim)]))) {
      newStrides[static_cast<size_t>(viewDim)] = viewNumel * chunkBaseStride;
      viewNumel *= newSizes[static_cast<size_t>(viewDim)];
      --viewDim;
    }
    if (!same(viewNumel, tensorNumel)) return std::nullopt;
    if (d > 0) {
      chunkBaseStride = strides[d - 1];
      tensorNumel = 1;
      viewNumel = 1;
    }
  }
  if (viewDim != -1) return std::nullopt;
  return newStrides;
}

// ---- the rules --------------------------------------------------------------------------------

ViewRule viewRule(std::string op) {
  return [op](const StridedLayout& in, const AttrMap& attrs) {
    Shape sizes = resolveViewSizes(op, in.sizes, attrs.getDims("size"));
    auto strides = viewStrides(in.sizes, in.strides, sizes);
    if (!strides)
      shapeError(op, "an input of shape " + listStr(in.sizes) + " and strides " +
                         listStr(in.strides) + " cannot be viewed as " + listStr(sizes) +
                         " without a copy (use aten.reshape)");
    return StridedLayout{sizes, *strides, in.offset};
  };
}

StridedLayout identityRule(const StridedLayout& in, const AttrMap&) {
  return in;
}

StridedLayout permuteRule(const StridedLayout& in, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.permute";
  auto dims = attrs.getInts("dims");
  if (dims.size() != in.sizes.size())
    shapeError(op, "dims of length " + std::to_string(dims.size()) + " for a tensor of rank " +
                       std::to_string(in.sizes.size()));
  StridedLayout out{{}, {}, in.offset};
  std::vector<bool> seen(dims.size());
  for (int64_t dim : dims) {
    size_t d = normalizeDim(dim, in.sizes.size(), op);
    if (seen[d]) shapeError(op, "dim " + std::to_string(dim) + " repeats in dims");
    seen[d] = true;
    out.sizes.push_back(in.sizes[d]);
    out.strides.push_back(in.strides[d]);
  }
  return out;
}

StridedLayout swapDims(StridedLayout layout, size_t a, size_t b) {
  if (layout.sizes.empty()) return layout;
  std::swap(layout.sizes[a], layout.sizes[b]);
  std::swap(layout.strides[a], layout.strides[b]);
  return layout;
}

StridedLayout transposeRule(const StridedLayout& in, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.transpose.int";
  size_t rank = in.sizes.size();
  return swapDims(in, dimAttr(op, attrs, "dim0", rank), dimAttr(op, attrs, "dim1", rank));
}

StridedLayout tRule(const StridedLayout& in, const AttrMap&) {
  if (in.sizes.size() > 2)
    shapeError("aten.t", "expects a tensor of rank <= 2, got " + listStr(in.sizes));
  return in.sizes.size() == 2 ? swapDims(in, 0, 1) : in;
}

StridedLayout expandRule(const StridedLayout& in, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.expand";
  const IntList& target = attrs.getDims("size");
  if (target.size() < in.sizes.size())
    shapeError(op, "cannot expand " + listStr(in.sizes) + " to fewer dims " + listStr(target));
  size_t added = target.size() - in.sizes.size();
  StridedLayout out{target, Shape(target.size(), 0), in.offset};
  for (size_t i = 0; i < target.size(); ++i) {
    bool keep = target[i] == SymExpr(-1);
    if (i < added) {
      if (keep) shapeError(op, "-1 is not allowed for the new leading dim " + std::to_string(i));
      continue;
    }
    const SymExpr& size = in.sizes[i - added];
    if (keep || target[i] == size) {
      out.sizes[i] = size;
      out.strides[i] = in.strides[i - added];
    } else if (!isOne(size)) {
      shapeError(op, "cannot expand " + listStr(in.sizes) + " to " + listStr(target) + ": dim " +
                         std::to_string(i) + " is " + size.str() + ", not 1");
    }
  }
  return out;
}

StridedLayout eraseDims(const StridedLayout& in, const std::vector<bool>& erase) {
  StridedLayout out{{}, {}, in.offset};
  for (size_t i = 0; i < in.sizes.size(); ++i) {
    if (erase[i]) continue;
    out.sizes.push_back(in.sizes[i]);
    out.strides.push_back(in.strides[i]);
  }
  return out;
}

// Squeezes the given dims that are 1 (others are kept, like torch); all size-1 dims when none.
StridedLayout squeezeDims(std::string_view op, const StridedLayout& in,
                          const std::optional<std::vector<int64_t>>& dims) {
  std::vector<bool> erase(in.sizes.size(), false);
  for (size_t i = 0; i < in.sizes.size(); ++i)
    erase[i] = !dims && isOne(in.sizes[i]);
  for (int64_t dim : dims.value_or(std::vector<int64_t>{})) {
    if (in.sizes.empty()) {
      normalizeDim(dim, 0, op);
      continue;
    }
    size_t d = normalizeDim(dim, in.sizes.size(), op);
    erase[d] = isOne(in.sizes[d]);
  }
  return eraseDims(in, erase);
}

StridedLayout squeezeDimRule(const StridedLayout& in, const AttrMap& attrs) {
  return squeezeDims("aten.squeeze.dim", in, std::vector<int64_t>{attrs.getInt("dim")});
}

StridedLayout squeezeDimsRule(const StridedLayout& in, const AttrMap& attrs) {
  return squeezeDims("aten.squeeze.dims", in, attrs.getInts("dim"));
}

StridedLayout squeezeRule(const StridedLayout& in, const AttrMap&) {
  return squeezeDims("aten.squeeze", in, std::nullopt);
}

StridedLayout unsqueezeRule(const StridedLayout& in, const AttrMap& attrs) {
  size_t rank = in.sizes.size();
  size_t d = normalizeDim(attrs.getInt("dim"), rank + 1, "aten.unsqueeze");
  StridedLayout out = in;
  SymExpr stride = d < rank ? in.sizes[d] * in.strides[d] : SymExpr(1);
  out.sizes.insert(out.sizes.begin() + static_cast<ptrdiff_t>(d), 1);
  out.strides.insert(out.strides.begin() + static_cast<ptrdiff_t>(d), stride);
  return out;
}

StridedLayout sliceRule(const StridedLayout& in, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.slice.Tensor";
  if (in.sizes.empty()) shapeError(op, "cannot slice a 0-d tensor");
  size_t d = dimAttr(op, attrs, "dim", in.sizes.size());
  int64_t step = attrs.getInt("step", 1);
  if (step <= 0) shapeError(op, "step must be positive, got " + std::to_string(step));
  const SymExpr& size = in.sizes[d];
  SymExpr start = clampSliceBound(attrs.isNone("start") ? SymExpr(0) : attrs.getDim("start"), size);
  SymExpr end = attrs.isNone("end") ? size : clampSliceBound(attrs.getDim("end"), size);
  if (knownLess(end, start)) end = start;
  StridedLayout out = in;
  out.offset = in.offset + start * in.strides[d];
  out.sizes[d] = SymExpr::floorDiv(end - start + (step - 1), step);
  out.strides[d] = in.strides[d] * step;
  return out;
}

StridedLayout selectRule(const StridedLayout& in, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.select.int";
  if (in.sizes.empty()) shapeError(op, "cannot select from a 0-d tensor");
  size_t d = dimAttr(op, attrs, "dim", in.sizes.size());
  const SymExpr& size = in.sizes[d];
  SymExpr index = attrs.getDim("index");
  if (auto c = index.constant(); c && *c < 0) index = index + size;
  if (knownLess(index, 0) || knownGreaterOrEqual(index, size))
    shapeError(op, "index " + attrs.getDim("index").str() + " is out of range for dim " +
                       std::to_string(d) + " of size " + size.str());
  std::vector<bool> erase(in.sizes.size(), false);
  erase[d] = true;
  StridedLayout out = eraseDims(in, erase);
  out.offset = in.offset + index * in.strides[d];
  return out;
}

StridedLayout asStridedRule(const StridedLayout& in, const AttrMap& attrs) {
  const IntList& sizes = attrs.getDims("size");
  const IntList& strides = attrs.getDims("stride");
  if (sizes.size() != strides.size())
    shapeError("aten.as_strided",
               "size " + listStr(sizes) + " and stride " + listStr(strides) + " differ in length");
  return {sizes, strides,
          attrs.isNone("storage_offset") ? in.offset : attrs.getDim("storage_offset")};
}

// ---- multi-result views: the single views they consist of -------------------------------------

AttrMap sliceAttrs(size_t dim, SymExpr start, SymExpr end) {
  AttrMap attrs;
  attrs.set("dim", SymExpr(static_cast<int64_t>(dim)));
  attrs.set("start", std::move(start));
  attrs.set("end", std::move(end));
  attrs.set("step", SymExpr(1));
  return attrs;
}

using PartsFn = std::function<std::vector<AttrMap>(const Shape& sizes, const AttrMap& attrs)>;

std::vector<AttrMap> splitParts(const Shape& sizes, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.split.Tensor";
  size_t d = dimAttr(op, attrs, "dim", sizes.size());
  const SymExpr& size = sizes.at(d);
  SymExpr chunk = attrs.getDim("split_size");
  if (knownLess(chunk, 1)) shapeError(op, "split_size must be positive, got " + chunk.str());
  auto count = size == chunk ? 1 : SymExpr::floorDiv(size + chunk - 1, chunk).constant();
  if (!count)
    shapeError(op, "the number of chunks of a dim of size " + size.str() + " split by " +
                       chunk.str() + " is not a constant");
  std::vector<AttrMap> parts;
  for (int64_t i = 0; i < std::max<int64_t>(*count, 1); ++i)
    parts.push_back(sliceAttrs(d, chunk * i, i + 1 == *count ? size : chunk * (i + 1)));
  return parts;
}

std::vector<AttrMap> splitWithSizesParts(const Shape& sizes, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.split_with_sizes";
  size_t d = dimAttr(op, attrs, "dim", sizes.size());
  const IntList& splits = attrs.getDims("split_sizes");
  SymExpr start = 0;
  std::vector<AttrMap> parts;
  for (const SymExpr& length : splits) {
    parts.push_back(sliceAttrs(d, start, start + length));
    start += length;
  }
  if (start != sizes.at(d))
    shapeError(op, "split_sizes " + listStr(splits) + " sum to " + start.str() + ", not dim " +
                       std::to_string(d) + " of size " + sizes.at(d).str());
  return parts;
}

std::vector<AttrMap> unbindParts(const Shape& sizes, const AttrMap& attrs) {
  constexpr std::string_view op = "aten.unbind.int";
  size_t d = dimAttr(op, attrs, "dim", sizes.size());
  auto count = sizes.at(d).constant();
  if (!count)
    shapeError(op,
               "cannot unbind dim " + std::to_string(d) + " of symbolic size " + sizes[d].str());
  std::vector<AttrMap> parts;
  for (int64_t i = 0; i < *count; ++i) {
    AttrMap part;
    part.set("dim", SymExpr(static_cast<int64_t>(d)));
    part.set("index", SymExpr(i));
    parts.push_back(std::move(part));
  }
  return parts;
}

// ---- from rules to OpInfos ----------------------------------------------------------------------

StridedLayout applyRule(const ViewRule& rule, const StridedLayout& input, const AttrMap& attrs) {
  StridedLayout out = rule(input, attrs);
  Shape contiguous = contiguousStrides(out.sizes);
  for (size_t i = 0; i < out.sizes.size(); ++i)
    if (isOne(out.sizes[i])) out.strides[i] = contiguous[i];
  return out;
}

StridedLayout layoutOf(const TensorType& type) {
  return {type.shape, type.effectiveStrides(), 0};
}

StridedLayout layoutOf(const Tensor& tensor) {
  StridedLayout layout{{}, {}, tensor.offset()};
  for (size_t i = 0; i < tensor.rank(); ++i) {
    layout.sizes.push_back(tensor.size(i));
    layout.strides.push_back(tensor.strides()[i]);
  }
  return layout;
}

Type typeOf(const StridedLayout& layout, const TensorType& input) {
  TensorType out = input;
  out.shape = layout.sizes;
  out.strides = layout.strides;
  if (out.isContiguous()) out.strides.reset();
  return out;
}

Tensor tensorOf(const StridedLayout& layout, const Tensor& input) {
  return input.view(evaluateShape(layout.sizes, {}), evaluateShape(layout.strides, {}),
                    layout.offset.evaluate({}));
}

OpInfo viewOp(std::string name, std::vector<AttrSpec> attrs, std::string summary) {
  OpInfo info;
  info.name = std::move(name);
  info.kind = OpKind::View;
  info.operands = {{"self"}};
  info.attrs = std::move(attrs);
  info.summary = std::move(summary);
  return info;
}

void addView(OpRegistry& registry, std::string name, std::vector<AttrSpec> attrs,
             std::string summary, ViewRule rule) {
  OpInfo info = viewOp(name, std::move(attrs), std::move(summary));
  info.infer = [name, rule](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, name);
    return std::vector<Type>{typeOf(applyRule(rule, layoutOf(self), attrs), self)};
  };
  info.view = [rule](const Tensor& input, const AttrMap& attrs) {
    return tensorOf(applyRule(rule, layoutOf(input), attrs), input);
  };
  info.reference = [view = info.view](const std::vector<const Tensor*>& inputs,
                                      const AttrMap& attrs, std::vector<Tensor>& outputs) {
    outputs[0].copyFrom(view(*inputs[0], attrs));
  };
  registry.add(std::move(info));
}

// A view with one result per part, each the single view `partOp` with the part's attributes.
void addMultiView(OpRegistry& registry, std::string name, std::vector<AttrSpec> attrs,
                  std::string summary, std::string partOp, ViewRule partRule, PartsFn parts) {
  OpInfo info = viewOp(name, std::move(attrs), std::move(summary));
  info.numResults = -1;
  info.infer = [name, partRule, parts](const std::vector<const Type*>& operands,
                                       const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, name);
    std::vector<Type> results;
    for (const AttrMap& part : parts(self.shape, attrs))
      results.push_back(typeOf(applyRule(partRule, layoutOf(self), part), self));
    return results;
  };
  info.reference = [partRule, parts](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                                     std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    auto partAttrs = parts(layoutOf(self).sizes, attrs);
    for (size_t i = 0; i < partAttrs.size(); ++i)
      outputs.at(i).copyFrom(tensorOf(applyRule(partRule, layoutOf(self), partAttrs[i]), self));
  };
  info.decompose = [partOp, parts](Node& node, GraphBuilder& builder) {
    std::vector<Value*> results;
    for (const AttrMap& part : parts(node.operand(0)->tensorType().shape, node.attrs()))
      results.push_back(builder.op(partOp, {node.operand(0)}, part));
    return results;
  };
  registry.add(std::move(info));
}

void addReshape(OpRegistry& registry) {
  OpInfo info;
  info.name = "aten.reshape";
  info.kind = OpKind::DataMovement;
  info.operands = {{"self"}};
  info.attrs = {{"shape", {}}};
  info.summary = "the input with a new shape (-1 inferred), contiguous; a copy when not viewable";
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, "aten.reshape");
    return std::vector<Type>{
        self.withShape(resolveViewSizes("aten.reshape", self.shape, attrs.getDims("shape")))};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap&,
                      std::vector<Tensor>& outputs) {
    for (int64_t i = 0; i < outputs[0].numel(); ++i)
      outputs[0].set(i, inputs[0]->at(i));
  };
  info.decompose = [](Node& node, GraphBuilder& builder) {
    Value* self = node.operand(0);
    AttrMap size;
    size.set("size", node.attrs().getDims("shape"));
    if (self->tensorType().isContiguous())
      return std::vector<Value*>{builder.op("aten.view", {self}, size)};
    Value* packed = builder.op("aten.clone", {self});
    return std::vector<Value*>{builder.op("aten._unsafe_view", {packed}, size)};
  };
  registry.add(std::move(info));
}

} // namespace

void registerViewOps(OpRegistry& registry) {
  const AttrSpec dim0{"dim", SymExpr(0)};
  struct SingleView {
    const char* name;
    std::vector<AttrSpec> attrs;
    const char* summary;
    ViewRule rule;
  };
  const SingleView views[] = {
      {"aten.view",
       {{"size", {}}},
       "the input with a new shape (-1 inferred); must be viewable",
       viewRule("aten.view")},
      {"aten._unsafe_view",
       {{"size", {}}},
       "aten.view without aliasing checks",
       viewRule("aten._unsafe_view")},
      {"aten.permute", {{"dims", {}}}, "the dims reordered", permuteRule},
      {"aten.transpose.int", {{"dim0", {}}, {"dim1", {}}}, "two dims swapped", transposeRule},
      {"aten.t", {}, "a matrix transposed (rank <= 2)", tRule},
      {"aten.expand",
       {{"size", {}}, {"implicit", false}},
       "size-1 dims broadcast to `size` with stride 0 (-1 keeps a dim)",
       expandRule},
      {"aten.squeeze.dim", {{"dim", {}}}, "dim removed if it is 1", squeezeDimRule},
      {"aten.squeeze.dims", {{"dim", {}}}, "the listed dims that are 1 removed", squeezeDimsRule},
      {"aten.squeeze", {}, "every size-1 dim removed", squeezeRule},
      {"aten.unsqueeze", {{"dim", {}}}, "a size-1 dim inserted", unsqueezeRule},
      {"aten.slice.Tensor",
       {dim0, {"start", NoneAttr{}}, {"end", NoneAttr{}}, {"step", SymExpr(1)}},
       "start:end:step along dim, bounds clamped like torch",
       sliceRule},
      {"aten.select.int",
       {{"dim", {}}, {"index", {}}},
       "one index along dim, dim removed",
       selectRule},
      {"aten.alias", {}, "the input itself", identityRule},
      {"aten.detach", {}, "the input itself (autograd is not modelled)", identityRule},
      {"aten.as_strided",
       {{"size", {}}, {"stride", {}}, {"storage_offset", NoneAttr{}}},
       "exactly these sizes, strides and absolute storage offset over the input's storage",
       asStridedRule},
  };
  for (const SingleView& v : views)
    addView(registry, v.name, v.attrs, v.summary, v.rule);

  addMultiView(registry, "aten.split.Tensor", {{"split_size", {}}, dim0},
               "chunks of split_size along dim (the last may be smaller)", "aten.slice.Tensor",
               sliceRule, splitParts);
  addMultiView(registry, "aten.split_with_sizes", {{"split_sizes", {}}, dim0},
               "chunks of the given sizes along dim", "aten.slice.Tensor", sliceRule,
               splitWithSizesParts);
  addMultiView(registry, "aten.unbind.int", {dim0}, "every index along dim, dim removed",
               "aten.select.int", selectRule, unbindParts);
  addReshape(registry);
}

} // namespace loupe
