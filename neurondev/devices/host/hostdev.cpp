// neurondev's host-memory test device: a PyTorch PrivateUse1 backend whose memory is host memory.
//
// For learning and for tests, never an accelerator. Laid out as PyTorch's own out-of-tree devices
// are (an allocator, a DeviceGuardImpl, the PrivateUse1 hooks, a few kernels of its own and a boxed
// fallback), and small:
//   * ops run "natively" by default: a boxed kernel registered for each ATen op that has a CPU
//     kernel runs that CPU kernel on the same memory (the tensors are aliased, nothing is copied);
//   * ops named in set_fallback() have no PrivateUse1 kernel: they reach the backend fallback, which
//     runs them through at::native::cpu_fallback (inputs copied to a CPU tensor, outputs copied back),
//     as a backend whose operator table marks them CPU_FALLBACK does;
//   * every copy through _copy_from (direction: to the host, to the device, or on the device; bytes) and
//     every fallback is recorded in an event log that Python reads back (the ground truth neurondev's own
//     accounting is tested against).
#include <torch/extension.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/record_function.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

constexpr c10::DeviceType kDeviceType = c10::DeviceType::PrivateUse1;
const c10::Device kDevice(kDeviceType, 0);
const c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

bool on_device(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == kDeviceType;
}

// One device: hostdev:0. An index beyond it is refused, as a real backend refuses an ordinal it does not have.
void check_index(std::optional<at::Device> device) {
  if (device.has_value() && device->type() == kDeviceType) {
    TORCH_CHECK(!device->has_index() || device->index() == 0, "hostdev has one device, hostdev:0; got ", device->str());
  }
}

// --- the event log ------------------------------------------------------------------------------
struct Event {
  std::string kind;  // "copy", "fallback" or "sync"
  std::string op;    // the op falling back or syncing (for a copy: the fallback it is part of, or "")
  std::string direction;  // "to_host", "to_device", "on_device" (copies), "" (fallbacks, syncs)
  int64_t bytes;  // a copy's bytes; a fallback's: what its copies moved
};

std::mutex log_mutex;
std::vector<Event> event_log;
thread_local std::string falling_back;  // the op whose fallback is running on this thread
thread_local int64_t fallback_bytes = 0;  // what that fallback's copies have moved so far
thread_local std::string collective;  // the collective running on this thread (said from Python), whose copies these are

// --- who is told: an observer counts every event (copies, syncs, fallbacks) in C++, and while it attributes, calls
// back into Python with each one, so that Python runs only at events, never at every op. The op the program called
// (the outermost op on the thread, which a fallback happened beneath) comes from a RecordFunction callback.
struct Totals {
  int64_t to_host = 0, to_device = 0, bytes_to_host = 0, bytes_to_device = 0, syncs = 0, collective_copies = 0, fallback_bytes = 0;
  std::map<std::string, int64_t> fallbacks;
};

std::atomic<bool> observed{false};
std::atomic<bool> attributing{false};
Totals totals;  // since observing began (under log_mutex)
pybind11::object* observer = nullptr;  // the Python callable told of each event while attributing
std::optional<at::CallbackHandle> outermost_handle;
thread_local int depth = 0;
thread_local int outermost_depth = -1;  // where the outermost ATen op began (-1: none running)
thread_local std::string outermost;
int graphs_running = 0;  // compiled graphs running now (under log_mutex): their FX nodes name the op the program called

// The outermost ATen op running on the thread: the op the program called (a compiled region's scope, or a user's
// record_function, is none).
std::unique_ptr<at::ObserverContext> op_started(const at::RecordFunction& fn) {
  ++depth;
  const char* name = fn.name();
  if (outermost_depth < 0 && name != nullptr && std::strncmp(name, "aten::", 6) == 0) {
    const char* overload = fn.overload_name();
    outermost = overload != nullptr && overload[0] != '\0' ? std::string(name) + "." + overload : std::string(name);
    outermost_depth = depth;
  }
  return nullptr;
}

void op_ended(const at::RecordFunction&, at::ObserverContext*) {
  if (depth == outermost_depth) outermost_depth = -1;
  if (depth > 0) --depth;  // an op begun before observing began ends without its start seen
}

