// Picks compiles from a trace by a readable selector, for `loupe diff` and `loupe bisect`:
//   7            the compile with id 7
//   0/1          Dynamo's compile key (frame 0, attempt 1); with fw/bw: `0/1:bw`
//   forward, bw  graph kind (fw|forward, bw|backward, inference, graph)
//   frame=NAME   compiles of the frame with that function name
//   x=8          compiles whose input named x has dim 0 equal to 8; `x.1=64` names dim 1
//   batch=8      dim 0 of the first tensor input equals 8
// Several selectors joined with ',' must all hold. An empty selector selects everything.
// Inputs are named as in the compile's input signature ("name"), or, when the signature has
// no tensor entries (`loupe run` traces), as the graph inputs of its first snapshot.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inspector/trace/trace_reader.h"

namespace loupe::diff {

// The compiles the selector picks, in trace order. Throws loupe::Error("usage", ...) for a
// selector that cannot be parsed, naming the part at fault.
std::vector<int64_t> selectCompiles(const TraceReader& trace, std::string_view selector);

// The default pairs of `loupe diff TRACE`: the recompiles of each frame, each compile paired
// with the previous compile of the same frame and graph kind. A frame is its function name,
// file and line (so compiles from several runs of one program pair up), or, when the frame
// name is unknown, the run and the frame part of the compile key.
std::vector<std::pair<int64_t, int64_t>> recompilePairs(const TraceReader& trace);

// What a tensor input of a compile is: an input the user passes, or a module's state.
enum class InputKind { Input, Parameter, Buffer };

// A tensor input of a compile as selectors and the differ name it.
struct CompileInput {
  std::string name;              // empty when neither the signature nor a snapshot names it
  std::vector<std::string> dims; // as printed: "8", "s0"
  // From the signature's "kind"; traces without it: a dotted name (`self.fc1.weight`, an
  // attribute path) is a parameter, any other name an input.
  InputKind kind = InputKind::Input;
};
// The tensor inputs of a compile, in order. Never throws for a malformed signature or
// snapshot (the trace is untrusted): what cannot be read is left out.
std::vector<CompileInput> compileInputs(const TraceReader& trace, int64_t compileId);

// The inputs of a compile in one line: each named input with its shape, the rest (parameters,
// buffers, unnamed inputs) summarised by count: "x=[16,64] +28 parameters". Given the inputs
// of the compile it is compared with, the summarised ones that differ from their counterpart
// (same name, or same position when unnamed) are listed too, a few at most, and the summary
// says the rest are unchanged: "x=[16,64] self.pos=[s0,64] +27 parameters unchanged".
std::string describeInputs(const std::vector<CompileInput>& inputs,
                           const std::vector<CompileInput>* other = nullptr);

// "compile 2 (0/1 forward, x=[16,64] +28 parameters)": how messages and reports name a
// compile. With `other` (the compile it is compared with), its inputs are described against
// that compile's, as describeInputs does.
std::string describeCompile(const TraceReader& trace, int64_t compileId);
std::string describeCompile(const TraceReader& trace, int64_t compileId,
                            const TraceReader& otherTrace, int64_t otherId);

} // namespace loupe::diff
