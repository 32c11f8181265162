// The CUDA kernels that are not generated from a graph (cuda_fixed_kernels.h).
#include "compiler/runtime/cuda_fixed_kernels.h"

#include <algorithm>
#include <map>
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
constexpr const char* kSource = R"(
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
extern "C" __global__ void loupe_copy_1(LoupeCopyArgs a) { loupe_copy<unsigned char>(a); }
extern "C" __global__ void loupe_copy_2(LoupeCopyArgs a) { loupe_copy<unsigned short>(a); }
extern "C" __global__ void loupe_copy_4(LoupeCopyArgs a) { loupe_copy<unsigned int>(a); }
extern "C" __global__ void loupe_copy_8(LoupeCopyArgs a) { loupe_copy<unsigned long long>(a); }

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
extern "C" __global__ void loupe_gather_1(LoupeGatherArgs a) { loupe_gather<unsigned char>(a); }
extern "C" __global__ void loupe_gather_2(LoupeGatherArgs a) { loupe_gather<unsigned short>(a); }
extern "C" __global__ void loupe_gather_4(LoupeGatherArgs a) { loupe_gather<unsigned int>(a); }
extern "C" __global__ void loupe_gather_8(LoupeGatherArgs a) { loupe_gather<unsigned long long>(a); }
extern "C" __global__ void loupe_gather_16(LoupeGatherArgs a) { loupe_gather<uint4>(a); }

struct LoupeScatterArgs {
  long long n, rank, indexCount, narrow;
  long long sizes[8], valueStrides[8], outStrides[8];
  long long indexStrides[8][8], indexDimSizes[8], indexOutStrides[8], indexWide[8];
  const void* indices[8];
  const char* values;
  char* out;
};
template <typename T, bool Add, typename I>
__device__ void loupe_scatter_as(const LoupeScatterArgs& a) {
  I n = (I)a.n;
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    I rest = i;
    long long value = 0, to = 0;
    long long at[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int d = 7; d >= 0; --d) {
      if (d >= a.rank) continue;
      I size = (I)a.sizes[d], coordinate = rest % size;
      rest /= size;
      value += (long long)coordinate * a.valueStrides[d];
      to += (long long)coordinate * a.outStrides[d];
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (k < a.indexCount) at[k] += (long long)coordinate * a.indexStrides[k][d];
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (k >= a.indexCount) continue;
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
template <typename T, bool Add>
__device__ void loupe_scatter(const LoupeScatterArgs& a) {
  if (a.narrow) loupe_scatter_as<T, Add, unsigned int>(a);
  else loupe_scatter_as<T, Add, long long>(a);
}
extern "C" __global__ void loupe_scatter_add_f32(LoupeScatterArgs a) { loupe_scatter<float, true>(a); }
extern "C" __global__ void loupe_scatter_add_f64(LoupeScatterArgs a) { loupe_scatter<double, true>(a); }
extern "C" __global__ void loupe_scatter_add_i32(LoupeScatterArgs a) { loupe_scatter<int, true>(a); }
extern "C" __global__ void loupe_scatter_add_i64(LoupeScatterArgs a) {
  loupe_scatter<unsigned long long, true>(a);
}
extern "C" __global__ void loupe_scatter_1(LoupeScatterArgs a) { loupe_scatter<unsigned char, false>(a); }
extern "C" __global__ void loupe_scatter_2(LoupeScatterArgs a) { loupe_scatter<unsigned short, false>(a); }
extern "C" __global__ void loupe_scatter_4(LoupeScatterArgs a) { loupe_scatter<unsigned int, false>(a); }
extern "C" __global__ void loupe_scatter_8(LoupeScatterArgs a) { loupe_scatter<unsigned long long, false>(a); }
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

const std::vector<std::string> kCopyEntries = {"loupe_copy_1", "loupe_copy_2", "loupe_copy_4",
                                               "loupe_copy_8"};
const std::vector<std::string> kGatherEntries = {
    "loupe_gather_1", "loupe_gather_2", "loupe_gather_4", "loupe_gather_8", "loupe_gather_16"};
// The adding scatters by dtype (scatterAddEntry), then the writing ones by log2 of the size.
const std::vector<std::string> kScatterEntries = {"loupe_scatter_add_f32", "loupe_scatter_add_f64",
                                                  "loupe_scatter_add_i32", "loupe_scatter_add_i64",
                                                  "loupe_scatter_1",       "loupe_scatter_2",
                                                  "loupe_scatter_4",       "loupe_scatter_8"};

// The entry of kScatterEntries that adds in `dtype`, or -1.
int scatterAddEntry(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 0;
  case DType::F64:
    return 1;
  case DType::I32:
    return 2;
  case DType::I64:
    return 3;
  default:
    return -1;
  }
}

// log2 of a power-of-two byte count up to 16.
int log2Bytes(size_t bytes) {
  int log = 0;
  while ((size_t{1} << log) < bytes)
    ++log;
  return log;
}

unsigned gridFor(int64_t n, int multiprocessors) {
  int64_t blocks = std::min<int64_t>((n + 255) / 256, int64_t{multiprocessors} * 8);
  return static_cast<unsigned>(std::max<int64_t>(blocks, 1));
}

} // namespace

