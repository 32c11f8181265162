// What the viewer shows where a result is still on its way from the background worker: an
// arc turning with ImGui's clock, so a frame that shows it is visibly alive.
#pragma once

#include <imgui.h>

namespace loupe::view {

void drawSpinner(ImDrawList* dl, ImVec2 centre, float radius);
// A spinner and `text` on one line at the cursor ("reading the trace...").
void pendingText(const char* text);

} // namespace loupe::view
