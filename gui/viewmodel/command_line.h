// loupe-view's command line: what to open and, for headless runs, what state to render.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loupe::view {

// The bottom panel's tabs, in display order.
enum class PanelTab { Breaks, Guards, Kernels, Memory, Diff };
inline constexpr const char* kPanelTabNames[] = {"breaks", "guards", "kernels", "memory", "diff"};

// What --select names; every part is optional.
struct Selection {
  std::optional<long> compile;
  std::string pass; // empty: the compile's last pass
  std::string node; // SSA name, with or without '%'
};

struct CommandLine {
  std::string tracePath; // empty: start with no trace open
  std::string screenshotPath;
  Selection select;
  std::optional<PanelTab> panel;
  std::optional<std::pair<long, long>> diff; // compile ids
  int width = 1280, height = 800;
  bool benchmark = false;
  bool help = false;
};

// Throws Error("usage", ...) with a one-line message naming the argument at fault.
CommandLine parseCommandLine(const std::vector<std::string>& args);

std::string usageText();

} // namespace loupe::view
