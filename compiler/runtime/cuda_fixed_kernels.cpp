// The CUDA kernels that are not generated from a graph (cuda_fixed_kernels.h).
#include "compiler/runtime/cuda_fixed_kernels.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_kernel_abi.h"
#include "compiler/ir/error.h"
#include "compiler/ops/advanced_indexing_layout.h"
#include "compiler/runtime/cuda/cuda_driver.h"
#include "compiler/runtime/cuda/cuda_module.h"

namespace loupe {

namespace {

// The copy: one element per thread in a grid-stride loop, for each element size. Each element's
// offsets take a division per dim; in 64 bits that is a long software sequence, so a copy whose
// elements and offsets all fit 32 bits (`narrow`, no negative stride) divides in 32 bits.
// The gather: one unit (1 to 16 bytes) per thread in a grid-stride loop.
// The scatter (index_put): one value per thread in a grid-stride loop over the indexed shape,
// its coordinates found as the copy's (32-bit divisions when narrow); each index tensor is read
// at its broadcast position, and the value added with an atomic (accumulate) or written.
//
// Each entry is an NVRTC program of its own: its family's text and one __global__ function
// (cudaFixedKernelSource). A graph builds only the entries its plan can launch. As one program,
// the seventeen entries there were before the scatter had one per rank and index count took
// 2.2 s to compile on 2 cores (1.8 s of it the scatters); an f32 table's three gather entries
// take 97 ms.
constexpr const char* kCopySource = R"(
struct LoupeCopyArgs {
  long long n, rank, narrow;
  long long sizes[8], from[8], to[8];
  const char* source;
  char* target;
};
template <typename T, typename I>
__device__ void loupe_copy_as(const LoupeCopyArgs& a) {
  I n = (I)a.n, rank = (I)a.rank;
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    I rest = i, from = 0, to = 0;
    for (I d = rank; d-- > 0;) {
      I size = (I)a.sizes[d], index = rest % size;
      rest /= size;
      from += index * (I)a.from[d];
      to += index * (I)a.to[d];
    }
    ((T*)a.target)[to] = ((const T*)a.source)[from];
  }
}
template <typename T>
__device__ void loupe_copy(const LoupeCopyArgs& a) {
  if (a.narrow) loupe_copy_as<T, unsigned int>(a);
  else loupe_copy_as<T, long long>(a);
}
)";

constexpr const char* kGatherSource = R"(
struct LoupeGatherArgs {
  long long n, rowUnits, tableRowUnits, rows, wideIndices;
  const void* indices;
  const char* table;
  char* out;
};
template <typename T>
__device__ void loupe_gather(const LoupeGatherArgs& a) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    long long row = i / a.rowUnits, column = i - row * a.rowUnits;
    long long index = a.wideIndices ? ((const long long*)a.indices)[row]
                                    : (long long)((const int*)a.indices)[row];
    if (index < 0 || index >= a.rows) __trap();
    ((T*)a.out)[i] = ((const T*)a.table)[index * a.tableRowUnits + column];
  }
}
)";

constexpr const char* kScatterSource = R"(
struct LoupeScatterArgs {
  long long n, rank, indexCount, narrow;
  long long sizes[8], valueStrides[8], outStrides[8];
  long long indexStrides[8][8], indexDimSizes[8], indexOutStrides[8], indexWide[8];
  const void* indices[8];
  const char* values;
  char* out;
};
// R: the indexed shape's rank, K: the index tensors; both fixed per entry, so the loops unroll
// exactly (with runtime bounds, unrolled 8 by 8, each value paid for all 64 index-stride
// products and 8 divisions).
template <typename T, bool Add, int R, int K, typename I>
__device__ void loupe_scatter_as(const LoupeScatterArgs& a) {
  I n = (I)a.n;
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    I rest = i;
    long long value = 0, to = 0;
    long long at[K > 0 ? K : 1] = {};
#pragma unroll
    for (int d = R - 1; d >= 0; --d) {
      I size = (I)a.sizes[d], coordinate = rest % size;
      rest /= size;
      value += (long long)coordinate * a.valueStrides[d];
      to += (long long)coordinate * a.outStrides[d];
#pragma unroll
      for (int k = 0; k < K; ++k)
        at[k] += (long long)coordinate * a.indexStrides[k][d];
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      long long index = a.indexWide[k] ? ((const long long*)a.indices[k])[at[k]]
                                       : (long long)((const int*)a.indices[k])[at[k]];
      long long size = a.indexDimSizes[k];
      if (index < 0) index += size;
      if (index < 0 || index >= size) __trap();
      to += index * a.indexOutStrides[k];
    }
    T v = ((const T*)a.values)[value];
    if constexpr (Add) atomicAdd((T*)a.out + to, v);
    else ((T*)a.out)[to] = v;
  }
}
template <typename T, bool Add, int R, int K>
__device__ void loupe_scatter(const LoupeScatterArgs& a) {
  if (a.narrow) loupe_scatter_as<T, Add, R, K, unsigned int>(a);
  else loupe_scatter_as<T, Add, R, K, long long>(a);
}
)";

