#include "inspector/recorder/run_info.h"

#include <unistd.h>

namespace loupe {

RunInfo thisProcessRun(std::string command, std::string torchVersion, std::string optionsJson) {
  RunInfo run;
  run.pid = static_cast<int64_t>(getpid());
  run.command = std::move(command);
  run.torch_version = std::move(torchVersion);
  run.loupe_version = LOUPE_VERSION;
  run.options_json = std::move(optionsJson);
  return run;
}

} // namespace loupe
