// The graph canvas: a snapshot's scene drawn with ImGui draw lists, with its camera (drag to
// pan, wheel zooms at the cursor, fit), a selected box, search matches, per-box marks (what a
// pass or a diff changed), collapsed modules that expand on double-click, and a minimap.
// Only what the camera sees is drawn, found through the scene's spatial index. While the
// worker is still laying the scene out, the canvas shows a spinner (the whole canvas when
// there is nothing yet, a corner while the previous layout stays shown).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "gui/app/style.h"
#include "gui/viewmodel/camera.h"
#include "gui/viewmodel/search.h"
#include "gui/viewmodel/snapshot_scene.h"

namespace loupe::view {

enum class BoxMark : uint8_t { None, Added, Rewritten, Unmatched, Changed };

class GraphCanvas {
public:
  void setScene(std::shared_ptr<SnapshotScene> scene);
  SnapshotScene* scene() const { return scene_.get(); }
  const GraphModel* model() const { return scene_ && scene_->ok() ? &scene_->model() : nullptr; }

  void setMarks(std::vector<BoxMark> marks) { marks_ = std::move(marks); }
  int selected() const { return selected_; }
  void select(int box); // reveals and centres it; -1 clears
  bool selectByName(const std::string& name);
  // Selects by name now, or, while the scene loads, once it is shown (when the node is there).
  void selectByNameWhenShown(const std::string& name);

  // Camera requests take effect at the next draw, when the canvas size is known.
  void requestFit() { pending_ = Pending::Fit; }
  void requestCenter(int box) {
    pending_ = Pending::Center;
    centerBox_ = box;
  }
  Camera& camera() { return camera_; }

  // See search.h for the query syntax; selects and centres the first match.
  void setSearch(const std::string& query);
  const SearchCursor& search() const { return search_; }
  void stepMatch(int direction);

  struct Events {
    int clicked = -1; // a box was clicked (and selected)
    bool cameraMoved = false;
  };
  // Draws into the current window at the cursor, filling size.
  Events draw(const char* id, ImVec2 size, const Fonts& fonts);

private:
  enum class Pending { None, Start, Fit, Center };
  void applyPending();
  void handleInput(Events& events);
  void drawScene(ImDrawList* dl, const Fonts& fonts, int& hoveredItem);
  void drawMinimap(ImDrawList* dl);
  bool minimapShown() const;
  Rect minimapRect() const;

  std::shared_ptr<SnapshotScene> scene_;
  std::vector<BoxMark> marks_;
  std::vector<char> isMatch_; // per box
  SearchCursor search_;
  int selected_ = -1;
  Camera camera_;
  Pending pending_ = Pending::Start;
  std::optional<Rect> previousBounds_; // the last scene's: one of the same size keeps the camera
  std::string selectWhenShown_;
  int centerBox_ = -1;
  bool draggingMinimap_ = false;
};

} // namespace loupe::view