void count(const Event& event) {
  if (event.kind == "copy") {
    bool to_host = event.direction == "to_host";
    if (!to_host && event.direction != "to_device") return;
    (to_host ? totals.to_host : totals.to_device) += 1;
    (to_host ? totals.bytes_to_host : totals.bytes_to_device) += event.bytes;
    if (!collective.empty()) totals.collective_copies += 1;
  } else if (event.kind == "sync") {
    totals.syncs += 1;
  } else {
    totals.fallbacks[event.op] += 1;
    totals.fallback_bytes += event.bytes;
  }
}

void tell(const Event& event) {
  pybind11::gil_scoped_acquire gil;
  if (observer == nullptr) return;
  try {
    (*observer)(event.kind, event.op, event.direction, event.bytes, outermost_depth >= 0 ? outermost : event.op, collective);
  } catch (pybind11::error_already_set& error) {  // the observer's own failure never reaches the program
    error.discard_as_unraisable("neurondev's host device observer");
  }
}

void record(const std::string& kind, const std::string& op, const std::string& direction, int64_t bytes) {
  Event event{kind, op, direction, bytes};
  bool part_of_fallback = kind == "copy" && !op.empty();
  if (part_of_fallback) fallback_bytes += bytes;
  {
    std::lock_guard<std::mutex> lock(log_mutex);
    event_log.push_back(event);
    if (observed && !part_of_fallback) count(event);
  }
  if (observed && attributing && !part_of_fallback && direction != "on_device") tell(event);
}

std::string op_name(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// --- memory -------------------------------------------------------------------------------------
void free_host(void* data) {
  c10::free_cpu(data);
}

struct HostMemory final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    return {data, data, &free_host, kDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_host;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

HostMemory memory;

// Pinned host memory: host memory the device knows it allocated (is_pinned() asks the device's hooks).
std::mutex pinned_mutex;
std::set<const void*> pinned;

void free_pinned(void* data) {
  {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    pinned.erase(data);
  }
  c10::free_cpu(data);
}

struct PinnedMemory final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    if (data != nullptr) {
      std::lock_guard<std::mutex> lock(pinned_mutex);
      pinned.insert(data);
    }
    return {data, data, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedMemory pinned_memory;

bool is_pinned_pointer(const void* data) {
  std::lock_guard<std::mutex> lock(pinned_mutex);
  return pinned.count(data) > 0;
}

void release_storage(void* context) {
  delete static_cast<c10::Storage*>(context);
}

// A tensor of `device` whose storage is `storage`'s memory, which it keeps alive: no byte is copied.
at::Tensor alias_on(const at::Tensor& tensor, c10::Device device, c10::DispatchKeySet keys, c10::Allocator* allocator) {
  const c10::Storage& storage = tensor.storage();
  void* data = storage.nbytes() ? storage.mutable_data() : nullptr;
  c10::DataPtr pointer(data, new c10::Storage(storage), &release_storage, device);
  c10::Storage aliased(c10::Storage::use_byte_size_t(), storage.nbytes(), std::move(pointer), allocator, /*resizable=*/true);
  auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(aliased), keys, tensor.dtype());
  impl->set_sizes_and_strides(tensor.sizes(), tensor.strides(), tensor.storage_offset());
  return at::Tensor(std::move(impl));
}

// A view's lazy bits (a conjugate, a negative) are the tensor's meaning, not its memory's: an alias keeps them.
void keep_bits(const at::Tensor& from, const at::Tensor& to) {
  to.unsafeGetTensorImpl()->_set_conj(from.is_conj());
  to.unsafeGetTensorImpl()->_set_neg(from.is_neg());
}

at::Tensor on_cpu(const at::Tensor& tensor) {
  if (!on_device(tensor)) return tensor;
  at::Tensor host = alias_on(tensor, c10::Device(c10::kCPU), c10::DispatchKeySet(c10::DispatchKey::CPU), c10::GetCPUAllocator());
  keep_bits(tensor, host);
  return host;
}

// --- the few kernels of its own -----------------------------------------------------------------
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                               std::optional<at::Device> device, std::optional<bool>, std::optional<at::MemoryFormat> format) {
  check_index(device);
  return at::detail::empty_generic(size, &memory, kDeviceKeys, c10::dtype_or_default(dtype), format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout>, std::optional<at::Device> device, std::optional<bool>) {
  check_index(device);
  return at::detail::empty_strided_generic(size, stride, &memory, kDeviceKeys, c10::dtype_or_default(dtype));
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

at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                                 std::optional<at::Device> device, std::optional<bool>) {
  check_index(device);
  auto keys = kDeviceKeys | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &nothing, keys, c10::dtype_or_default(dtype), std::nullopt);
}

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
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, &memory, /*resizable=*/true);
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

