// The device a graph is compiled for (target_device.h).
#include "compiler/pass/target_device.h"

#include <optional>

#include "compiler/ir/error.h"

namespace loupe {

namespace {

// The CUDA device of the graph's tensors, if any: inputs, then results at every depth.
std::optional<Device> cudaDeviceOf(const Graph& graph) {
  std::optional<Device> found;
  auto see = [&](const Value* value) {
    if (!value || !value->type().isTensor()) return;
    Device device = value->tensorType().device;
    if (device.isCpu()) return;
    if (found && *found != device)
      throw Error("kernel-selection", "graph @" + graph.name() + " has tensors on " + found->str() +
                                          " and on " + device.str() +
                                          ": Loupe compiles a graph for one device");
    found = device;
  };
  for (size_t i = 0; i < graph.numInputs(); ++i)
    see(graph.input(i));
  for (const Node* node : graph.nodes())
    for (const Value* result : node->results())
      see(result);
  return found;
}

} // namespace

Device targetDevice(const Graph& graph, const std::string& target) {
  if (target.empty()) return cudaDeviceOf(graph).value_or(Device{});
  if (target == "cpu") return Device{};
  if (target == "cuda") return cudaDeviceOf(graph).value_or(Device{Device::Kind::CUDA, 0});
  if (target.starts_with("cuda:")) {
    std::string index = target.substr(5);
    if (!index.empty() && index.size() < 4 &&
        index.find_first_not_of("0123456789") == std::string::npos)
      return Device{Device::Kind::CUDA, std::stoi(index)};
  }
  throw Error("kernel-selection", "unknown target '" + target + "' (expected cpu, cuda or cuda:N)");
}

std::optional<Device> validTargetDevice(const Graph& graph, const std::string& target) {
  try {
    return targetDevice(graph, target);
  } catch (const Error&) {
    return std::nullopt;
  }
}

} // namespace loupe