GeneratedCudaKernel cudaFixedKernelSource() {
  std::vector<std::string> entries = kCopyEntries;
  entries.insert(entries.end(), kGatherEntries.begin(), kGatherEntries.end());
  entries.insert(entries.end(), kScatterEntries.begin(), kScatterEntries.end());
  return {kSource, entries, "strided copy, row gather and scatter"};
}

struct CudaFixedKernels::Module {
  std::unique_ptr<CudaModule> module;
  void* copies[4] = {};   // by log2 of the element size
  void* gathers[5] = {};  // by log2 of the unit size
  void* scatters[8] = {}; // as kScatterEntries
};

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

void CudaFixedKernels::prepare() {
  try {
    module();
  } catch (const std::exception&) {
    // Left for the first use, which builds again and reports why.
  }
}

CudaFixedKernels::Module& CudaFixedKernels::module() {
  if (Module* ready = ready_.load(std::memory_order_acquire)) return *ready;
  std::lock_guard lock(mutex_);
  if (module_) return *module_;
  cudaUseDevice(device_);
  CudaKernelBuild built = NvrtcCompiler(options_).build({cudaFixedKernelSource()}).front();
  auto loaded = std::make_unique<Module>();
  loaded->module = std::make_unique<CudaModule>(built.cubin, device_);
  auto load = [&](const std::string& entry, size_t argBytes) {
    void* function = loaded->module->function(entry);
    cudaCheckParameter(function, argBytes, "kernel " + entry);
    return function;
  };
  for (size_t e = 0; e < kCopyEntries.size(); ++e)
    loaded->copies[e] = load(kCopyEntries[e], sizeof(CopyArgs));
  for (size_t e = 0; e < kGatherEntries.size(); ++e)
    loaded->gathers[e] = load(kGatherEntries[e], sizeof(GatherArgs));
  for (size_t e = 0; e < kScatterEntries.size(); ++e)
    loaded->scatters[e] = load(kScatterEntries[e], sizeof(ScatterArgs));
  module_ = std::move(loaded);
  ready_.store(module_.get(), std::memory_order_release);
  return *module_;
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
  void* function = module().copies[log2Bytes(dtypeSize(from.dtype()))];
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
  void* function = module().gathers[log2Bytes(unit)];
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
  int entry = accumulate ? scatterAddEntry(out.dtype()) : 4 + log2Bytes(dtypeSize(out.dtype()));
  if (entry < 0) refuse("no atomic add in " + std::string(dtypeName(out.dtype())));
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
  if (sizes.size() > kMaxRank || indexCount > kMaxRank)
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
  void* function = module().scatters[entry];
  unsigned blockDims[3] = {256, 1, 1};
  unsigned grid[3] = {gridFor(args.n, multiprocessors_), 1, 1};
  cudaLaunch(function, grid, blockDims, 0, stream, &args, sizeof args, [&] {
    return std::string(accumulate ? "scatter-add" : "scatter") + " of " + values.describe() +
           " into " + out.describe();
  });
}

} // namespace loupe