// --- convolution ----------------------------------------------------------------------------------
// On a backend that is neither CPU nor CUDA, torch's convolution calls convolution_overrideable (and its backward),
// which have no CPU kernel for a fallback to reach. The device runs the CPU's convolution on the same memory; named in
// set_fallback(), it falls back as cpu_fallback does: its inputs copied to the host, its results copied back.
std::set<std::string> falling;  // overload names that fall back now
const char* kConvolution = "aten::convolution_overrideable";
const char* kConvolutionBackward = "aten::convolution_backward_overrideable";

struct ConvolutionRun {  // where a convolution's operands are for the CPU's kernel: aliases, or host copies
  bool fell_back;
  std::string outer;
  int64_t outer_bytes;
  const char* name;
  at::Tensor host(const at::Tensor& tensor) const { return fell_back ? tensor.to(c10::kCPU) : on_cpu(tensor); }
  at::Tensor device(const at::Tensor& result) const {
    if (!result.defined()) return result;
    return fell_back ? result.to(kDevice) : alias_on(result, kDevice, kDeviceKeys, &memory);
  }
};

ConvolutionRun start_convolution(const char* name) {
  bool fell = falling.count(std::string(name).substr(6)) > 0;
  ConvolutionRun run{fell, falling_back, fallback_bytes, name};
  if (fell) {
    falling_back = name;
    fallback_bytes = 0;
  }
  return run;
}

