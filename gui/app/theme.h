// The viewer's colours and fonts, in one place so the canvas, the panels and the screenshot
// checker agree on them. Colours are 0xRRGGBB; imColor() turns one into ImGui's ABGR.
#pragma once

#include <cstdint>

namespace loupe::view {

struct Palette {
  static constexpr uint32_t windowBg = 0x1b1d23;
  static constexpr uint32_t canvasBg = 0x15171c;
  static constexpr uint32_t canvasGrid = 0x1f232b;
  static constexpr uint32_t sidePanelBg = 0x20232a;
  static constexpr uint32_t bottomPanelBg = 0x1d2128;
  static constexpr uint32_t text = 0xdfe3ea;
  static constexpr uint32_t dimText = 0x8a93a3;

  static constexpr uint32_t boxFill = 0x2b303b;
  static constexpr uint32_t boxBorder = 0x566072;
  static constexpr uint32_t inputFill = 0x24384a;
  static constexpr uint32_t returnFill = 0x3a2f4a;
  static constexpr uint32_t edge = 0x7d8797;
  static constexpr uint32_t groupFill = 0x1f2d27;
  static constexpr uint32_t groupBorder = 0x4fb286;
  static constexpr uint32_t moduleFill = 0x2d2a40;
  static constexpr uint32_t moduleFrame = 0x8b7fd6;

  static constexpr uint32_t selectionFill = 0x7a4a12;
  static constexpr uint32_t selectionBorder = 0xffa630;
  static constexpr uint32_t searchMatch = 0xe6d44a;
  static constexpr uint32_t addedFill = 0x1f5a3a;
  static constexpr uint32_t rewrittenFill = 0x25467a;
  static constexpr uint32_t unmatchedFill = 0x6a2430;
  static constexpr uint32_t changedFill = 0x5c4a18;
  static constexpr uint32_t diffLink = 0x5aa9e6;

  static constexpr uint32_t timelineBar = 0x3d7fd1;
  static constexpr uint32_t timelineChangedBar = 0x4fb286;
  static constexpr uint32_t peakMarker = 0xe0524c;
  static constexpr uint32_t error = 0xff6b6b;
  static constexpr uint32_t pending = 0x5aa9e6; // the spinner where a result is on its way

  static constexpr uint32_t codeKeyword = 0xc792ea;
  static constexpr uint32_t codeNumber = 0xf78c6c;
  static constexpr uint32_t codeComment = 0x6a7386;
  static constexpr uint32_t codeType = 0x82aaff;
  static constexpr uint32_t codeString = 0xc3e88d;
  static constexpr uint32_t codePreprocessor = 0x89ddff;
};

// ImGui packs colours as 0xAABBGGRR.
constexpr uint32_t imColor(uint32_t rgb, uint8_t alpha = 255) {
  return (uint32_t{alpha} << 24) | ((rgb & 0xff) << 16) | (rgb & 0xff00) | ((rgb >> 16) & 0xff);
}

} // namespace loupe::view
