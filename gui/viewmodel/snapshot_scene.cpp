#include "gui/viewmodel/snapshot_scene.h"

#include <chrono>

#include "compiler/ir/error.h"

namespace loupe::view {

SnapshotScene::SnapshotScene(std::shared_ptr<const GraphModel> model, const std::string& hash,
                             const LayoutOptions& options, std::shared_ptr<LayoutCache> cache)
    : layouter_(
          std::make_unique<SceneLayouter>(std::move(model), options, std::move(cache), hash)) {
  expansion_ = defaultExpansion(layouter_->tree());
  relayout();
}

void SnapshotScene::relayout() {
  const auto start = std::chrono::steady_clock::now();
  try {
    scene_ = layouter_->layout(expansion_);
  } catch (const Error& e) {
    error_ = e.what();
    return;
  }
  layoutMs_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<Rect> itemRects, edgeRects;
  for (const SceneItem& item : scene_.items)
    itemRects.push_back(item.rect);
  for (const SceneEdge& edge : scene_.edges)
    edgeRects.push_back(boundsOf(edge.spline));
  itemIndex_ = SpatialIndex(std::move(itemRects));
  edgeIndex_ = SpatialIndex(std::move(edgeRects));
}

void SnapshotScene::toggleModule(int module) {
  const std::string& path = modules().modules().at(static_cast<size_t>(module)).path;
  if (path.empty()) return;
  if (!expansion_.erase(path)) expansion_.insert(path);
  relayout();
}

bool SnapshotScene::reveal(int box) {
  bool changed = false;
  for (const std::string& path : modules().pathsToShow(box))
    changed |= expansion_.insert(path).second;
  if (changed) relayout();
  return changed;
}

} // namespace loupe::view