void end_convolution(const ConvolutionRun& run) {
  if (!run.fell_back) return;
  int64_t moved = fallback_bytes;
  falling_back = run.outer;
  fallback_bytes = run.outer_bytes;
  record("fallback", run.name, "", moved);
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
                       int64_t groups) {
  ConvolutionRun run = start_convolution(kConvolution);
  std::optional<at::Tensor> host_bias = bias.has_value() && bias->defined() ? std::optional<at::Tensor>(run.host(*bias)) : std::nullopt;
  at::Tensor out = at::convolution(run.host(input), run.host(weight), host_bias, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor result = run.device(out);
  end_convolution(run);
  return result;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                                    const at::Tensor& weight, c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                                    c10::IntArrayRef dilation, bool transposed,
                                                                    c10::IntArrayRef output_padding, int64_t groups,
                                                                    std::array<bool, 3> output_mask) {
  ConvolutionRun run = start_convolution(kConvolutionBackward);
  std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(run.host(grad_output), run.host(input), run.host(weight),
                                                                       at::OptionalIntArrayRef(bias_sizes), stride, padding, dilation,
                                                                       transposed, output_padding, groups, output_mask);
  std::tuple<at::Tensor, at::Tensor, at::Tensor> result{run.device(grad_input), run.device(grad_weight), run.device(grad_bias)};
  end_convolution(run);
  return result;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", convolution);
  m.impl("convolution_backward_overrideable", convolution_backward);
}

// --- recurrent cells ----------------------------------------------------------------------------
// torch's GRU and LSTM call the fused cells on a PrivateUse1 device (as on CUDA), which have no CPU kernel for a
// fallback to reach: the device computes them from its other ops, registered above autograd so that autograd
// differentiates those ops (the workspace, which only the fused backward reads, is the gates).
at::Tensor with_bias(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
                                                  const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  auto in = with_bias(input_gates, input_bias).chunk(3, 1);
  auto hid = with_bias(hidden_gates, hidden_bias).chunk(3, 1);
  at::Tensor reset = (hid[0] + in[0]).sigmoid();
  at::Tensor update = (hid[1] + in[1]).sigmoid();
  at::Tensor fresh = (in[2] + hid[2] * reset).tanh();
  at::Tensor hy = (hx - fresh) * update + fresh;
  return {hy, at::cat({reset, update, in[2], hid[2], hx - fresh}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                               const at::Tensor& cx, const std::optional<at::Tensor>& input_bias,
                                                               const std::optional<at::Tensor>& hidden_bias) {
  auto gates = (with_bias(hidden_gates, hidden_bias) + with_bias(input_gates, input_bias)).chunk(4, 1);
  at::Tensor in = gates[0].sigmoid(), forget = gates[1].sigmoid(), cell = gates[2].tanh(), out = gates[3].sigmoid();
  at::Tensor cy = forget * cx + in * cell;
  at::Tensor hy = out * cy.tanh();
  return {hy, cy, at::cat({in, forget, cell, out}, 1)};
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_thnn_fused_gru_cell", fused_gru_cell);
  m.impl("_thnn_fused_lstm_cell", fused_lstm_cell);
}

// --- autocast ---------------------------------------------------------------------------------------
// torch.autocast("hostdev"): as on CUDA, matrix products and convolutions run in the lower precision, ops that
// need the range in float32; every other op passes through (a backend registers its own policy: torch has none
// for PrivateUse1).
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(bmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(baddbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(matmul, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linear, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv1d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv2d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv3d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(prelu, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(_thnn_fused_lstm_cell, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(_thnn_fused_gru_cell, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(scaled_dot_product_attention, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(exp, fp32)
  KERNEL_PRIVATEUSEONE(log, fp32)
  KERNEL_PRIVATEUSEONE(pow, Tensor_Scalar, fp32)
  KERNEL_PRIVATEUSEONE(softmax, int, fp32)
  KERNEL_PRIVATEUSEONE(log_softmax, int, fp32)
  KERNEL_PRIVATEUSEONE(layer_norm, fp32)
  KERNEL_PRIVATEUSEONE(group_norm, fp32)
  KERNEL_PRIVATEUSEONE(cross_entropy_loss, fp32)
  KERNEL_PRIVATEUSEONE(mse_loss, fp32)
}

// Ops whose PrivateUse1 kernel is one of the above: never aliased in bulk, never made to fall back.
const std::set<std::string> kOwnKernels = {
    "empty.memory_format", "empty_strided", "_efficientzerotensor", "as_strided", "view", "_reshape_alias", "resize_",
    "set_.source_Storage_storage_offset", "set_.source_Storage", "set_.source_Tensor", "set_",
    "_copy_from", "_copy_from_and_resize", "copy_", "convolution_overrideable", "convolution_backward_overrideable"};

// --- ops run natively: the CPU kernel on the same memory ---------------------------------------
struct Aliased {
  at::Tensor original;  // the device tensor the caller passed
  at::Tensor host;      // the CPU tensor over its memory the CPU kernel saw
  const void* data;     // where that memory was when the kernel started
};

// A generator of the device is the CPU's kind of generator (the CPU kernels draw from it) that says it is the device's.
struct HostGenerator final : at::CPUGeneratorImpl {
  HostGenerator() {
    device_ = kDevice;
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

 private:
  HostGenerator* clone_impl() const override {
    auto copy = new HostGenerator();
    copy->set_state(*get_state());
    return copy;
  }
};

struct Lent {  // a device generator lent to a CPU kernel as a CPU one, its state given back after
  at::Generator device;
  at::Generator host;
};

c10::IValue to_cpu_value(const c10::IValue& value, std::vector<Aliased>& aliased, std::vector<Lent>& lent) {
  if (value.isGenerator() && value.toGenerator().defined() && value.toGenerator().device().type() == kDeviceType) {
    at::Generator device = value.toGenerator();
    at::Generator host = at::detail::createCPUGenerator();
    host.set_state(device.get_state());
    lent.push_back({device, host});
    return host;
  }
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!on_device(tensor)) return value;
    if (tensor._is_zerotensor()) return at::zeros(tensor.sizes(), tensor.options().device(c10::kCPU));  // zeros without memory
    at::Tensor host = on_cpu(tensor);
    aliased.push_back({tensor, host, host.storage().data()});
    return host;
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) list.push_back(to_cpu_value(tensor, aliased, lent).toTensor());
    return list;
  }
  if (value.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> list;
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      list.push_back(tensor.has_value() ? std::optional<at::Tensor>(to_cpu_value(*tensor, aliased, lent).toTensor()) : std::nullopt);
    }
    return list;
  }
  if (value.isDevice() && value.toDevice().type() == kDeviceType) {
    check_index(value.toDevice());
    return c10::Device(c10::kCPU);
  }
  return value;
}

// A host tensor of one dimension or more beside a device tensor: what a real backend's kernels refuse ("Expected
// all tensors to be on the same device"); a 0-dim one is a scalar. Indexing takes host indices, as on CUDA.
const std::set<std::string> kHostIndicesAllowed = {"index.Tensor", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index.Tensor",
                                                  "_unsafe_index_put"};

void host_tensors_in(const c10::IValue& value, std::vector<at::Tensor>& found) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (tensor.defined() && tensor.device().is_cpu() && tensor.dim() > 0) found.push_back(tensor);
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) host_tensors_in(tensor, found);
  } else if (value.isOptionalTensorList()) {
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      if (tensor.has_value()) host_tensors_in(*tensor, found);
    }
  }
}

void refuse_mixed_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first) {
  std::vector<at::Tensor> host;
  for (size_t i = first; i < stack.size(); ++i) host_tensors_in(stack[i], host);
  if (host.empty() || kHostIndicesAllowed.count(op_name(op).substr(6)) > 0) return;
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, hostdev:0 and cpu! (when checking ",
              op_name(op), ": a host tensor of ", host[0].dim(), " dimension(s) beside a device tensor)");
}

at::Tensor to_device_tensor(const at::Tensor& result, const std::vector<Aliased>& aliased) {
  if (!result.defined() || result.device().type() != c10::kCPU) return result;
  if (result._is_zerotensor()) return efficient_zero_tensor(result.sizes(), result.scalar_type(), std::nullopt, kDevice, std::nullopt);
  for (const Aliased& entry : aliased) {
    if (result.is_same(entry.host)) return entry.original;  // in place, or out=: the caller's own tensor
  }
  for (const Aliased& entry : aliased) {
    if (result.storage().is_alias_of(entry.host.storage())) {  // a view of an input: its storage, the view's dtype
      auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(entry.original.storage()), kDeviceKeys, result.dtype());
      impl->set_sizes_and_strides(result.sizes(), result.strides(), result.storage_offset());
      at::Tensor view(std::move(impl));
      keep_bits(result, view);
      return view;
    }
  }
  at::Tensor fresh = alias_on(result, kDevice, kDeviceKeys, &memory);  // a new result: its memory becomes the device's
  keep_bits(result, fresh);
  return fresh;
}

