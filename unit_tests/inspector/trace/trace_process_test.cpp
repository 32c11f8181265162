// Guarantees across processes: a writer killed mid-pass loses only that pass, the .db file alone
// holds every finished compile and every recorded kernel stat even when its writer never closed,
// and several processes can append to one trace at once.

#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"
#include "trace_test_support.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sys/wait.h>
#include <unistd.h>

namespace loupe {
namespace {

using testing::sampleCompile;
using testing::samplePass;
using testing::sampleRun;
using testing::sampleSnapshot;
using testing::ScratchDir;

// Runs body in a forked child and returns its wait status. The child leaves with _exit so
// it never runs the parent's test harness teardown: status 0 on success, 1 on an exception.
int runInChild(const std::function<void()>& body) {
  pid_t child = fork();
  if (child == 0) {
    try {
      body();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "child %d: %s\n", getpid(), error.what());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

TEST(TraceProcesses, KilledWriterLosesOnlyThePassInFlight) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  int status = runInChild([&] {
    TraceWriter writer(path);
    int64_t compile_id =
        writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
    writer.recordPass(compile_id, samplePass("decompose", 0, sampleSnapshot("decomposed", 4)));
    writer.recordPass(compile_id, samplePass("cse", 1, sampleSnapshot("cse", 3)));
    // Dies with pass 3's snapshot, nodes and row written but not committed.
    writer.setPassCommitHookForTesting([] { std::raise(SIGKILL); });
    writer.recordPass(compile_id, samplePass("fuse", 2, sampleSnapshot("fused", 2)));
  });
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

  {
    TraceReader reader(path);
    std::vector<PassRow> passes = reader.passes(1);
    ASSERT_EQ(passes.size(), 2u);
    EXPECT_EQ(passes[1].info.name, "cse");
    EXPECT_EQ(reader.snapshotAfterPass(1, "cse"), sampleSnapshot("cse", 3));
    EXPECT_EQ(reader.summary().snapshots, 2);
    EXPECT_EQ(reader.summary().nodes, 7);
    EXPECT_EQ(reader.compile(1).outcome.status, "running");
  }
  // The file stays usable: the lost pass can be recorded again.
  TraceWriter(path).recordPass(1, samplePass("fuse", 2, sampleSnapshot("fused", 2)));
  EXPECT_EQ(TraceReader(path).passes(1).size(), 3u);
}

TEST(TraceProcesses, TheDbFileAloneHoldsWhatAKilledWriterCheckpointed) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  int status = runInChild([&] {
    TraceWriter writer(path);
    int64_t compile_id =
        writer.beginCompile(writer.beginRun(sampleRun("host-a")), sampleCompile("0/0"));
    writer.recordPass(compile_id, samplePass("cse", 0, sampleSnapshot("cse", 3)));
    writer.finishCompile(compile_id, {.status = "ok", .wall_ms = 1});
    writer.recordKernelStats(compile_id, {{.kernel = "k0", .calls = 7, .total_ms = 2}});
    std::raise(SIGKILL); // the writer never closes: the file stays in WAL mode
  });
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));

  // Copied without its -wal file, as someone sharing the trace would.
  const std::string copy = dir.file("copy.db");
  std::filesystem::copy_file(path, copy);
  TraceReader reader(copy);
  EXPECT_EQ(reader.compile(1).outcome.status, "ok");
  EXPECT_EQ(reader.snapshotAfterPass(1, "cse"), sampleSnapshot("cse", 3));
  ASSERT_EQ(reader.kernelStats(1).size(), 1u);
  EXPECT_EQ(reader.kernelStats(1)[0].calls, 7);
}

TEST(TraceProcesses, ConcurrentWritersAllLand) {
  ScratchDir dir;
  const std::string path = dir.file("trace.db");
  constexpr int kWriters = 4;
  constexpr int kCompilesPerWriter = 5;
  int start[2];
  ASSERT_EQ(pipe(start), 0);

  std::vector<pid_t> children;
  for (int writer_index = 0; writer_index < kWriters; ++writer_index) {
    pid_t child = fork();
    if (child == 0) {
      close(start[1]);
      char go;
      int exit_code = read(start[0], &go, 1) == 0 ? 0 : 2; // EOF: the parent released all
      try {
        // All writers create the file at the same moment.
        TraceWriter writer(path);
        const std::string host = "host-" + std::to_string(writer_index);
        int64_t run_id = writer.beginRun(sampleRun(host));
        for (int index = 0; index < kCompilesPerWriter; ++index) {
          const std::string key = std::to_string(index) + "/0";
          int64_t compile_id = writer.beginCompile(run_id, sampleCompile(key));
          writer.recordPass(compile_id, samplePass("decompose", 0, sampleSnapshot("shared", 5)));
          writer.recordPass(compile_id, samplePass("cse", 1, sampleSnapshot(host + key, 4)));
          writer.recordPass(compile_id, samplePass("fuse", 2, sampleSnapshot(host + key + "f", 2)));
          writer.finishCompile(compile_id, {.status = "ok", .wall_ms = 1});
        }
      } catch (const std::exception& error) {
        std::fprintf(stderr, "writer %d: %s\n", writer_index, error.what());
        exit_code = 1;
      }
      _exit(exit_code);
    }
    children.push_back(child);
  }
  close(start[0]);
  close(start[1]);
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }

  TraceReader reader(path);
  std::vector<RunRow> runs = reader.runs();
  ASSERT_EQ(runs.size(), static_cast<size_t>(kWriters));
  for (const RunRow& run : runs) {
    std::vector<CompileRow> compiles = reader.compiles(run.id);
    ASSERT_EQ(compiles.size(), static_cast<size_t>(kCompilesPerWriter)) << run.info.host;
    for (const CompileRow& compile : compiles) {
      EXPECT_EQ(compile.outcome.status, "ok");
      EXPECT_EQ(reader.passes(compile.id).size(), 3u);
    }
  }
  // One shared snapshot plus two of each compile's own.
  EXPECT_EQ(reader.summary().snapshots, 1 + kWriters * kCompilesPerWriter * 2);
}

} // namespace
} // namespace loupe
