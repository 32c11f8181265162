// The host side of the CUDA kernel ABI (cuda_kernel_abi.h): choosing an entry for concrete
// tensors and packing its parameter block.
#include "compiler/codegen/cuda/cuda_kernel_abi.h"

#include <algorithm>

#include "compiler/codegen/cuda/cuda_kernel_layout.h"
#include "compiler/ir/error.h"

namespace loupe {

namespace {

// Below this many elements per output a warp would idle: one thread per output serves better.
constexpr int64_t kRowMinimum = 32;
// Rows up to this long get one warp each (8 rows to a block); longer ones a block each.
constexpr int64_t kWarpRowMaximum = 2048;
// The most shared memory a block takes without opting in, static and dynamic together: the
// vectorised row entry caches its rows when they fit beside its static partials (32 per
// reduction, at most 8 bytes each). At 32 KB a block (softmax over 8192 floats) an H100 SM
// still holds 7 blocks of 256 threads; longer rows are read again from L2 in each pass. A cache
// of exactly 48 KB plus the partials failed to launch (CUDA_ERROR_INVALID_VALUE: GPT-2's final
// layer norm in bf16, four 768-element rows of inputs, 8 rows a block).
constexpr size_t kBlockSharedMaxBytes = 48 * 1024;
constexpr size_t kPartialsBytesPerReduction = 32 * 8;
// Resident blocks per SM a grid-stride grid is sized for: more blocks only add scheduling.
constexpr int64_t kBlocksPerMultiprocessor = 16;
// The pointwise entries' grids go further: up to 128 blocks of 256 threads per SM, 16 times
// what an SM holds at once, so a tensor of up to 4M vectors per 132 SMs gets a vector a thread.
// A grid-stride loop over only the resident blocks' worth left a 64M-element f32 chain at 90% of
// a copy's bandwidth on an H100 (197 us, Inductor's 180); kernel times by blocks per SM, the
// chain in f32 / in bf16 / x * 0.5 + y in f32 (us): 16: 197 / 130 / 143, 64: 184 / 129 / 144,
// 128: 181 / 132 / 144, no cap: 179 / 146 / 155 (a vector a thread: block scheduling then costs
// the compute-heavier bf16 chain and the three-operand kernel). Two or four vectors a thread,
// loaded before any store, did not help (194 to 197 us at 16) and doubled registers.
constexpr int64_t kPointwiseBlocksPerMultiprocessor = 128;
// The row entry with a block per row takes the same: a block per row up to 128 per SM, so each
// block walks one row and the SM overlaps one row's loads with another's passes, where a block
// walking several rows in turn waits for its own loads each time. On an H100 (kernel time,
// 2026-11-26): softmax over 8192x8192 f32 193.5 us at 16 blocks per SM, 185.5 at a block per
// row (Inductor's 182); layer norm over 16384x4096 f32 191.2 against 183.8 with two rows a
// block. Eight warp rows a block stay at kBlocksPerMultiprocessor: a block per 8 rows over
// 65536x768 bf16 rows took 77.6 us against 75.3.
constexpr int64_t kBlockRowsPerMultiprocessor = kPointwiseBlocksPerMultiprocessor;

// The split entry (one block of kCudaRowBlock threads per row and split) against one block per
// row. An SM of sm_80 or sm_90 holds 2048 threads: 4 such blocks. When the rows alone occupy at
// most half of those slots, a grid over rows leaves most of the GPU idle (x.sum() of 64M
// elements: one block on one SM of 132), and splitting each row's reduced range over grid.y
// fills it.
constexpr int64_t kResidentThreadsPerMultiprocessor = 2048;
// A split costs a fixed few microseconds: the block's partial written, a fence and an atomic, and
// the last block's read of every partial and its epilogue after the others finish. One SM on its
// own streams in the order of 50-100 GB/s (the loads its threads keep in flight over the DRAM
// latency), so a block walks a row of kSplitMinimumRow f32 (512 KiB) in 5-10 us: shorter rows
// gain at most about what the split costs, longer ones gain in proportion (declared in
// cuda_kernel_abi.h: the layout omits the entry when the static extent is shorter).
// Each split's chunk holds at least this many elements, 8 per thread of a block: enough loads
// in flight per thread that the block's fixed work (its tree, its partial, the atomic) stays
// small beside them, and the partials (one per chunk) stay few for the last block to read.
constexpr int64_t kSplitChunkMinimum = 4096;
// grid.y's limit.
constexpr int64_t kMaxGridY = 65535;

int64_t product(const std::vector<int64_t>& sizes, const std::vector<size_t>& dims) {
  int64_t p = 1;
  for (size_t d : dims)
    p *= sizes[d];
  return p;
}

unsigned gridFor(int64_t items, int64_t perBlock, int multiprocessors,
                 int64_t blocksPerMultiprocessor = kBlocksPerMultiprocessor) {
  int64_t blocks = std::max<int64_t>(1, (items + perBlock - 1) / perBlock);
  return static_cast<unsigned>(
      std::min(blocks, blocksPerMultiprocessor * std::max(1, multiprocessors)));
}

size_t storedBytes(DType dtype) {
  return dtype == DType::Bool ? 1 : dtypeSize(dtype);
}

// Whether the vectorised pointwise entry may take operand p (strides in `strides`): an output
// must be dense (row-major over the iteration space); an input dense, or broadcast along whole
// leading dims (a row of `span` elements repeated, span a multiple of the vector width), or one
// element for all; its pointer aligned to its vector chunk.
bool vectorisable(const std::vector<int64_t>& sizes, const int64_t* strides, bool output,
                  const void* data, DType dtype, int width) {
  int64_t dense = 1; // the row-major stride of the dim under consideration; then the total
  bool broadcasting = false;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] == 0 && !output) {
      broadcasting = true; // from here outwards every dim must be broadcast
    } else if (broadcasting || strides[d] != dense) {
      return false;
    }
    dense *= sizes[d];
  }
  // The elements the operand covers, as the kernel works it out: 1 + sum (size - 1) * stride.
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (strides[d] != 0) span *= sizes[d];
  if (span == 1 && !output) return true; // read as one element
  size_t chunk = std::min<size_t>(16, static_cast<size_t>(width) * storedBytes(dtype));
  // A repeated row must hold whole vectors; a dense operand may end in a partial one (the tail).
  return (span == dense || span % width == 0) && reinterpret_cast<uintptr_t>(data) % chunk == 0;
}

