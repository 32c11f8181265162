// The viewer's panels, one file each (panel_*.cpp). Each draws into the current ImGui child
// window from the Viewer's state and changes it only through the Viewer's calls.
#pragma once

namespace loupe::view {

class Viewer;

void drawNavigationTree(Viewer& viewer);
void drawNodeInspector(Viewer& viewer);
void drawPassTimeline(Viewer& viewer);
void drawBreaksPanel(Viewer& viewer);
void drawGuardsPanel(Viewer& viewer);
void drawKernelsPanel(Viewer& viewer);
void drawMemoryPanel(Viewer& viewer);
void drawDiffFindings(Viewer& viewer);
// The centre of the window in diff mode: two canvases side by side.
void drawDiffCanvases(Viewer& viewer, float height);

} // namespace loupe::view
