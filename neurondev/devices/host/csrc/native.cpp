// Ops run natively: a boxed kernel registered for each ATen op that has a CPU kernel runs that CPU kernel on the same
// memory (the device's tensors aliased as CPU tensors, nothing copied; a device generator lent as a CPU one), refuses
// a host tensor beside a device tensor as a real backend's kernels do, and records a sync where the op makes the
// host wait for a value or a size.
#include <ATen/CPUGeneratorImpl.h>

#include "hostdev.h"

namespace hostdev {

namespace {

struct Aliased {
  at::Tensor original;  // the device tensor the caller passed
  at::Tensor host;      // the CPU tensor over its memory the CPU kernel saw
  const void* data;     // where that memory was when the kernel started
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
    for (const Aliased& entry : aliased) {  // one tensor passed twice (an input and its out=) is one CPU tensor, as on the CPU:
      if (entry.original.is_same(tensor)) return entry.host;  // the kernel then sees that the output is an input, and refuses to resize it
    }
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
  at::Tensor fresh = alias_on(result, kDevice, kDeviceKeys, device_memory());  // a new result: its memory becomes the device's
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

}  // namespace

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
      at::Tensor grown = alias_on(entry.host, kDevice, kDeviceKeys, device_memory());
      entry.original.set_(grown.storage(), entry.host.storage_offset(), entry.host.sizes(), entry.host.strides());
    } else if (reshaped) {  // the same memory, another shape (an empty output's too: a 0-element resize moves nothing)
      entry.original.unsafeGetTensorImpl()->set_sizes_and_strides(entry.host.sizes(), entry.host.strides(), entry.host.storage_offset());
    }
    if (entry.host.is_conj() != entry.original.is_conj() || entry.host.is_neg() != entry.original.is_neg()) {
      keep_bits(entry.host, entry.original);  // a kernel that left its output lazily conjugated (lu_solve, left=False, out=)
    }
  }
  size_t returns = schema.returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    (*stack)[i] = to_device_value((*stack)[i], aliased);
  }
  if (host_read) record("sync", op_name(op), "", 0);
}

}  // namespace hostdev
