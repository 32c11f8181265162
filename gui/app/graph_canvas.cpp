#include "gui/app/graph_canvas.h"

#include <algorithm>
#include <cmath>

#include "gui/app/spinner.h"
#include "gui/app/theme.h"

namespace loupe::view {
namespace {

// Below this text height boxes are drawn without text: unreadable glyphs cost the most.
constexpr float kMinTextPixels = 5;
constexpr float kMinimapMax = 180;
constexpr float kLegibleZoom = 0.75f;
constexpr float kFitMargin = 24;

// How far the left button moved while down, so a drag that ends on a box does not select it.
bool leftDragged() {
  return ImGui::GetIO().MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] > 4;
}

ImVec2 im(Point p) {
  return {p.x, p.y};
}
Point pt(ImVec2 v) {
  return {v.x, v.y};
}

uint32_t fillFor(const Box& box, BoxMark mark) {
  switch (mark) {
  case BoxMark::Added:
    return Palette::addedFill;
  case BoxMark::Rewritten:
    return Palette::rewrittenFill;
  case BoxMark::Unmatched:
    return Palette::unmatchedFill;
  case BoxMark::Changed:
    return Palette::changedFill;
  case BoxMark::None:
    break;
  }
  switch (box.kind) {
  case BoxKind::Input:
    return Palette::inputFill;
  case BoxKind::Return:
    return Palette::returnFill;
  case BoxKind::Op:
    break;
  }
  return Palette::boxFill;
}

void drawArrowHead(ImDrawList* dl, ImVec2 from, ImVec2 tip, float size, uint32_t color) {
  const float dx = tip.x - from.x, dy = tip.y - from.y;
  const float length = std::sqrt(dx * dx + dy * dy);
  if (length < 1e-3f) return;
  const float ux = dx / length, uy = dy / length;
  const ImVec2 base{tip.x - ux * size, tip.y - uy * size};
  dl->AddTriangleFilled(tip, {base.x - uy * size * 0.45f, base.y + ux * size * 0.45f},
                        {base.x + uy * size * 0.45f, base.y - ux * size * 0.45f}, color);
}

void drawLabel(ImDrawList* dl, const Fonts& fonts, float size, ImVec2 at, uint32_t rgb,
               const std::string& text) {
  if (size >= kMinTextPixels) dl->AddText(fonts.mono, size, at, imColor(rgb), text.c_str());
}

} // namespace

void GraphCanvas::setScene(std::shared_ptr<SnapshotScene> scene) {
  if (scene_ && scene_->ok()) previousBounds_ = scene_->scene().bounds;
  scene_ = std::move(scene);
  marks_.clear();
  isMatch_.clear();
  search_ = SearchCursor();
  selected_ = -1;
  selectWhenShown_.clear();
  pending_ = Pending::Start;
}

void GraphCanvas::select(int box) {
  selected_ = box;
  if (box >= 0 && model() != nullptr) {
    scene_->reveal(box);
    requestCenter(box);
  }
}

bool GraphCanvas::selectByName(const std::string& name) {
  const int box = model() != nullptr ? model()->findByName(name) : -1;
  select(box);
  return box >= 0;
}

void GraphCanvas::selectByNameWhenShown(const std::string& name) {
  if (scene_ && scene_->loading())
    selectWhenShown_ = name;
  else if (model() != nullptr && model()->findByName(name) >= 0)
    selectByName(name);
}

void GraphCanvas::setSearch(const std::string& query) {
  if (model() == nullptr) return;
  search_ = SearchCursor(searchBoxes(*model(), query));
  isMatch_.assign(model()->boxes().size(), 0);
  for (int box : search_.results())
    isMatch_[box] = 1;
  if (search_.current() >= 0) select(search_.current());
}

void GraphCanvas::stepMatch(int direction) {
  if (search_.results().empty()) return;
  select(direction > 0 ? search_.next() : search_.previous());
}