// Whether the vectorised row entry can take these tensors: the row length a multiple of the
// vector width, and in every operand that walks the rows, the innermost stride 1 (an output)
// or 0 or 1 (an input), and where it is 1, every other stride a multiple of the width and the
// pointer aligned to a vector, so that each row starts on one.
bool rowsVectorisable(const CudaKernelLayout& layout, const std::vector<int64_t>& sizes,
                      const int64_t* strides, const std::vector<const Tensor*>& tensors) {
  if (sizes.empty() || sizes.back() % layout.vectorWidth != 0) return false;
  size_t rank = sizes.size();
  for (size_t p = 0; p < tensors.size(); ++p) {
    if (!layout.walksReducedDims[p]) continue;
    const int64_t* own = strides + p * rank;
    bool output = p >= layout.numInputs;
    if (own[rank - 1] == 0 && !output) continue;
    if (own[rank - 1] != 1) return false;
    for (size_t d = 0; d + 1 < rank; ++d)
      if (sizes[d] > 1 && own[d] % layout.vectorWidth != 0) return false;
    size_t chunk = std::min<size_t>(16, static_cast<size_t>(layout.vectorWidth) *
                                            storedBytes(layout.dtypes[p]));
    if (reinterpret_cast<uintptr_t>(tensors[p]->data()) % chunk != 0) return false;
  }
  return true;
}

// The outputs one block of the split entry takes: 1 (a row) when the reduced dims are innermost;
// with a kept dim innermost (splitColumns), a tile of that many neighbouring outputs, the
// innermost size rounded up to a power of two, at most a warp: a warp then reads 32 neighbouring
// elements, 32 / width reduced positions of `width` outputs.
int64_t splitTileWidth(const CudaKernelLayout& layout, const std::vector<int64_t>& sizes) {
  if (!layout.splitColumns || sizes.empty()) return 1;
  int64_t width = 1;
  while (width < 32 && width < sizes.back())
    width *= 2;
  return width;
}

