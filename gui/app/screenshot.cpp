#include "gui/app/screenshot.h"

#include <GL/gl.h>
#include <stb_image_write.h>

#include <vector>

#include "compiler/ir/error.h"

namespace loupe::view {

void writeFramebufferPng(const std::string& path, int width, int height) {
  std::vector<unsigned char> pixels(static_cast<size_t>(width) * height * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows start at the bottom; a PNG's at the top.
  stbi_flip_vertically_on_write(1);
  stbi_write_png_compression_level = 9; // screenshots go into docs: small beats fast

  if (stbi_write_png(path.c_str(), width, height, 3, pixels.data(), width * 3) == 0)
    throw Error("screenshot", "cannot write " + path);
}

} // namespace loupe::view
