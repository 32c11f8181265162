#include "compiler/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "compiler/ir/error.h"
#include "compiler/tensor/allocation_meter.h"
#include "compiler/tensor/host_block_cache.h"

namespace loupe {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= shape[i];
  }
  return strides;
}

namespace {
std::shared_ptr<void> allocate(size_t bytes) {
  // 64-byte alignment so generated kernels can vectorise; never zero-sized. Large blocks are
  // reused rather than faulted in again on every call (host_block_cache.h).
  HostBlockCache& cache = HostBlockCache::global();
  void* p = cache.allocate(bytes);
  if (!p) throw Error("runtime", "out of memory allocating " + std::to_string(bytes) + " bytes");
  const auto& meter = AllocationMeter::active();
  if (!meter) return std::shared_ptr<void>(p, [&cache, bytes](void* q) { cache.free(q, bytes); });
  auto charged = static_cast<int64_t>(bytes);
  meter->allocated(charged);
  return std::shared_ptr<void>(p, [&cache, counts = meter, charged, bytes](void* q) {
    counts->freed(charged);
    cache.free(q, bytes);
  });
}

// Copies between two layouts of one shape in one dtype without converting through double: an
// odometer over every dim but the last, whose elements are copied as `Element`s (an unsigned
// integer of the dtype's size), or with one memcpy when both sides are dense there.
template <typename Element>
void stridedCopy(const std::vector<int64_t>& shape, char* to, const std::vector<int64_t>& toStrides,
                 const char* from, const std::vector<int64_t>& fromStrides) {
  size_t rank = shape.size();
  if (rank == 0) {
    std::memcpy(to, from, sizeof(Element));
    return;
  }
  int64_t inner = shape.back(), toInner = toStrides.back(), fromInner = fromStrides.back();
  bool dense = inner == 1 || (toInner == 1 && fromInner == 1);
  std::vector<int64_t> index(rank - 1, 0);
  for (;;) {
    int64_t toOffset = 0, fromOffset = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      toOffset += index[d] * toStrides[d];
      fromOffset += index[d] * fromStrides[d];
    }
    auto* out = reinterpret_cast<Element*>(to) + toOffset;
    const auto* in = reinterpret_cast<const Element*>(from) + fromOffset;
    if (dense)
      std::memcpy(out, in, static_cast<size_t>(inner) * sizeof(Element));
    else
      for (int64_t i = 0; i < inner; ++i)
        out[i * toInner] = in[i * fromInner];
    size_t d = rank - 1;
    while (d > 0 && ++index[d - 1] == shape[d - 1])
      index[--d] = 0;
    if (d == 0) return;
  }
}
} // namespace

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.strides_ = contiguousStrides(shape);
  t.shape_ = std::move(shape);
  t.storage_ = allocate(t.nbytes());
  return t;
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t = empty(dtype, std::move(shape));
  std::memset(t.data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::borrow(void* data, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides, Device device, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = device;
  t.strides_ = strides.empty() && !shape.empty() ? contiguousStrides(shape) : std::move(strides);
  t.shape_ = std::move(shape);
  // torch gives empty tensors a null data pointer; an empty tensor is still a defined tensor,
  // so it borrows a placeholder address that is never read.
  static char emptyPlaceholder;
  if (!data) {
    if (t.numel() != 0)
      throw Error("runtime", "cannot borrow " + t.describe() + " from a null data pointer");
    data = &emptyPlaceholder;
  }
  t.storage_ = owner ? std::shared_ptr<void>(std::move(owner), data)
                     : std::shared_ptr<void>(data, [](void*) {});
  return t;
}

Tensor Tensor::adopt(std::shared_ptr<void> storage, Device device, DType dtype,
                     std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = device;
  t.strides_ = contiguousStrides(shape);
  t.shape_ = std::move(shape);
  if (!storage) return borrow(nullptr, dtype, t.shape_, {}, device); // empty: no memory needed
  // Memory allocated for Loupe, as Tensor::empty's: the meter open on this thread is charged.
  if (const auto& meter = AllocationMeter::active()) {
    auto charged = static_cast<int64_t>(t.nbytes());
    meter->allocated(charged);
    void* data = storage.get();
    storage = std::shared_ptr<void>(data, [kept = std::move(storage), counts = meter,
                                           charged](void*) { counts->freed(charged); });
  }
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::within(const Tensor& block, size_t byteOffset, DType dtype,
                      std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = block.device_;
  t.strides_ = contiguousStrides(shape);
  t.shape_ = std::move(shape);
  if (byteOffset + t.nbytes() > block.nbytes())
    throw Error("runtime", t.describe() + " at byte " + std::to_string(byteOffset) +
                               " does not fit in " + block.describe());
  t.storage_ = std::shared_ptr<void>(block.storage_, static_cast<char*>(block.data()) + byteOffset);
  return t;
}

void Tensor::requireHost(const char* what) const {
  if (!device_.isCpu())
    throw Error("runtime", std::string(what) + " of " + describe() +
                               ": its elements are in device memory, which the host cannot read");
}

Tensor Tensor::fromDoubles(const std::vector<double>& values, DType dtype,
                           std::vector<int64_t> shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error("runtime", "fromDoubles: " + std::to_string(values.size()) +
                               " values for a tensor of " + std::to_string(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, values[static_cast<size_t>(i)]);
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

bool Tensor::isContiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::data() const {
  return static_cast<char*>(storage_.get()) + offset_ * static_cast<int64_t>(dtypeSize(dtype_));
}

namespace {

int64_t elementOffset(const Tensor& t, int64_t linear) {
  int64_t off = 0;
  const auto& shape = t.shape();
  const auto& strides = t.strides();
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t idx = linear % shape[i];
    linear /= shape[i];
    off += idx * strides[i];
  }
  return off;
}

double load(const void* p, DType dtype) {
  switch (dtype) {
  case DType::Bool:
    return *static_cast<const bool*>(p) ? 1.0 : 0.0;
  case DType::U8:
    return *static_cast<const uint8_t*>(p);
  case DType::I8:
    return *static_cast<const int8_t*>(p);
  case DType::I16:
    return *static_cast<const int16_t*>(p);
  case DType::I32:
    return *static_cast<const int32_t*>(p);
  case DType::I64:
    return static_cast<double>(*static_cast<const int64_t*>(p));
  case DType::F16:
    return halfToFloat(*static_cast<const uint16_t*>(p));
  case DType::BF16:
    return bfloat16ToFloat(*static_cast<const uint16_t*>(p));
  case DType::F32:
    return *static_cast<const float*>(p);
  case DType::F64:
    return *static_cast<const double*>(p);
  }
  return 0;
}

template <typename T>
T toInteger(double v) {
  // torch truncates towards zero when converting floats to integers.
  if (std::isnan(v)) return 0;
  return static_cast<T>(std::trunc(v));
}

void store(void* p, DType dtype, double v) {
  switch (dtype) {
  case DType::Bool:
    *static_cast<bool*>(p) = v != 0;
    break;
  case DType::U8:
    *static_cast<uint8_t*>(p) = static_cast<uint8_t>(toInteger<int64_t>(v));
    break;
  case DType::I8:
    *static_cast<int8_t*>(p) = toInteger<int8_t>(v);
    break;
  case DType::I16:
    *static_cast<int16_t*>(p) = toInteger<int16_t>(v);
    break;
  case DType::I32:
    *static_cast<int32_t*>(p) = toInteger<int32_t>(v);
    break;
  case DType::I64:
    *static_cast<int64_t*>(p) = toInteger<int64_t>(v);
    break;
  case DType::F16:
    *static_cast<uint16_t*>(p) = floatToHalf(static_cast<float>(v));
    break;
  case DType::BF16:
    *static_cast<uint16_t*>(p) = floatToBfloat16(static_cast<float>(v));
    break;
  case DType::F32:
    *static_cast<float*>(p) = static_cast<float>(v);
    break;
  case DType::F64:
    *static_cast<double*>(p) = v;
    break;
  }
}

} // namespace

double Tensor::at(int64_t linearIndex) const {
  requireHost("reading an element");
  const char* base = static_cast<const char*>(data());
  return load(base + elementOffset(*this, linearIndex) * static_cast<int64_t>(dtypeSize(dtype_)),
              dtype_);
}

void Tensor::set(int64_t linearIndex, double value) {
  requireHost("writing an element");
  char* base = static_cast<char*>(data());
  store(base + elementOffset(*this, linearIndex) * static_cast<int64_t>(dtypeSize(dtype_)), dtype_,
        value);
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    out[static_cast<size_t>(i)] = at(i);
  return out;
}

Tensor Tensor::view(std::vector<int64_t> shape, std::vector<int64_t> strides,
                    int64_t offset) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

Tensor Tensor::contiguous() const {
  return isContiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  requireHost("a host copy");
  Tensor t = empty(dtype_, shape_);
  t.copyFrom(*this);
  return t;
}

Tensor Tensor::to(DType dtype) const {
  requireHost("a host conversion");
  Tensor t = empty(dtype, shape_);
  t.copyFrom(*this);
  return t;
}

void Tensor::fill(double value) {
  requireHost("filling");
  if (numel() == 0) return;
  if (!isContiguous()) {
    for (int64_t i = 0; i < numel(); ++i)
      set(i, value);
    return;
  }
  set(0, value);
  // The first element's bytes, doubled until they cover the tensor.
  auto* bytes = static_cast<char*>(data());
  size_t filled = dtypeSize(dtype_), total = nbytes();
  while (filled < total) {
    size_t chunk = std::min(filled, total - filled);
    std::memcpy(bytes + filled, bytes, chunk);
    filled += chunk;
  }
}

void Tensor::copyFrom(const Tensor& source) {
  requireHost("a host copy into");
  source.requireHost("a host copy from");
  if (source.shape_ != shape_)
    throw Error("runtime", "copy from " + source.describe() + " into " + describe());
  if (source.dtype_ == dtype_ && isContiguous() && source.isContiguous()) {
    std::memmove(data(), source.data(), nbytes());
    return;
  }
  if (source.dtype_ == dtype_ && numel() > 0) {
    auto copy = dtypeSize(dtype_) == 1   ? stridedCopy<uint8_t>
                : dtypeSize(dtype_) == 2 ? stridedCopy<uint16_t>
                : dtypeSize(dtype_) == 4 ? stridedCopy<uint32_t>
                                         : stridedCopy<uint64_t>;
    copy(shape_, static_cast<char*>(data()), strides_, static_cast<const char*>(source.data()),
         source.strides_);
    return;
  }
  for (int64_t i = 0; i < numel(); ++i)
    set(i, source.at(i));
}

std::string Tensor::describe() const {
  std::string s = std::string(dtypeName(dtype_)) + "[";
  for (size_t i = 0; i < shape_.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape_[i]);
  return s + "]" + (device_.isCpu() ? "" : " on " + device_.str());
}

// ---- half precision -------------------------------------------------------------------------

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // subnormal: normalise
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ff;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  uint32_t sign = (bits >> 16) & 0x8000;
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff) // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00); // overflow to inf
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (remainder > midpoint || (remainder == midpoint && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fff;
  if (remainder > 0x1000 || (remainder == 0x1000 && (half & 1))) ++half; // round to nearest even
  return static_cast<uint16_t>(half);
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

uint16_t floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40); // nan
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

} // namespace loupe