// The splits per tile (a row, or `width` outputs) for the split entry, or 0 where another entry
// serves as well (see the constants above): enough blocks in all to fill every SM, each block's
// chunk kSplitChunkMinimum elements or more.
//
// Rows (the reduced dims innermost): split only when the rows leave most block slots idle, each
// row at least kSplitMinimumRow long; otherwise a warp or block per row reads as fast.
// Tiles (the innermost dim kept): the alternative is a thread per output walking its reduced
// range alone, a load in flight at a time (a [8192, 256] column sum: 9.7 ms on an H200, 8192
// iterations of DRAM latency per thread on 2 of 132 SMs), so from kSplitColumnsMinimum on the
// split entry takes it, 512 threads a tile, with a single split (1) where the tiles alone fill
// the GPU.
int64_t splitsFor(const CudaKernelLayout& layout, int64_t tiles, int64_t width, int64_t reduced,
                  int multiprocessors) {
  bool offered = std::find(layout.entries.begin(), layout.entries.end(),
                           CudaEntryRole::ReductionSplit) != layout.entries.end();
  int64_t blockSlots = int64_t{std::max(1, multiprocessors)} * kResidentThreadsPerMultiprocessor /
                       int64_t{kCudaRowBlock};
  bool columns = layout.splitColumns;
  if (!offered || tiles < 1 || tiles > kSplitCounterSlots ||
      reduced < (columns ? kSplitColumnsMinimum : kSplitMinimumRow) ||
      (!columns && 2 * tiles > blockSlots))
    return 0;
  int64_t fill = (blockSlots + tiles - 1) / tiles;
  int64_t splits =
      std::max<int64_t>(1, std::min({fill, reduced * width / kSplitChunkMinimum, kMaxGridY}));
  return columns || splits > 1 ? splits : 0;
}

// The vectorised row entry's row cache for one row (cuda_kernel_abi.h): each cached input's
// `length` elements, rounded up to 16 bytes, as the emitter lays them out.
size_t rowCacheBytes(const CudaKernelLayout& layout, int64_t length) {
  size_t bytes = 0;
  for (size_t p = 0; p < layout.numInputs; ++p)
    if (layout.rowCached[p])
      bytes += (static_cast<size_t>(length) * storedBytes(layout.dtypes[p]) + 15) / 16 * 16;
  return bytes;
}

} // namespace

const char* cudaEntryRoleName(CudaEntryRole role) {
  switch (role) {
  case CudaEntryRole::Pointwise:
    return "pointwise";
  case CudaEntryRole::PointwiseNarrow:
    return "pointwise-narrow";
  case CudaEntryRole::PointwiseVectorised:
    return "pointwise-vectorised";
  case CudaEntryRole::ReductionRow:
    return "reduction-row";
  case CudaEntryRole::ReductionRowVectorised:
    return "reduction-row-vectorised";
  case CudaEntryRole::ReductionPerOutput:
    return "reduction-per-output";
  case CudaEntryRole::ReductionSplit:
    return "reduction-split";
  }
  return "?";
}

size_t CudaKernelLayout::argWords() const {
  size_t rank = std::max<size_t>(signature.iterationShape.size(), 1);
  size_t operands = dtypes.size();
  return rank + operands + operands * rank + std::max<size_t>(signature.scalars.size(), 1) +
         (reduction ? 1 : 0);
}

CudaKernelLayout describeCudaKernel(const Node& node, const OpRegistry& registry) {
  try {
    return cuda_codegen::layoutOf(codegen::analyzeGroup(node, registry));
  } catch (const codegen::Unsupported& unsupported) {
    throw Error("codegen", "cannot generate a CUDA kernel: " + unsupported.why,
                ErrorContext{.node = node.describe()});
  }
}

