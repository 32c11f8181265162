// One open trace as the UI thread sees it: the navigation tree up front, and a compile's
// details, a run's graph breaks and a snapshot's scene loaded on first use by the background
// worker, then kept. Drawing never queries sqlite or runs Graphviz: a getter returns what is
// loaded, or nothing yet (and the first call posts the job), and the panel shows a spinner
// until a later frame finds it there. Layouts are cached in the trace itself when it is
// writable. When the document goes, the jobs it posted are skipped or their results dropped.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/viewmodel/background_worker.h"
#include "gui/viewmodel/snapshot_scene.h"
#include "gui/viewmodel/trace_source.h"
#include "gui/viewmodel/trace_tree.h"

namespace loupe::view {

class TraceDocument {
public:
  // opened must hold a reader (check OpenedTrace's bool first); from here on only the worker
  // uses it.
  TraceDocument(OpenedTrace opened, const std::string& path, const LayoutOptions& layoutOptions,
                BackgroundWorker& worker);

  const TraceTree& tree() const { return tree_; }
  const std::string& path() const { return path_; }
  const LayoutOptions& layoutOptions() const { return layoutOptions_; }

  // Null while the worker reads them.
  const CompileDetails* details(int64_t compileId);
  const std::vector<GraphBreakRecord>* graphBreaks(int64_t runId);
  // Loading until the worker has parsed and laid it out. Asked again while it loads, the same
  // scene; a scene no one holds any more when its turn comes on the worker is not built.
  std::shared_ptr<SnapshotScene> scene(int64_t snapshotId);

  // Runs work(TraceSource&) on the worker and apply(result) on the UI thread, unless ticket
  // was renewed meanwhile (the selection moved on). The caller renews its tickets when it
  // closes this document.
  template <typename Work, typename Apply>
  void read(const JobTicket& ticket, Work work, Apply apply) {
    worker_.post(
        ticket, [source = source_, work = std::move(work)] { return work(*source); },
        std::move(apply));
  }
  BackgroundWorker& worker() const { return worker_; }

private:
  TraceTree tree_;
  std::string path_;
  LayoutOptions layoutOptions_;
  std::shared_ptr<TraceSource> source_; // the worker's side
  BackgroundWorker& worker_;
  JobTicket ticket_; // this document's loads: they stop with it
  // Requested: nullopt until the worker's result arrives.
  std::map<int64_t, std::optional<CompileDetails>> details_;
  std::map<int64_t, std::optional<std::vector<GraphBreakRecord>>> breaks_;
  std::map<int64_t, std::shared_ptr<SnapshotScene>> scenes_;      // built
  std::map<int64_t, std::weak_ptr<SnapshotScene>> loadingScenes_; // posted, not built yet
};

} // namespace loupe::view