c10::IValue to_device_value(const c10::IValue& value, const std::vector<Aliased>& aliased) {
  if (value.isTensor()) return to_device_tensor(value.toTensor(), aliased);
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) list.push_back(to_device_tensor(tensor, aliased));
    return list;
  }
  return value;
}

// --- syncs: a host read of a device value (item(), bool(), equal) or an op whose result's size depends on the data
// (nonzero, unique, masked_select; indexing with a boolean mask, read or written): the device must finish, and hand
// the value or the size to the host, as CUDA's nonzero does inside its kernel.
const std::set<std::string> kReadsOnHost = {"_local_scalar_dense", "equal"};
const std::set<std::string> kIndexing = {"index.Tensor", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index.Tensor"};

bool masked(const c10::IValue& indices) {
  if (!indices.isOptionalTensorList() && !indices.isTensorList()) return false;
  for (const c10::IValue& index : indices.toListRef()) {
    if (index.isTensor() && index.toTensor().defined()) {
      auto dtype = index.toTensor().scalar_type();
      if (dtype == at::kBool || dtype == at::kByte) return true;
    }
  }
  return false;
}

bool syncs(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first) {
  std::string name = op_name(op).substr(6);
  if (kIndexing.count(name) > 0) return stack.size() > first + 1 && masked(stack[first + 1]);
  return kReadsOnHost.count(name) > 0 || op.hasTag(at::Tag::data_dependent_output) || op.hasTag(at::Tag::dynamic_output_shape);
}

void run_natively(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  size_t arguments = schema.arguments().size();
  refuse_mixed_devices(op, *stack, stack->size() - arguments);
  bool host_read = syncs(op, *stack, stack->size() - arguments);
  std::vector<Aliased> aliased;
  std::vector<Lent> lent;
  for (size_t i = stack->size() - arguments; i < stack->size(); ++i) {
    (*stack)[i] = to_cpu_value((*stack)[i], aliased, lent);
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  for (Lent& entry : lent) entry.device.set_state(entry.host.get_state());  // the draws advance the device's generator
  for (const Aliased& entry : aliased) {  // a kernel that resized an output: its shape, and its memory where it moved
    bool moved = entry.host.storage().data() != entry.data && entry.host.storage().data() != nullptr;
    bool reshaped = entry.host.sizes() != entry.original.sizes() || entry.host.strides() != entry.original.strides();
    if (moved) {  // the new memory becomes the device's, as a new result's does: nothing copied
      at::Tensor grown = alias_on(entry.host, kDevice, kDeviceKeys, &memory);
      entry.original.set_(grown.storage(), entry.host.storage_offset(), entry.host.sizes(), entry.host.strides());
    } else if (reshaped) {  // the same memory, another shape (an empty output's too: a 0-element resize moves nothing)
      entry.original.unsafeGetTensorImpl()->set_sizes_and_strides(entry.host.sizes(), entry.host.strides(), entry.host.storage_offset());
    }
  }
  size_t returns = schema.returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    (*stack)[i] = to_device_value((*stack)[i], aliased);
  }
  if (host_read) record("sync", op_name(op), "", 0);
}

// --- ops that fall back to the CPU ----------------------------------------------------------------
// The fallback's copies are logged as its own (op: its name) while it runs; the fallback itself, with what they moved,
// once it has run (an observer is told of it then, with all it cost).
void fall_back(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::string name = op_name(op);
  std::string outer = falling_back;
  int64_t outer_bytes = fallback_bytes;
  falling_back = name;
  fallback_bytes = 0;
  try {
    at::native::cpu_fallback(op, stack);
  } catch (...) {
    falling_back = outer;
    fallback_bytes = outer_bytes;
    throw;
  }
  int64_t moved = fallback_bytes;
  falling_back = outer;
  fallback_bytes = outer_bytes;
  record("fallback", name, "", moved);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fall_back>());
}

