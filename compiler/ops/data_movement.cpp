// Data movement ops: results in fresh contiguous memory, assembled from their inputs without
// arithmetic beyond accumulation (cat, stack, clone, copy, index_select, gather, scatter_add and
// scatter, advanced indexing (index.Tensor, index_put), embedding and its backward,
// constant_pad_nd, repeat, flip, the triangles tril and triu, and the backward of slice and
// select).
//
// References that place a block of one tensor into another do it through the view family's
// ViewFns (aten.slice.Tensor, aten.select.int): the layout arithmetic lives in one place, and
// slice_backward is by construction the adjoint of slice.
#include <algorithm>
#include <functional>

#include "compiler/ir/error.h"
#include "compiler/ops/advanced_indexing_layout.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/dims.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/pointwise.h"
#include "compiler/ops/type_promotion.h"

namespace loupe {
namespace {

std::string typeStr(const TensorType& t) {
  return Type(t).str();
}

[[noreturn]] void shapeError(std::string_view op, const std::string& message) {
  throw Error("shape", std::string(op) + ": " + message);
}

void requireIntegral(std::string_view op, const TensorType& t, std::string_view what) {
  if (!isIntegral(t.dtype))
    throw Error("dtype", std::string(op) + ": " + std::string(what) +
                             " must be an integer tensor, got " + typeStr(t));
}

size_t dimAttr(std::string_view op, const AttrMap& attrs, size_t rank) {
  return normalizeDim(attrs.getInt("dim", 0), rank, op);
}

const OpInfo& viewOp(std::string_view name) {
  const OpInfo* info = OpRegistry::global().find(name);
  if (!info || !info->view)
    throw Error("registry", std::string(name) + " is not a registered view");
  return *info;
}

// `t` restricted to [start, start + length) along `dim`, sharing its storage.
Tensor narrow(const Tensor& t, size_t dim, int64_t start, int64_t length) {
  AttrMap attrs;
  attrs.set("dim", SymExpr(static_cast<int64_t>(dim)));
  attrs.set("start", SymExpr(start));
  attrs.set("end", SymExpr(start + length));
  return viewOp("aten.slice.Tensor").view(t, attrs);
}

Tensor selectView(const Tensor& t, size_t dim, int64_t index) {
  AttrMap attrs;
  attrs.set("dim", SymExpr(static_cast<int64_t>(dim)));
  attrs.set("index", SymExpr(index));
  return viewOp("aten.select.int").view(t, attrs);
}

// Row-major coordinates <-> linear index, for references that address elements by position.
std::vector<int64_t> coordinatesOf(int64_t linear, const std::vector<int64_t>& shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    coords[i] = linear % shape[i];
    linear /= shape[i];
  }
  return coords;
}

int64_t linearOf(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape) {
  int64_t linear = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    linear = linear * shape[i] + coords[i];
  return linear;
}

int64_t checkedIndex(std::string_view op, double value, int64_t size) {
  auto index = static_cast<int64_t>(value);
  if (index < -size || index >= size)
    throw Error("runtime", std::string(op) + ": index " + std::to_string(index) +
                               " is out of range for a dim of size " + std::to_string(size));
  return index < 0 ? index + size : index;
}

OpInfo dataOp(std::string name, std::vector<OperandSpec> operands, std::vector<AttrSpec> attrs,
              std::string summary) {
  OpInfo info;
  info.name = std::move(name);
  info.kind = OpKind::DataMovement;
  info.operands = std::move(operands);
  info.attrs = std::move(attrs);
  info.summary = std::move(summary);
  return info;
}

// ---- cat and stack ------------------------------------------------------------------------------

// torch still accepts (and skips) legacy empty 1-d tensors among cat's inputs.
bool skippedByCat(const Shape& shape) {
  return shape.size() == 1 && shape[0] == SymExpr(0);
}

OpInfo catOp() {
  OpInfo info = dataOp("aten.cat", {{"tensors", false, true}}, {{"dim", SymExpr(0)}},
                       "tensors joined along dim (empty 1-d tensors skipped)");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.cat";
    auto tensors = tensorOperands(operands, op);
    if (tensors.empty()) shapeError(op, "expects at least one tensor");
    const TensorType* first = nullptr;
    for (const TensorType* t : tensors)
      if (!skippedByCat(t->shape) && !first) first = t;
    const TensorType& shapeSource = first ? *first : *tensors[0];
    TensorType out = shapeSource.withShape(shapeSource.shape);
    out.dtype = resultType(tensors);
    if (!first) return std::vector<Type>{out};
    size_t d = dimAttr(op, attrs, first->rank());
    if (first->rank() == 0) shapeError(op, "cannot concatenate 0-d tensors");
    out.shape[d] = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorType& t = *tensors[i];
      if (skippedByCat(t.shape)) continue;
      Shape expected = out.shape;
      expected[d] = t.shape.size() == expected.size() ? t.shape[d] : SymExpr(0);
      if (t.shape != expected)
        shapeError(op, "tensor " + std::to_string(i) + " " + typeStr(t) + " does not match " +
                           typeStr(*first) + " outside dim " + std::to_string(d));
      out.shape[d] += t.shape[d];
    }
    return std::vector<Type>{out};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    Tensor& out = outputs[0];
    if (out.rank() == 1 && out.size(0) == 0) return;
    size_t d = dimAttr("aten.cat", attrs, out.rank());
    int64_t start = 0;
    for (const Tensor* in : inputs) {
      if (in->rank() == 1 && in->size(0) == 0) continue;
      narrow(out, d, start, in->size(d)).copyFrom(*in);
      start += in->size(d);
    }
  };
  return info;
}

