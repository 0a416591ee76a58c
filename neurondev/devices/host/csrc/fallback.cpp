// The fallback: ops named in set_fallback() have no PrivateUse1 kernel and reach the backend fallback, which runs
// them through at::native::cpu_fallback (inputs copied to a CPU tensor, outputs copied back), as a backend whose
// operator table marks them CPU_FALLBACK does; every other op with a CPU kernel runs natively (native.cpp).
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <memory>

#include "python_api.h"

namespace hostdev {

namespace {

std::set<std::string> falling;  // overload names that fall back now

// Ops whose PrivateUse1 kernel is one of its own (kernels.cpp, kernels_nn.cpp): never aliased in bulk, never made to
// fall back.
const std::set<std::string> kOwnKernels = {
    "empty.memory_format", "empty_strided", "_efficientzerotensor", "as_strided", "view", "_reshape_alias", "resize_",
    "set_.source_Storage_storage_offset", "set_.source_Storage", "set_.source_Tensor", "set_",
    "_copy_from", "_copy_from_and_resize", "copy_", "convolution_overrideable", "convolution_backward_overrideable"};

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

// --- which ops run natively and which fall back ---------------------------------------------------
std::map<std::string, std::unique_ptr<torch::Library>> native_kernels;  // "addmm.out" -> its registration
const std::set<std::string> kFallsBackItself = {"convolution_overrideable", "convolution_backward_overrideable"};
// Composite kernels that call a DispatchStub on their own tensor, which has the CPU's and CUDA's kernels but none for
// a PrivateUse1 device that registers none ("DispatchStub: missing kernel", torch.svd(out=) on complex): run natively.
const std::set<std::string> kCallsStubItself = {"conj_physical_"};

bool runs_natively(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  if (name.name.rfind("aten::", 0) != 0 || kOwnKernels.count(op_name(op).substr(6)) > 0) return false;
  if (kCallsStubItself.count(op_name(op).substr(6)) > 0) return true;
  return op.hasKernelForDispatchKey(c10::DispatchKey::CPU) && !op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
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

}  // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fall_back>());
}

bool falls_back(const std::string& overload) {
  return falling.count(overload) > 0;
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

}  // namespace hostdev
