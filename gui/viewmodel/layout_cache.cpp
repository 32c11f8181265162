#include "gui/viewmodel/layout_cache.h"

#include <cstdint>
#include <cstring>

#include "inspector/trace/layout_cache_store.h"

namespace loupe::view {
namespace {

// Blob format, little-endian as the hosts that write and read it: magic, counts, then raw
// floats. A format change gets a new magic, so old blobs become misses.
constexpr char kMagic[4] = {'L', 'V', 'L', '1'};
// Beyond any real graph: a count above it marks a damaged blob, not an allocation request.
constexpr uint32_t kMaxCount = 1u << 24;

class Writer {
public:
  void u32(uint32_t v) { bytes(&v, sizeof v); }
  void point(Point p) { bytes(&p.x, sizeof p.x), bytes(&p.y, sizeof p.y); }
  void rect(const Rect& r) { point(r.min), point(r.max); }
  void bytes(const void* data, size_t size) { out.append(static_cast<const char*>(data), size); }
  std::string out;
};

class Reader {
public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u32(uint32_t& v) { return bytes(&v, sizeof v); }
  bool count(uint32_t& v) { return u32(v) && v <= kMaxCount && v <= in_.size(); }
  bool point(Point& p) { return bytes(&p.x, sizeof p.x) && bytes(&p.y, sizeof p.y); }
  bool rect(Rect& r) { return point(r.min) && point(r.max); }
  bool bytes(void* data, size_t size) {
    if (in_.size() < size) return false;
    std::memcpy(data, in_.data(), size);
    in_.remove_prefix(size);
    return true;
  }
  bool done() const { return in_.empty(); }

private:
  std::string_view in_;
};

} // namespace

std::string serialiseLayout(const GraphLayout& layout) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.rect(layout.bounds);
  w.u32(static_cast<uint32_t>(layout.boxes.size()));
  for (const Rect& r : layout.boxes)
    w.rect(r);
  w.u32(static_cast<uint32_t>(layout.groups.size()));
  for (const Rect& r : layout.groups)
    w.rect(r);
  w.u32(static_cast<uint32_t>(layout.edges.size()));
  for (const EdgePath& e : layout.edges) {
    w.u32(static_cast<uint32_t>(e.from));
    w.u32(static_cast<uint32_t>(e.to));
    w.point(e.tip);
    w.u32(static_cast<uint32_t>(e.spline.size()));
    for (Point p : e.spline)
      w.point(p);
  }
  return std::move(w.out);
}

std::optional<GraphLayout> deserialiseLayout(std::string_view blob) {
  Reader r(blob);
  char magic[sizeof kMagic];
  GraphLayout layout;
  uint32_t n = 0;
  if (!r.bytes(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0 ||
      !r.rect(layout.bounds))
    return std::nullopt;
  for (std::vector<Rect>* rects : {&layout.boxes, &layout.groups}) {
    if (!r.count(n)) return std::nullopt;
    rects->resize(n);
    for (Rect& rect : *rects)
      if (!r.rect(rect)) return std::nullopt;
  }
  if (!r.count(n)) return std::nullopt;
  layout.edges.resize(n);
  for (EdgePath& e : layout.edges) {
    uint32_t from = 0, to = 0, points = 0;
    if (!r.u32(from) || !r.u32(to) || from >= layout.boxes.size() || to >= layout.boxes.size() ||
        !r.point(e.tip) || !r.count(points))
      return std::nullopt;
    e.from = static_cast<int>(from);
    e.to = static_cast<int>(to);
    e.spline.resize(points);
    for (Point& p : e.spline)
      if (!r.point(p)) return std::nullopt;
  }
  if (!r.done()) return std::nullopt;
  return layout;
}

LayoutCache::LayoutCache() = default;

LayoutCache::LayoutCache(std::string tracePath)
    : store_(std::make_unique<LayoutCacheStore>(std::move(tracePath))) {}

LayoutCache::~LayoutCache() = default;

std::optional<GraphLayout> LayoutCache::load(const std::string& snapshotHash,
                                             const std::string& key) {
  if (auto it = memory_.find({snapshotHash, key}); it != memory_.end()) return it->second;
  if (!store_) return std::nullopt;
  const std::optional<std::string> blob = store_->load(snapshotHash, key);
  std::optional<GraphLayout> layout = blob ? deserialiseLayout(*blob) : std::nullopt;
  if (layout) memory_.emplace(std::pair(snapshotHash, key), *layout);
  return layout;
}

void LayoutCache::store(const std::string& snapshotHash, const std::string& key,
                        const GraphLayout& layout) {
  memory_.insert_or_assign(std::pair(snapshotHash, key), layout);
  if (store_) store_->store(snapshotHash, key, serialiseLayout(layout));
}

} // namespace loupe::view
