// The format, one fact per line so FileCheck patterns stay short:
//
//   kernels:
//     k0 %3 = loupe.fused: generated cpu generated:pointwise
//       reason: one generated loop nest for the group: intermediates stay in registers
//       fused: aten.mul.Tensor, aten.relu
//       rejected: library cpu: the reference implementation runs op by op ...
//   memory: arena=1024 bytes, outputs=512 bytes, peak=1536 bytes (concrete)
//     %x: 512 bytes, live 0..1, input
//     %2: 512 bytes at 0, live 0..1
//     %3: 512 bytes, live 1..2, output (handed to the caller)
//     %3.scratch: 256 bytes at 512, live 1..1, scratch of k1   (a kernel's working memory)
#include "compiler/pass/plan_printer.h"

namespace loupe {

namespace {

void printKernel(const KernelChoice& k, std::ostream& os) {
  os << "  " << k.name << " %" << k.node << " = " << k.op << ": " << kernelKindName(k.kind) << ' '
     << k.target << ' ' << k.implementation << '\n';
  os << "    reason: " << k.reason << '\n';
  if (k.scratchBytes != SymExpr()) os << "    scratch: " << k.scratchBytes.str() << " bytes\n";
  if (!k.fusedOps.empty()) {
    os << "    fused:";
    for (size_t i = 0; i < k.fusedOps.size(); ++i)
      os << (i ? ", " : " ") << k.fusedOps[i];
    os << '\n';
  }
  for (const auto& alt : k.rejected)
    os << "    rejected: " << kernelKindName(alt.kind) << ' ' << alt.target << ": " << alt.why
       << '\n';
}

void printBuffer(const BufferAssignment& b, std::ostream& os) {
  os << "  %" << b.value << ": " << b.bytes.str() << " bytes";
  if (b.offset >= 0) os << " at " << b.offset;
  os << ", live " << b.firstUse << ".." << b.lastUse;
  if (b.graphInput) os << ", input";
  if (b.graphOutput) os << (b.graphInput ? ", output" : ", output (handed to the caller)");
  if (!b.scratchOf.empty()) os << ", scratch of " << b.scratchOf;
  os << '\n';
}

} // namespace

void printPlan(const Plan& plan, std::ostream& os) {
  os << "kernels:\n";
  for (const auto& k : plan.kernels)
    printKernel(k, os);
  const MemoryPlan& m = plan.memory;
  if (m.buffers.empty()) {
    os << "memory: not planned\n";
    return;
  }
  os << "memory: arena=" << m.arenaBytes.str() << " bytes, outputs=" << m.outputBytes.str()
     << " bytes, peak=" << m.peakBytes.str() << " bytes ("
     << (m.concrete ? "concrete" : "symbolic: offsets are fixed at run time") << "), buffers at "
     << m.alignment << "-byte boundaries\n";
  for (const auto& b : m.buffers)
    printBuffer(b, os);
  if (plan.cudaGraph) os << "launch: replayed as one CUDA graph\n";
}

} // namespace loupe
