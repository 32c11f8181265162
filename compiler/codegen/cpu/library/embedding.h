// Embedding lookups and their weight gradient: row copies and row sums in the weight's
// precision, with indices checked as the reference checks them.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/error.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// The i64 indices in logical order, each checked against `rows` (negative ones count from the
// end, as the reference's).
inline std::vector<int64_t> checkedRows(const Tensor& indices, int64_t rows, const char* op) {
  Tensor packed = indices.contiguous();
  const auto* raw = packed.dataAs<int64_t>();
  std::vector<int64_t> checked(raw, raw + packed.numel());
  for (int64_t& index : checked) {
    if (index < -rows || index >= rows)
      throw Error("runtime", std::string(op) + ": index " + std::to_string(index) +
                                 " is out of range for a dim of size " + std::to_string(rows));
    if (index < 0) index += rows;
  }
  return checked;
}

// Operands: weight [N, D] (any strides), indices; the result is indices.shape + [D].
template <typename T>
void embedding(const std::vector<const Tensor*>& inputs, const AttrMap&,
               std::vector<Tensor>& outputs) {
  Tensor& out = outputs[0];
  const Tensor& weight = *inputs[0];
  int64_t width = weight.size(1);
  std::vector<int64_t> rows = checkedRows(*inputs[1], weight.size(0), "aten.embedding");
  T* dst = out.dataAs<T>();
  if (weight.strides()[1] == 1 || width <= 1) {
    const T* src = weight.dataAs<T>();
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(dst + static_cast<int64_t>(i) * width, src + rows[i] * weight.strides()[0],
                  static_cast<size_t>(width) * sizeof(T));
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i)
    out.view({width}, {1}, out.offset() + static_cast<int64_t>(i) * width)
        .copyFrom(weight.view({width}, {weight.strides()[1]},
                              weight.offset() + rows[i] * weight.strides()[0]));
}

// Operands: grad_output (indices.shape + [D]), indices; the result [num_weights, D] sums the
// gradient rows per index, skipping padding_idx and, with scale_grad_by_freq, dividing by how
// often each index occurs.
template <typename T>
void embeddingDenseBackward(const std::vector<const Tensor*>& inputs, const AttrMap& attrs,
                            std::vector<Tensor>& outputs) {
  Tensor& out = outputs[0];
  Tensor grad = inputs[0]->contiguous();
  int64_t numWeights = out.size(0), width = out.size(1);
  std::vector<int64_t> rows = checkedRows(*inputs[1], numWeights, "aten.embedding_dense_backward");
  int64_t padding = attrs.getInt("padding_idx");
  std::vector<T> scale;
  if (attrs.getBool("scale_grad_by_freq")) {
    std::vector<int64_t> counts(static_cast<size_t>(numWeights), 0);
    for (int64_t row : rows)
      ++counts[static_cast<size_t>(row)];
    scale.resize(counts.size());
    for (size_t r = 0; r < counts.size(); ++r)
      scale[r] = counts[r] == 0 ? T(0) : static_cast<T>(1.0 / static_cast<double>(counts[r]));
  }
  T* dst = out.dataAs<T>();
  std::memset(dst, 0, out.nbytes());
  const T* src = grad.dataAs<T>();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == padding) continue;
    T factor = scale.empty() ? T(1) : scale[static_cast<size_t>(rows[i])];
    T* target = dst + rows[i] * width;
    const T* row = src + static_cast<int64_t>(i) * width;
    for (int64_t j = 0; j < width; ++j)
      target[j] += factor * row[j];
  }
}

} // namespace loupe::library
