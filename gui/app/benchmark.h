// --benchmark: how long opening, laying out and drawing a trace take, printed as a table
// that bench/viewer.sh collects.
#pragma once

#include <string>

namespace loupe::view {

class Viewer;
class Window;

// Opens tracePath in viewer, measures, prints to stdout; the exit status.
int runBenchmark(Window& window, Viewer& viewer, const std::string& tracePath);

} // namespace loupe::view
