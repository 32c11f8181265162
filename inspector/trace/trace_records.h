#pragma once

// The plain records a trace holds, one struct per kind of row. They know nothing of the
// compiler IR: the recorder fills them, TraceWriter stores them, TraceReader returns them.
// docs/trace-schema.md gives each column's meaning; the comments here say only what the
// C++ side must know. Optional fields are NULL columns. Timestamps are ISO 8601 UTC text.
// Every field has an initializer so that designated initializers may leave any out (GCC's
// -Wmissing-field-initializers flags fields without one).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loupe {

// One Python frame of a user stack, as Python's traceback.FrameSummary gives it.
struct StackFrame {
  std::string file{};
  int line = 0;
  std::string function{};
  std::string code{}; // the source line's text, empty when unknown

  bool operator==(const StackFrame&) const = default;
};

// One process that compiled with Loupe.
struct RunInfo {
  std::string started_at{}; // empty: the writer stamps the time of beginRun
  int64_t pid = 0;
  std::string host{};
  std::string command{};
  std::string torch_version{};
  std::string loupe_version{};
  std::string options_json = "{}"; // the backend options; must be valid JSON
  // Where the process sat in a torch.distributed job, when it was one (docs/trace-schema.md
  // says what the Python adapter records and when); all absent otherwise.
  std::optional<int64_t> rank{};
  std::optional<int64_t> world_size{};
  std::optional<std::string> process_group_backend{}; // "gloo", "nccl"; absent: no group

  bool operator==(const RunInfo&) const = default;
};

// A graph handed to Loupe, as known when its compilation starts.
struct CompileInfo {
  std::string compile_key{}; // Dynamo's "<frame id>/<compile id of that frame>", e.g. "0/1"
  std::string frame_name{};
  std::string frame_file{};
  int frame_line = 0;
  std::string graph_kind = "graph";        // forward | backward | inference | graph
  std::string input_signature_json = "[]"; // the example inputs; must be valid JSON
  std::string started_at{};                // empty: the writer stamps the time of beginCompile

  bool operator==(const CompileInfo&) const = default;
};

// How a compile ended (status "running" until finishCompile).
struct CompileOutcome {
  std::string status = "ok"; // running | ok | error | eager_fallback
  std::optional<std::string> error_message{};
  std::optional<std::string> error_pass{}; // the pass that failed, when one did
  std::optional<double> wall_ms{};         // absent while running

  bool operator==(const CompileOutcome&) const = default;
};

// One node of a snapshot, in textual (.lir) order; nodes inside a fused group follow it.
struct NodeRecord {
  std::string name{};                              // SSA name without '%', e.g. "1"
  std::string op{};                                // e.g. "aten.mm"
  std::string result_types{};                      // as printed, e.g. "f32[s0,256]"
  std::optional<std::string> dtype{};              // of the first result; absent without results
  std::optional<std::vector<std::string>> shape{}; // of the first result, one string per dim
  std::optional<std::string> file{};               // user source location
  std::optional<int> line{};
  std::optional<std::string> module_path{}; // from nn_module_stack, e.g. "encoder.fc1"
  std::optional<std::string> fused_group{}; // name of the enclosing fused node
  std::optional<std::string> kernel{};      // name of the kernel that runs this node

  bool operator==(const NodeRecord&) const = default;
};

// The graph after a pass: its .lir text, and its nodes as rows for SQL.
struct SnapshotRecord {
  std::string lir{};
  std::vector<NodeRecord> nodes{};

  bool operator==(const SnapshotRecord&) const = default;
};

// What one pass did (a pass that runs twice in a pipeline has two ordinals).
struct PassInfo {
  std::string name{};
  int ordinal = 0; // position in the compile's pipeline, unique within the compile
  double wall_ms = 0;
  bool changed = false;      // the graph changed (the pass manager's fingerprints differ)
  bool plan_changed = false; // the plan (kernel choices, memory plan) changed
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  int decisions = 0;         // rewrites and fusions the pass made
  std::string status = "ok"; // ok | failed
  std::optional<std::string> error_message{};

  bool operator==(const PassInfo&) const = default;
};

// What the writer stores for a pass: its facts and the graph it left (absent when the
// pass failed before producing one).
struct PassRecord {
  PassInfo info{};
  std::optional<SnapshotRecord> snapshot{};
};

// One rewrite or fusion a pass decided, numbered across the compile for bisection.
struct DecisionRecord {
  int ordinal = 0;    // 1-based, unique within the compile
  std::string kind{}; // rewrite | fusion | ...
  std::string description{};
  std::vector<std::string> nodes{}; // names of the nodes it involved
  bool applied = true;              // false when the decision counter vetoed it
  // The rule that made it: repository-relative source file and line. Absent for an injected
  // fault and in traces older than schema version 6.
  std::optional<std::string> rule_file{};
  std::optional<int> rule_line{};

  bool operator==(const DecisionRecord&) const = default;
};

