// One snapshot as a canvas shows it: its graph model, which modules are expanded, and the
// scene laid out for that expansion, with spatial indexes so a frame draws only what is
// visible. Expanding or collapsing a module lays out again (cheaply: per module, cached).
#pragma once

#include <memory>
#include <string>

#include "gui/viewmodel/graph_model.h"
#include "gui/viewmodel/layout_cache.h"
#include "gui/viewmodel/scene_layout.h"
#include "gui/viewmodel/spatial_index.h"

namespace loupe::view {

class SnapshotScene {
public:
  // A snapshot that failed to load or lay out: the canvas shows the message.
  explicit SnapshotScene(std::string error) : error_(std::move(error)) {}
  SnapshotScene(std::shared_ptr<const GraphModel> model, const std::string& hash,
                const LayoutOptions& options, std::shared_ptr<LayoutCache> cache);

  bool ok() const { return layouter_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }
  const GraphModel& model() const { return layouter_->model(); }
  const ModuleTree& modules() const { return layouter_->tree(); }
  const Scene& scene() const { return scene_; }
  const SpatialIndex& itemIndex() const { return itemIndex_; }
  const SpatialIndex& edgeIndex() const { return edgeIndex_; }
  double lastLayoutMs() const { return layoutMs_; }

  void toggleModule(int module);
  // Expands the modules that hide `box`; true when the scene changed.
  bool reveal(int box);

private:
  void relayout();

  std::string error_;
  std::unique_ptr<SceneLayouter> layouter_;
  Expansion expansion_;
  Scene scene_;
  SpatialIndex itemIndex_, edgeIndex_;
  double layoutMs_ = 0;
};

} // namespace loupe::view