OpInfo stackOp() {
  OpInfo info = dataOp("aten.stack", {{"tensors", false, true}}, {{"dim", SymExpr(0)}},
                       "tensors of one shape joined along a new dim");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.stack";
    auto tensors = tensorOperands(operands, op);
    if (tensors.empty()) shapeError(op, "expects at least one tensor");
    for (size_t i = 1; i < tensors.size(); ++i)
      if (tensors[i]->shape != tensors[0]->shape)
        shapeError(op, "tensor " + std::to_string(i) + " " + typeStr(*tensors[i]) +
                           " differs in shape from " + typeStr(*tensors[0]));
    Shape shape = tensors[0]->shape;
    size_t d = dimAttr(op, attrs, shape.size() + 1);
    shape.insert(shape.begin() + static_cast<ptrdiff_t>(d), static_cast<int64_t>(tensors.size()));
    TensorType out = tensors[0]->withShape(shape);
    out.dtype = resultType(tensors);
    return std::vector<Type>{out};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    size_t d = dimAttr("aten.stack", attrs, outputs[0].rank());
    for (size_t i = 0; i < inputs.size(); ++i)
      selectView(outputs[0], d, static_cast<int64_t>(i)).copyFrom(*inputs[i]);
  };
  return info;
}

// ---- clone and copy -----------------------------------------------------------------------------

