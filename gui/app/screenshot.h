// Writes what the current OpenGL framebuffer holds to a PNG (the back buffer, before the swap).
#pragma once

#include <string>

namespace loupe::view {

// Throws Error("screenshot", ...) when the file cannot be written.
void writeFramebufferPng(const std::string& path, int width, int height);

} // namespace loupe::view
