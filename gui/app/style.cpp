#include "gui/app/style.h"

#include <cfloat>
#include <filesystem>

#include "gui/app/theme.h"

namespace loupe::view {
namespace {

// Latin-1, arrows and geometric shapes: collapsed modules are labelled "\u25b8 encoder.layers.0".
// ImGui keeps a pointer to the ranges, so they must outlive the atlas.
constexpr ImWchar kGlyphRanges[] = {0x0020, 0x00ff, 0x2190, 0x21ff, 0x25a0, 0x25ff, 0};

ImFont* loadFont(const char* path, float size) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  return ImGui::GetIO().Fonts->AddFontFromFileTTF(path, size, nullptr, kGlyphRanges);
}

ImVec4 vec(uint32_t rgb, float alpha = 1) {
  return ImGui::ColorConvertU32ToFloat4(imColor(rgb, static_cast<uint8_t>(alpha * 255)));
}

} // namespace

Fonts loadFonts() {
  Fonts fonts;
  fonts.ui = loadFont("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 15);
  fonts.mono = loadFont("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", fonts.monoSize);
  ImFont* fallback = ImGui::GetIO().Fonts->AddFontDefault();
  if (fonts.ui == nullptr) fonts.ui = fallback;
  if (fonts.mono == nullptr) fonts.mono = fallback;
  ImGui::GetIO().FontDefault = fonts.ui;
  // Glyph metrics exist once the atlas is built; the layout measures boxes with them.
  ImGui::GetIO().Fonts->Build();
  return fonts;
}

void applyDarkStyle() {
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0;
  style.ChildRounding = 3;
  style.FrameRounding = 3;
  style.TabRounding = 3;
  style.GrabRounding = 3;
  style.WindowBorderSize = 0;
  style.ChildBorderSize = 0;
  style.FramePadding = {6, 4};
  style.ItemSpacing = {8, 5};
  style.CellPadding = {6, 3};
  style.ScrollbarSize = 12;

  ImVec4* c = style.Colors;
  c[ImGuiCol_WindowBg] = vec(Palette::windowBg);
  c[ImGuiCol_ChildBg] = vec(Palette::sidePanelBg);
  c[ImGuiCol_PopupBg] = vec(Palette::sidePanelBg);
  c[ImGuiCol_MenuBarBg] = vec(0x262a33);
  c[ImGuiCol_Text] = vec(Palette::text);
  c[ImGuiCol_TextDisabled] = vec(Palette::dimText);
  c[ImGuiCol_Border] = vec(0x333846);
  c[ImGuiCol_FrameBg] = vec(0x2a2f39);
  c[ImGuiCol_FrameBgHovered] = vec(0x343a47);
  c[ImGuiCol_FrameBgActive] = vec(0x3b4252);
  c[ImGuiCol_Header] = vec(0x2f4a6e);
  c[ImGuiCol_HeaderHovered] = vec(0x36557d);
  c[ImGuiCol_HeaderActive] = vec(0x3d6190);
  c[ImGuiCol_Button] = vec(0x2f3642);
  c[ImGuiCol_ButtonHovered] = vec(0x3a4352);
  c[ImGuiCol_ButtonActive] = vec(0x46506a);
  c[ImGuiCol_Tab] = vec(0x252a33);
  c[ImGuiCol_TabHovered] = vec(0x36557d);
  c[ImGuiCol_TabActive] = vec(0x2f4a6e);
  c[ImGuiCol_TableHeaderBg] = vec(0x262b34);
  c[ImGuiCol_TableRowBgAlt] = vec(0xffffff, 0.03f);
  c[ImGuiCol_Separator] = vec(0x333846);
  c[ImGuiCol_TitleBgActive] = vec(0x262a33);
}

LayoutOptions layoutOptionsFor(const Fonts& fonts) {
  const float charWidth = fonts.mono->CalcTextSizeA(fonts.monoSize, FLT_MAX, 0, "M").x;
  return LayoutOptions{.charWidth = charWidth, .lineHeight = fonts.monoSize + 3, .padding = 7};
}

} // namespace loupe::view