void GraphCanvas::applyPending() {
  const Scene& scene = scene_->scene();
  // Stepping to a pass whose graph has the same size keeps the view where it was.
  if (pending_ == Pending::Start && previousBounds_ == scene.bounds) {
    pending_ = Pending::None;
    return;
  }
  Camera whole = camera_;
  whole.fit(scene.bounds, kFitMargin);
  const bool legibleWhole = whole.zoom() >= kLegibleZoom;
  const bool validBox = centerBox_ >= 0 && centerBox_ < static_cast<int>(scene.itemOfBox.size());
  if (pending_ == Pending::Fit || legibleWhole || (pending_ == Pending::Center && !validBox)) {
    camera_ = whole;
  } else {
    // Too large to read whole: start readable, at the top (the inputs), or at the box.
    camera_.zoomAt(camera_.viewport().center(), kLegibleZoom / camera_.zoom());
    const float halfHeight = camera_.viewport().height() / 2 / camera_.zoom();
    camera_.centerOn(
        pending_ == Pending::Center
            ? scene.items[scene.itemOfBox[centerBox_]].rect.center()
            : Point{scene.bounds.center().x, scene.bounds.min.y + halfHeight - kFitMargin});
  }
  pending_ = Pending::None;
}

bool GraphCanvas::minimapShown() const {
  const Rect& view = camera_.viewport();
  return view.width() > 3 * kMinimapMax && view.height() > 1.25f * kMinimapMax;
}

Rect GraphCanvas::minimapRect() const {
  const Rect& bounds = scene_->scene().bounds;
  const Rect& view = camera_.viewport();
  const float scale = std::min(kMinimapMax / std::max(bounds.width(), 1.f),
                               kMinimapMax / std::max(bounds.height(), 1.f));
  const float w = bounds.width() * scale, h = bounds.height() * scale;
  return {{view.max.x - w - 14, view.max.y - h - 14}, {view.max.x - 14, view.max.y - 14}};
}

void GraphCanvas::handleInput(Events& events) {
  const ImGuiIO& io = ImGui::GetIO();
  const bool hovered = ImGui::IsItemHovered();
  if (ImGui::IsItemActivated())
    draggingMinimap_ = minimapShown() && minimapRect().contains(pt(io.MousePos));
  if (hovered && io.MouseWheel != 0) {
    camera_.wheel(pt(io.MousePos), io.MouseWheel);
    events.cameraMoved = true;
  }
  if (ImGui::IsItemActive() && draggingMinimap_) {
    const Rect map = minimapRect();
    const Point mouse{std::clamp(io.MousePos.x, map.min.x, map.max.x),
                      std::clamp(io.MousePos.y, map.min.y, map.max.y)};
    camera_.centerOn(MinimapTransform(scene_->scene().bounds, map).toLayout(mouse));
    events.cameraMoved = true;
  } else if (ImGui::IsItemActive() && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0) &&
             leftDragged()) {
    camera_.panBy(pt(io.MouseDelta));
    events.cameraMoved = true;
  }
}

