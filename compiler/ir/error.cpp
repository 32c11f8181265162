#include "compiler/ir/error.h"

namespace loupe {

Error::Error(std::string kind, std::string message, ErrorContext context)
    : std::runtime_error(format(kind, message, context)), kind_(std::move(kind)),
      message_(std::move(message)), context_(std::move(context)) {}

Error Error::withContext(const ErrorContext& outer) const {
  ErrorContext merged = context_;
  if (merged.file.empty()) {
    merged.file = outer.file;
    merged.line = outer.line;
    merged.column = outer.column;
  }
  if (merged.graph.empty()) merged.graph = outer.graph;
  if (merged.pass.empty()) merged.pass = outer.pass;
  if (merged.node.empty()) merged.node = outer.node;
  return Error(kind_, message_, merged);
}

std::string Error::format(const std::string& kind, const std::string& message,
                          const ErrorContext& c) {
  std::string s;
  if (!c.file.empty()) {
    s += c.file;
    if (c.line > 0) s += ":" + std::to_string(c.line);
    if (c.column > 0) s += ":" + std::to_string(c.column);
    s += ": ";
  }
  s += kind + " error: " + message;
  std::string where;
  if (!c.graph.empty()) where += "graph @" + c.graph;
  if (!c.pass.empty()) where += std::string(where.empty() ? "" : ", ") + "pass " + c.pass;
  if (!c.node.empty()) where += std::string(where.empty() ? "" : ", ") + "node " + c.node;
  if (!where.empty()) s += " (in " + where + ")";
  return s;
}

} // namespace loupe
