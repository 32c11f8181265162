// Ctrl+F: find boxes by op, name, shape or source line. Plain text matches any of them;
// a prefix narrows the field:
//   op:mm          the op contains "mm" (aten.mm, aten.addmm)
//   name:%h        the SSA name is h (exact; the '%' is optional)
//   shape:s0,64    the printed result types contain "s0,64" (spaces ignored)
//   line:14        the source line is 14; `line:mlp.py:14` also matches the file's name
//   module:fc1     the module path contains "fc1"
// Matching is case-insensitive. Results are in box order (the snapshot's textual order), so
// next/previous walk the graph top to bottom.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gui/viewmodel/graph_model.h"

namespace loupe::view {

enum class SearchField { Any, Op, Name, Shape, Line, Module };

struct SearchQuery {
  SearchField field = SearchField::Any;
  std::string text; // lower-cased, prefix removed

  static SearchQuery parse(std::string_view query);
  bool matches(const Box& box) const;
};

// Indices of the matching boxes, ascending; empty for an empty query.
std::vector<int> searchBoxes(const GraphModel& model, std::string_view query);

// The current result and next/previous, wrapping around.
class SearchCursor {
public:
  SearchCursor() = default;
  explicit SearchCursor(std::vector<int> results) : results_(std::move(results)) {}

  const std::vector<int>& results() const { return results_; }
  int current() const;                       // the box, -1 when there are no results
  int position() const { return position_; } // 0-based, for "3 of 12"
  int next();
  int previous();

private:
  std::vector<int> results_;
  int position_ = 0;
};

} // namespace loupe::view
