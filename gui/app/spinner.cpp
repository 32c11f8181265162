#include "gui/app/spinner.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "gui/app/theme.h"

namespace loupe::view {

void drawSpinner(ImDrawList* dl, ImVec2 centre, float radius) {
  constexpr int kPoints = 24;
  constexpr float kSweep = 1.5f * std::numbers::pi_v<float>;    // three quarters of a turn
  const float start = static_cast<float>(ImGui::GetTime()) * 6; // about a turn a second
  dl->PathClear();
  for (int i = 0; i <= kPoints; ++i) {
    const float angle = start + kSweep * static_cast<float>(i) / kPoints;
    dl->PathLineTo({centre.x + std::cos(angle) * radius, centre.y + std::sin(angle) * radius});
  }
  dl->PathStroke(imColor(Palette::pending), 0, std::max(2.f, radius * 0.3f));
}

void pendingText(const char* text) {
  const float size = ImGui::GetTextLineHeight();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  drawSpinner(ImGui::GetWindowDrawList(), {at.x + size / 2, at.y + size / 2}, size * 0.36f);
  ImGui::Dummy({size, size});
  ImGui::SameLine();
  ImGui::TextDisabled("%s", text);
}

} // namespace loupe::view