struct CopyArgs {
  int64_t n, rank, narrow;
  int64_t sizes[CudaFixedKernels::kMaxRank], from[CudaFixedKernels::kMaxRank],
      to[CudaFixedKernels::kMaxRank];
  const void* source;
  void* target;
};

struct GatherArgs {
  int64_t n, rowUnits, tableRowUnits, rows, wideIndices;
  const void* indices;
  const void* table;
  void* out;
};

struct ScatterArgs {
  static constexpr size_t kMax = CudaFixedKernels::kMaxRank;
  int64_t n, rank, indexCount, narrow;
  int64_t sizes[kMax], valueStrides[kMax], outStrides[kMax];
  int64_t indexStrides[kMax][kMax], indexDimSizes[kMax], indexOutStrides[kMax], indexWide[kMax];
  const void* indices[kMax];
  const void* values;
  void* out;
};

// The kernels' families: their shared text, the parameter struct every entry takes (its name in
// the source, its size on the host) and what they do, for the trace.
struct FixedFamily {
  const char* source;
  const char* args;
  size_t argBytes;
  const char* strategy;
};
const FixedFamily kCopyFamily{kCopySource, "LoupeCopyArgs", sizeof(CopyArgs),
                              "strided copy: one element per thread"};
const FixedFamily kGatherFamily{kGatherSource, "LoupeGatherArgs", sizeof(GatherArgs),
                                "row gather: one unit of up to 16 bytes per thread"};
const FixedFamily kScatterFamily{kScatterSource, "LoupeScatterArgs", sizeof(ScatterArgs),
                                 "scatter: one value per thread"};

struct FixedEntry {
  std::string name;
  const FixedFamily* family;
  std::string body;
};

// The entries: copies by log2 of the element size (from kCopyFirst), gathers by log2 of the unit
// size (from kGatherFirst), then the scatters (from kScatterFirst) by element kind (kScatterKinds:
// the adding ones by dtype, then the writing ones by log2 of the element size), indexed rank
// 0 to kMaxRank and index count 0 to kMaxRank.
constexpr size_t kCopyFirst = 0, kGatherFirst = 4, kScatterFirst = 9;
constexpr size_t kRanks = CudaFixedKernels::kMaxRank + 1;
struct ScatterKind {
  const char* name;
  const char* type;
  bool add;
};
constexpr ScatterKind kScatterKinds[] = {
    {"add_f32", "float", true},    {"add_f64", "double", true},
    {"add_i32", "int", true},      {"add_i64", "unsigned long long", true},
    {"1", "unsigned char", false}, {"2", "unsigned short", false},
    {"4", "unsigned int", false},  {"8", "unsigned long long", false},
};
static_assert(kScatterFirst + std::size(kScatterKinds) * kRanks * kRanks ==
              CudaFixedKernels::kEntryCount);

