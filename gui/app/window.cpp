#include "gui/app/window.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <GLFW/glfw3.h>

#include <cfloat>
#include <utility>

#include "compiler/ir/error.h"
#include "gui/app/screenshot.h"
#include "gui/app/theme.h"

namespace loupe::view {
namespace {

std::string glfwProblem() {
  const char* description = nullptr;
  glfwGetError(&description);
  return description != nullptr ? description : "unknown GLFW error";
}

} // namespace

void Window::onDrop(GLFWwindow* window, int count, const char** paths) {
  auto* self = static_cast<Window*>(glfwGetWindowUserPointer(window));
  for (int i = 0; i < count; ++i)
    self->dropped_.emplace_back(paths[i]);
}

// Chained in front of ImGui's own key callback (installed by ImGui_ImplGlfw_InitForOpenGL).
void Window::onKey(GLFWwindow* window, int key, int scancode, int action, int mods) {
  auto* self = static_cast<Window*>(glfwGetWindowUserPointer(window));
  if (action != GLFW_RELEASE && self->keyPresses_ != nullptr) self->keyPresses_->push({key, mods});
  if (action == GLFW_PRESS) {
    self->downThisFrame_.insert(key);
    std::erase_if(self->heldReleases_, [key](const HeldRelease& r) { return r.key == key; });
  } else if (action == GLFW_RELEASE && self->downThisFrame_.contains(key)) {
    self->heldReleases_.push_back({key, scancode, mods});
    return;
  }
  ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);
}

Window::Window(int width, int height, const std::string& title) {
  if (glfwInit() == GLFW_FALSE)
    throw Error("window",
                "cannot open a window: " + glfwProblem() + " (is DISPLAY set? try xvfb-run)");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (window_ == nullptr) {
    const std::string problem = glfwProblem();
    glfwTerminate();
    throw Error("window", "cannot create an OpenGL 3.3 window: " + problem);
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(1);
  glfwSetWindowUserPointer(window_, this);
  glfwSetDropCallback(window_, onDrop);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr; // the layout is fixed; nothing to remember
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  glfwSetKeyCallback(window_, onKey);
  ImGui_ImplOpenGL3_Init("#version 330");
}

Window::~Window() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

bool Window::beginFrame() {
  for (const HeldRelease& r : std::exchange(heldReleases_, {}))
    ImGui_ImplGlfw_KeyCallback(window_, r.key, r.scancode, GLFW_RELEASE, r.mods);
  downThisFrame_.clear();
  const double start = glfwGetTime();
  const double due = lastFrameStart_ + 1 / kIdleFramesPerSecond;
  if (due > start)
    glfwWaitEventsTimeout(due - start);
  else
    glfwPollEvents();
  while (glfwGetWindowAttrib(window_, GLFW_ICONIFIED) != 0 && !glfwWindowShouldClose(window_))
    glfwWaitEvents(); // nothing is visible to draw
  lastFrameStart_ = glfwGetTime();
  lastWaitMs_ = (lastFrameStart_ - start) * 1000;
  if (glfwWindowShouldClose(window_)) return false;
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (ignorePointer_) ImGui::GetIO().MousePos = {-FLT_MAX, -FLT_MAX};
  ImGui::NewFrame();
  return true;
}

void Window::endFrame(const std::string& screenshotPath) {
  ImGui::Render();
  const int width = framebufferWidth(), height = framebufferHeight();
  glViewport(0, 0, width, height);
  const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(imColor(Palette::windowBg));
  glClearColor(bg.x, bg.y, bg.z, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (!screenshotPath.empty()) writeFramebufferPng(screenshotPath, width, height);
  glfwSwapBuffers(window_);
}

int Window::framebufferWidth() const {
  int width = 0, height = 0;
  glfwGetFramebufferSize(window_, &width, &height);
  return width;
}

int Window::framebufferHeight() const {
  int width = 0, height = 0;
  glfwGetFramebufferSize(window_, &width, &height);
  return height;
}

void Window::setTitle(const std::string& title) {
  glfwSetWindowTitle(window_, title.c_str());
}

std::vector<std::string> Window::takeDroppedPaths() {
  return std::exchange(dropped_, {});
}

} // namespace loupe::view
