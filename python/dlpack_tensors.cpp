#include "python/dlpack_tensors.h"

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/error.h"

namespace loupe::binding {
namespace {

struct DTypePair {
  DType loupe;
  nb::dlpack::dtype dlpack;
};

const DTypePair kDTypes[] = {
    {DType::Bool, nb::dtype<bool>()},
    {DType::U8, nb::dtype<uint8_t>()},
    {DType::I8, nb::dtype<int8_t>()},
    {DType::I16, nb::dtype<int16_t>()},
    {DType::I32, nb::dtype<int32_t>()},
    {DType::I64, nb::dtype<int64_t>()},
    {DType::F16, {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}},
    {DType::BF16, {static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1}},
    {DType::F32, nb::dtype<float>()},
    {DType::F64, nb::dtype<double>()},
};

DType toLoupe(nb::dlpack::dtype dtype, size_t position) {
  for (const auto& pair : kDTypes)
    if (pair.dlpack == dtype) return pair.loupe;
  throw Error("runtime", "input " + std::to_string(position) +
                             " has a dtype Loupe does not support (DLPack code " +
                             std::to_string(dtype.code) + ", " + std::to_string(dtype.bits) +
                             " bits)");
}

nb::dlpack::dtype toDLPack(DType dtype) {
  for (const auto& pair : kDTypes)
    if (pair.loupe == dtype) return pair.dlpack;
  throw Error("runtime", "no DLPack dtype for " + std::string(dtypeName(dtype)));
}

// DLPack's managed tensor (the unversioned ABI of dlpack.h), which torch._C._from_dlpack takes
// over: it calls `deleter` when the torch tensor dies.
struct DLManagedTensor {
  nb::dlpack::dltensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

// What a torch tensor made by toTorch holds on to: a copy of the Loupe tensor, so its storage
// and the shape and strides the DLTensor points into stay alive.
struct ExportedTensor {
  Tensor tensor;
  DLManagedTensor managed;
};

} // namespace

// A Loupe tensor over a torch tensor's memory; the caller keeps the torch tensor alive.
Tensor borrowArray(const AnyArray& array, size_t position) {
  std::vector<int64_t> shape(array.ndim()), strides(array.ndim());
  for (size_t d = 0; d < array.ndim(); ++d) {
    shape[d] = static_cast<int64_t>(array.shape(d));
    strides[d] = array.stride(d);
  }
  Device device;
  if (array.device_type() == nb::device::cuda::value)
    device = Device{Device::Kind::CUDA, array.device_id()};
  else if (array.device_type() != nb::device::cpu::value)
    throw Error("runtime", "input " + std::to_string(position) +
                               " is on a device Loupe does not run on (DLPack device type " +
                               std::to_string(array.device_type()) + ")");
  return Tensor::borrow(array.data(), toLoupe(array.dtype(), position), std::move(shape),
                        std::move(strides), device);
}

Tensor keepArray(nb::handle object, size_t position) {
  // The array keeps the embedder's tensor alive until the last Loupe tensor on it goes.
  std::shared_ptr<AnyArray> kept = heldWithGil(new AnyArray(nb::cast<AnyArray>(object)));
  Tensor borrowed = borrowArray(*kept, position);
  return Tensor::borrow(borrowed.data(), borrowed.dtype(), borrowed.shape(), borrowed.strides(),
                        borrowed.device(), std::move(kept));
}

// A torch tensor over a Loupe tensor's memory; it keeps a copy of the Loupe tensor, and so its
// storage when the tensor owns it. For borrowed memory (the fallback's arguments, valid during
// the callback) the caller guarantees the memory outlives every use of the result.
// The capsule goes straight to torch._C._from_dlpack: torch.utils.dlpack.from_dlpack's Python
// checks and nanobind's export through __dlpack__ cost more than a small kernel, per output.
nb::object toTorch(const Tensor& tensor) {
  // Never released: it would outlive the interpreter as a static.
  static nb::handle fromDLPack =
      nb::object(nb::module_::import_("torch._C").attr("_from_dlpack")).release();
  auto* exported = new ExportedTensor{tensor, {}};
  nb::dlpack::dltensor& dl = exported->managed.dl_tensor;
  dl.data = tensor.data();
  Device device = tensor.device();
  dl.device = device.isCpu()
                  ? nb::dlpack::device{static_cast<int32_t>(nb::device::cpu::value), 0}
                  : nb::dlpack::device{static_cast<int32_t>(nb::device::cuda::value), device.index};
  dl.ndim = static_cast<int32_t>(tensor.rank());
  dl.dtype = toDLPack(tensor.dtype());
  dl.shape = const_cast<int64_t*>(exported->tensor.shape().data());
  dl.strides = const_cast<int64_t*>(exported->tensor.strides().data());
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportedTensor*>(self->manager_ctx);
  };
  // torch renames a capsule it takes over to "used_dltensor"; one it never took (an error in
  // between) still frees the tensor.
  PyObject* capsule = PyCapsule_New(&exported->managed, "dltensor", [](PyObject* object) {
    if (PyCapsule_IsValid(object, "dltensor")) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(object, "dltensor"));
      managed->deleter(managed);
    }
  });
  if (!capsule) {
    delete exported;
    throw nb::python_error();
  }
  return fromDLPack(nb::steal(capsule));
}

} // namespace loupe::binding
