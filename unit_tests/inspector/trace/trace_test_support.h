#pragma once

// Scratch directories, sample records and raw file surgery shared by the trace tests.

#include "inspector/trace/trace_records.h"
#include "unit_tests/support/scratch_dir.h"

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace loupe::testing {

RunInfo sampleRun(std::string_view host);
CompileInfo sampleCompile(std::string_view compile_key);
// A snapshot of a chain of node_count nodes; graph_name makes its text distinct.
SnapshotRecord sampleSnapshot(std::string_view graph_name, int node_count);
PassRecord samplePass(std::string_view name, int ordinal, SnapshotRecord snapshot);

// The message of the TraceError that action throws; a test failure when it throws none.
std::string traceErrorMessage(const std::function<void()>& action);

std::string readFile(const std::string& path);
void writeFile(const std::string& path, std::string_view bytes);

// Creates a trace that stops at schema `version`, as an older Loupe wrote it, holding one
// run (host "old-host") with one compile (key "0/0").
void createTraceAtVersion(const std::string& path, int version);
// Runs SQL on a file (creating it if needed) as another tool, or an attacker, would.
void execSql(const std::string& path, const char* sql);
int64_t queryInt(const std::string& path, const char* sql);

} // namespace loupe::testing