// A kernel choice that was considered and rejected.
struct KernelAlternative {
  std::string kind{};   // generated | library | fallback
  std::string target{}; // cpu | cuda
  std::string why{};    // why it was not chosen

  bool operator==(const KernelAlternative&) const = default;
};

struct KernelRecord {
  std::string name{};   // unique within the compile, e.g. "k0"
  std::string kind{};   // generated | library | fallback
  std::string target{}; // cpu | cuda
  std::string op_summary{};
  std::string reason{}; // why this choice
  std::vector<KernelAlternative> alternatives{};
  std::vector<std::string> fused_nodes{};
  std::string source{};                   // generated code, empty for library and fallback kernels
  std::optional<double> max_error{};      // vs. the reference, set in check mode
  std::optional<std::string> cache{};     // generated kernels, once built: hit | built
  std::optional<double> build_ms{};       // how long its library took (docs/trace-schema.md)
  std::optional<std::string> resources{}; // registers, shared memory, spills (CUDA)

  bool operator==(const KernelRecord&) const = default;
};

// A buffer of the memory plan; uses are node ordinals of the final snapshot.
struct BufferRecord {
  std::string name{}; // unique within the compile
  int64_t size_bytes = 0;
  std::optional<int64_t> offset{}; // in the arena; absent for buffers outside it (graph inputs)
  int64_t first_use = 0;
  int64_t last_use = 0;
  bool is_graph_input = false;
  bool is_graph_output = false;
  std::optional<std::string> size_expr{}; // symbolic size ("256*s0"); size_bytes is then -1

  bool operator==(const BufferRecord&) const = default;
};

struct MemoryPlanRecord {
  int64_t arena_bytes = 0;
  int64_t peak_bytes = 0; // as planned: arena + outputs (v6)
  // As run, when measured: a static plan's; a symbolic plan's are per binding (memory_layouts).
  std::optional<int64_t> measured_peak_bytes{};
  // Symbolic plans (dynamic shapes): the expressions; the byte columns are then -1.
  std::optional<std::string> arena_expr{};
  std::optional<std::string> peak_expr{};
  // Bytes handed to the caller (v6; absent in older traces), -1 with output_expr when symbolic.
  std::optional<int64_t> output_bytes{};
  std::optional<std::string> output_expr{};

  bool operator==(const MemoryPlanRecord&) const = default;
};

// The layout a compile ran with for one binding of its symbols (none for static shapes), and
// what its calls measured.
struct MemoryLayoutRecord {
  std::map<std::string, int64_t> bindings{}; // {"s0": 8}
  int64_t arena_bytes = 0;
  int64_t output_bytes = 0;
  int64_t peak_bytes = 0;                       // arena + outputs
  std::optional<int64_t> measured_peak_bytes{}; // the highest a call measured
  std::map<std::string, int64_t> offsets{};     // arena buffers, by name
  std::map<std::string, int64_t> sizes{};       // every buffer of the plan, by name; -1 unknown

  bool operator==(const MemoryLayoutRecord&) const = default;
};

struct GraphBreakRecord {
  std::optional<int64_t> compile_id{}; // the compile of the graph before the break, if any
  std::string frame_name{};
  std::string reason{};
  std::vector<StackFrame> user_stack{};
  std::string created_at{}; // empty: the writer stamps the time of recording

  bool operator==(const GraphBreakRecord&) const = default;
};

struct GuardRecord {
  std::string kind{}; // e.g. TENSOR_MATCH, SHAPE_ENV
  std::string expr{}; // e.g. "L['x'].size()[0] == 8"
  std::vector<StackFrame> user_stack{};
  bool failed = false; // this guard failed on a later call

  bool operator==(const GuardRecord&) const = default;
};

// One line Dynamo traced while building a compile's graph (its `trace_source` log), in the
// order traced: the compile's path through the user's code. Two compiles of one frame that
// traced different sequences took different branches.
struct TracedLine {
  std::string file{};
  int line = 0;
  std::string function{};
  int depth = 0; // 0: the compiled frame; 1: a function it calls, inlined; ...

  bool operator==(const TracedLine&) const = default;
};

// Why a compile happened again: recorded against the new compile.
struct RecompileRecord {
  std::string previous_compile_key{};
  std::string reason{};
  std::optional<std::string> failed_guard{};

  bool operator==(const RecompileRecord&) const = default;
};

struct WarningRecord {
  std::optional<int64_t> compile_id{};
  std::string message{};
  std::string created_at{}; // empty: the writer stamps the time of recording

  bool operator==(const WarningRecord&) const = default;
};

// A compiled graph's run that failed (the graph then runs eagerly, unless strict).
struct RunErrorRecord {
  std::optional<std::string> node{}; // the node that failed, as the runtime describes it
  std::string message{};
  std::string created_at{}; // empty: the writer stamps the time of recording

  bool operator==(const RunErrorRecord&) const = default;
};