FixedEntry entryAt(size_t entry) {
  static const char* const kUnitTypes[] = {"unsigned char", "unsigned short", "unsigned int",
                                           "unsigned long long", "uint4"};
  if (entry < kGatherFirst) {
    size_t log = entry - kCopyFirst;
    return {"loupe_copy_" + std::to_string(size_t{1} << log), &kCopyFamily,
            std::string("loupe_copy<") + kUnitTypes[log] + ">(a);"};
  }
  if (entry < kScatterFirst) {
    size_t log = entry - kGatherFirst;
    return {"loupe_gather_" + std::to_string(size_t{1} << log), &kGatherFamily,
            std::string("loupe_gather<") + kUnitTypes[log] + ">(a);"};
  }
  size_t rest = entry - kScatterFirst;
  size_t indexCount = rest % kRanks, rank = rest / kRanks % kRanks;
  const ScatterKind& kind = kScatterKinds[rest / kRanks / kRanks];
  std::string shape = std::to_string(rank) + ", " + std::to_string(indexCount);
  return {std::string("loupe_scatter_") + kind.name + "_r" + std::to_string(rank) + "_k" +
              std::to_string(indexCount),
          &kScatterFamily,
          std::string("loupe_scatter<") + kind.type + ", " + (kind.add ? "true" : "false") + ", " +
              shape + ">(a);"};
}

// log2 of a power-of-two byte count up to 16.
size_t log2Bytes(size_t bytes) {
  size_t log = 0;
  while ((size_t{1} << log) < bytes)
    ++log;
  return log;
}

unsigned gridFor(int64_t n, int multiprocessors) {
  int64_t blocks = std::min<int64_t>((n + 255) / 256, int64_t{multiprocessors} * 8);
  return static_cast<unsigned>(std::max<int64_t>(blocks, 1));
}

} // namespace

GeneratedCudaKernel cudaFixedKernelSource(size_t entry) {
  if (entry >= CudaFixedKernels::kEntryCount)
    throw Error("runtime", "no fixed CUDA kernel entry " + std::to_string(entry));
  FixedEntry e = entryAt(entry);
  std::string source = std::string(e.family->source) + "extern \"C\" __global__ void " + e.name +
                       "(" + e.family->args + " a) { " + e.body + " }\n";
  return {std::move(source), {e.name}, e.family->strategy};
}

size_t CudaFixedKernels::copyEntry(DType dtype) {
  return kCopyFirst + log2Bytes(dtypeSize(dtype));
}

std::vector<size_t> CudaFixedKernels::gatherEntries(DType dtype) {
  std::vector<size_t> entries;
  for (size_t unit = dtypeSize(dtype); unit <= 16; unit *= 2)
    entries.push_back(kGatherFirst + log2Bytes(unit));
  return entries;
}

std::optional<size_t> CudaFixedKernels::scatterEntry(DType dtype, bool accumulate, size_t rank,
                                                     size_t indexCount) {
  if (rank > kMaxRank || indexCount > kMaxRank) return std::nullopt;
  size_t kind = 0;
  if (!accumulate) {
    kind = 4 + log2Bytes(dtypeSize(dtype));
  } else if (dtype == DType::F32) {
    kind = 0;
  } else if (dtype == DType::F64) {
    kind = 1;
  } else if (dtype == DType::I32) {
    kind = 2;
  } else if (dtype == DType::I64) {
    kind = 3;
  } else {
    return std::nullopt;
  }
  return kScatterFirst + (kind * kRanks + rank) * kRanks + indexCount;
}

CudaFixedKernels::CudaFixedKernels(NvrtcOptions options, int device, int multiprocessors)
    : options_(std::move(options)), device_(device), multiprocessors_(multiprocessors) {}

CudaFixedKernels::~CudaFixedKernels() = default;

CudaFixedKernels& CudaFixedKernels::forDevice(const NvrtcOptions& options, int device,
                                              int multiprocessors) {
  static std::mutex mutex;
  // Never destroyed: a module unloaded at exit could outlive the CUDA context.
  static auto* byDevice = new std::map<int, std::unique_ptr<CudaFixedKernels>>;
  std::lock_guard lock(mutex);
  std::unique_ptr<CudaFixedKernels>& kernels = (*byDevice)[device];
  if (!kernels) kernels = std::make_unique<CudaFixedKernels>(options, device, multiprocessors);
  return *kernels;
}

void CudaFixedKernels::prepare(const std::vector<size_t>& entries) {
  try {
    load(entries);
  } catch (const std::exception&) {
    // Left for the first use, which builds again and reports why.
  }
}

