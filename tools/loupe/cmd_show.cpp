// `loupe show`: what a trace holds (runs → compiles → passes, with counts; each compile's kernels
// by time, by profiled time with their share of the device's peak when profiled, and its memory,
// planned beside measured), as a table or one JSON document; or, with
// --compile and --pass, one snapshot in .lir; or, with --compile and --decisions, the compile's
// decisions and the rule (file:line) behind each.
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "inspector/trace/concrete_memory.h"
#include "inspector/trace/kernel_profile.h"
#include "inspector/trace/trace_reader.h"
#include "tools/loupe/commands.h"
#include "tools/loupe/kernel_table.h"
#include "tools/loupe/trace_counts.h"

namespace loupe::cli {

namespace {

// A measured peak this far above the planned one is flagged: memory the plan does not show
// (kernel scratch, copies) is worth a look.
constexpr double kMeasuredAbovePlan = 1.25;

std::string bytesText(int64_t value, const std::optional<std::string>& expr) {
  return (expr ? *expr : std::to_string(value)) + " B";
}

// "planned peak P B (arena A B + outputs O B), measured M B", flagged when M is well above P,
// with the kernel whose scratch is largest: what the plan does not hold.
std::string plannedAndMeasured(const std::string& peak, const std::string& arena,
                               const std::optional<std::string>& outputs, int64_t plannedPeak,
                               std::optional<int64_t> measured,
                               const std::optional<KernelStatsRecord>& largestScratch) {
  std::string text = "planned peak " + peak + " (arena " + arena;
  text += outputs ? " + outputs " + *outputs + ")" : ")";
  if (!measured) return text;
  text += ", measured " + std::to_string(*measured) + " B";
  if (plannedPeak > 0 && double(*measured) > kMeasuredAbovePlan * double(plannedPeak))
    text += "  ! " + fixed(100.0 * double(*measured - plannedPeak) / double(plannedPeak), 0) +
            "% above the plan" +
            (largestScratch ? " (largest kernel scratch: " + largestScratch->kernel + " " +
                                  largestScratch->implementation + ", " +
                                  std::to_string(largestScratch->scratch_bytes) + " B)"
                            : "");
  return text;
}

void printMemory(const TraceReader& reader, int64_t compileId) {
  auto plan = reader.memoryPlan(compileId);
  if (!plan) return;
  std::optional<std::string> outputs;
  if (plan->output_bytes) outputs = bytesText(*plan->output_bytes, plan->output_expr);
  auto layouts = reader.memoryLayouts(compileId);
  std::optional<KernelStatsRecord> largestScratch;
  for (const KernelStatsRecord& k : reader.kernelStats(compileId))
    if (k.scratch_bytes > (largestScratch ? largestScratch->scratch_bytes : 0)) largestScratch = k;
  bool symbolic = plan->peak_bytes < 0;
  std::optional<int64_t> measured = plan->measured_peak_bytes;
  if (!symbolic)
    for (const auto& layout : layouts)
      if (layout.bindings.empty()) measured = layout.measured_peak_bytes;
  std::cout << "    memory: "
            << plannedAndMeasured(bytesText(plan->peak_bytes, plan->peak_expr),
                                  bytesText(plan->arena_bytes, plan->arena_expr), outputs,
                                  plan->peak_bytes, symbolic ? std::nullopt : measured,
                                  largestScratch)
            << (symbolic ? " (symbolic)" : "") << "\n";
  for (const auto& layout : layouts) {
    if (layout.bindings.empty()) continue;
    std::cout << "      at " << bindingsText(layout.bindings) << ": "
              << plannedAndMeasured(bytesText(layout.peak_bytes, std::nullopt),
                                    bytesText(layout.arena_bytes, std::nullopt),
                                    bytesText(layout.output_bytes, std::nullopt), layout.peak_bytes,
                                    layout.measured_peak_bytes, largestScratch)
              << "\n";
  }
}

void printText(const TraceReader& reader, const TraceCounts& counts) {
  std::cout << reader.path() << "\n";
  for (const auto& run : reader.runs()) {
    const RunInfo& r = run.info;
    std::cout << "run " << run.id << "  " << r.started_at << "  pid " << r.pid;
    if (!r.torch_version.empty()) std::cout << "  torch " << r.torch_version;
    if (!r.loupe_version.empty()) std::cout << "  loupe " << r.loupe_version;
    if (!r.command.empty()) std::cout << "  " << r.command;
    std::cout << "\n";
    for (const auto& c : reader.compiles(run.id)) {
      const CompileInfo& ci = c.info;
      std::cout << "  compile " << c.id << "  " << (ci.compile_key.empty() ? "-" : ci.compile_key)
                << " " << ci.graph_kind;
      if (!ci.frame_name.empty()) std::cout << "  " << ci.frame_name;
      if (!ci.frame_file.empty()) std::cout << " @ " << ci.frame_file << ":" << ci.frame_line;
      std::cout << "  status " << c.outcome.status;
      if (c.outcome.wall_ms) std::cout << "  " << fixed(*c.outcome.wall_ms, 1) << " ms";
      std::cout << "\n";
      if (c.outcome.error_message)
        std::cout << "    error" << (c.outcome.error_pass ? " in " + *c.outcome.error_pass : "")
                  << ": " << *c.outcome.error_message << "\n";
      for (const RunErrorRecord& e : reader.runErrors(c.id))
        std::cout << "    run failed" << (e.node ? " at " + *e.node : "") << " (" << e.created_at
                  << "), ran eagerly since: " << e.message << "\n";
      auto passes = reader.passes(c.id);
      if (passes.empty()) continue;
      std::printf("    %-3s %-26s %9s  %-7s %-4s %-13s %s\n", "#", "pass", "ms", "changed", "plan",
                  "nodes", "decisions");
      for (const auto& p : passes) {
        const PassInfo& pi = p.info;
        std::string nodes = std::to_string(pi.nodes_before) + "->" + std::to_string(pi.nodes_after);
        std::printf("    %-3d %-26s %9s  %-7s %-4s %-13s %d%s\n", pi.ordinal, pi.name.c_str(),
                    fixed(pi.wall_ms, 3).c_str(), pi.changed ? "yes" : "no",
                    pi.plan_changed ? "yes" : "no", nodes.c_str(), pi.decisions,
                    pi.status == "ok" ? ""
                                      : ("  FAILED: " + pi.error_message.value_or("")).c_str());
      }
      auto kernels = reader.kernels(c.id);
      if (!kernels.empty()) {
        std::map<std::string, int> byKind;
        for (const auto& k : kernels)
          ++byKind[k.kind];
        std::cout << "    kernels:";
        for (const auto& [kind, n] : byKind)
          std::cout << " " << kind << " " << n;
        std::cout << "\n";
        std::string builds;
        for (const auto& k : kernels)
          if (k.cache)
            builds += (builds.empty() ? "" : ", ") + k.name + " " + *k.cache +
                      (k.build_ms ? " " + fixed(*k.build_ms, 1) + " ms" : "");
        if (!builds.empty()) std::cout << "    kernel builds: " << builds << "\n";
        for (const auto& k : kernels)
          if (k.resources) std::cout << "    " << k.name << " resources: " << *k.resources << "\n";
      }
      printKernelTable(reader.kernelStats(c.id));
      printCudaGraphStats(reader.cudaGraphStats(c.id));
      printMemory(reader, c.id);
    }
  }
  std::cout << "totals: " << counts.summary.compiles << " compiles, " << counts.summary.passes
            << " passes, " << counts.summary.snapshots << " snapshots, " << counts.summary.nodes
            << " nodes, " << counts.summary.graph_breaks << " graph breaks, "
            << counts.summary.guards << " guards, " << counts.summary.recompiles << " recompiles, "
            << counts.fallbackNodes << " fallback nodes\n";
}

template <typename T>
nlohmann::ordered_json orNull(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

nlohmann::ordered_json jsonDocument(const TraceReader& reader, const TraceCounts& counts) {
  const auto& s = counts.summary;
  nlohmann::ordered_json doc;
  doc["trace"] = reader.path();
  doc["runs"] = s.runs;
  doc["compiles"] = s.compiles;
  doc["passes"] = s.passes;
  doc["snapshots"] = s.snapshots;
  doc["nodes"] = s.nodes;
  doc["decisions"] = s.decisions;
  doc["graph_breaks"] = s.graph_breaks;
  doc["guards"] = s.guards;
  doc["recompiles"] = s.recompiles;
  doc["warnings"] = s.warnings;
  doc["kernels"] = nlohmann::ordered_json::object();
  for (const char* kind : {"generated", "library", "fallback", "view"})
    doc["kernels"][kind] = s.kernels_by_kind.count(kind) ? s.kernels_by_kind.at(kind) : 0;
  doc["fallback_nodes"] = counts.fallbackNodes;
  doc["final_nodes"] = counts.finalNodes;
  doc["fallback_share"] =
      counts.finalNodes ? double(counts.fallbackNodes) / double(counts.finalNodes) : 0.0;
  doc["detail"] = nlohmann::ordered_json::array();
  for (const auto& run : reader.runs()) {
    nlohmann::ordered_json r;
    r["id"] = run.id;
    r["started_at"] = run.info.started_at;
    r["pid"] = run.info.pid;
    r["command"] = run.info.command;
    r["torch_version"] = run.info.torch_version;
    r["loupe_version"] = run.info.loupe_version;
    r["compiles"] = nlohmann::ordered_json::array();
    for (const auto& c : reader.compiles(run.id)) {
      nlohmann::ordered_json cj;
      cj["id"] = c.id;
      cj["compile_key"] = c.info.compile_key;
      cj["graph_kind"] = c.info.graph_kind;
      cj["frame"] = {
          {"name", c.info.frame_name}, {"file", c.info.frame_file}, {"line", c.info.frame_line}};
      cj["status"] = c.outcome.status;
      if (c.outcome.error_message) cj["error"] = *c.outcome.error_message;
      cj["run_errors"] = nlohmann::ordered_json::array();
      for (const RunErrorRecord& e : reader.runErrors(c.id))
        cj["run_errors"].push_back(
            {{"node", e.node ? nlohmann::ordered_json(*e.node) : nlohmann::ordered_json()},
             {"message", e.message},
             {"created_at", e.created_at}});
      if (c.outcome.wall_ms) cj["wall_ms"] = *c.outcome.wall_ms;
      cj["passes"] = nlohmann::ordered_json::array();
      for (const auto& p : reader.passes(c.id))
        cj["passes"].push_back({{"ordinal", p.info.ordinal},
                                {"name", p.info.name},
                                {"wall_ms", p.info.wall_ms},
                                {"changed", p.info.changed},
                                {"plan_changed", p.info.plan_changed},
                                {"nodes_before", p.info.nodes_before},
                                {"nodes_after", p.info.nodes_after},
                                {"decisions", p.info.decisions},
                                {"status", p.info.status}});
      cj["kernel_builds"] = nlohmann::ordered_json::array();
      for (const auto& k : reader.kernels(c.id))
        if (k.cache)
          cj["kernel_builds"].push_back(
              {{"name", k.name},
               {"cache", *k.cache},
               {"build_ms",
                k.build_ms ? nlohmann::ordered_json(*k.build_ms) : nlohmann::ordered_json()},
               {"resources",
                k.resources ? nlohmann::ordered_json(*k.resources) : nlohmann::ordered_json()}});
      cj["kernel_stats"] = nlohmann::ordered_json::array();
      for (const KernelStatsRecord& k : reader.kernelStats(c.id))
        cj["kernel_stats"].push_back(
            {{"kernel", k.kernel},
             {"implementation", k.implementation},
             {"calls", k.calls},
             {"total_ms", k.total_ms},
             {"scratch_bytes", k.scratch_bytes},
             {"launch", k.launch ? nlohmann::ordered_json(*k.launch) : nlohmann::ordered_json()},
             {"profile_ms", orNull(k.profile_ms)},
             {"profile_runs", orNull(k.profile_runs)},
             {"bytes", orNull(k.bytes)},
             {"flops", orNull(k.flops)},
             {"peak_fraction", orNull(k.peak_fraction)},
             {"bound", orNull(k.bound)}});
      if (auto graphs = reader.cudaGraphStats(c.id))
        cj["cuda_graphs"] = {{"chosen_by", graphs->chosen_by},
                             {"captures", graphs->captures},
                             {"replays", graphs->replays},
                             {"uncaptured_calls", graphs->uncaptured_calls},
                             {"failure", orNull(graphs->failure)}};
      if (std::vector<KernelStatsRecord> stats = reader.kernelStats(c.id); anyProfiled(stats)) {
        nlohmann::ordered_json byImplementation = nlohmann::ordered_json::object();
        for (const auto& [kind, share] : timeByImplementation(stats))
          byImplementation[kind] = share;
        cj["profile"] = {{"call_ms", profiledCallMs(stats)},
                         {"share_by_implementation", std::move(byImplementation)}};
      }
      if (auto plan = reader.memoryPlan(c.id)) {
        nlohmann::ordered_json memory = {{"arena_bytes", plan->arena_bytes},
                                         {"peak_bytes", plan->peak_bytes},
                                         {"measured_peak_bytes", nullptr},
                                         {"layouts", nlohmann::ordered_json::array()}};
        if (plan->measured_peak_bytes) memory["measured_peak_bytes"] = *plan->measured_peak_bytes;
        if (plan->peak_expr) memory["peak_expr"] = *plan->peak_expr;
        for (const MemoryLayoutRecord& layout : reader.memoryLayouts(c.id))
          memory["layouts"].push_back(
              {{"bindings", layout.bindings},
               {"arena_bytes", layout.arena_bytes},
               {"output_bytes", layout.output_bytes},
               {"peak_bytes", layout.peak_bytes},
               {"measured_peak_bytes", layout.measured_peak_bytes
                                           ? nlohmann::ordered_json(*layout.measured_peak_bytes)
                                           : nlohmann::ordered_json()}});
        cj["memory"] = std::move(memory);
      }
      r["compiles"].push_back(std::move(cj));
    }
    doc["detail"].push_back(std::move(r));
  }
  return doc;
}

// The decisions of a compile (only those of passes named `pass`, when given), as loupe-opt
// --print-decisions prints them: "decision 3: [cse] merge: ... (applied) [passes/cse.cpp:45]".
int printDecisions(const TraceReader& reader, int64_t compile, const std::string& pass, bool json) {
  std::map<int64_t, std::string> passNames;
  std::string listed;
  bool known = pass.empty();
  for (const PassRow& p : reader.passes(compile)) {
    passNames[p.id] = p.info.name;
    listed += (listed.empty() ? "" : ", ") + p.info.name;
    known = known || p.info.name == pass;
  }
  if (!known) {
    printError("show: compile " + std::to_string(compile) + " has no pass named '" + pass +
               "'; its passes: " + listed);
    return 1;
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const DecisionRow& row : reader.decisions(compile)) {
    const DecisionRecord& d = row.decision;
    const std::string& by = passNames[row.pass_id];
    if (!pass.empty() && by != pass) continue;
    if (json) {
      list.push_back({{"ordinal", d.ordinal},
                      {"pass", by},
                      {"kind", d.kind},
                      {"description", d.description},
                      {"nodes", d.nodes},
                      {"applied", d.applied},
                      {"rule_file", d.rule_file ? nlohmann::ordered_json(*d.rule_file) : nullptr},
                      {"rule_line", d.rule_line ? nlohmann::ordered_json(*d.rule_line) : nullptr}});
      continue;
    }
    if (d.kind == "fault") { // an injected fault's announcement: not a counted decision
      std::cout << "fault: [" << by << "] " << d.description << "\n";
      continue;
    }
    std::cout << "decision " << d.ordinal << ": [" << by << "] " << d.kind << ": " << d.description
              << (d.applied ? " (applied)" : " (skipped)");
    if (d.rule_file) std::cout << " [" << *d.rule_file << ":" << d.rule_line.value_or(0) << "]";
    std::cout << "\n";
  }
  if (json) std::cout << list.dump(2) << "\n";
  return 0;
}

} // namespace

int runShow(const ShowOptions& options) {
  TraceReader reader(options.trace);
  if (options.decisions) {
    if (!options.compile) {
      printError("show: --decisions needs --compile (the compile whose decisions to list)");
      return 2;
    }
    return printDecisions(reader, *options.compile, options.pass, options.json);
  }
  if (!options.pass.empty() || options.compile) {
    if (options.pass.empty() || !options.compile) {
      printError("show: --compile and --pass go together (to print one snapshot)");
      return 2;
    }
    std::cout << reader.snapshotAfterPass(*options.compile, options.pass).lir;
    return 0;
  }
  TraceCounts counts = countTrace(reader);
  if (options.json)
    std::cout << jsonDocument(reader, counts).dump(2) << "\n";
  else
    printText(reader, counts);
  return 0;
}

} // namespace loupe::cli
