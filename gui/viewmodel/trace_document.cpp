#include "gui/viewmodel/trace_document.h"

namespace loupe::view {
namespace {

// The value loaded for key, or null; the first call for a key posts `load` on the worker and
// records the key as requested, so a panel drawn every frame asks the worker once.
template <typename Value, typename Load>
const Value* loadOnce(std::map<int64_t, std::optional<Value>>& loaded, int64_t key,
                      BackgroundWorker& worker, const JobTicket& ticket, Load load) {
  const auto [it, first] = loaded.try_emplace(key);
  if (first)
    worker.post(ticket, std::move(load),
                [&loaded, key](Value&& value) { loaded[key] = std::move(value); });
  return it->second ? &*it->second : nullptr;
}

} // namespace

TraceDocument::TraceDocument(OpenedTrace opened, const std::string& path,
                             const LayoutOptions& layoutOptions, BackgroundWorker& worker)
    : tree_(std::move(opened.tree)), path_(path), layoutOptions_(layoutOptions),
      source_(std::make_shared<TraceSource>(std::move(opened.reader), path, layoutOptions)),
      worker_(worker) {}

const CompileDetails* TraceDocument::details(int64_t compileId) {
  return loadOnce(details_, compileId, worker_, ticket_,
                  [source = source_, compileId] { return source->details(compileId); });
}

const std::vector<GraphBreakRecord>* TraceDocument::graphBreaks(int64_t runId) {
  return loadOnce(breaks_, runId, worker_, ticket_,
                  [source = source_, runId] { return source->graphBreaks(runId); });
}

std::shared_ptr<SnapshotScene> TraceDocument::scene(int64_t snapshotId) {
  if (auto built = scenes_.find(snapshotId); built != scenes_.end()) return built->second;
  if (auto loading = loadingScenes_[snapshotId].lock()) return loading;
  auto scene = std::make_shared<SnapshotScene>();
  scene->layOutOn(&worker_);
  loadingScenes_[snapshotId] = scene;
  // Under the scene's ticket too: stepping through passes quickly leaves scenes behind that
  // no canvas shows any more, and those are not built.
  worker_.post(
      {ticket_, scene->layoutTicket()},
      [source = source_, snapshotId] { return source->buildScene(snapshotId); },
      [this, snapshotId, wanted = std::weak_ptr(scene)](std::shared_ptr<SnapshotScene>&& built) {
        const std::shared_ptr<SnapshotScene> scene = wanted.lock(); // alive: its ticket is
        scene->adopt(std::move(*built));
        scenes_[snapshotId] = scene;
        loadingScenes_.erase(snapshotId);
      });
  return scene;
}

} // namespace loupe::view