void CudaFixedKernels::load(const std::vector<size_t>& entries) {
  std::lock_guard lock(mutex_);
  std::vector<size_t> missing;
  for (size_t entry : entries)
    if (!functions_.at(entry).load(std::memory_order_acquire) &&
        std::find(missing.begin(), missing.end(), entry) == missing.end())
      missing.push_back(entry);
  if (missing.empty()) return;
  cudaUseDevice(device_);
  std::vector<GeneratedCudaKernel> sources;
  for (size_t entry : missing)
    sources.push_back(cudaFixedKernelSource(entry));
  std::vector<CudaKernelBuild> built = NvrtcCompiler(options_).build(sources); // concurrently
  for (size_t m = 0; m < missing.size(); ++m) {
    FixedEntry e = entryAt(missing[m]);
    auto module = std::make_unique<CudaModule>(built[m].cubin, device_);
    void* function = module->function(e.name);
    cudaCheckParameter(function, e.family->argBytes, "kernel " + e.name);
    modules_.push_back(std::move(module));
    functions_[missing[m]].store(function, std::memory_order_release);
  }
}

void* CudaFixedKernels::function(size_t entry) {
  if (void* ready = functions_.at(entry).load(std::memory_order_acquire)) return ready;
  load({entry});
  return functions_[entry].load(std::memory_order_acquire);
}

void CudaFixedKernels::copy(const Tensor& from, Tensor& to, void* stream) {
  if (from.shape() != to.shape() || from.dtype() != to.dtype())
    throw Error("runtime", "device copy from " + from.describe() + " into " + to.describe());
  if (from.numel() == 0) return;
  if (from.rank() > kMaxRank)
    throw Error("runtime", "no strided device copy of rank " + std::to_string(from.rank()) + " (" +
                               from.describe() + ")");
  CopyArgs args{from.numel(), static_cast<int64_t>(from.rank()), 0, {}, {}, {}, from.data(),
                to.data()};
  for (size_t d = 0; d < from.rank(); ++d) {
    args.sizes[d] = from.size(d);
    args.from[d] = from.strides()[d];
    args.to[d] = to.strides()[d];
  }
  args.narrow = fitsNarrowIndex(args.n, {&from, &to}) ? 1 : 0;
  void* function = this->function(copyEntry(from.dtype()));
  unsigned block[3] = {256, 1, 1};
  unsigned grid[3] = {gridFor(args.n, multiprocessors_), 1, 1};
  cudaLaunch(function, grid, block, 0, stream, &args, sizeof args,
             [&] { return "strided copy of " + from.describe(); });
}

void CudaFixedKernels::gatherRows(const Tensor& table, const Tensor& indices, Tensor& out,
                                  void* stream) {
  bool wide = indices.dtype() == DType::I64;
  if (table.rank() != 2 || table.strides()[1] != 1 || !indices.isContiguous() ||
      !out.isContiguous() || (!wide && indices.dtype() != DType::I32) ||
      out.dtype() != table.dtype() || out.numel() != indices.numel() * table.size(1))
    throw Error("runtime", "row gather of " + table.describe() + " at " + indices.describe() +
                               " into " + out.describe());
  if (out.numel() == 0) return;
  // The widest unit that divides a row, the table's row stride and both base addresses.
  size_t element = dtypeSize(table.dtype());
  size_t rowBytes = static_cast<size_t>(table.size(1)) * element;
  size_t strideBytes = static_cast<size_t>(table.strides()[0]) * element;
  size_t unit = 16;
  auto fits = [&](size_t u) {
    return rowBytes % u == 0 && strideBytes % u == 0 &&
           reinterpret_cast<uintptr_t>(table.data()) % u == 0 &&
           reinterpret_cast<uintptr_t>(out.data()) % u == 0;
  };
  while (unit > element && !fits(unit))
    unit /= 2;
  GatherArgs args{static_cast<int64_t>(out.nbytes() / unit),
                  static_cast<int64_t>(rowBytes / unit),
                  static_cast<int64_t>(strideBytes / unit),
                  table.size(0),
                  wide ? 1 : 0,
                  indices.data(),
                  table.data(),
                  out.data()};
  void* function = this->function(kGatherFirst + log2Bytes(unit));
  unsigned block[3] = {256, 1, 1};
  unsigned grid[3] = {gridFor(args.n, multiprocessors_), 1, 1};
  cudaLaunch(function, grid, block, 0, stream, &args, sizeof args,
             [&] { return "row gather of " + table.describe() + " at " + indices.describe(); });
}

