// One thing the differ found, ranked: what kind, where in the pipeline, which nodes, which
// line of the user's program, and a one-line message. The report (text, JSON) only renders these.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loupe::diff {

// The kinds, in the order of their base rank (most likely culprit first); the JSON `kind`.
//   first_divergent_pass  the first pass after which the graphs differ beyond shapes
//   broadcast_blowup      a node whose size grows faster than the inputs that feed it
//   hardcoded_dim         a dim that stays constant where the input dim it came from changed
//   graph_break           a graph break in one compile and not the other
//   failed_guard          the guard whose failure caused the recompile
//   nonlinear_dim         (three or more compiles) a dim that is not linear in the input dims
//   unmatched_node        a node present in one compile only
//   fusion_diff           fused groups that differ (members, deciding pass)
//   kernel_diff           matched kernels with different choices (both reasons)
//   memory_diff           a peak that differs beyond the scaling of the inputs
struct FindingNode {
  std::string op;
  std::string nameA;          // empty when the node is only in B
  std::string nameB;          // empty when the node is only in A
  std::string shapeA, shapeB; // result types as printed, e.g. "f32[8,64]"
};

struct FindingSource {
  std::string file;
  int line = 0;
  std::string modulePath;
};

struct Finding {
  std::string kind;
  double score = 0; // higher ranks first; see docs/differ.md for how it is computed
  std::string pass; // the pass it concerns, empty when none (graph breaks, guards)
  std::vector<FindingNode> nodes;
  std::optional<FindingSource> source; // the user line most responsible, when known
  std::string message; // one line, self-contained, e.g. "%sub is [16,16] at B=16 ..."
};

} // namespace loupe::diff
