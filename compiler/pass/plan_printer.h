// Prints a Plan as stable, line-oriented text (what `loupe-opt --print-plan` shows and lit tests
// check): one block per kernel (kind, target, implementation, reason, fused ops, rejected
// alternatives), then the memory plan (arena and peak, then one line per buffer with its size,
// offset and lifetime).
#pragma once

#include <ostream>

#include "compiler/pass/plan.h"

namespace loupe {

void printPlan(const Plan& plan, std::ostream& os);

} // namespace loupe