// A contiguous copy of self with its shape and dtype: clone, and lift_fresh_copy (which torch
// emits when a tensor literal built in the model, e.g. torch.tensor(...), enters the graph).
OpInfo contiguousCopyOp(const std::string& name, std::vector<AttrSpec> attrs,
                        const std::string& summary) {
  OpInfo info = dataOp(name, {{"self"}}, std::move(attrs), summary);
  info.infer = [name](const std::vector<const Type*>& operands, const AttrMap&) {
    const TensorType& self = tensorOperand(operands, 0, name);
    return std::vector<Type>{self.withShape(self.shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap&,
                      std::vector<Tensor>& outputs) { outputs[0].copyFrom(*inputs[0]); };
  return info;
}

OpInfo cloneOp() {
  return contiguousCopyOp("aten.clone", {{"memory_format", NoneAttr{}}},
                          "a contiguous copy (memory_format is not modelled)");
}

OpInfo liftFreshCopyOp() {
  return contiguousCopyOp("aten.lift_fresh_copy", {}, "a contiguous copy of a tensor constant");
}

OpInfo copyOp() {
  OpInfo info = dataOp("aten.copy", {{"self"}, {"src"}}, {{"non_blocking", false}},
                       "src broadcast into self's shape and converted to self's dtype");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap&) {
    constexpr std::string_view op = "aten.copy";
    const TensorType& self = tensorOperand(operands, 0, op);
    const TensorType& src = tensorOperand(operands, 1, op);
    if (broadcastShapes(src.shape, self.shape, op) != self.shape)
      shapeError(op, "src " + typeStr(src) + " does not broadcast to self " + typeStr(self));
    return std::vector<Type>{self.withShape(self.shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap&,
                      std::vector<Tensor>& outputs) {
    Tensor& out = outputs[0];
    BroadcastIndexer source(inputs[1]->shape(), out.shape());
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set(i, inputs[1]->at(source(i)));
  };
  return info;
}

// ---- indexing -----------------------------------------------------------------------------------

OpInfo indexSelectOp() {
  OpInfo info = dataOp("aten.index_select", {{"self"}, {"index"}}, {{"dim", {}}},
                       "the entries of self at a vector of indices along dim");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.index_select";
    const TensorType& self = tensorOperand(operands, 0, op);
    const TensorType& index = tensorOperand(operands, 1, op);
    requireIntegral(op, index, "index");
    if (index.rank() > 1) shapeError(op, "index must be 0-d or 1-d, got " + typeStr(index));
    if (self.rank() == 0) shapeError(op, "self must have at least one dim");
    Shape shape = self.shape;
    shape[dimAttr(op, attrs, self.rank())] = numel(index.shape);
    return std::vector<Type>{self.withShape(shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    auto indices = inputs[1]->toDoubles();
    size_t d = dimAttr("aten.index_select", attrs, self.rank());
    for (size_t j = 0; j < indices.size(); ++j)
      selectView(outputs[0], d, static_cast<int64_t>(j))
          .copyFrom(
              selectView(self, d, checkedIndex("aten.index_select", indices[j], self.size(d))));
  };
  return info;
}

OpInfo gatherOp() {
  OpInfo info = dataOp("aten.gather", {{"self"}, {"index"}}, {{"dim", {}}, {"sparse_grad", false}},
                       "out[p] = self[p with dim replaced by index[p]]");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.gather";
    const TensorType& self = tensorOperand(operands, 0, op);
    const TensorType& index = tensorOperand(operands, 1, op);
    requireIntegral(op, index, "index");
    if (std::max<size_t>(index.rank(), 1) != std::max<size_t>(self.rank(), 1))
      shapeError(op, "index " + typeStr(index) + " and self " + typeStr(self) + " differ in rank");
    dimAttr(op, attrs, self.rank());
    return std::vector<Type>{self.withShape(index.shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    const Tensor& index = *inputs[1];
    Tensor& out = outputs[0];
    size_t d = dimAttr("aten.gather", attrs, self.rank());
    for (int64_t i = 0; i < out.numel(); ++i) {
      if (self.rank() == 0) {
        checkedIndex("aten.gather", index.at(i), 1);
        out.set(i, self.at(0));
        continue;
      }
      auto coords = coordinatesOf(i, out.shape());
      coords[d] = checkedIndex("aten.gather", index.at(i), self.size(d));
      out.set(i, self.at(linearOf(coords, self.shape())));
    }
  };
  return info;
}

// scatter_add (accumulates src), scatter.src (writes src) and scatter.value (writes a number):
// out = self, then for each position p of index, out[p with dim replaced by index[p]] gets
// src[p] (or value). scatter's writes to one position with several indices land in index order,
// the last one staying, as torch's CPU kernel does (torch leaves the winner unspecified).
enum class ScatterWrite { Add, Assign };

OpInfo scatterOp(const std::string& name, ScatterWrite write, bool fromValue,
                 const std::string& summary) {
  std::vector<OperandSpec> operands = {{"self"}, {"index"}};
  std::vector<AttrSpec> attributes = {{"dim", {}}};
  if (fromValue)
    attributes.push_back({"value", std::nullopt});
  else
    operands.push_back({"src"});
  OpInfo info = dataOp(name, operands, attributes, summary);
  info.infer = [name, fromValue](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& self = tensorOperand(operands, 0, name);
    const TensorType& index = tensorOperand(operands, 1, name);
    requireIntegral(name, index, "index");
    if (index.rank() != self.rank())
      shapeError(name,
                 "self " + typeStr(self) + " and index " + typeStr(index) + " must have one rank");
    if (!fromValue) {
      const TensorType& src = tensorOperand(operands, 2, name);
      if (src.rank() != self.rank())
        shapeError(name, "self " + typeStr(self) + ", index " + typeStr(index) + " and src " +
                             typeStr(src) + " must have one rank");
      if (src.dtype != self.dtype)
        throw Error("dtype", name + ": src " + typeStr(src) + " and self " + typeStr(self) +
                                 " differ in dtype");
    }
    dimAttr(name, attrs, self.rank());
    return std::vector<Type>{self.withShape(self.shape)};
  };
  info.reference = [name, write, fromValue](const std::vector<const Tensor*>& inputs,
                                            const AttrMap& attrs, std::vector<Tensor>& outputs) {
    const Tensor& index = *inputs[1];
    Tensor& out = outputs[0];
    out.copyFrom(*inputs[0]);
    size_t d = dimAttr(name, attrs, out.rank());
    const double number = fromValue ? attrs.getFloat("value") : 0;
    for (int64_t i = 0; i < index.numel(); ++i) {
      auto coords = coordinatesOf(i, index.shape());
      double value = fromValue ? number : inputs[2]->at(linearOf(coords, inputs[2]->shape()));
      // A 0-d self is one element along dim 0, as in torch (median's backward scatters so).
      int64_t target = 0;
      if (out.rank() == 0) {
        checkedIndex(name, index.at(i), 1);
      } else {
        coords[d] = checkedIndex(name, index.at(i), out.size(d));
        target = linearOf(coords, out.shape());
      }
      out.set(target, write == ScatterWrite::Add ? out.at(target) + value : value);
    }
  };
  return info;
}

OpInfo scatterAddOp() {
  return scatterOp("aten.scatter_add", ScatterWrite::Add, false,
                   "self with src[p] added at p with dim replaced by index[p] (gather's adjoint)");
}

OpInfo scatterSrcOp() {
  return scatterOp("aten.scatter.src", ScatterWrite::Assign, false,
                   "self with src[p] written at p with dim replaced by index[p]");
}

OpInfo scatterValueOp() {
  return scatterOp("aten.scatter.value", ScatterWrite::Assign, true,
                   "self with value written at p with dim replaced by index[p]");
}

// index.Tensor and index_put are torch's advanced indexing, laid out as
// compiler/ops/advanced_indexing_layout.h says.
//
// The shape of self[indices] from the types of self and the index slots (null for none);
// bool masks are rejected, since their result size depends on their values.
Shape inferIndexedShape(std::string_view op, const TensorType& self,
                        const std::vector<const TensorType*>& indices) {
  std::vector<const Shape*> slots;
  for (size_t i = 0; i < indices.size(); ++i) {
    slots.push_back(indices[i] ? &indices[i]->shape : nullptr);
    if (!indices[i]) continue;
    if (indices[i]->dtype == DType::Bool || indices[i]->dtype == DType::U8)
      shapeError(op, "index " + std::to_string(i) + " is a mask " + typeStr(*indices[i]) +
                         ", whose result size depends on its values; only integer indices "
                         "are supported");
    requireIntegral(op, *indices[i], "index " + std::to_string(i));
  }
  return AdvancedIndexingLayout<Dim>(self.rank(), slots, op).indexedShape(self.shape);
}

// The elements of self[indices] on concrete tensors: the indexed shape, and for each of its
// elements (row-major) the linear index of the element of self it stands for.
class IndexedElements {
public:
  IndexedElements(std::string_view op, const Tensor& self, std::vector<const Tensor*> indices)
      : op_(op), self_(self), indices_(std::move(indices)),
        layout_(self.rank(), indexSlotShapes(indices_), op),
        shape_(layout_.indexedShape(self.shape())) {}

  const std::vector<int64_t>& shape() const { return shape_; }

  // visit(position in self[indices], linear index in self)
  void forEach(const std::function<void(int64_t, int64_t)>& visit) const {
    const std::vector<int64_t>& block = layout_.block;
    std::vector<BroadcastIndexer> readers;
    for (const Tensor* index : indices_)
      readers.emplace_back(index ? index->shape() : block, block);
    int64_t count = 1;
    for (int64_t size : shape_)
      count *= size;
    for (int64_t position = 0; position < count; ++position) {
      auto coords = coordinatesOf(position, shape_);
      const auto first = coords.begin() + static_cast<ptrdiff_t>(layout_.before.size());
      const auto end = first + static_cast<ptrdiff_t>(block.size());
      const int64_t inBlock = linearOf(std::vector<int64_t>(first, end), block);
      coords.erase(first, end); // the coordinates in the dims not indexed are left
      std::vector<int64_t> source(self_.rank());
      for (size_t d = 0, rest = 0; d < self_.rank(); ++d) {
        const Tensor* index = d < indices_.size() ? indices_[d] : nullptr;
        source[d] = index ? checkedIndex(op_, index->at(readers[d](inBlock)), self_.size(d))
                          : coords[rest++];
      }
      visit(position, linearOf(source, self_.shape()));
    }
  }

private:
  std::string_view op_;
  const Tensor& self_;
  std::vector<const Tensor*> indices_;
  AdvancedIndexingLayout<int64_t> layout_;
  std::vector<int64_t> shape_;
};

// aten.index.Tensor, and aten._unsafe_index.Tensor: torch's unchecked form, which its
// decompositions of upsampling produce. Both check every index here and in the library kernel;
// generated code reads the unchecked form's elements in the kernel that consumes them
// (compiler/ops/in_place_gather.h), with indices clamped into range.
OpInfo indexTensorOp(const std::string& name, const std::string& summary) {
  OpInfo info = dataOp(name, {{"self"}, {"indices", true, true}}, {}, summary);
  info.infer = [name](const std::vector<const Type*>& operands, const AttrMap&) {
    auto tensors = tensorOperands(operands, name);
    const TensorType& self = *tensors.at(0);
    const std::vector<const TensorType*> indices(tensors.begin() + 1, tensors.end());
    return std::vector<Type>{self.withShape(inferIndexedShape(name, self, indices))};
  };
  info.reference = [name](const std::vector<const Tensor*>& inputs, const AttrMap&,
                          std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    IndexedElements(name, self, {inputs.begin() + 1, inputs.end()})
        .forEach(
            [&](int64_t position, int64_t element) { outputs[0].set(position, self.at(element)); });
  };
  return info;
}

// index_put's operands are self, the index slots, then values (the schema's order): values
// broadcast to the shape of self[indices] and are written there, or added with accumulate.
OpInfo indexPutOp() {
  OpInfo info = dataOp("aten.index_put", {{"self"}, {"indices_then_values", true, true}},
                       {{"accumulate", false}},
                       "self with values written (or added, accumulate) at self[indices...]");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap&) {
    constexpr std::string_view op = "aten.index_put";
    auto tensors = tensorOperands(operands, op);
    if (tensors.size() < 3 || !tensors.front() || !tensors.back())
      shapeError(op, "takes self, at least one index slot and values");
    const TensorType& self = *tensors.front();
    const TensorType& values = *tensors.back();
    const std::vector<const TensorType*> indices(tensors.begin() + 1, tensors.end() - 1);
    const Shape target = inferIndexedShape(op, self, indices);
    if (broadcastShapes(values.shape, target, op) != target)
      shapeError(op, "values " + typeStr(values) + " do not broadcast to the indexed shape [" +
                         shapeStr(target) + "]");
    if (values.dtype != self.dtype)
      throw Error("dtype", std::string(op) + ": values " + typeStr(values) + " and self " +
                               typeStr(self) + " differ in dtype");
    return std::vector<Type>{self.withShape(self.shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs.front();
    const Tensor& values = *inputs.back();
    const bool accumulate = attrs.getBool("accumulate", false);
    IndexedElements elements("aten.index_put", self, {inputs.begin() + 1, inputs.end() - 1});
    BroadcastIndexer value(values.shape(), elements.shape());
    // Repeated indices accumulate in double, rounded once at the end.
    std::vector<double> result = self.toDoubles();
    elements.forEach([&](int64_t position, int64_t element) {
      double& slot = result[static_cast<size_t>(element)];
      slot = (accumulate ? slot : 0.0) + values.at(value(position));
    });
    for (int64_t i = 0; i < outputs[0].numel(); ++i)
      outputs[0].set(i, result[static_cast<size_t>(i)]);
  };
  return info;
}

OpInfo embeddingOp() {
  OpInfo info =
      dataOp("aten.embedding", {{"weight"}, {"indices"}},
             {{"padding_idx", SymExpr(-1)}, {"scale_grad_by_freq", false}, {"sparse", false}},
             "rows of weight [N,D] looked up by indices: indices.shape + [D]");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap&) {
    constexpr std::string_view op = "aten.embedding";
    const TensorType& weight = tensorOperand(operands, 0, op);
    const TensorType& indices = tensorOperand(operands, 1, op);
    requireIntegral(op, indices, "indices");
    if (weight.rank() != 2) shapeError(op, "weight must be 2-d, got " + typeStr(weight));
    Shape shape = indices.shape;
    shape.push_back(weight.shape[1]);
    return std::vector<Type>{weight.withShape(shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap&,
                      std::vector<Tensor>& outputs) {
    const Tensor& weight = *inputs[0];
    auto indices = inputs[1]->toDoubles();
    Tensor rows = outputs[0].view({static_cast<int64_t>(indices.size()), weight.size(1)},
                                  {weight.size(1), 1}, outputs[0].offset());
    for (size_t i = 0; i < indices.size(); ++i)
      selectView(rows, 0, static_cast<int64_t>(i))
          .copyFrom(
              selectView(weight, 0, checkedIndex("aten.embedding", indices[i], weight.size(0))));
  };
  return info;
}

OpInfo embeddingDenseBackwardOp() {
  OpInfo info = dataOp("aten.embedding_dense_backward", {{"grad_output"}, {"indices"}},
                       {{"num_weights", {}}, {"padding_idx", {}}, {"scale_grad_by_freq", {}}},
                       "the gradient of embedding's weight: grad rows summed per index");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.embedding_dense_backward";
    const TensorType& grad = tensorOperand(operands, 0, op);
    const TensorType& indices = tensorOperand(operands, 1, op);
    requireIntegral(op, indices, "indices");
    Shape expected = indices.shape;
    expected.push_back(grad.shape.empty() ? SymExpr(0) : grad.shape.back());
    if (grad.shape != expected)
      shapeError(op, "grad_output " + typeStr(grad) + " does not match indices " +
                         typeStr(indices) + " plus one trailing dim");
    return std::vector<Type>{grad.withShape({attrs.getDim("num_weights"), grad.shape.back()})};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    constexpr std::string_view op = "aten.embedding_dense_backward";
    const Tensor& grad = *inputs[0];
    auto indices = inputs[1]->toDoubles();
    Tensor& out = outputs[0];
    const int64_t numWeights = out.size(0);
    const int64_t width = out.size(1);
    const int64_t padding = attrs.getInt("padding_idx");
    std::vector<double> counts(static_cast<size_t>(numWeights), 0.0);
    for (double index : indices)
      counts[static_cast<size_t>(checkedIndex(op, index, numWeights))] += 1;
    std::vector<double> sums(static_cast<size_t>(out.numel()), 0.0);
    for (size_t i = 0; i < indices.size(); ++i) {
      int64_t row = checkedIndex(op, indices[i], numWeights);
      if (row == padding) continue;
      double scale =
          attrs.getBool("scale_grad_by_freq") ? 1.0 / counts[static_cast<size_t>(row)] : 1.0;
      for (int64_t j = 0; j < width; ++j)
        sums[static_cast<size_t>(row * width + j)] +=
            scale * grad.at(static_cast<int64_t>(i) * width + j);
    }
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set(i, sums[static_cast<size_t>(i)]);
  };
  return info;
}

// ---- padding and the backward of views ----------------------------------------------------------

OpInfo constantPadOp() {
  OpInfo info =
      dataOp("aten.constant_pad_nd", {{"self"}}, {{"pad", {}}, {"value", SymExpr(0)}},
             "pad = [last_lo, last_hi, ...] elements of value around self; negative crops");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.constant_pad_nd";
    const TensorType& self = tensorOperand(operands, 0, op);
    const IntList& pad = attrs.getDims("pad");
    if (pad.size() % 2 != 0 || pad.size() > 2 * self.rank())
      shapeError(op, "pad of length " + std::to_string(pad.size()) +
                         " must be even and at most twice the rank of " + typeStr(self));
    Shape shape = self.shape;
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      SymExpr& size = shape[self.rank() - 1 - i];
      size = size + pad[2 * i] + pad[2 * i + 1];
      if (auto c = size.constant(); c && *c < 0)
        shapeError(op, "padding " + attributeStr(pad) + " crops " + typeStr(self) +
                           " to a negative size");
    }
    return std::vector<Type>{self.withShape(shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    Tensor& out = outputs[0];
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set(i, attrs.getFloat("value", 0.0));
    Tensor source = *inputs[0];
    Tensor target = out;
    auto pad = attrs.getInts("pad");
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      size_t d = source.rank() - 1 - i;
      int64_t low = pad[2 * i];
      int64_t kept =
          source.size(d) - std::max<int64_t>(-low, 0) - std::max<int64_t>(-pad[2 * i + 1], 0);
      if (kept <= 0) return;
      source = narrow(source, d, std::max<int64_t>(-low, 0), kept);
      target = narrow(target, d, std::max<int64_t>(low, 0), kept);
    }
    target.copyFrom(source);
  };
  return info;
}

// repeat tiles self `repeats[i]` times along dim i; extra leading repeats add leading dims.
OpInfo repeatOp() {
  OpInfo info = dataOp("aten.repeat", {{"self"}}, {{"repeats", std::nullopt}},
                       "self tiled repeats[i] times along each dim (extra repeats lead)");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.repeat";
    const TensorType& self = tensorOperand(operands, 0, op);
    const IntList& repeats = attrs.getDims("repeats");
    if (repeats.size() < self.rank())
      shapeError(op, std::to_string(repeats.size()) + " repeats for " + typeStr(self) +
                         ": needs at least one per dim");
    Shape shape(repeats.size() - self.rank(), SymExpr(1));
    shape.insert(shape.end(), self.shape.begin(), self.shape.end());
    for (size_t i = 0; i < shape.size(); ++i)
      shape[i] = shape[i] * repeats[i];
    return std::vector<Type>{self.withShape(shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap&,
                      std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    Tensor& out = outputs[0];
    std::vector<int64_t> tile(out.rank() - self.rank(), 1);
    tile.insert(tile.end(), self.shape().begin(), self.shape().end());
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto coords = coordinatesOf(i, out.shape());
      for (size_t d = 0; d < coords.size(); ++d)
        coords[d] %= tile[d];
      out.set(i, self.at(linearOf(coords, tile)));
    }
  };
  return info;
}

// ---- flip and the triangles --------------------------------------------------------------------

OpInfo flipOp() {
  OpInfo info = dataOp("aten.flip", {{"self"}}, {{"dims", std::nullopt}},
                       "self with the order of elements reversed along dims");
  info.infer = [](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    constexpr std::string_view op = "aten.flip";
    const TensorType& self = tensorOperand(operands, 0, op);
    reducedDims(attrs, "dims", self.rank(), op); // checks the dims
    return std::vector<Type>{self.withShape(self.shape)};
  };
  info.reference = [](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                      std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    std::vector<bool> flipped = attrs.getInts("dims").empty()
                                    ? std::vector<bool>(self.rank(), false)
                                    : reducedDims(attrs, "dims", self.rank(), "aten.flip");
    for (int64_t i = 0; i < self.numel(); ++i) {
      auto coords = coordinatesOf(i, self.shape());
      for (size_t d = 0; d < coords.size(); ++d)
        if (flipped[d]) coords[d] = self.size(d) - 1 - coords[d];
      outputs[0].set(i, self.at(linearOf(coords, self.shape())));
    }
  };
  return info;
}

// tril keeps the elements on and below the `diagonal`-th diagonal of the last two dims (column
// - row <= diagonal), triu those on and above it; the rest become zero.
OpInfo triangleOp(std::string name, bool lower) {
  OpInfo info = dataOp(name, {{"self"}}, {{"diagonal", SymExpr(0)}},
                       std::string(lower ? "zeros above" : "zeros below") +
                           " the diagonal-th diagonal of the last two dims");
  info.infer = [name](const std::vector<const Type*>& operands, const AttrMap&) {
    const TensorType& self = tensorOperand(operands, 0, name);
    if (self.rank() < 2) shapeError(name, "needs at least 2 dims, got " + typeStr(self));
    return std::vector<Type>{self.withShape(self.shape)};
  };
  info.reference = [lower](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                           std::vector<Tensor>& outputs) {
    const Tensor& self = *inputs[0];
    const int64_t diagonal = attrs.getInt("diagonal", 0);
    const int64_t rows = self.size(self.rank() - 2);
    const int64_t columns = self.size(self.rank() - 1);
    for (int64_t i = 0; i < self.numel(); ++i) {
      const int64_t offset = i % columns - (i / columns) % rows; // column - row
      const bool kept = lower ? offset <= diagonal : offset >= diagonal;
      outputs[0].set(i, kept ? self.at(i) : 0.0);
    }
  };
  return info;
}

// slice_backward and select_backward: zeros of input_sizes with grad_output written through the
// forward view, so each is exactly the adjoint of its view.
OpInfo viewBackwardOp(std::string name, std::string forward, std::vector<AttrSpec> viewAttrs) {
  std::vector<AttrSpec> attrs = {{"input_sizes", {}}};
  attrs.insert(attrs.end(), viewAttrs.begin(), viewAttrs.end());
  OpInfo info = dataOp(name, {{"grad_output"}}, std::move(attrs),
                       "zeros of input_sizes with grad_output written where " + forward + " reads");
  info.infer = [name, forward](const std::vector<const Type*>& operands, const AttrMap& attrs) {
    const TensorType& grad = tensorOperand(operands, 0, name);
    TensorType input = grad.withShape(attrs.getDims("input_sizes"));
    Type inputType = input;
    Type viewed = OpRegistry::global().find(forward)->infer({&inputType}, attrs).at(0);
    if (viewed.tensor().shape != grad.shape)
      shapeError(name, "grad_output " + typeStr(grad) + " is not the shape of " + forward +
                           " of input_sizes " + attributeStr(attrs.getDims("input_sizes")) + " (" +
                           viewed.str() + ")");
    return std::vector<Type>{input};
  };
  info.reference = [forward](const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                             std::vector<Tensor>& outputs) {
    Tensor& out = outputs[0];
    out.fill(0.0);
    viewOp(forward).view(out, attrs).copyFrom(*inputs[0]);
  };
  return info;
}

} // namespace

void registerDataMovementOps(OpRegistry& registry) {
  for (OpInfo (*make)() : {catOp, stackOp, cloneOp, liftFreshCopyOp, copyOp, indexSelectOp,
                           gatherOp, scatterAddOp, scatterSrcOp, scatterValueOp, indexPutOp,
                           embeddingOp, embeddingDenseBackwardOp, constantPadOp, flipOp, repeatOp})
    registry.add(make());
  registry.add(indexTensorOp("aten.index.Tensor",
                             "self[indices...] with integer index tensors (advanced indexing)"));
  registry.add(indexTensorOp("aten._unsafe_index.Tensor",
                             "self[indices...] with integer index tensors, unchecked in torch "
                             "(upsampling's decompositions)"));
  registry.add(triangleOp("aten.tril", true));
  registry.add(triangleOp("aten.triu", false));
  registry.add(viewBackwardOp("aten.slice_backward", "aten.slice.Tensor",
                              {{"dim", {}}, {"start", {}}, {"end", {}}, {"step", {}}}));
  registry.add(
      viewBackwardOp("aten.select_backward", "aten.select.int", {{"dim", {}}, {"index", {}}}));
}

} // namespace loupe
