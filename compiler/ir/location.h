// Where a node came from in the user's program: the innermost user frame of its stack trace
// and the nn.Module path (from FX's nn_module_stack), printed as loc("mlp.py":14 "fc1").
#pragma once

#include <string>

namespace loupe {

struct SourceLoc {
  std::string file;
  int line = 0;
  std::string module_path; // "encoder.layers.0.attn"; empty at top level

  bool known() const { return !file.empty() || !module_path.empty(); }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

} // namespace loupe
