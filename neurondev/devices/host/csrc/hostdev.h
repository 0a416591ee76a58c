// neurondev's host-memory test device: a PyTorch PrivateUse1 backend whose memory is host memory.
//
// For learning and for tests, never an accelerator. Laid out as PyTorch's own out-of-tree device (OpenReg) is: the
// event log and its observer (event_log.cpp), memory (memory.cpp), the few kernels of its own (kernels.cpp) and the
// ones a network needs (kernels_nn.cpp), ops run natively (native.cpp), the fallback (fallback.cpp), and the hooks,
// guard and Python module (registration.cpp); hostdev.cpp includes them all, and neurondev/devices/host/loader.py
// builds that one translation unit into the extension:
//   * ops run "natively" by default: a boxed kernel registered for each ATen op that has a CPU
//     kernel runs that CPU kernel on the same memory (the tensors are aliased, nothing is copied);
//   * ops named in set_fallback() have no PrivateUse1 kernel: they reach the backend fallback, which
//     runs them through at::native::cpu_fallback (inputs copied to a CPU tensor, outputs copied back),
//     as a backend whose operator table marks them CPU_FALLBACK does;
//   * every copy through _copy_from (direction: to the host, to the device, or on the device; bytes) and
//     every fallback is recorded in an event log that Python reads back (the ground truth neurondev's own
//     accounting is tested against).
// This header is what the files share; each keeps the rest to itself.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace hostdev {

inline constexpr c10::DeviceType kDeviceType = c10::DeviceType::PrivateUse1;
inline const c10::Device kDevice(kDeviceType, 0);
inline const c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

inline bool on_device(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == kDeviceType;
}

// One device: hostdev:0. An index beyond it is refused, as a real backend refuses an ordinal it does not have.
inline void check_index(std::optional<at::Device> device) {
  if (device.has_value() && device->type() == kDeviceType) {
    TORCH_CHECK(!device->has_index() || device->index() == 0, "hostdev has one device, hostdev:0; got ", device->str());
  }
}

// "aten::addmm.out": an operator's full name.
inline std::string op_name(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// --- the event log (event_log.cpp) ----------------------------------------------------------------
extern thread_local std::string falling_back;  // the op whose fallback is running on this thread
extern thread_local int64_t fallback_bytes;    // what that fallback's copies have moved across the boundary so far
// One event: kind "copy", "fallback" or "sync"; the op falling back or syncing (for a copy: the fallback it is part
// of, or ""); a copy's direction ("to_host", "to_device", "on_device"; "" otherwise); its bytes (a fallback's: what
// its copies moved).
void record(const std::string& kind, const std::string& op, const std::string& direction, int64_t bytes);

// --- memory (memory.cpp) --------------------------------------------------------------------------
c10::Allocator* device_memory();  // the device's: host memory that says it is the device's
c10::Allocator* pinned_memory();  // pinned host memory: host memory the device knows it allocated
bool is_pinned_pointer(const void* data);
// A tensor of `device` whose storage is `tensor`'s memory, which it keeps alive: no byte is copied.
at::Tensor alias_on(const at::Tensor& tensor, c10::Device device, c10::DispatchKeySet keys, c10::Allocator* allocator);
// A view's lazy bits (a conjugate, a negative) are the tensor's meaning, not its memory's: an alias keeps them.
void keep_bits(const at::Tensor& from, const at::Tensor& to);
at::Tensor on_cpu(const at::Tensor& tensor);  // a device tensor as a CPU tensor over the same memory

// --- kernels (kernels.cpp) ------------------------------------------------------------------------
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                                 std::optional<at::Device> device, std::optional<bool>);

// --- ops run natively and the fallback (native.cpp, fallback.cpp) ---------------------------------
void run_natively(const c10::OperatorHandle& op, torch::jit::Stack* stack);
bool falls_back(const std::string& overload);  // "convolution_overrideable": named in set_fallback() now

}  // namespace hostdev
