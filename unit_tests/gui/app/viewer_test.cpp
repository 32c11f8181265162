// The viewer driven the way a user drives it (clicks, drags, the wheel, keys), with ImGui
// running headless: no window and no GL, so these run anywhere.
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "gui/app/style.h"
#include "gui/app/viewer.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::view {
namespace {

std::string sampleGraph() {
  std::ifstream in(std::string(LOUPE_SOURCE_DIR) + "/samples/mlp.lir");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A trace of one compile of samples/mlp.lir with three passes; cse made a decision about %g,
// which the node inspector lists once %g is selected.
std::string writeTrace(const std::filesystem::path& path) {
  const std::string lir = sampleGraph();
  TraceWriter writer(path.string());
  const int64_t run = writer.beginRun({.command = "viewer_test"});
  const int64_t compile = writer.beginCompile(run, {.compile_key = "0/0", .frame_name = "mlp"});
  int ordinal = 0;
  for (const char* name : {"shape-propagation", "cse", "dce"}) {
    PassRecord pass; // field by field: g++ 12 -O2 warns wrongly on the designated initializer
    pass.info.name = name;
    pass.info.ordinal = ordinal++;
    pass.snapshot = SnapshotRecord{.lir = lir};
    const int64_t passId = writer.recordPass(compile, pass);
    if (pass.info.name == "cse")
      writer.recordDecision(passId, {.ordinal = 1,
                                     .kind = "merge",
                                     .description = "%g duplicates %h",
                                     .nodes = {"g", "h"},
                                     .rule_file = "passes/cse.cpp",
                                     .rule_line = 45});
  }
  writer.finishCompile(compile, {.wall_ms = 1});
  return path.string();
}

class ViewerTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loupe-view-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    setenv("XDG_CONFIG_HOME", dir_.c_str(), 1); // recent files go here, not to the user's
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = {1280, 800};
    io.IniFilename = nullptr;
    viewer_ = std::make_unique<Viewer>(loadFonts());
    applyDarkStyle();
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
    trace_ = writeTrace(dir_ / "mlp.db");
    ASSERT_TRUE(viewer_->open(trace_)) << viewer_->openError();
    frames(3);
  }
  void TearDown() override {
    viewer_.reset();
    ImGui::DestroyContext();
    std::filesystem::remove_all(dir_);
  }

  void frames(int n) {
    for (int i = 0; i < n; ++i) {
      ImGuiIO& io = ImGui::GetIO();
      io.DeltaTime = 1.0f / 60;
      ImGui::NewFrame();
      viewer_->drawFrame();
      ImGui::Render();
      io.MouseWheel = 0;
      std::fill(std::begin(io.KeysDown), std::end(io.KeysDown), false);
    }
  }
  // Down for a frame, then up for one: ImGui sees a press only after a frame without it.
  void pressKey(int glfwKey) {
    ImGui::GetIO().KeysDown[glfwKey] = true;
    frames(2);
  }
  // Where box's centre is on screen now.
  ImVec2 screenOf(int box) {
    const Scene& scene = viewer_->canvas().scene()->scene();
    const Point p =
        viewer_->canvas().camera().toScreen(scene.items[scene.itemOfBox[box]].rect.center());
    return {p.x, p.y};
  }
  int box(const std::string& name) { return viewer_->canvas().model()->findByName(name); }
  void mouse(ImVec2 at, bool down) {
    ImGui::GetIO().MousePos = at;
    ImGui::GetIO().MouseDown[0] = down;
    frames(1);
  }

  std::unique_ptr<Viewer> viewer_;
  std::filesystem::path dir_;
  std::string trace_;
};

TEST_F(ViewerTest, OpensTheFirstCompileAtItsLastPass) {
  ASSERT_NE(viewer_->pass(), nullptr);
  EXPECT_EQ(viewer_->pass()->info.name, "dce");
  ASSERT_NE(viewer_->canvas().model(), nullptr);
  EXPECT_GE(box("h"), 0);
}

TEST_F(ViewerTest, ClickingABoxSelectsIt) {
  viewer_->canvas().requestCenter(box("g")); // the graph opens at its top
  frames(1);
  const ImVec2 at = screenOf(box("g"));
  mouse(at, true);
  mouse(at, false);
  EXPECT_EQ(viewer_->canvas().selected(), box("g"));
}

