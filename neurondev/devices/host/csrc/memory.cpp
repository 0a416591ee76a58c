// The device's memory: host memory that says it is the device's, allocated by a device allocator (torch's memory
// statistics of the device: torch.accelerator.memory_allocated(), what a trainer reads), pinned host memory the
// device knows it allocated, and aliases: a tensor of one device over another's memory, nothing copied.
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "hostdev.h"

namespace hostdev {

namespace {

// What the device holds now, and has held: its allocations' statistics, as a device allocator keeps them (nothing is
// cached: what is freed goes back to the host at once).
std::mutex held_mutex;
std::unordered_map<const void*, size_t> held;
c10::CachingDeviceAllocator::DeviceStats stats;

void count(size_t nbytes, bool allocated) {
  for (auto* stat : {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes, &stats.requested_bytes}) {
    auto& all = (*stat)[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    allocated ? all.increase(nbytes) : all.decrease(nbytes);
  }
  for (auto* stat : {&stats.allocation, &stats.segment, &stats.active}) {
    auto& all = (*stat)[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    allocated ? all.increase(1) : all.decrease(1);
  }
  (allocated ? stats.num_device_alloc : stats.num_device_free) += 1;
}

void free_host(void* data) {
  {
    std::lock_guard<std::mutex> lock(held_mutex);
    auto found = held.find(data);
    if (found != held.end()) {
      count(found->second, false);
      held.erase(found);
    }
  }
  c10::free_cpu(data);
}

struct HostMemory final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    if (data != nullptr) {
      std::lock_guard<std::mutex> lock(held_mutex);
      held[data] = nbytes;
      count(nbytes, true);
    }
    return {data, data, &free_host, kDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_host;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  bool initialized() override {
    return true;
  }
  void emptyCache(c10::MempoolId_t) override {}  // nothing is cached
  void recordStream(const c10::DataPtr&, c10::Stream) override {}  // one stream, every op done when it returns
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_index(c10::Device(kDeviceType, device));
    std::lock_guard<std::mutex> lock(held_mutex);
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex) override {
    std::lock_guard<std::mutex> lock(held_mutex);
    for (auto* array : {&stats.allocation, &stats.segment, &stats.active, &stats.allocated_bytes, &stats.reserved_bytes,
                        &stats.active_bytes, &stats.requested_bytes}) {
      for (auto& stat : *array) stat.reset_accumulated();
    }
    stats.num_device_alloc = stats.num_device_free = 0;
  }
  void resetPeakStats(c10::DeviceIndex) override {
    std::lock_guard<std::mutex> lock(held_mutex);
    for (auto* array : {&stats.allocation, &stats.segment, &stats.active, &stats.allocated_bytes, &stats.reserved_bytes,
                        &stats.active_bytes, &stats.requested_bytes}) {
      for (auto& stat : *array) stat.reset_peak();
    }
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

PinnedMemory pinned_host_memory;

void release_storage(void* context) {
  delete static_cast<c10::Storage*>(context);
}

}  // namespace

c10::Allocator* device_memory() {
  return &memory;
}

c10::Allocator* pinned_memory() {
  return &pinned_host_memory;
}

bool is_pinned_pointer(const void* data) {
  std::lock_guard<std::mutex> lock(pinned_mutex);
  return pinned.count(data) > 0;
}

at::Tensor alias_on(const at::Tensor& tensor, c10::Device device, c10::DispatchKeySet keys, c10::Allocator* allocator) {
  const c10::Storage& storage = tensor.storage();
  void* data = storage.nbytes() ? storage.mutable_data() : nullptr;
  c10::DataPtr pointer(data, new c10::Storage(storage), &release_storage, device);
  c10::Storage aliased(c10::Storage::use_byte_size_t(), storage.nbytes(), std::move(pointer), allocator, /*resizable=*/true);
  auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(aliased), keys, tensor.dtype());
  impl->set_sizes_and_strides(tensor.sizes(), tensor.strides(), tensor.storage_offset());
  return at::Tensor(std::move(impl));
}

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

}  // namespace hostdev
