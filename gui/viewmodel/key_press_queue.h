// Key presses in the order the window system delivered them, taken by the next frame. ImGui
// 1.86 only knows whether a key is down when a frame starts, so a key pressed and released
// between two frames (a quick tap, `xdotool key Left`) never shows as pressed; the viewer's
// shortcuts read this queue instead, so no press is lost. The window's key callback fills it.
#pragma once

#include <utility>
#include <vector>

namespace loupe::view {

struct KeyPress {
  int key = 0;  // GLFW key code
  int mods = 0; // GLFW modifier bits held with it
};

class KeyPressQueue {
public:
  void push(KeyPress press) { presses_.push_back(press); }
  std::vector<KeyPress> take() { return std::exchange(presses_, {}); }

private:
  std::vector<KeyPress> presses_;
};

} // namespace loupe::view
