#include "compiler/ir/type.h"

#include "compiler/ir/error.h"

namespace loupe {

std::string Device::str() const {
  return kind == Kind::CPU ? "cpu" : "cuda:" + std::to_string(index);
}

bool TensorType::isContiguous() const {
  if (!strides) return true;
  SymExpr expected(1);
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == SymExpr(1)) continue;
    if (!((*strides)[i] == expected)) return false;
    expected = expected * shape[i];
  }
  return true;
}

bool TensorType::sameStrides(const TensorType& a, const TensorType& b) {
  Shape sa = a.effectiveStrides(), sb = b.effectiveStrides();
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (!(a.shape[i] == SymExpr(1)) && !(sa[i] == sb[i])) return false;
  return true;
}

TensorType TensorType::withShape(Shape newShape) const {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(newShape);
  t.device = device;
  return t;
}

TensorType TensorType::withDType(DType newDType) const {
  TensorType t = *this;
  t.dtype = newDType;
  return t;
}

Type Type::index(SymExpr value) {
  Type t;
  t.isIndex_ = true;
  t.indexValue_ = std::move(value);
  return t;
}

const TensorType& Type::tensor() const {
  if (isIndex_) throw Error("type", "expected a tensor, found " + str());
  return tensor_;
}

TensorType& Type::tensor() {
  if (isIndex_) throw Error("type", "expected a tensor, found " + str());
  return tensor_;
}

std::string Type::str() const {
  if (isIndex_) return "index<" + indexValue_.str() + ">";
  std::string s = std::string(dtypeName(tensor_.dtype)) + "[" + shapeStr(tensor_.shape) + "]";
  std::string extras;
  if (tensor_.strides && !tensor_.isContiguous())
    extras += "strides=[" + shapeStr(*tensor_.strides) + "]";
  if (tensor_.device.kind != Device::Kind::CPU)
    extras += (extras.empty() ? "" : ",") + tensor_.device.str();
  if (!extras.empty()) s += "<" + extras + ">";
  return s;
}

bool equalWhenDivisionsExact(const Type& a, const Type& b) {
  if (a == b) return true;
  if (a.isIndex() || b.isIndex())
    return a.isIndex() && b.isIndex() &&
           SymExpr::equalWhenDivisionsExact(a.indexValue(), b.indexValue());
  const TensorType &ta = a.tensor(), &tb = b.tensor();
  if (ta.dtype != tb.dtype || ta.device != tb.device || ta.rank() != tb.rank()) return false;
  Shape sa = ta.effectiveStrides(), sb = tb.effectiveStrides();
  for (size_t d = 0; d < ta.rank(); ++d) {
    if (!SymExpr::equalWhenDivisionsExact(ta.shape[d], tb.shape[d])) return false;
    if (ta.shape[d] == SymExpr(1) || SymExpr::equalWhenDivisionsExact(sa[d], sb[d])) continue;
    if (!sa[d].hasDivision() && !sb[d].hasDivision()) return false;
  }
  return true;
}

} // namespace loupe
