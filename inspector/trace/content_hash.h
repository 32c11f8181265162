#pragma once

// The content hash of a snapshot's .lir text: the key that dedups identical snapshots in the
// store, and that the viewer's layout cache is keyed by (equal texts, equal layouts).

#include <string>
#include <string_view>

namespace loupe {

// 64-bit FNV-1a of text, as 16 lower-case hex digits.
std::string contentHash(std::string_view text);

} // namespace loupe