CudaLaunch planCudaLaunch(const CudaKernelLayout& layout, const KernelBinding& bound,
                          const std::vector<const Tensor*>& inputs,
                          const std::vector<Tensor*>& outputs, int multiprocessors) {
  const std::vector<int64_t>& sizes = bound.sizes;
  size_t count = inputs.size() + outputs.size();
  if (count != layout.dtypes.size() || inputs.size() != layout.numInputs)
    throw Error("runtime",
                "CUDA kernel expects " + std::to_string(layout.numInputs) + " inputs and " +
                    std::to_string(layout.dtypes.size() - layout.numInputs) + " outputs, got " +
                    std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  if (sizes.size() != layout.signature.iterationShape.size() ||
      bound.scalars.size() != layout.signature.scalars.size())
    throw Error("runtime", "CUDA kernel binding has " + std::to_string(sizes.size()) +
                               " sizes and " + std::to_string(bound.scalars.size()) +
                               " scalars, the kernel takes " +
                               std::to_string(layout.signature.iterationShape.size()) + " and " +
                               std::to_string(layout.signature.scalars.size()));

  // The parameter block: sizes, data, strides, scalars, [workspace] (cuda_kernel_abi.h).
  CudaLaunch launch;
  size_t rank = std::max<size_t>(sizes.size(), 1);
  launch.args.assign(layout.argWords(), 0);
  int64_t* sizeWords = launch.args.data();
  int64_t* dataWords = sizeWords + rank;
  int64_t* strideWords = dataWords + count;
  int64_t* scalarWords = strideWords + count * rank;
  sizeWords[0] = 1;
  std::copy(sizes.begin(), sizes.end(), sizeWords);
  std::vector<const Tensor*> tensors(inputs.begin(), inputs.end());
  tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  for (size_t p = 0; p < count; ++p) {
    iterationStrides(layout.signature, sizes, p, inputs.size(), *tensors[p],
                     strideWords + p * rank);
    dataWords[p] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(tensors[p]->data()));
  }
  std::copy(bound.scalars.begin(), bound.scalars.end(), scalarWords);

  auto has = [&](CudaEntryRole role) {
    auto found = std::find(layout.entries.begin(), layout.entries.end(), role);
    if (found != layout.entries.end())
      launch.entry = static_cast<size_t>(found - layout.entries.begin());
    return found != layout.entries.end();
  };

  if (!layout.reduction) {
    int64_t total = product(sizes, [&] {
      std::vector<size_t> all(sizes.size());
      for (size_t d = 0; d < all.size(); ++d)
        all[d] = d;
      return all;
    }());
    bool vector = std::find(layout.entries.begin(), layout.entries.end(),
                            CudaEntryRole::PointwiseVectorised) != layout.entries.end();
    for (size_t p = 0; vector && p < count; ++p)
      vector = vectorisable(sizes, strideWords + p * rank, p >= inputs.size(), tensors[p]->data(),
                            layout.dtypes[p], layout.vectorWidth);
    int64_t items = vector ? total / layout.vectorWidth : total;
    if (vector) {
      has(CudaEntryRole::PointwiseVectorised);
      launch.why = "vectorised: every operand dense or row-broadcast, and aligned";
    } else if (fitsNarrowIndex(total, tensors) && has(CudaEntryRole::PointwiseNarrow)) {
      launch.why = "strided in 32 bits: an operand is strided, broadcast within rows or "
                   "misaligned; every offset fits 31 bits";
    } else {
      has(CudaEntryRole::Pointwise);
      launch.why = "strided: an operand is strided, broadcast within rows or misaligned";
    }
    launch.block[0] = kCudaPointwiseBlock;
    launch.grid[0] =
        gridFor(items, kCudaPointwiseBlock, multiprocessors, kPointwiseBlocksPerMultiprocessor);
    return launch;
  }

  std::vector<size_t> kept;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!std::binary_search(layout.reducedDims.begin(), layout.reducedDims.end(), d))
      kept.push_back(d);
  int64_t rows = product(sizes, kept), reduced = product(sizes, layout.reducedDims);
  int64_t width = splitTileWidth(layout, sizes), tiles = (rows + width - 1) / width;
  if (int64_t splits = splitsFor(layout, tiles, width, reduced, multiprocessors); splits > 0) {
    has(CudaEntryRole::ReductionSplit);
    launch.why = width == 1 ? "split: too few rows to fill the GPU, each long; grid.y splits "
                              "every row and its last block combines the partials"
                            : "split, tiles: the innermost dim kept; 512 threads a tile of "
                              "outputs, grid.y splits where the tiles leave the GPU idle, the "
                              "last block of a tile combines";
    // A row: 512 threads along x; a tile: its outputs along x, 512 / width threads along y.
    launch.block[0] = layout.splitColumns ? static_cast<unsigned>(width) : kCudaRowBlock;
    launch.block[1] = kCudaRowBlock / launch.block[0];
    launch.grid[0] = static_cast<unsigned>(tiles);
    launch.grid[1] = static_cast<unsigned>(splits);
    launch.workspaceBytes = static_cast<size_t>(
        kSplitPartialsOffset + static_cast<int64_t>(layout.reductions) * rows * splits * 8);
    return launch;
  }
  // The row entry's threads read consecutive reduced elements: worth it when the innermost
  // iteration dim is contiguous (or broadcast) in every operand the reduction loop reads.
  bool innerContiguous = true;
  for (size_t p = 0; p < count; ++p)
    if (layout.walksReducedDims[p] && !sizes.empty() && sizes.back() > 1) {
      int64_t inner = strideWords[p * rank + sizes.size() - 1];
      innerContiguous = innerContiguous && (inner == 0 || inner == 1);
    }
  bool rowShaped = std::find(layout.entries.begin(), layout.entries.end(),
                             CudaEntryRole::ReductionRow) != layout.entries.end();
  if (rowShaped && innerContiguous && reduced >= kRowMinimum) {
    bool vector = has(CudaEntryRole::ReductionRowVectorised) &&
                  rowsVectorisable(layout, sizes, strideWords, tensors);
    has(vector ? CudaEntryRole::ReductionRowVectorised : CudaEntryRole::ReductionRow);
    // A warp per row, eight rows a block, fills the GPU only with enough rows: fewer than
    // eight per multiprocessor, a block per row spreads them over more multiprocessors and
    // each thread reads less of its row (a [64, 1024] f32 layer norm on an H100: 8.7 us with a
    // warp per row on 8 multiprocessors, where Inductor's block per row took 2 us).
    bool fewRows = rows < 8 * static_cast<int64_t>(multiprocessors);
    unsigned perRow = reduced <= kWarpRowMaximum && !fewRows ? 32
                      : reduced <= 16384                     ? 256
                                                             : kCudaRowBlock;
    unsigned rowsPerBlock = perRow == 32 ? 8 : 1;
    launch.block[0] = perRow;
    launch.block[1] = rowsPerBlock;
    launch.grid[0] = gridFor(rows, rowsPerBlock, multiprocessors,
                             perRow == 32 ? kBlocksPerMultiprocessor : kBlockRowsPerMultiprocessor);
    size_t cache = vector && layout.passes > 1 ? rowsPerBlock * rowCacheBytes(layout, reduced) : 0;
    size_t partials = static_cast<size_t>(layout.reductions) * kPartialsBytesPerReduction;
    if (cache + partials > kBlockSharedMaxBytes) cache = 0;
    launch.sharedBytes = static_cast<unsigned>(cache);
    // Why, by who takes a row (a warp, a block) and how it reads it.
    static constexpr const char* kRowWhy[2][3] = {
        {"row: one warp per output, the reduced dims innermost and contiguous",
         "row, vectorised: one warp per output, rows dense and aligned",
         "row, vectorised, cached: one warp per output, rows dense and aligned, each pass after "
         "the first reads the row from shared memory"},
        {"row: one block per output, the reduced dims innermost and contiguous",
         "row, vectorised: one block per output, rows dense and aligned",
         "row, vectorised, cached: one block per output, rows dense and aligned, each pass after "
         "the first reads the row from shared memory"}};
    launch.why = kRowWhy[perRow == 32 ? 0 : 1][cache ? 2 : vector ? 1 : 0];
    return launch;
  }
  has(CudaEntryRole::ReductionPerOutput);
  launch.why = !rowShaped         ? "per output: a kept dim is inside the reduced ones, the "
                                    "reduced range short or the outputs many"
               : !innerContiguous ? "per output: the reduced innermost dim is strided"
                                  : "per output: rows shorter than a warp";
  launch.block[0] = static_cast<unsigned>(
      std::min<int64_t>(kCudaPointwiseBlock, std::max<int64_t>(32, (rows + 31) / 32 * 32)));
  launch.grid[0] = gridFor(rows, launch.block[0], multiprocessors);
  return launch;
}

void bindCudaWorkspace(CudaLaunch& launch, void* workspace) {
  if (launch.workspaceBytes == 0) return;
  if (!workspace) throw Error("runtime", "a split reduction launched without its workspace");
  launch.args.back() = static_cast<int64_t>(reinterpret_cast<uintptr_t>(workspace));
}

bool fitsNarrowIndex(int64_t total, const std::vector<const Tensor*>& tensors) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (total >= kLimit) return false;
  for (const Tensor* tensor : tensors) {
    int64_t reach = 0;
    for (size_t d = 0; d < tensor->rank(); ++d) {
      int64_t stride = tensor->strides()[d], size = tensor->size(d);
      if (size == 0) return true; // an empty operand: nothing runs
      if (stride < 0) return false;
      if (size > 1 && stride > (kLimit - 1 - reach) / (size - 1)) return false;
      reach += (size - 1) * stride;
    }
  }
  return true;
}

} // namespace loupe