GraphCanvas::Events GraphCanvas::draw(const char* id, ImVec2 size, const Fonts& fonts) {
  Events events;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 end{origin.x + std::max(size.x, 1.f), origin.y + std::max(size.y, 1.f)};
  camera_.setViewport({pt(origin), pt(end)});
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(origin, end, true);
  dl->AddRectFilled(origin, end, imColor(Palette::canvasBg));
  ImGui::InvisibleButton(id, {end.x - origin.x, end.y - origin.y});

  if (scene_ && scene_->loading()) {
    const ImVec2 centre{(origin.x + end.x) / 2, (origin.y + end.y) / 2};
    drawSpinner(dl, {centre.x, centre.y - 24}, 14);
    const char* text = "reading and laying out the graph...";
    const ImVec2 textSize = ImGui::CalcTextSize(text);
    dl->AddText({centre.x - textSize.x / 2, centre.y}, imColor(Palette::dimText), text);
    dl->PopClipRect();
    return events;
  }
  if (model() == nullptr) {
    const bool failed = scene_ != nullptr;
    const std::string message =
        failed ? scene_->error() : "Select a pass in the tree to see its graph.";
    dl->AddText(nullptr, 0, {origin.x + 16, origin.y + 16},
                imColor(failed ? Palette::error : Palette::dimText), message.c_str(), nullptr,
                end.x - origin.x - 32);
    dl->PopClipRect();
    return events;
  }
  if (!selectWhenShown_.empty()) {
    if (model()->findByName(selectWhenShown_) >= 0) selectByName(selectWhenShown_);
    selectWhenShown_.clear();
  }
  // A camera request waits for the layout it is about (a box revealed in a collapsed module).
  if (pending_ != Pending::None && !scene_->relayoutPending()) applyPending();
  handleInput(events);

  int hoveredItem = -1;
  drawScene(dl, fonts, hoveredItem);

  const Scene& scene = scene_->scene();
  if (hoveredItem >= 0) {
    const VisibleItem& item = scene.items[hoveredItem].item;
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left) &&
        item.kind == VisibleItem::Kind::Module) {
      scene_->toggleModule(item.index);
    } else if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) && !draggingMinimap_ &&
               !leftDragged() && item.kind == VisibleItem::Kind::Box) {
      selected_ = item.index;
      events.clicked = item.index;
    } else if (item.kind == VisibleItem::Kind::Box) {
      const Box& box = model()->boxes()[item.index];
      if (box.loc.known())
        ImGui::SetTooltip("%s\n%s:%d  %s", box.title().c_str(), box.loc.file.c_str(), box.loc.line,
                          box.loc.module_path.c_str());
    } else {
      ImGui::SetTooltip("Double-click to expand");
    }
  } else if (ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    // A double-click inside an expanded module, off its boxes, collapses the innermost one.
    const Point at = camera_.toLayout(pt(ImGui::GetIO().MousePos));
    const SceneFrame* innermost = nullptr;
    for (const SceneFrame& frame : scene.frames)
      if (frame.rect.contains(at) &&
          (innermost == nullptr || frame.rect.width() * frame.rect.height() <
                                       innermost->rect.width() * innermost->rect.height()))
        innermost = &frame;
    if (innermost != nullptr) scene_->toggleModule(innermost->module);
  }
  if (minimapShown()) drawMinimap(dl);
  if (scene_->relayoutPending()) {
    drawSpinner(dl, {origin.x + 22, origin.y + 22}, 8);
    dl->AddText({origin.x + 38, origin.y + 14}, imColor(Palette::dimText), "laying out...");
  }
  dl->PopClipRect();
  return events;
}

