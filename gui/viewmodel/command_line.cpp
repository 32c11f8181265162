#include "gui/viewmodel/command_line.h"

#include <charconv>
#include <iterator>

#include "compiler/ir/error.h"

namespace loupe::view {
namespace {

[[noreturn]] void usageError(const std::string& message) {
  throw Error("usage", message + " (see loupe-view --help)");
}

long parseNumber(std::string_view text, const std::string& what) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0)
    usageError(what + ": '" + std::string(text) + "' is not a non-negative integer");
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(separator, start)) != std::string_view::npos; start = at + 1)
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}

Selection parseSelection(std::string_view text) {
  Selection selection;
  for (std::string_view part : split(text, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos)
      usageError("--select: '" + std::string(part) + "' is not KEY=VALUE");
    const std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "compile")
      selection.compile = parseNumber(value, "--select compile");
    else if (key == "pass")
      selection.pass = value;
    else if (key == "node")
      selection.node = value.starts_with('%') ? value.substr(1) : value;
    else
      usageError("--select: unknown key '" + std::string(key) + "' (compile, pass, node)");
  }
  return selection;
}

PanelTab parsePanel(std::string_view text) {
  for (size_t i = 0; i < std::size(kPanelTabNames); ++i)
    if (text == kPanelTabNames[i]) return static_cast<PanelTab>(i);
  usageError("--panel: '" + std::string(text) +
             "' is not one of breaks, guards, kernels, memory, diff");
}

} // namespace

CommandLine parseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) usageError(arg + " needs a value");
      return args[++i];
    };
    if (arg == "-h" || arg == "--help") {
      cl.help = true;
    } else if (arg == "--screenshot") {
      cl.screenshotPath = value();
    } else if (arg == "--select") {
      cl.select = parseSelection(value());
    } else if (arg == "--panel") {
      cl.panel = parsePanel(value());
    } else if (arg == "--diff") {
      const auto ids = split(value(), ',');
      if (ids.size() != 2) usageError("--diff: expected two compile ids A,B");
      cl.diff = {parseNumber(ids[0], "--diff"), parseNumber(ids[1], "--diff")};
    } else if (arg == "--size") {
      const auto dims = split(value(), 'x');
      if (dims.size() != 2) usageError("--size: expected WIDTHxHEIGHT, e.g. 1280x800");
      cl.width = static_cast<int>(parseNumber(dims[0], "--size width"));
      cl.height = static_cast<int>(parseNumber(dims[1], "--size height"));
      if (cl.width < 320 || cl.height < 240 || cl.width > 8192 || cl.height > 8192)
        usageError("--size: " + args[i] + " is outside 320x240 .. 8192x8192");
    } else if (arg == "--benchmark") {
      cl.benchmark = true;
    } else if (arg.starts_with('-')) {
      usageError("unknown option " + arg);
    } else if (cl.tracePath.empty()) {
      cl.tracePath = arg;
    } else {
      usageError("more than one trace given: " + cl.tracePath + " and " + arg);
    }
  }
  if ((!cl.screenshotPath.empty() || cl.benchmark) && cl.tracePath.empty())
    usageError(std::string(cl.benchmark ? "--benchmark" : "--screenshot") + " needs a trace");
  if (cl.diff && !cl.panel) cl.panel = PanelTab::Diff;
  return cl;
}

std::string usageText() {
  return R"(loupe-view: the Loupe trace viewer.

Usage: loupe-view [TRACE.db] [OPTIONS]

Opens a trace written by torch.compile(backend="loupe") or `loupe run --trace`. A trace is
read-only and untrusted: nothing stored in it is ever executed. See docs/viewer.md.

Options:
  -h, --help               Print this help and exit
  --screenshot OUT.png     Render the state given by the options below into OUT.png and exit
                           (exit status 1 with a one-line error when the trace cannot be read)
  --select SPEC            Select compile=N, pass=NAME, node=NAME (comma separated, each
                           optional; default: the first compile, its last pass)
  --panel TAB              Bottom panel tab: breaks, guards, kernels, memory or diff
  --diff A,B               Show the diff view of compiles A and B (implies --panel diff)
  --size WxH               Window size, default 1280x800
  --benchmark              Print open, layout, first-frame and panning frame times, then exit

Keys: F or Home fit the graph, +/- or the wheel zoom, drag pans, Ctrl+F searches (Enter /
Shift+Enter: next / previous match), Left/Right step through the passes, double-click a
collapsed module to expand it.
)";
}

} // namespace loupe::view
