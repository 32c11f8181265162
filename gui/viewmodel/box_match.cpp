#include "gui/viewmodel/box_match.h"

#include <map>
#include <string>
#include <utility>

#include "inspector/diff/node_matcher.h"

namespace loupe::view {
namespace {

void link(BoxMatch& match, int a, int b) {
  match.aToB[static_cast<size_t>(a)] = b;
  match.bToA[static_cast<size_t>(b)] = a;
}

// The boxes of one kind, in box order.
std::vector<int> boxesOfKind(const GraphModel& model, BoxKind kind) {
  std::vector<int> found;
  for (size_t i = 0; i < model.boxes().size(); ++i)
    if (model.boxes()[i].kind == kind) found.push_back(static_cast<int>(i));
  return found;
}

} // namespace

BoxMatch matchBoxes(const GraphModel& a, const GraphModel& b) {
  BoxMatch match{std::vector<int>(a.boxes().size(), -1), std::vector<int>(b.boxes().size(), -1)};
  const diff::NodeMatching nodes = diff::matchNodes(a.graph(), b.graph());
  for (const auto& [nodeA, nodeB] : nodes.aToB) {
    const int boxA = a.boxOf(nodeA), boxB = b.boxOf(nodeB);
    if (boxA >= 0 && boxB >= 0) link(match, boxA, boxB);
  }
  for (BoxKind kind : {BoxKind::Input, BoxKind::Return}) {
    const std::vector<int> inA = boxesOfKind(a, kind), inB = boxesOfKind(b, kind);
    for (size_t i = 0; i < inA.size() && i < inB.size(); ++i)
      link(match, inA[i], inB[i]);
  }
  // Fusion moves a node into a group body, where the matcher does not look for it.
  std::map<std::pair<std::string, std::string>, int> unmatchedB;
  for (size_t i = 0; i < b.boxes().size(); ++i)
    if (match.bToA[i] < 0 && b.boxes()[i].kind == BoxKind::Op)
      unmatchedB.emplace(std::pair(b.boxes()[i].name, b.boxes()[i].op), static_cast<int>(i));
  for (size_t i = 0; i < a.boxes().size(); ++i) {
    const Box& box = a.boxes()[i];
    if (match.aToB[i] >= 0 || box.kind != BoxKind::Op) continue;
    auto it = unmatchedB.find({box.name, box.op});
    if (it != unmatchedB.end()) {
      link(match, static_cast<int>(i), it->second);
      unmatchedB.erase(it);
    }
  }
  return match;
}

bool boxRewritten(const Box& a, const Box& b, bool compareTypes) {
  return a.op != b.op || a.attributes != b.attributes ||
         (compareTypes && a.resultTypes != b.resultTypes);
}

} // namespace loupe::view
