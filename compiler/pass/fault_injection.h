// Fault injection: a testing aid that deliberately miscompiles a graph right after a chosen
// decision, so that the bisector (inspector/bisect) can be tested end to end on a known culprit.
//
// The pass manager calls injectFault after the pass that applied decision N
// (PipelineOptions::injectFaultAt). The fault scales graph outputs by 1.25: every floating-point
// output that depends on a value the decision named, or the first floating-point output when
// none does (the decision erased its nodes, or they are dead). The scaling sits on the outputs
// rather than on the named value itself because a scaling inside the graph can vanish before it
// reaches an output (layer norm and softmax are invariant to it, argmax and comparisons ignore
// it); at an output it always shows. With a bisect limit below N the decision is refused, the
// fault never happens, and that is what bisection finds.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/instrumentation.h"

namespace loupe {

// How an injected fault scales the outputs it perturbs.
inline constexpr double kFaultScale = 1.25;

// Perturbs `graph` after `decision` was applied and returns the announcement: a Decision of kind
// "fault" with ordinal 0 (it is not counted), naming the decision's first node and the
// perturbed values. Throws Error("fault", ...) when the graph has no floating-point output.
Decision injectFault(Graph& graph, const Decision& decision);

} // namespace loupe
