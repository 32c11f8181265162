#include "gui/viewmodel/snapshot_scene.h"

#include <chrono>

#include "compiler/ir/error.h"

namespace loupe::view {

SnapshotScene::SnapshotScene(std::shared_ptr<const GraphModel> model, const std::string& hash,
                             const LayoutOptions& options, std::shared_ptr<LayoutCache> cache)
    : hash_(hash), layouter_(std::make_shared<SceneLayouter>(std::move(model), options,
                                                             std::move(cache), hash)) {
  expansion_ = defaultExpansion(layouter_->tree());
  show(layOut(*layouter_, expansion_));
}

SnapshotScene::Layout SnapshotScene::layOut(SceneLayouter& layouter, const Expansion& expansion) {
  Layout out;
  const auto start = std::chrono::steady_clock::now();
  try {
    out.scene = layouter.layout(expansion);
  } catch (const Error& e) {
    out.error = e.what();
    return out;
  }
  out.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<Rect> itemRects, edgeRects;
  for (const SceneItem& item : out.scene.items)
    itemRects.push_back(item.rect);
  for (const SceneEdge& edge : out.scene.edges)
    edgeRects.push_back(boundsOf(edge.spline));
  out.items = SpatialIndex(std::move(itemRects));
  out.edges = SpatialIndex(std::move(edgeRects));
  return out;
}

void SnapshotScene::show(Layout&& layout) {
  if (!layout.error.empty()) {
    error_ = std::move(layout.error);
    return;
  }
  scene_ = std::move(layout.scene);
  itemIndex_ = std::move(layout.items);
  edgeIndex_ = std::move(layout.edges);
  layoutMs_ = layout.ms;
}

void SnapshotScene::adopt(SnapshotScene&& built) {
  layoutTicket_.renew();
  relayoutPending_ = false;
  error_ = std::move(built.error_);
  hash_ = std::move(built.hash_);
  layouter_ = std::move(built.layouter_);
  expansion_ = std::move(built.expansion_);
  scene_ = std::move(built.scene_);
  itemIndex_ = std::move(built.itemIndex_);
  edgeIndex_ = std::move(built.edgeIndex_);
  layoutMs_ = built.layoutMs_;
}

void SnapshotScene::relayout() {
  if (worker_ == nullptr) {
    show(layOut(*layouter_, expansion_));
    return;
  }
  layoutTicket_.renew(); // a layout still on its way is for an older expansion
  relayoutPending_ = true;
  worker_->post(
      layoutTicket_,
      [layouter = layouter_, expansion = expansion_] { return layOut(*layouter, expansion); },
      [this](Layout&& layout) {
        relayoutPending_ = false;
        show(std::move(layout));
      });
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
