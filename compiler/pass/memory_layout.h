// Lays out buffers with known sizes and lifetimes in one arena so that no two buffers that are
// live at the same time overlap. Shared by the memory-planning pass (concrete shapes, at
// compile time) and the executable (symbolic shapes, once the sizes are known at run time).
#pragma once

#include <cstdint>
#include <vector>

namespace loupe {

struct BufferInterval {
  int64_t bytes = 0;
  int firstUse = 0; // step that defines the buffer
  int lastUse = 0;  // last step that reads it (inclusive)
};

struct ArenaLayout {
  std::vector<int64_t> offsets; // aligned to `alignment`, one per interval
  int64_t arenaBytes = 0;       // total size of the arena
  int64_t peakBytes = 0;        // max over steps of the bytes of buffers live at that step
};

ArenaLayout layoutArena(const std::vector<BufferInterval>& buffers, int64_t alignment = 64);

} // namespace loupe
