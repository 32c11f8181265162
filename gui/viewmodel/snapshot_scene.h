// One snapshot as a canvas shows it: its graph model, which modules are expanded, and the
// scene laid out for that expansion, with spatial indexes so a frame draws only what is
// visible.
//
// Layout happens on the background worker. A scene is built there (parsed, laid out) while
// the canvas holds a loading one, which adopt() fills in place when the result comes back.
// Expanding or collapsing a module lays out again as a job on the worker; the layout shown
// stays until the new one arrives, and a newer request makes an older one stale. Only the
// UI thread calls the members; the worker only runs the layouter, whose model and module
// tree never change after construction, so the UI reads them while a layout runs.
#pragma once

#include <memory>
#include <string>

#include "gui/viewmodel/background_worker.h"
#include "gui/viewmodel/graph_model.h"
#include "gui/viewmodel/layout_cache.h"
#include "gui/viewmodel/scene_layout.h"
#include "gui/viewmodel/spatial_index.h"

namespace loupe::view {

class SnapshotScene {
public:
  // Loading: built on the worker and adopted when it arrives; the canvas shows a spinner.
  SnapshotScene() = default;
  // A snapshot that failed to load or lay out: the canvas shows the message.
  explicit SnapshotScene(std::string error) : error_(std::move(error)) {}
  // Lays out the default expansion on the calling thread (the worker, or a batch caller).
  SnapshotScene(std::shared_ptr<const GraphModel> model, const std::string& hash,
                const LayoutOptions& options, std::shared_ptr<LayoutCache> cache);
  // Jobs on the worker refer to a scene by address (guarded by its ticket): it never moves.
  SnapshotScene(const SnapshotScene&) = delete;
  SnapshotScene& operator=(const SnapshotScene&) = delete;

  bool loading() const { return layouter_ == nullptr && error_.empty(); }
  bool ok() const { return layouter_ != nullptr && error_.empty(); }
  // An expansion changed and its layout has not arrived yet (the previous one is shown).
  bool relayoutPending() const { return relayoutPending_; }
  const std::string& error() const { return error_; }
  const GraphModel& model() const { return layouter_->model(); }
  std::shared_ptr<const GraphModel> sharedModel() const { return layouter_->sharedModel(); }
  const std::string& hash() const { return hash_; }
  const ModuleTree& modules() const { return layouter_->tree(); }
  const Scene& scene() const { return scene_; }
  const SpatialIndex& itemIndex() const { return itemIndex_; }
  const SpatialIndex& edgeIndex() const { return edgeIndex_; }
  double lastLayoutMs() const { return layoutMs_; }

  // Takes over a scene built on the worker, in place, so the canvases holding this one show it.
  void adopt(SnapshotScene&& built);
  // Where expanding and collapsing lay out: on worker, or, without one, here and now.
  void layOutOn(BackgroundWorker* worker) { worker_ = worker; }
  // The jobs that lay this scene out (its loading one too) stop with it.
  const JobTicket& layoutTicket() const { return layoutTicket_; }

  void toggleModule(int module);
  // Expands the modules that hide `box`; true when the expansion changed.
  bool reveal(int box);

private:
  struct Layout {
    Scene scene;
    SpatialIndex items, edges;
    double ms = 0;
    std::string error;
  };
  static Layout layOut(SceneLayouter& layouter, const Expansion& expansion);
  void show(Layout&& layout);
  void relayout();

  std::string error_;
  std::string hash_;
  std::shared_ptr<SceneLayouter> layouter_; // shared with the layout jobs running on it
  Expansion expansion_; // the one asked for; the one shown is older while a relayout is pending
  Scene scene_;
  SpatialIndex itemIndex_, edgeIndex_;
  double layoutMs_ = 0;
  BackgroundWorker* worker_ = nullptr;
  JobTicket layoutTicket_;
  bool relayoutPending_ = false;
};

} // namespace loupe::view