// --- which ops run natively and which fall back ---------------------------------------------------
std::map<std::string, std::unique_ptr<torch::Library>> native_kernels;  // "addmm.out" -> its registration
const std::set<std::string> kFallsBackItself = {"convolution_overrideable", "convolution_backward_overrideable"};

bool runs_natively(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.name.rfind("aten::", 0) == 0 && op.hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
         !op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) && kOwnKernels.count(op_name(op).substr(6)) == 0;
}

// Without the device's kernel, a composite kernel would run (an in-place op computed through its out= form, say),
// not the fallback: naming such an op would make nothing fall back.
bool decomposed_without(const c10::OperatorHandle& op) {
  return op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
}

void register_natively(const std::string& overload) {
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  library->impl(overload.c_str(), torch::CppFunction::makeFromBoxedFunction<&run_natively>());
  native_kernels[overload] = std::move(library);
}

// The overloads ("addmm", "addmm.out") that `names` select: "aten::addmm" is every overload of addmm,
// "aten::addmm.out" that one. Unknown names and ops that never reach a device kernel are reported.
// The overloads ("addmm", "addmm.out") that `names` select: "aten::addmm" is every overload of addmm,
// "aten::addmm.out" that one. Unknown names, and names none of whose overloads would ever reach the fallback (they
// decompose first, or a composite kernel takes over once the device's is gone: add_ through add.out), are reported.
std::tuple<std::set<std::string>, std::vector<std::string>, std::vector<std::string>> select(const std::vector<std::string>& names) {
  std::set<std::string> chosen;
  std::vector<std::string> unknown, composite;
  auto ops = c10::Dispatcher::singleton().getAllOpNames();
  for (const std::string& wanted : names) {
    bool found = false;
    std::set<std::string> falls, decomposed;  // overloads that would fall back, and ones a composite would take over
    for (const c10::OperatorName& name : ops) {
      std::string full = name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
      if (full != wanted && name.name != wanted) continue;
      found = true;
      auto handle = c10::Dispatcher::singleton().findOp(name);
      if (!handle.has_value()) continue;
      if (kFallsBackItself.count(full.substr(6)) > 0 || (runs_natively(*handle) && !decomposed_without(*handle))) {
        falls.insert(full.substr(6));
      } else if (runs_natively(*handle)) {
        decomposed.insert(full.substr(6));  // falls back through another overload named with it (addmm through addmm.out)
      }
    }
    if (!found) {
      unknown.push_back(wanted);
    } else if (falls.empty()) {
      composite.push_back(wanted);
    } else {
      chosen.insert(falls.begin(), falls.end());
      chosen.insert(decomposed.begin(), decomposed.end());
    }
  }
  return {chosen, unknown, composite};
}

