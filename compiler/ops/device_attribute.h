// torch's `device=` argument of factory ops, and of loupe.constant on a device: "cpu", "cuda",
// "cuda:1". The ops that create tensors infer their result's device from it.
#pragma once

#include <string_view>

#include "compiler/ir/attribute.h"
#include "compiler/ir/type.h"

namespace loupe {

// The `device` attribute; absent (or none) keeps `fallback`. Throws Error("attribute", ...)
// naming `op` for a device it cannot parse.
Device deviceAttribute(const AttrMap& attrs, std::string_view op, Device fallback = {});

} // namespace loupe