void CudaFixedKernels::scatter(const std::vector<const Tensor*>& indices, const Tensor& values,
                               bool accumulate, Tensor& out, void* stream) {
  auto refuse = [&](const std::string& why) {
    throw Error("runtime", "index_put into " + out.describe() + ": " + why);
  };
  // The block the index tensors broadcast to, and the dims of out before and after it.
  const AdvancedIndexingLayout<int64_t> layout(out.rank(), indexSlotShapes(indices),
                                               "aten.index_put");
  for (size_t d = 0; d < indices.size(); ++d)
    if (indices[d] && indices[d]->dtype() != DType::I64 && indices[d]->dtype() != DType::I32)
      refuse("index " + std::to_string(d) + " is " + indices[d]->describe() +
             ", not int64 or int32");
  if (values.dtype() != out.dtype()) refuse("values " + values.describe() + " of another dtype");
  if (!scatterEntry(out.dtype(), accumulate, 0, 0))
    refuse("no atomic add in " + std::string(dtypeName(out.dtype())));
  // The iteration (indexed) shape: per dim, its size, out's stride (0 in the block) and, for a
  // block dim, its position in the block.
  std::vector<int64_t> sizes, outStrides;
  std::vector<int64_t> blockDimOf; // -1 outside the block
  auto addRestDim = [&](size_t d) {
    sizes.push_back(out.size(d));
    outStrides.push_back(out.strides()[d]);
    blockDimOf.push_back(-1);
  };
  for (size_t d : layout.before)
    addRestDim(d);
  for (size_t b = 0; b < layout.block.size(); ++b) {
    sizes.push_back(layout.block[b]);
    outStrides.push_back(0);
    blockDimOf.push_back(static_cast<int64_t>(b));
  }
  for (size_t d : layout.after)
    addRestDim(d);
  auto indexCount =
      static_cast<size_t>(std::count(layout.indexed.begin(), layout.indexed.end(), true));
  std::optional<size_t> entry = scatterEntry(out.dtype(), accumulate, sizes.size(), indexCount);
  if (!entry)
    refuse("an indexed shape of rank " + std::to_string(sizes.size()) + ", past " +
           std::to_string(kMaxRank));
  ScatterArgs args{};
  args.rank = static_cast<int64_t>(sizes.size());
  args.n = 1;
  for (size_t k = 0; k < sizes.size(); ++k) {
    args.n *= sizes[k];
    args.sizes[k] = sizes[k];
    args.outStrides[k] = outStrides[k];
  }
  if (args.n == 0) return;
  // Values read as broadcast to the indexed shape: stride 0 along their broadcast dims.
  if (values.rank() > sizes.size()) refuse("values " + values.describe() + " of a higher rank");
  size_t lead = sizes.size() - values.rank();
  for (size_t k = 0; k < values.rank(); ++k)
    if (values.size(k) != 1) args.valueStrides[lead + k] = values.strides()[k];
  for (size_t slot = 0; slot < indices.size(); ++slot) {
    const Tensor* index = indices[slot];
    if (!index) continue;
    size_t k = static_cast<size_t>(args.indexCount++);
    args.indices[k] = index->data();
    args.indexWide[k] = index->dtype() == DType::I64 ? 1 : 0;
    args.indexDimSizes[k] = out.size(slot);
    args.indexOutStrides[k] = out.strides()[slot];
    // The index read as broadcast to the block, at the iteration dims of the block.
    size_t indexLead = layout.block.size() - index->rank();
    for (size_t dim = 0; dim < sizes.size(); ++dim) {
      if (blockDimOf[dim] < 0) continue;
      auto b = static_cast<size_t>(blockDimOf[dim]);
      if (b < indexLead) continue;
      if (index->size(b - indexLead) != 1)
        args.indexStrides[k][dim] = index->strides()[b - indexLead];
    }
  }
  args.narrow = args.n < (int64_t{1} << 31) ? 1 : 0;
  args.values = values.data();
  args.out = out.data();
  void* function = this->function(*entry);
  unsigned blockDims[3] = {256, 1, 1};
  unsigned grid[3] = {gridFor(args.n, multiprocessors_), 1, 1};
  cudaLaunch(function, grid, blockDims, 0, stream, &args, sizeof args, [&] {
    return std::string(accumulate ? "scatter-add" : "scatter") + " of " + values.describe() +
           " into " + out.describe();
  });
}

} // namespace loupe
