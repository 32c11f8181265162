// The GLFW window with an OpenGL 3.3 core context and ImGui's GLFW and OpenGL backends: the
// smallest correct main loop is `while (window.beginFrame()) { draw UI; window.endFrame(); }`.
#pragma once

#include <string>
#include <vector>

struct GLFWwindow;

namespace loupe::view {

class Window {
public:
  // Throws Error("window", ...) when there is no display or no OpenGL 3.3.
  Window(int width, int height, const std::string& title);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Polls events and starts an ImGui frame; false once the user closed the window.
  bool beginFrame();
  // Headless runs ignore the pointer, so a screenshot does not depend on where it happens to be.
  void ignorePointer() { ignorePointer_ = true; }
  // Renders the ImGui frame and, given a path, writes it as a PNG before showing it.
  void endFrame(const std::string& screenshotPath = {});

  int framebufferWidth() const;
  int framebufferHeight() const;
  void setTitle(const std::string& title);
  // Paths dropped onto the window since the last call.
  std::vector<std::string> takeDroppedPaths();

private:
  GLFWwindow* window_ = nullptr;
  std::vector<std::string> dropped_;
  bool ignorePointer_ = false;
};

} // namespace loupe::view
