// The dark ImGui style and the fonts: DejaVu Sans for the interface and DejaVu Sans Mono for
// graph boxes and code when installed, ImGui's built-in font otherwise.
#pragma once

#include <imgui.h>

#include "gui/viewmodel/graph_layout.h"

namespace loupe::view {

struct Fonts {
  ImFont* ui = nullptr;
  ImFont* mono = nullptr;
  float monoSize = 13; // the size graph boxes are measured and drawn at, zoom 1
};

// Call once, after ImGui::CreateContext and before the first frame.
Fonts loadFonts();
void applyDarkStyle();

// Box sizes for the layout, measured with the font the canvas draws them with.
LayoutOptions layoutOptionsFor(const Fonts& fonts);

} // namespace loupe::view