// Make exactly `names` fall back; every other op with a CPU kernel runs natively. Returns the names
// that were refused: (unknown ops, ops that never reach a device kernel); nothing changes then.
std::tuple<std::vector<std::string>, std::vector<std::string>> set_fallback(const std::vector<std::string>& names) {
  auto [chosen, unknown, composite] = select(names);
  if (!unknown.empty() || !composite.empty()) return {unknown, composite};
  static bool enumerated = false;
  if (!enumerated) {  // every op with a CPU kernel, once: ops loaded later keep the fallback
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
      auto handle = c10::Dispatcher::singleton().findOp(name);
      if (handle.has_value() && runs_natively(*handle)) native_kernels[op_name(*handle).substr(6)] = nullptr;
    }
    enumerated = true;
  }
  for (auto& [overload, library] : native_kernels) {
    bool falls = chosen.count(overload) > 0;
    if (falls && library) library.reset();
    if (!falls && !library) register_natively(overload);
  }
  falling = chosen;
  return {{}, {}};
}

std::vector<std::string> fallback_ops() {
  return {falling.begin(), falling.end()};
}

// --- the hooks and the device guard -------------------------------------------------------------
struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override { return at::detail::getDefaultCPUGenerator(); }
  at::Generator getNewGenerator(c10::DeviceIndex) const override { return at::make_generator<HostGenerator>(); }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &pinned_memory; }
  bool isPinnedPtr(const void* data) const override { return is_pinned_pointer(data); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t size) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), size);
  }
};

