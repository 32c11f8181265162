// Checks a loupe-view screenshot: not blank, and the viewer's colours (theme.h) where they
// belong. Usage:
//   loupe-view-screenshot-check OUT.png [--expect COLOUR[@REGION][:MIN_PIXELS]]...
// COLOUR is a name below; REGION is all, top, bottom, left or right (the top two thirds of
// the window hold the tree, canvas and inspector; the bottom third the panels; left and right
// are the halves of the top); MIN_PIXELS defaults to 50. Exit 0 when every expectation holds.
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "gui/app/theme.h"

namespace {

using loupe::view::Palette;

// Fills are drawn in their exact colour; text is antialiased, so its pixels are blends of
// the colour and the background and only come near it.
constexpr int kFillTolerance = 3, kTextTolerance = 40;

struct Colour {
  uint32_t rgb;
  int tolerance;
};

const std::map<std::string, Colour> kColours = {
    {"selection", {Palette::selectionFill, kFillTolerance}},
    {"selection-border", {Palette::selectionBorder, kFillTolerance}},
    {"bottom-panel", {Palette::bottomPanelBg, kFillTolerance}},
    {"canvas", {Palette::canvasBg, kFillTolerance}},
    {"box", {Palette::boxFill, kFillTolerance}},
    {"fused-group", {Palette::groupFill, kFillTolerance}},
    {"unmatched", {Palette::unmatchedFill, kFillTolerance}},
    {"changed", {Palette::changedFill, kFillTolerance}},
    {"added", {Palette::addedFill, kFillTolerance}},
    {"diff-link", {Palette::diffLink, kFillTolerance}},
    {"code-keyword", {Palette::codeKeyword, kTextTolerance}},
    {"code-type", {Palette::codeType, kTextTolerance}},
    {"error", {Palette::error, kTextTolerance}},
};

struct Image {
  int width = 0, height = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
  uint32_t at(int x, int y) const {
    const unsigned char* p = pixels.get() + (static_cast<size_t>(y) * width + x) * 3;
    return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
  }
};

struct Region {
  float x0, y0, x1, y1; // fractions of the image
};

const std::map<std::string, Region> kRegions = {
    {"all", {0, 0, 1, 1}},
    {"bottom-right", {0.55f, 0.72f, 1, 1}},
    {"top", {0, 0, 1, 0.62f}},
    {"bottom", {0, 0.68f, 1, 1}},
    {"left", {0, 0.05f, 0.5f, 0.62f}},
    {"right", {0.5f, 0.05f, 1, 0.62f}},
};

bool near(uint32_t a, const Colour& colour) {
  for (int shift : {0, 8, 16})
    if (std::abs(static_cast<int>((a >> shift) & 0xff) -
                 static_cast<int>((colour.rgb >> shift) & 0xff)) > colour.tolerance)
      return false;
  return true;
}

long countIn(const Image& image, const Colour& colour, const Region& r) {
  long count = 0;
  for (int y = static_cast<int>(r.y0 * image.height); y < static_cast<int>(r.y1 * image.height);
       ++y)
    for (int x = static_cast<int>(r.x0 * image.width); x < static_cast<int>(r.x1 * image.width);
         ++x)
      count += near(image.at(x, y), colour);
  return count;
}

bool checkNotBlank(const Image& image) {
  std::map<uint32_t, long> histogram;
  for (int y = 0; y < image.height; y += 2)
    for (int x = 0; x < image.width; x += 2)
      ++histogram[image.at(x, y)];
  long most = 0, total = 0;
  for (const auto& [colour, count] : histogram) {
    most = std::max(most, count);
    total += count;
  }
  if (histogram.size() < 16 || most > total * 9 / 10) {
    std::fprintf(stderr, "blank: %zu colours, the commonest covers %ld of %ld sampled pixels\n",
                 histogram.size(), most, total);
    return false;
  }
  return true;
}

// "selection@top:200" -> true when it holds; prints what it found either way.
bool checkExpectation(const Image& image, const std::string& spec) {
  std::string name = spec, region = "all";
  long minimum = 50;
  if (const size_t colon = name.find(':'); colon != std::string::npos) {
    minimum = std::atol(name.c_str() + colon + 1);
    name.resize(colon);
  }
  if (const size_t at = name.find('@'); at != std::string::npos) {
    region = name.substr(at + 1);
    name.resize(at);
  }
  const auto colour = kColours.find(name);
  const auto area = kRegions.find(region);
  if (colour == kColours.end() || area == kRegions.end()) {
    std::fprintf(stderr, "bad expectation '%s': unknown colour or region\n", spec.c_str());
    return false;
  }
  const long found = countIn(image, colour->second, area->second);
  std::printf("%-28s %8ld pixels (need %ld)\n", spec.c_str(), found, minimum);
  return found >= minimum;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.png [--expect COLOUR[@REGION][:MIN_PIXELS]]...\n", argv[0]);
    return 2;
  }
  Image image;
  int channels = 0;
  image.pixels.reset(stbi_load(argv[1], &image.width, &image.height, &channels, 3));
  if (!image.pixels) {
    std::fprintf(stderr, "%s: cannot read the PNG: %s\n", argv[1], stbi_failure_reason());
    return 1;
  }
  bool ok = checkNotBlank(image);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg != "--expect" || i + 1 >= argc) {
      std::fprintf(stderr, "unexpected argument %s\n", arg.c_str());
      return 2;
    }
    ok &= checkExpectation(image, argv[++i]);
  }
  return ok ? 0 : 1;
}
