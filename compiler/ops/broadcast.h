// Broadcasting as torch does it: shapes align at the trailing dimension and a dim of size 1
// stretches to match the other. Shape inference works on symbolic dims; the reference side
// maps an output element back to the input element it reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/sym_expr.h"

namespace loupe {

// The broadcast of two shapes. Symbolic dims broadcast only against 1 or an equal expression:
// [s0,1] with [128] gives [s0,128]; [s0] with [s1] is rejected, since proving s0 == s1 would
// need a guard that shape inference cannot add. Spellings equal when their divisions are
// exact (24 and (192*(s0//8))//s0) broadcast, as torch's guards made them equal.
inline Shape broadcastShapes(const Shape& a, const Shape& b, std::string_view opName) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim one = 1;
    const Dim& da = i < rank - a.size() ? one : a[i - (rank - a.size())];
    const Dim& db = i < rank - b.size() ? one : b[i - (rank - b.size())];
    if (da == db || db == one) {
      out[i] = da;
    } else if (da == one) {
      out[i] = db;
    } else if (SymExpr::equalWhenDivisionsExact(da, db)) {
      // Two spellings of one size under the frontend's guards: keep the simpler.
      out[i] = da.str().size() <= db.str().size() ? da : db;
    } else {
      throw Error("shape", std::string(opName) + ": cannot broadcast shapes [" + shapeStr(a) +
                               "] and [" + shapeStr(b) + "] (dim " + std::to_string(i) + ": " +
                               da.str() + " vs " + db.str() + ")");
    }
  }
  return out;
}

inline Shape broadcastShapes(const std::vector<Shape>& shapes, std::string_view opName) {
  Shape out;
  for (const Shape& s : shapes)
    out = broadcastShapes(out, s, opName);
  return out;
}

// Maps a row-major linear index of the broadcast output to the row-major linear index of an
// input that broadcasts to it (stretched dims contribute stride 0).
class BroadcastIndexer {
public:
  BroadcastIndexer(const std::vector<int64_t>& inputShape, const std::vector<int64_t>& outputShape)
      : outputShape_(outputShape), strides_(outputShape.size(), 0) {
    const size_t lead = outputShape.size() - inputShape.size();
    int64_t running = 1;
    for (size_t i = inputShape.size(); i-- > 0;) {
      if (inputShape[i] != 1) strides_[lead + i] = running;
      running *= inputShape[i];
    }
  }

  int64_t operator()(int64_t outputIndex) const {
    int64_t inputIndex = 0;
    for (size_t i = outputShape_.size(); i-- > 0;) {
      inputIndex += (outputIndex % outputShape_[i]) * strides_[i];
      outputIndex /= outputShape_[i];
    }
    return inputIndex;
  }

private:
  std::vector<int64_t> outputShape_;
  std::vector<int64_t> strides_;
};

} // namespace loupe