// A compiled GPU graph replayed as CUDA graphs: its totals so far (schema v15).
struct CudaGraphStatsRecord {
  std::string chosen_by{}; // "option" (cuda_graphs=True, reduce-overhead) or "launch-planning"
  int64_t captures = 0;
  int64_t replays = 0;
  int64_t uncaptured_calls = 0;         // calls launched one by one (a size's first, held outputs)
  std::optional<std::string> failure{}; // why capturing stopped, if it did
  std::string updated_at{};             // empty: the writer stamps the time of recording

  bool operator==(const CudaGraphStatsRecord&) const = default;
};

// One kernel's totals since its compiled graph was built.
struct KernelStatsRecord {
  std::string kernel{};         // the kernel's name ("k3"), or the node's description
  std::string implementation{}; // "library:aten.mm", "generated:loupe.fused", ...
  int64_t calls = 0;
  double total_ms = 0;
  int64_t scratch_bytes = 0; // the most a call allocated beyond the plan (workspaces, copies)
  std::optional<std::string> launch{}; // the last timed launch on a device (entry, grid, block)
  // Profiling (docs/profile.md); null when the kernel was not profiled: the median profiled
  // call's time and how many calls were profiled, that call's bytes moved and FLOPs from the IR,
  // and the larger share of the device's peak bandwidth or compute it reached with which one
  // ("memory", "compute"; both null where the peak is unknown, as on the host).
  std::optional<double> profile_ms{};
  std::optional<int64_t> profile_runs{};
  std::optional<int64_t> bytes{};
  std::optional<double> flops{};
  std::optional<double> peak_fraction{};
  std::optional<std::string> bound{};

  bool operator==(const KernelStatsRecord&) const = default;
};

// A node the culprit decision of a bisection involved, with its user source location. Empty
// strings and line 0 stand for unknown.
struct CulpritNodeRecord {
  std::string name{};
  std::string op{};
  std::string file{};
  int line = 0;
  std::string module_path{};
  std::string fused_group{};                // the fused node holding it, when fused
  std::vector<std::string> fused_members{}; // "%name = op" of that group's body

  bool operator==(const CulpritNodeRecord&) const = default;
};

// One compile-and-run of a bisection.
struct BisectionStepRecord {
  std::string phase{};                     // full | pass | decision
  std::optional<std::string> stop_after{}; // the last pass of the prefix
  std::optional<int> decision_limit{};     // decisions 1..limit applied; absent: all
  bool diverged = false;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::optional<std::string> error_message{}; // the trial failed to compile or run

  bool operator==(const BisectionStepRecord&) const = default;
};

// A search for the pass and decision that make a compile's results differ from the reference.
struct BisectionRecord {
  std::string status = "no_divergence"; // no_divergence | culprit_decision | culprit_pass
  double rtol = 0;
  double atol = 0;
  std::optional<int> injected_fault{}; // the decision a fault was injected after (testing aid)
  std::optional<std::string> first_bad_pass{};
  int total_decisions = 0;
  std::optional<int> decision_ordinal{}; // the culprit decision (culprit_decision)
  std::optional<std::string> decision_pass{};
  std::optional<std::string> decision_kind{};
  std::optional<std::string> decision_description{};
  std::vector<std::string> decision_nodes{};
  std::vector<CulpritNodeRecord> culprit_nodes{};
  std::vector<BisectionStepRecord> steps{}; // in the order they ran
  std::string created_at{};                 // empty: the writer stamps the time of recording

  bool operator==(const BisectionRecord&) const = default;
};

// A diverging compile shrunk to a smaller graph that still diverges (`loupe reduce`).
struct ReductionRecord {
  std::string started_at{}; // empty: the writer stamps the time of recording
  int64_t original_nodes = 0;
  int64_t reduced_nodes = 0;
  int trials = 0;
  double wall_ms = 0;
  bool budget_exhausted = false; // stopped at the time budget, not at a minimum
  std::string reduced_lir{};     // the smaller graph, as written to reduced.lir
  std::string command{};         // the `loupe run` command that reproduces the divergence

  bool operator==(const ReductionRecord&) const = default;
};

// Rows as the reader returns them, with the ids the writer assigned.

struct RunRow {
  int64_t id = 0;
  RunInfo info{};
};

struct CompileRow {
  int64_t id = 0;
  int64_t run_id = 0;
  CompileInfo info{};
  CompileOutcome outcome{};
};

struct PassRow {
  int64_t id = 0;
  PassInfo info{};
  std::optional<int64_t> snapshot_id{}; // TraceReader::snapshot loads it
};

struct DecisionRow {
  int64_t id = 0;
  int64_t pass_id = 0;
  DecisionRecord decision{};
};

struct ReductionRow {
  int64_t id = 0;
  int64_t compile_id = 0;
  ReductionRecord reduction{};

  bool operator==(const ReductionRow&) const = default;
};

struct BisectionRow {
  int64_t id = 0;
  int64_t compile_id = 0;
  BisectionRecord bisection{};

  bool operator==(const BisectionRow&) const = default;
};

} // namespace loupe