struct Guard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDeviceType; }
  c10::Device exchangeDevice(c10::Device device) const override {
    check_index(device);
    return kDevice;
  }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device device) const override { check_index(device); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}  // every op finishes before it returns
  c10::Stream getStream(c10::Device device) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, device); }
  c10::Stream getDefaultStream(c10::Device device) const override { return c10::Stream(c10::Stream::DEFAULT, device); }
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override { return stream; }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {
    if (*event == nullptr) *event = new int(0);  // an event of its own: its id is its address, as a device's is
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override { delete static_cast<int*>(event); }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override { return c10::Stream(c10::Stream::DEFAULT, device); }
  c10::Stream getNewStream(c10::Device device, int) const override { return c10::Stream(c10::Stream::DEFAULT, device); }
  void synchronizeEvent(void*) const override {}  // an event is complete when it is recorded
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

Hooks* hooks = nullptr;

// Register the hooks and the allocator (once per process); false when another backend holds the hooks.
std::unique_ptr<torch::Library> autograd_fallback;

// The autograd fallback every device key has (an op without an autograd kernel runs, and says so when a
// gradient is asked of it): torch 2.13 registers it for PrivateUse1, torch 2.9 does not, and then a custom
// op such as FSDP2's fsdp::all_gather_copy_in cannot run on the device at all, where on CUDA it runs.
void add_autograd_fallback() {
  auto key = c10::DispatchKey::AutogradPrivateUse1;
  if (autograd_fallback || c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(key)) return;
  autograd_fallback = std::make_unique<torch::Library>(torch::Library::IMPL, "_", key, __FILE__, __LINE__);
  autograd_fallback->fallback(torch::autograd::basicAutogradNotImplementedFallback());
}

bool install() {
  if (hooks != nullptr) return true;
  if (at::isPrivateUse1HooksRegistered()) return false;
  hooks = new Hooks();
  at::RegisterPrivateUse1HooksInterface(hooks);
  c10::SetAllocator(kDeviceType, &memory);
  add_autograd_fallback();
  return true;
}

std::vector<std::tuple<std::string, std::string, std::string, int64_t>> events(size_t start) {
  std::lock_guard<std::mutex> lock(log_mutex);
  std::vector<std::tuple<std::string, std::string, std::string, int64_t>> found;
  for (size_t i = start; i < event_log.size(); ++i) {
    found.emplace_back(event_log[i].kind, event_log[i].op, event_log[i].direction, event_log[i].bytes);
  }
  return found;
}

size_t event_count() {
  std::lock_guard<std::mutex> lock(log_mutex);
  return event_log.size();
}

// The op the program called is followed only while events come with their lines (counting alone needs no name).
void follow_outermost(bool on) {
  if (on && !outermost_handle.has_value()) {
    outermost_handle = at::addGlobalCallback(at::RecordFunctionCallback(&op_started, &op_ended).scopes({at::RecordScope::FUNCTION}));
  } else if (!on && outermost_handle.has_value()) {
    at::removeCallback(*outermost_handle);
    outermost_handle.reset();
  }
}

// Start counting every event (its totals from zero), telling `callback` of each while attributing; stop with None.
void observe(pybind11::object callback) {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (callback.is_none()) {
    observed = false;
    attributing = false;
    follow_outermost(false);
    delete observer;
    observer = nullptr;
    return;
  }
  delete observer;
  observer = new pybind11::object(callback);
  totals = Totals();
  follow_outermost(graphs_running == 0);
  attributing = true;
  observed = true;
}

void attribute(bool on) {
  std::lock_guard<std::mutex> lock(log_mutex);
  attributing = on;
  follow_outermost(on && observed && graphs_running == 0);
}

// A compiled graph begins (true) or ends (false): while one runs, no op is followed (its node names the op it called,
// and a callback at every op would cost the program a tenth of its time on small ops).
void graph_running(bool begins) {
  std::lock_guard<std::mutex> lock(log_mutex);
  graphs_running += begins ? 1 : (graphs_running > 0 ? -1 : 0);
  follow_outermost(attributing && observed && graphs_running == 0);
}

std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, std::map<std::string, int64_t>> observed_totals() {
  std::lock_guard<std::mutex> lock(log_mutex);
  return {totals.to_host, totals.to_device, totals.bytes_to_host, totals.bytes_to_device, totals.syncs, totals.collective_copies,
          totals.fallback_bytes, totals.fallbacks};
}

void set_collective(const std::string& name) {
  collective = name;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.doc() = "neurondev's host-memory test device (a PrivateUse1 backend over host memory)";
  module.def("install", &install, "register the hooks and the allocator; false when PrivateUse1's hooks are taken");
  module.def("set_fallback", &set_fallback, "make exactly these ops fall back to the CPU; returns the refused names");
  module.def("fallback_ops", &fallback_ops, "the overloads that fall back now");
  module.def("events", &events, "the device's own log from position start: (kind, op, direction, bytes)");
  module.def("event_count", &event_count, "how many events the log holds");
  module.def("observe", &observe, "count every event from now, telling callback(kind, op, direction, bytes, called, collective) of each "
             "while attributing; None stops");
  module.def("graph_running", &graph_running, "a compiled graph begins (True) or ends (False): no op is followed while one runs");
  module.def("attribute", &attribute, "whether the observer is told of each event (True) or they are only counted (False)");
  module.def("observed_totals", &observed_totals,
             "(to_host, to_device, bytes_to_host, bytes_to_device, syncs, collective_copies, fallback_bytes, fallbacks) since observe()");
  module.def("set_collective", &set_collective, "the collective running on this thread ('' for none): its copies are said to be its");
}
