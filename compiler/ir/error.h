// Errors are values with a location: where in a .lir file (file:line:col), or which graph,
// pass and node. They are thrown inside the compiler and shown once, at the edge (CLI,
// Python adapter), by `what()`, which formats all the context that is known.
#pragma once

#include <stdexcept>
#include <string>

namespace loupe {

struct ErrorContext {
  std::string file; // .lir file or trace path
  int line = 0;     // 1-based; 0 when unknown
  int column = 0;   // 1-based; 0 when unknown
  std::string graph;
  std::string pass;
  std::string node; // "%3 = aten.mm" style, or a value name
};

class Error : public std::runtime_error {
public:
  Error(std::string kind, std::string message, ErrorContext context = {});

  const std::string& kind() const { return kind_; }       // "parse", "verify", "shape", ...
  const std::string& message() const { return message_; } // without the context
  const ErrorContext& context() const { return context_; }

  // A copy with more context filled in where this one has none (e.g. the pass manager adds the
  // pass name to a shape error raised by an op).
  Error withContext(const ErrorContext& outer) const;

private:
  static std::string format(const std::string& kind, const std::string& message,
                            const ErrorContext& context);
  std::string kind_;
  std::string message_;
  ErrorContext context_;
};

} // namespace loupe
