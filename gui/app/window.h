// The GLFW window with an OpenGL 3.3 core context and ImGui's GLFW and OpenGL backends: the
// smallest correct main loop is `while (window.beginFrame()) { draw UI; window.endFrame(); }`.
//
// Key events pass through the window on their way to ImGui's backend: each press is queued
// for the viewer's shortcuts (key_press_queue.h), and a key released in the same frame it
// went down is released to ImGui a frame later, so ImGui 1.86, which only sees whether a key
// is down when a frame starts, sees the press too (Enter in a text field).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "gui/viewmodel/key_press_queue.h"

struct GLFWwindow;

namespace loupe::view {

class Window {
public:
  // Throws Error("window", ...) when there is no display or no OpenGL 3.3.
  Window(int width, int height, const std::string& title);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Polls events and starts an ImGui frame; false once the user closed the window. With no
  // input, frames come at most kIdleFramesPerSecond a second, so a spinner turns without
  // taking the cores from the background worker (software OpenGL spends tens of ms drawing a
  // frame); an event wakes the loop at once. While the window is minimised it sleeps until
  // the window system has an event for it.
  bool beginFrame();
  // How long the last beginFrame() waited for its frame to be due (not part of its time).
  double lastWaitMs() const { return lastWaitMs_; }
  // Headless runs ignore the pointer, so a screenshot does not depend on where it happens to be.
  void ignorePointer() { ignorePointer_ = true; }
  // Renders the ImGui frame and, given a path, writes it as a PNG before showing it.
  void endFrame(const std::string& screenshotPath = {});

  int framebufferWidth() const;
  int framebufferHeight() const;
  void setTitle(const std::string& title);
  // Paths dropped onto the window since the last call.
  std::vector<std::string> takeDroppedPaths();
  // Where key presses go (none: nowhere), besides ImGui.
  void queueKeyPressesInto(KeyPressQueue* queue) { keyPresses_ = queue; }

private:
  struct HeldRelease {
    int key, scancode, mods;
  };
  static void onDrop(GLFWwindow* window, int count, const char** paths);
  static void onKey(GLFWwindow* window, int key, int scancode, int action, int mods);

  GLFWwindow* window_ = nullptr;
  std::vector<std::string> dropped_;
  bool ignorePointer_ = false;
  static constexpr double kIdleFramesPerSecond = 30;
  double lastFrameStart_ = 0; // glfwGetTime()
  double lastWaitMs_ = 0;
  KeyPressQueue* keyPresses_ = nullptr;
  std::set<int> downThisFrame_;           // keys pressed since the frame began
  std::vector<HeldRelease> heldReleases_; // their releases, for ImGui at the next frame
};

} // namespace loupe::view
