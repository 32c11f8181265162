#include "gui_test_support.h"

#include <fstream>

namespace loupe::view::testing {

const char* const kSmallGraph = R"(graph @f(%x: f32[s0,64], %w: f32[64,64]) -> (f32[s0,64]) {
  %t = aten.t(%w) : f32[64,64]  loc("m.py":3 "fc1")
  %h = aten.mm(%x, %t) : f32[s0,64]  loc("m.py":3 "fc1")
  %r = aten.relu(%h) : f32[s0,64]  loc("m.py":4 "act")
  %s = aten.mul.Scalar(%r) {other=2} : f32[s0,64]  loc("m.py":5 "scale")
  %y = aten.add.Tensor(%s, %x) : f32[s0,64]  loc("m.py":6)
  return %y
}
)";

const char* const kSmallGraphAfter = R"(graph @f(%x: f32[s0,64], %w: f32[64,64]) -> (f32[s0,64]) {
  %t = aten.t(%w) : f32[64,64]  loc("m.py":3 "fc1")
  %h = aten.mm(%x, %t) : f32[s0,64]  loc("m.py":3 "fc1")
  %s = aten.mul.Scalar(%h) {other=3} : f32[s0,64]  loc("m.py":5 "scale")
  %z = loupe.fused(%s, %x) {kernel="k0", kind="pointwise"} : f32[s0,64]  loc("m.py":6) {
    ^(%a: f32[s0,64], %b: f32[s0,64]):
      %y = aten.add.Tensor(%a, %b) : f32[s0,64]  loc("m.py":6)
      %z = aten.neg(%y) : f32[s0,64]  loc("m.py":7)
      yield %z
  }
  return %z
}
)";

std::shared_ptr<const GraphModel> parse(std::string_view lir) {
  return GraphModel::fromText(lir, "test.lir");
}

SnapshotRecord snapshotOf(std::string_view lir) {
  return SnapshotRecord{.lir = std::string(lir)};
}

void writeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

} // namespace loupe::view::testing
