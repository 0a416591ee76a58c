// How the device joins torch: its PrivateUse1 hooks (generators, pinned memory, storage resizes), its device guard (one
// device, streams and events that are complete when made), the autograd fallback torch 2.9 lacks for PrivateUse1, and
// the extension's Python module.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>

#include <memory>

#include "python_api.h"

namespace hostdev {

namespace {

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

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override { return at::detail::getDefaultCPUGenerator(); }
  at::Generator getNewGenerator(c10::DeviceIndex) const override { return at::make_generator<HostGenerator>(); }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_memory(); }
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

}  // namespace

bool install() {
  if (hooks != nullptr) return true;
  if (at::isPrivateUse1HooksRegistered()) return false;
  hooks = new Hooks();
  at::RegisterPrivateUse1HooksInterface(hooks);
  c10::SetAllocator(kDeviceType, device_memory());
  add_autograd_fallback();
  return true;
}

}  // namespace hostdev

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.doc() = "neurondev's host-memory test device (a PrivateUse1 backend over host memory)";
  module.def("install", &hostdev::install, "register the hooks and the allocator; false when PrivateUse1's hooks are taken");
  module.def("set_fallback", &hostdev::set_fallback, "make exactly these ops fall back to the CPU; returns the refused names");
  module.def("fallback_ops", &hostdev::fallback_ops, "the overloads that fall back now");
  module.def("events", &hostdev::events, "the device's own log from position start: (kind, op, direction, bytes)");
  module.def("event_count", &hostdev::event_count, "how many events the log holds");
  module.def("observe", &hostdev::observe, "count every event from now, telling callback(kind, op, direction, bytes, called, collective) of each "
             "while attributing; None stops");
  module.def("graph_running", &hostdev::graph_running, "a compiled graph begins (True) or ends (False): no op is followed while one runs");
  module.def("attribute", &hostdev::attribute, "whether the observer is told of each event (True) or they are only counted (False)");
  module.def("observed_totals", &hostdev::observed_totals,
             "(to_host, to_device, bytes_to_host, bytes_to_device, syncs, collective_copies, fallback_bytes, fallbacks) since observe()");
  module.def("set_collective", &hostdev::set_collective, "the collective running on this thread ('' for none): its copies are said to be its");
}