void GraphCanvas::drawScene(ImDrawList* dl, const Fonts& fonts, int& hoveredItem) {
  const Scene& scene = scene_->scene();
  const GraphModel& graph = *model();
  const Rect visible = camera_.visibleRect();
  const float zoom = camera_.zoom();
  const float labelSize = (fonts.monoSize - 1) * zoom;
  auto screen = [&](Point p) { return im(camera_.toScreen(p)); };

  for (const SceneFrame& frame : scene.frames) {
    if (!frame.rect.overlaps(visible)) continue;
    const ImVec2 a = screen(frame.rect.min), b = screen(frame.rect.max);
    dl->AddRect(a, b, imColor(Palette::moduleFrame), 6 * zoom, 0, 1.f);
    drawLabel(dl, fonts, labelSize, {a.x + 6 * zoom, a.y + 3 * zoom}, Palette::moduleFrame,
              scene_->modules().modules()[frame.module].path);
  }
  for (size_t g = 0; g < scene.groups.size(); ++g) {
    const Rect& r = scene.groups[g];
    if (r.width() <= 0 || !r.overlaps(visible)) continue;
    const ImVec2 a = screen(r.min), b = screen(r.max);
    dl->AddRectFilled(a, b, imColor(Palette::groupFill), 6 * zoom);
    dl->AddRect(a, b, imColor(Palette::groupBorder), 6 * zoom, 0, std::max(1.f, 1.5f * zoom));
    const FusedGroup& group = graph.groups()[g];
    // Above the outline: dot packs a cluster's boxes right under its top edge.
    drawLabel(
        dl, fonts, labelSize, {a.x + 4 * zoom, a.y - labelSize - 2 * zoom}, Palette::groupBorder,
        group.kernel.empty() ? "fused %" + group.name : group.kernel + " (" + group.kind + ")");
  }

  const uint32_t edgeColor = imColor(Palette::edge);
  const float edgeWidth = std::max(1.f, 1.3f * zoom);
  for (int e : scene_->edgeIndex().query(visible)) {
    const SceneEdge& edge = scene.edges[e];
    if (edge.spline.size() < 4) continue;
    for (size_t k = 0; k + 3 < edge.spline.size(); k += 3)
      dl->AddBezierCubic(screen(edge.spline[k]), screen(edge.spline[k + 1]),
                         screen(edge.spline[k + 2]), screen(edge.spline[k + 3]), edgeColor,
                         edgeWidth);
    drawArrowHead(dl, screen(edge.spline.back()), screen(edge.tip), std::max(4.f, 9 * zoom),
                  edgeColor);
  }

  const float textSize = fonts.monoSize * zoom;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered = ImGui::IsItemHovered();
  for (int i : scene_->itemIndex().query(visible)) {
    const SceneItem& item = scene.items[i];
    const ImVec2 a = screen(item.rect.min), b = screen(item.rect.max);
    const bool isBox = item.item.kind == VisibleItem::Kind::Box;
    const int box = isBox ? item.item.index : -1;
    const bool isSelected = isBox && box == selected_;
    const bool isMatch = isBox && box < static_cast<int>(isMatch_.size()) && isMatch_[box] != 0;
    const BoxMark mark =
        isBox && box < static_cast<int>(marks_.size()) ? marks_[box] : BoxMark::None;
    const uint32_t fill = isSelected ? Palette::selectionFill
                          : isBox    ? fillFor(graph.boxes()[box], mark)
                                     : Palette::moduleFill;
    const uint32_t border = isSelected ? Palette::selectionBorder
                            : isMatch  ? Palette::searchMatch
                            : isBox    ? Palette::boxBorder
                                       : Palette::moduleFrame;
    const float rounding = 4 * zoom;
    dl->AddRectFilled(a, b, imColor(fill), rounding);
    dl->AddRect(a, b, imColor(border), rounding, 0,
                isSelected || isMatch ? std::max(2.f, 2.5f * zoom) : 1.f);
    if (textSize >= kMinTextPixels) {
      float y = a.y + 7 * zoom;
      for (size_t l = 0; l < item.lines.size(); ++l, y += textSize + 3 * zoom)
        dl->AddText(fonts.mono, textSize, {a.x + 7 * zoom, y},
                    imColor(l == 0 ? Palette::text : Palette::dimText), item.lines[l].c_str());
    }
    if (hovered && mouse.x >= a.x && mouse.x <= b.x && mouse.y >= a.y && mouse.y <= b.y)
      hoveredItem = i;
  }
}

void GraphCanvas::drawMinimap(ImDrawList* dl) {
  const Scene& scene = scene_->scene();
  const Rect map = minimapRect();
  const MinimapTransform transform(scene.bounds, map);
  dl->AddRectFilled({map.min.x - 5, map.min.y - 5}, {map.max.x + 5, map.max.y + 5},
                    imColor(Palette::windowBg, 235), 4);
  dl->AddRect({map.min.x - 5, map.min.y - 5}, {map.max.x + 5, map.max.y + 5},
              imColor(Palette::boxBorder), 4);
  for (const SceneItem& item : scene.items) {
    const Rect r = transform.toMinimap(item.rect);
    const bool isSelected =
        item.item.kind == VisibleItem::Kind::Box && item.item.index == selected_;
    dl->AddRectFilled(im(r.min), {std::max(r.max.x, r.min.x + 1), std::max(r.max.y, r.min.y + 1)},
                      imColor(isSelected ? Palette::selectionBorder : Palette::boxBorder));
  }
  const Rect view = transform.toMinimap(camera_.visibleRect());
  dl->PushClipRect(im(map.min), im(map.max), true);
  dl->AddRect(im(view.min), im(view.max), imColor(Palette::text, 210), 0, 0, 1.5f);
  dl->PopClipRect();
}

} // namespace loupe::view
