// The viewer driven the way a user drives it (clicks, drags, the wheel, keys), with ImGui
// running headless: no window and no GL, so these run anywhere. Most tests let the
// background worker finish before each frame, as --screenshot does; the threading tests hold
// the worker back to see what a frame shows while a result is on its way.
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <unistd.h>

#include "gui/app/style.h"
#include "gui/app/viewer.h"
#include "gui/tools/graph_generator.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::view {
namespace {

std::string sampleGraph() {
  std::ifstream in(std::string(LOUPE_SOURCE_DIR) + "/samples/mlp.lir");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A trace of `compiles` compiles of samples/mlp.lir with three passes each; in each, cse made a
// decision about %g, which the node inspector lists once %g is selected.
std::string writeTrace(const std::filesystem::path& path, int compiles = 1) {
  const std::string lir = sampleGraph();
  TraceWriter writer(path.string());
  const int64_t run = writer.beginRun({.command = "viewer_test"});
  for (int c = 0; c < compiles; ++c) {
    const int64_t compile =
        writer.beginCompile(run, {.compile_key = "0/" + std::to_string(c), .frame_name = "mlp"});
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
  }
  return path.string();
}

// A trace of one compile of a generated graph, with different snapshots along its six passes
// (graph_generator.h); from 400 nodes it opens with its modules collapsed.
std::string writeGeneratedTrace(const std::filesystem::path& path, int nodes) {
  TraceWriter writer(path.string());
  const int64_t compile = writer.beginCompile(writer.beginRun({}), {.compile_key = "0/0"});
  for (const PassRecord& pass : generatedPasses(nodes))
    writer.recordPass(compile, pass);
  writer.finishCompile(compile, {.wall_ms = 1});
  return path.string();
}

// Holds the viewer's worker: jobs posted after it wait until release().
class WorkerHold {
public:
  explicit WorkerHold(BackgroundWorker& worker) {
    worker.post(
        ticket_, [opened = opened_] { return opened.wait(), 0; }, [](int) {});
  }
  ~WorkerHold() { release(); }
  void release() {
    if (!released_) open_.set_value();
    released_ = true;
  }

private:
  JobTicket ticket_;
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
  bool released_ = false;
};

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

  // One frame, as the main loop runs it: whatever the worker has not finished stays pending.
  void frame() {
    ImGuiIO& io = ImGui::GetIO();
    io.DeltaTime = 1.0f / 60;
    ImGui::NewFrame();
    viewer_->drawFrame();
    ImGui::Render();
    io.MouseWheel = 0;
  }
  // Frames after the worker finished what the last one asked for (as --screenshot runs them).
  void frames(int n) {
    for (int i = 0; i < n; ++i) {
      viewer_->finishPendingWork();
      frame();
    }
  }
  // Opens `path` and reads its selected compile's details as the viewer does, on the worker;
  // null when they could not be read.
  const CompileDetails* openAndReadDetails(const std::string& path) {
    if (!viewer_->open(path)) {
      ADD_FAILURE() << viewer_->openError();
      return nullptr;
    }
    frames(1);
    viewer_->document()->details(viewer_->compile()->compileId); // read on the worker
    viewer_->finishPendingWork();
    return viewer_->document()->details(viewer_->compile()->compileId);
  }
  // Pressed and released before the next frame, as the window's key callback queues it: ImGui
  // never sees the key down.
  void pressKey(int glfwKey, int mods = 0) {
    viewer_->keyPresses().push({glfwKey, mods});
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

TEST_F(ViewerTest, AKeyTappedBetweenTwoFramesStillActs) {
  Camera& camera = viewer_->canvas().camera();
  camera.zoomAt(camera.viewport().center(), 3);
  viewer_->keyPresses().push({GLFW_KEY_F, 0}); // down and up again before the frame
  frame();
  frame(); // the fit applies at the canvas's next draw
  EXPECT_FALSE(ImGui::GetIO().KeysDown[GLFW_KEY_F]);
  EXPECT_TRUE(camera.visibleRect().contains(viewer_->canvas().scene()->scene().bounds));

  viewer_->keyPresses().push({GLFW_KEY_LEFT, 0});
  viewer_->keyPresses().push({GLFW_KEY_LEFT, 0}); // two taps within one frame: two steps
  frame();
  EXPECT_EQ(viewer_->pass()->info.name, "shape-propagation");
}

TEST_F(ViewerTest, CtrlFOpensTheSearchAndKeysThenGoToIt) {
  pressKey(GLFW_KEY_F, GLFW_MOD_CONTROL);
  ImGui::GetIO().AddInputCharacter('h');
  frames(2);
  EXPECT_TRUE(ImGui::GetIO().WantTextInput);
  pressKey(GLFW_KEY_LEFT); // moves the text cursor, not the pass
  EXPECT_EQ(viewer_->pass()->info.name, "dce");
}

TEST_F(ViewerTest, TheFrameDoesNotWaitForAGraphBeingLaidOut) {
  ASSERT_TRUE(viewer_->open(writeGeneratedTrace(dir_ / "generated.db", 100)));
  frames(2);
  WorkerHold hold(viewer_->worker());
  viewer_->selectPass(3); // pointwise-fusion: a snapshot not loaded yet
  frame();                // returns although the graph is not there
  ASSERT_NE(viewer_->canvas().scene(), nullptr);
  EXPECT_TRUE(viewer_->canvas().scene()->loading());
  EXPECT_EQ(viewer_->canvas().model(), nullptr);
  EXPECT_TRUE(viewer_->workPending());
  hold.release();
  frames(1);
  ASSERT_NE(viewer_->canvas().model(), nullptr);
  EXPECT_FALSE(viewer_->canvas().model()->groups().empty()) << "the fused snapshot";
  EXPECT_TRUE(viewer_->passStep().has_value()) << "what the pass changed follows the graph";
}

TEST_F(ViewerTest, AResultForAnOlderSelectionIsNotApplied) {
  ASSERT_TRUE(viewer_->open(writeGeneratedTrace(dir_ / "generated.db", 100)));
  frames(2);
  const BackgroundWorker::Counts before = viewer_->worker().counts();
  WorkerHold hold(viewer_->worker());
  viewer_->selectPass(3); // pointwise-fusion: its graph and its step are posted...
  frame();
  viewer_->selectPass(2); // ...and the user moves on to cse before they are done
  frame();
  hold.release();
  frames(2);
  EXPECT_EQ(viewer_->pass()->info.name, "cse");
  ASSERT_NE(viewer_->canvas().model(), nullptr);
  EXPECT_TRUE(viewer_->canvas().model()->groups().empty()) << "cse's graph, not the fused one";
  ASSERT_TRUE(viewer_->passStep().has_value());
  EXPECT_FALSE(viewer_->passStep()->changed()) << "cse's step (nothing changed), not fusion's";
  EXPECT_GE(viewer_->worker().counts().skipped - before.skipped, 2)
      << "the fused graph and its step were never built";
}

TEST_F(ViewerTest, ExpandingAModuleShowsTheOldLayoutUntilTheNewOneArrives) {
  ASSERT_TRUE(viewer_->open(writeGeneratedTrace(dir_ / "generated.db", 400)));
  frames(2);
  SnapshotScene& scene = *viewer_->canvas().scene();
  int collapsed = -1;
  for (const SceneItem& item : scene.scene().items)
    if (item.item.kind == VisibleItem::Kind::Module) collapsed = item.item.index;
  ASSERT_GE(collapsed, 0) << "a 400-node graph opens with modules collapsed";
  const size_t itemsBefore = scene.scene().items.size();
  WorkerHold hold(viewer_->worker());
  scene.toggleModule(collapsed);
  frame();
  EXPECT_TRUE(scene.relayoutPending());
  EXPECT_EQ(scene.scene().items.size(), itemsBefore) << "the old layout is still drawn";
  hold.release();
  frames(1);
  EXPECT_FALSE(scene.relayoutPending());
  EXPECT_GT(scene.scene().items.size(), itemsBefore) << "the expanded module's boxes";
}

TEST_F(ViewerTest, TheDiffViewIsComputedOnTheWorker) {
  ASSERT_TRUE(viewer_->open(writeTrace(dir_ / "two.db", 2)));
  frames(1);
  WorkerHold hold(viewer_->worker());
  viewer_->showDiff(1, 2);
  frame();
  EXPECT_TRUE(viewer_->diff().pending);
  EXPECT_FALSE(viewer_->diff().view.has_value());
  viewer_->showDiff(2, 1); // chosen again before the first comparison is done
  frame();
  hold.release();
  frames(2);
  EXPECT_FALSE(viewer_->diff().pending);
  ASSERT_TRUE(viewer_->diff().view.has_value()) << viewer_->diff().error;
  EXPECT_EQ(viewer_->diff().compileA, 2);
  EXPECT_EQ(viewer_->diff().compileB, 1);
  EXPECT_NE(viewer_->diff().left.model(), nullptr);
  EXPECT_NE(viewer_->diff().right.model(), nullptr);
}

TEST_F(ViewerTest, TheDefaultDiffIsChosenOncePerTrace) {
  viewer_->panel = PanelTab::Diff;
  viewer_->panelChosen = true;
  frames(3);
  EXPECT_NE(viewer_->diff().error.find("needs two compiles"), std::string::npos)
      << viewer_->diff().error;
  const int posted = viewer_->worker().counts().posted;
  frames(5);
  EXPECT_EQ(viewer_->worker().counts().posted, posted) << "no query per frame";
}

TEST_F(ViewerTest, ATraceClosedWhileItsJobsWaitGetsNoneOfTheirResults) {
  ASSERT_TRUE(viewer_->open(writeTrace(dir_ / "two.db", 2)));
  frames(2);
  const BackgroundWorker::Counts before = viewer_->worker().counts();
  {
    WorkerHold hold(viewer_->worker());
    viewer_->selectCompile(2);
    viewer_->panel = PanelTab::Kernels;
    viewer_->panelChosen = true;
    frame(); // the tab bar selects the tab...
    frame(); // ...and the kernels panel asks for compile 2's details...
    ASSERT_TRUE(viewer_->open(writeTrace(dir_ / "other.db"))); // ...then another trace opens
  }
  frames(2);
  EXPECT_EQ(viewer_->document()->path(), (dir_ / "other.db").string());
  EXPECT_EQ(viewer_->worker().counts().skipped - before.skipped, 2)
      << "the closed trace's details and its pass step";
  EXPECT_NE(viewer_->document()->details(1), nullptr) << "the open trace's";
}

// What ran: recorded kernel times order the kernels panel, and a symbolic memory plan is drawn
// at the first size the compile ran at, in bytes.
TEST_F(ViewerTest, KernelsComeSlowestFirstAndASymbolicPlanAtASizeItRanAt) {
  const std::string path = writeTrace(dir_ / "ran.db");
  {
    TraceWriter writer(path);
    for (const char* name : {"k0", "k1"})
      writer.recordKernel(1, {.name = name, .kind = "generated", .target = "cpu"});
    writer.recordKernelStats(1, {{.kernel = "k0", .calls = 4, .total_ms = 1},
                                 {.kernel = "k1", .calls = 4, .total_ms = 5}});
    writer.recordBuffers(
        1, {{.name = "x", .size_bytes = -1, .is_graph_input = true, .size_expr = "128*s0"},
            {.name = "h", .size_bytes = -1, .size_expr = "256*s0"}});
    writer.recordMemoryPlan(
        1, {.arena_bytes = -1, .peak_bytes = -1, .arena_expr = "256*s0", .peak_expr = "256*s0"});
    writer.recordMemoryLayout(1, {.bindings = {{"s0", 8}},
                                  .arena_bytes = 2048,
                                  .peak_bytes = 2048,
                                  .offsets = {{"h", 0}},
                                  .sizes = {{"x", 1024}, {"h", 2048}}});
  }
  const CompileDetails* read = openAndReadDetails(path);
  ASSERT_NE(read, nullptr);
  const CompileDetails& details = *read;
  ASSERT_EQ(details.kernels.size(), 2u);
  EXPECT_EQ(details.kernels[0].name, "k1");
  EXPECT_EQ(details.memory.laidOutAt, "at s0=8");
  EXPECT_FALSE(details.memory.symbolic);
  EXPECT_EQ(details.memory.plannedPeakBytes, 2048);
  EXPECT_EQ(details.memory.peakBytes, 2048); // h, live in the arena
}

// A profiled compile's kernels come by profiled time, whatever their total time, with a call's
// time and where it goes.
TEST_F(ViewerTest, ProfiledKernelsComeByProfiledTime) {
  const std::string path = writeTrace(dir_ / "profiled.db");
  {
    TraceWriter writer(path);
    for (const char* name : {"k0", "k1"})
      writer.recordKernel(1, {.name = name, .kind = "generated", .target = "cuda:0"});
    writer.recordKernelStats(1, {{.kernel = "k0",
                                  .implementation = "library:aten.mm",
                                  .calls = 6,
                                  .total_ms = 1,
                                  .profile_ms = 0.75,
                                  .profile_runs = 5},
                                 {.kernel = "k1",
                                  .implementation = "generated:loupe.fused",
                                  .calls = 6,
                                  .total_ms = 5,
                                  .profile_ms = 0.25,
                                  .profile_runs = 5}});
  }
  const CompileDetails* read = openAndReadDetails(path);
  ASSERT_NE(read, nullptr);
  ASSERT_EQ(read->kernels.size(), 2u);
  EXPECT_EQ(read->kernels[0].name, "k0");
  EXPECT_TRUE(read->profiled);
  EXPECT_DOUBLE_EQ(read->profiledCallMs, 1);
  EXPECT_EQ(read->whereTimeGoes, "library 75%, generated 25%");
}

} // namespace
} // namespace loupe::view
