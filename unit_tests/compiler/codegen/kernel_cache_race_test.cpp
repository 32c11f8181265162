// Processes sharing one kernel cache: eight start at once on an empty folder and compile the
// same kernels (kernel_cache_race_worker.cpp); none may fail or load a partial library, and
// the cache they leave holds every kernel.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "compiler/codegen/kernel_cache.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

extern char** environ;

namespace loupe::testing {
namespace {

pid_t startWorker(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), KERNEL_CACHE_RACE_WORKER);
  std::vector<char*> argv;
  for (std::string& argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  return pid;
}

int exitStatus(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(KernelCacheRace, EightProcessesFillOneEmptyCacheAndAllSucceed) {
  ScratchFolder scratch;
  const std::string cache = scratch / "kernels";
  std::vector<pid_t> workers;
  for (int i = 0; i < 8; ++i)
    workers.push_back(startWorker({cache}));
  for (size_t i = 0; i < workers.size(); ++i)
    EXPECT_EQ(exitStatus(workers[i]), 0) << "worker " << i;

  KernelCacheContents contents = kernelCacheContents(cache);
  EXPECT_EQ(contents.indexes, 4);
  EXPECT_EQ(contents.artifacts, 2);
  EXPECT_EQ(contents.temporaries, 0);
  EXPECT_EQ(contents.others, 0);
  EXPECT_EQ(exitStatus(startWorker({cache, "--cached"})), 0);
}

} // namespace
} // namespace loupe::testing