TEST_F(ViewerTest, TheWheelZoomsAboutTheCursor) {
  const ImVec2 at = screenOf(box("h"));
  Camera& camera = viewer_->canvas().camera();
  const float zoom = camera.zoom();
  const Point under = camera.toLayout(Point{at.x, at.y});
  ImGui::GetIO().MousePos = at;
  ImGui::GetIO().MouseWheel = 2;
  frames(1);
  EXPECT_GT(camera.zoom(), zoom);
  const Point after = camera.toLayout(Point{at.x, at.y});
  EXPECT_NEAR(after.x, under.x, 0.5);
  EXPECT_NEAR(after.y, under.y, 0.5);
}

TEST_F(ViewerTest, DraggingPansWithTheMouse) {
  Camera& camera = viewer_->canvas().camera();
  const Rect view = camera.viewport();
  const ImVec2 start{view.min.x + 20, view.min.y + 20}; // empty canvas, away from the minimap
  const Point before = camera.origin();
  mouse(start, true);
  for (int step = 1; step <= 5; ++step)
    mouse({start.x + 10.f * step, start.y + 4.f * step}, true);
  mouse({start.x + 50, start.y + 20}, false);
  EXPECT_NEAR(camera.origin().x, before.x - 50 / camera.zoom(), 0.5);
  EXPECT_NEAR(camera.origin().y, before.y - 20 / camera.zoom(), 0.5);
  EXPECT_EQ(viewer_->canvas().selected(), -1) << "a drag selects nothing";
}

TEST_F(ViewerTest, ArrowKeysStepThroughThePasses) {
  pressKey(GLFW_KEY_LEFT);
  EXPECT_EQ(viewer_->pass()->info.name, "cse");
  pressKey(GLFW_KEY_LEFT);
  pressKey(GLFW_KEY_LEFT); // stays at the first pass
  EXPECT_EQ(viewer_->pass()->info.name, "shape-propagation");
  pressKey(GLFW_KEY_RIGHT);
  EXPECT_EQ(viewer_->pass()->info.name, "cse");
}

TEST_F(ViewerTest, TheSelectionSurvivesAPassStep) {
  viewer_->canvas().selectByName("o");
  pressKey(GLFW_KEY_LEFT);
  ASSERT_GE(viewer_->canvas().selected(), 0);
  EXPECT_EQ(viewer_->canvas().model()->boxes()[viewer_->canvas().selected()].name, "o");
}

TEST_F(ViewerTest, SearchSelectsMatchesInTurn) {
  GraphCanvas& canvas = viewer_->canvas();
  canvas.setSearch("op:addmm");
  ASSERT_EQ(canvas.search().results().size(), 2u);
  EXPECT_EQ(canvas.selected(), box("h"));
  canvas.stepMatch(+1);
  EXPECT_EQ(canvas.selected(), box("o"));
  canvas.stepMatch(+1);
  EXPECT_EQ(canvas.selected(), box("h")) << "wraps around";
}

TEST_F(ViewerTest, FFitsTheWholeGraph) {
  Camera& camera = viewer_->canvas().camera();
  camera.zoomAt(camera.viewport().center(), 3);
  pressKey(GLFW_KEY_F);
  frames(1);
  const Rect visible = camera.visibleRect();
  EXPECT_TRUE(visible.contains(viewer_->canvas().scene()->scene().bounds));
}

TEST_F(ViewerTest, AFileThatIsNotATraceShowsAnErrorAndKeepsTheOpenTrace) {
  const std::filesystem::path garbage = dir_ / "garbage.db";
  std::ofstream(garbage) << "not an sqlite file";
  EXPECT_FALSE(viewer_->open(garbage.string()));
  EXPECT_NE(viewer_->openError().find("garbage.db"), std::string::npos) << viewer_->openError();
  ASSERT_NE(viewer_->document(), nullptr);
  EXPECT_EQ(viewer_->document()->path(), trace_);
  frames(1); // and it still draws
}

TEST_F(ViewerTest, OpenedTracesAreRememberedMostRecentFirst) {
  const std::string other = writeTrace(dir_ / "other.db");
  ASSERT_TRUE(viewer_->open(other));
  const RecentFiles reread;
  ASSERT_GE(reread.paths().size(), 2u);
  EXPECT_EQ(reread.paths()[0], other);
  EXPECT_EQ(reread.paths()[1], trace_);
}

} // namespace
} // namespace loupe::view
