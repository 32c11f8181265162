// What an executable's kernel stats become in the trace's per-kernel table: a profiled kernel's
// time, bytes, FLOPs and peak share; an unprofiled one's profile columns null.
#include <gtest/gtest.h>

#include "inspector/recorder/run_info.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"
#include "unit_tests/support/scratch_dir.h"

namespace loupe::testing {
namespace {

TEST(KernelStatsRecord, ProfiledKernelsHaveTheirProfileAndOthersNull) {
  ScratchDir dir;
  const std::string path = dir.file("t.db");
  ExecutionStats stats;
  stats.kernels["k0"] = {.implementation = "library:aten.mm", .calls = 6, .totalMs = 3};
  KernelStats& mm = stats.kernels["k0"];
  mm.profileRuns = 5;
  mm.profileMs = 0.5;
  mm.bytes = 4096;
  mm.flops = 1e9;
  mm.peakFraction = 0.25;
  mm.bound = "compute";
  KernelStats& onHost = stats.kernels["k1"] = {.implementation = "generated:loupe.fused"};
  onHost.profileRuns = 2;
  onHost.profileMs = 0.125;
  onHost.bytes = 64;
  onHost.flops = 16;
  stats.kernels["k2"] = {.implementation = "view:aten.permute", .calls = 1};
  {
    TraceWriter writer(path);
    int64_t compileId = writer.beginCompile(writer.beginRun(thisProcessRun("test")), {});
    TraceRecorder(writer, compileId).onKernelStats(stats);
  }
  std::map<std::string, KernelStatsRecord> rows;
  for (KernelStatsRecord& row : TraceReader(path).kernelStats(1))
    rows[row.kernel] = row;
  const KernelStatsRecord& k0 = rows.at("k0");
  EXPECT_EQ(k0.profile_ms, 0.5);
  EXPECT_EQ(k0.profile_runs, 5);
  EXPECT_EQ(k0.bytes, 4096);
  EXPECT_EQ(k0.flops, 1e9);
  EXPECT_EQ(k0.peak_fraction, 0.25);
  EXPECT_EQ(k0.bound, "compute");
  const KernelStatsRecord& k1 = rows.at("k1"); // on the host: no peak, so no share
  EXPECT_EQ(k1.profile_runs, 2);
  EXPECT_EQ(k1.flops, 16);
  EXPECT_FALSE(k1.peak_fraction || k1.bound);
  const KernelStatsRecord& k2 = rows.at("k2");
  EXPECT_FALSE(k2.profile_ms || k2.profile_runs || k2.bytes || k2.flops || k2.peak_fraction);
}

} // namespace
} // namespace loupe::testing
