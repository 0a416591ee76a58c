// The few kernels of the device's own: its tensors made in its memory (a ZeroTensor without memory too), views,
// resizes and set_ on that memory, and its copies, each one recorded in the event log with its direction and bytes.
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/record_function.h>
#include <torch/library.h>

#include "hostdev.h"

namespace hostdev {

namespace {

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                               std::optional<at::Device> device, std::optional<bool>, std::optional<at::MemoryFormat> format) {
  check_index(device);
  return at::detail::empty_generic(size, device_memory(), kDeviceKeys, c10::dtype_or_default(dtype), format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout>, std::optional<at::Device> device, std::optional<bool>) {
  check_index(device);
  return at::detail::empty_strided_generic(size, stride, device_memory(), kDeviceKeys, c10::dtype_or_default(dtype));
}

// autograd's zeros that hold no memory (a real input's sgn backward, an unused output's gradient): a ZeroTensor of
// the device, as the CPU's own has (a device tensor over the CPU's null memory read from nowhere: SIGSEGV).
void no_memory(void*) {}

struct NoMemory final : c10::Allocator {
  c10::DataPtr allocate(size_t) override { return {nullptr, nullptr, &no_memory, kDevice}; }
  c10::DeleterFnPtr raw_deleter() const override { return &no_memory; }
  void copy_data(void*, const void*, std::size_t) const override {}
};

NoMemory nothing;

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<int64_t> offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<at::MemoryFormat> format) {
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, std::nullopt);
  if (format.has_value() && *format != at::MemoryFormat::Preserve) {
    self.unsafeGetTensorImpl()->empty_tensor_restride(*format);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source, int64_t offset, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), offset, size, stride);
}

at::Tensor& set_source(at::Tensor& self, at::Storage source) {
  int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {elements}, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, device_memory(), /*resizable=*/true);
  return set_storage(self, std::move(empty), 0, {0}, {});
}

std::string direction_of(const at::Tensor& source, const at::Tensor& destination) {
  if (on_device(source) && on_device(destination)) return "on_device";
  return on_device(destination) ? "to_device" : "to_host";
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  record("copy", falling_back, direction_of(self, dst), static_cast<int64_t>(self.numel()) * self.element_size());
  on_cpu(dst).copy_(on_cpu(self));
  return dst;
}

// copy_ of its own, as a backend has (torch's own copy_ hands a device's copies to _copy_from, which the Conjugate
// and Negative keys intercept first: a lazily conjugated source then cloned itself without end, and Python died).
// The CPU's copy_ on the aliases converts dtypes, broadcasts and resolves the bits; the log has each copy.
at::Tensor& copy_kernel(at::Tensor& self, const at::Tensor& src, bool /*non_blocking*/) {
  if (self.is_same(src)) return self;
  RECORD_FUNCTION("hostdev::copy", std::vector<c10::IValue>());  // the profiler's record of the device's copy, as CUDA's Memcpy
  int64_t bytes = static_cast<int64_t>(self.numel()) * self.element_size();
  record("copy", falling_back, direction_of(src, self), on_device(src) ? static_cast<int64_t>(src.numel()) * src.element_size() : bytes);
  if (src._is_zerotensor()) {  // autograd's zeros without memory (a real input's sgn backward): zeros, read from nowhere
    on_cpu(self).zero_();
    return self;
  }
  on_cpu(self).copy_(on_cpu(src));
  return self;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

}  // namespace

at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                                 std::optional<at::Device> device, std::optional<bool>) {
  check_index(device);
  auto keys = kDeviceKeys | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &nothing, keys, c10::dtype_or_default(dtype), std::nullopt);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_efficientzerotensor", efficient_zero_tensor);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Storage", set_source);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("set_", set_empty);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("copy_", copy_kernel);
}

}  // namespace hostdev
