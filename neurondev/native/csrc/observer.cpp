// neurondev's observer of the dispatcher: what a program costs a native device (CUDA, TorchNeuron's neuron, any
// PrivateUse1 backend, the host test device), read from PyTorch's own record of every op (a RecordFunction callback:
// how torch.profiler sees aten::_to_cpu beneath an op that fell back). It never intercepts or dispatches an op, so
// it cannot change a value; it counts in C++ and calls Python only at an event, for its line:
//   * a fallback: aten::_to_cpu beneath an op on the device (at::native::cpu_fallback moves the op's inputs to the
//     host with it; a backend's own fallback path does the same): that op ran on the host, and the copies beneath it
//     (its inputs to the host, its results back) are its bytes;
//   * a copy across the device's boundary: the outermost copy op (_to_copy, copy_, copy, _copy_from,
//     _copy_from_and_resize) from the device to the host or back, with its bytes;
//   * a sync: the innermost op on the device that hands the host a value or a size (_local_scalar_dense: .item(),
//     bool(); equal; an op PyTorch tags data-dependent or with a dynamic output shape: nonzero, unique,
//     masked_select; indexing with a boolean mask): the op whose kernel made the host wait.
// The op the program called (the outermost ATen op on the thread) comes with each event.
#include <torch/extension.h>

#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace {

enum class Kind : uint8_t { None, ToCpu, Copy, Move, Sync, Indexing };  // Move: aten::to, whose _to_copy is the copy

struct OpKind {  // what an op is to the observer; for a copy, where its source and destination are among its arguments
  std::string name;
  std::string overload;
  Kind kind = Kind::None;
  int source = -1;
  int destination = -1;  // -1 for _to_copy: the destination is its device argument (or the source's device)
  std::optional<c10::OperatorHandle> handle;  // for a sync's op: whether the device has a kernel of its own for it
};

struct Frame {  // an op running on this thread
  const char* name;
  const char* overload;
  Kind kind;
  bool on_device;
  bool factory = false;  // on the device through its device argument alone: it makes a tensor there
  std::optional<c10::OperatorHandle> handle;
  bool fell_back = false;
  bool synced = false;  // a sync was counted beneath it
  int64_t fallback_bytes = 0;
};

struct Totals {
  int64_t to_host = 0, to_device = 0, bytes_to_host = 0, bytes_to_device = 0, syncs = 0, collective_copies = 0, fallback_bytes = 0;
  std::map<std::string, int64_t> fallbacks;
};

std::mutex mutex;  // guards the totals, the observer and the watched device
std::atomic<c10::DeviceType> watched{c10::DeviceType::PrivateUse1};
std::atomic<c10::DispatchKey> watched_key{c10::DispatchKey::PrivateUse1};  // the device's own kernels' key
std::atomic<bool> attributing{false};
Totals totals;
pybind11::object* observer = nullptr;
std::optional<at::CallbackHandle> handle;
thread_local std::vector<Frame> frames;
thread_local std::string collective;  // the collective running on this thread (said from Python), whose copies these are
thread_local std::unordered_map<std::string, std::unique_ptr<OpKind>> kinds;  // per thread: no lock on the hot path

struct Recent {  // an op seen lately, by where its names are (a registered op's names stay where its schema keeps them)
  const char* name;
  const char* overload;
  const OpKind* kind;
};
constexpr size_t kRecent = 1024;
thread_local Recent recent[kRecent];  // plain data: no guard on each access

const std::set<std::string> kIndexing = {"index.Tensor", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index.Tensor"};

std::string full_name(const char* name, const char* overload) {
  std::string full(name);
  if (overload != nullptr && overload[0] != '\0') full += std::string(".") + overload;
  return full;
}

OpKind classify(const at::RecordFunction& fn, const char* name, const char* overload) {
  OpKind found{name, overload == nullptr ? "" : overload};
  std::string op = full_name(name, overload);
  static const std::map<std::string, std::pair<int, int>> copies = {
      {"aten::_to_copy", {0, -1}}, {"aten::copy_", {1, 0}}, {"aten::copy", {1, 0}},
      {"aten::_copy_from", {0, 1}}, {"aten::_copy_from_and_resize", {0, 1}}};
  auto copy = copies.find(op);
  if (copy != copies.end()) {
    found.kind = Kind::Copy;
    std::tie(found.source, found.destination) = copy->second;
  } else if (op == "aten::_to_cpu") {
    found.kind = Kind::ToCpu;
  } else if (std::strcmp(name, "aten::to") == 0) {
    found.kind = Kind::Move;
  } else if (auto schema = fn.operator_name()) {
    found.handle = c10::Dispatcher::singleton().findOp(*schema);
    const auto& handle = found.handle;
    if (op.rfind("aten::", 0) == 0 && kIndexing.count(op.substr(6)) > 0) {
      found.kind = Kind::Indexing;
    } else if (op == "aten::_local_scalar_dense" || op == "aten::equal" ||
               (handle.has_value() && (handle->hasTag(at::Tag::data_dependent_output) || handle->hasTag(at::Tag::dynamic_output_shape)))) {
      found.kind = Kind::Sync;
    }
  }
  return found;
}

const OpKind& kind_of(const at::RecordFunction& fn, const char* name, const char* overload) {
  if (overload == nullptr) overload = "";
  Recent& slot = recent[((reinterpret_cast<uintptr_t>(name) >> 4) ^ (reinterpret_cast<uintptr_t>(overload) >> 6)) % kRecent];
  // the same places, and the same names there (a name made for one call and freed can be another's later)
  if (slot.name == name && slot.overload == overload && std::strcmp(slot.kind->name.c_str(), name) == 0 &&
      std::strcmp(slot.kind->overload.c_str(), overload) == 0) {
    return *slot.kind;
  }
  auto& known = kinds[full_name(name, overload)];
  if (!known) known = std::make_unique<OpKind>(classify(fn, name, overload));
  slot = {name, overload, known.get()};
  return *known;
}

// A tensor of the device: not a tensor subclass of Python's (dynamo's fake tensors say they are on the device while it
// traces, and nothing runs there), whose own ops, on real tensors, are seen anyway.
bool on(const at::Tensor& tensor, c10::DeviceType type) {
  return tensor.defined() && tensor.device().type() == type && !tensor.key_set().has(c10::DispatchKey::Python);
}

bool touches(const c10::IValue& value, c10::DeviceType type) {
  if (value.isTensor()) return on(value.toTensor(), type);
  if (value.isDevice()) return value.toDevice().type() == type;
  if (!value.isList()) return false;  // (a list's element type is asked out of line: ints, sizes are not asked)
  if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) {
      if (on(tensor, type)) return true;
    }
  } else if (value.isOptionalTensorList()) {
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      if (tensor.has_value() && on(*tensor, type)) return true;
    }
  }
  return false;
}

int64_t nbytes(const at::Tensor& tensor) {
  return static_cast<int64_t>(tensor.numel()) * static_cast<int64_t>(tensor.element_size());
}

// The op the program called: the outermost ATen op running on this thread (a fallback happened beneath it).
std::string called_op(const std::string& op) {
  for (const Frame& frame : frames) {
    if (frame.name != nullptr && std::strncmp(frame.name, "aten::", 6) == 0) return full_name(frame.name, frame.overload);
  }
  return op;
}

void tell(const char* kind, const std::string& op, const char* direction, int64_t bytes) {
  std::string called = called_op(op);
  pybind11::gil_scoped_acquire gil;
  pybind11::error_scope pending;  // an error Python has set (an op raising through us) is kept, and given back after
  if (observer == nullptr) return;
  try {
    (*observer)(kind, op, direction, bytes, called, collective);
  } catch (pybind11::error_already_set& error) {  // the observer's own failure never reaches the program
    error.discard_as_unraisable("neurondev's dispatcher observer");
  }
}

void counted_copy(bool to_host, int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    (to_host ? totals.to_host : totals.to_device) += 1;
    (to_host ? totals.bytes_to_host : totals.bytes_to_device) += bytes;
    if (!collective.empty()) totals.collective_copies += 1;
  }
  if (attributing) tell("copy", "", to_host ? "to_host" : "to_device", bytes);
}

struct Crossing {  // a copy across the device's boundary: its direction and bytes
  enum Direction : uint8_t { None, ToHost, ToDevice } direction = None;
  int64_t bytes = 0;
};

// A copy's direction and bytes, as the copy's kernel moves them: the source's bytes (for copy_ into the device: the
// destination's, which it fills; _copy_from_and_resize's destination is resized to its source first).
Crossing crossing(const OpKind& copy, c10::ArrayRef<const c10::IValue> inputs, c10::DeviceType type) {
  if (inputs.size() < 2 || !inputs[copy.source].isTensor()) return {};
  const at::Tensor& source = inputs[copy.source].toTensor();
  if (copy.destination >= 0) {
    if (!inputs[copy.destination].isTensor()) return {};
    const at::Tensor& destination = inputs[copy.destination].toTensor();
    bool fills = copy.destination == 0;  // copy_(self, src) and copy(self, src): the destination's size is the copy's
    if (on(source, type) && on(destination, c10::kCPU)) return {Crossing::ToHost, nbytes(source)};
    if (on(source, c10::kCPU) && on(destination, type)) return {Crossing::ToDevice, nbytes(fills ? destination : source)};
    return {};
  }
  if (inputs.size() < 4 || !inputs[3].isDevice()) return {};  // _to_copy(self, dtype, layout, device, ...): no device, no move
  c10::DeviceType to = inputs[3].toDevice().type();
  if (on(source, type) && to == c10::kCPU) return {Crossing::ToHost, nbytes(source)};
  if (on(source, c10::kCPU) && to == type) {
    auto dtype = inputs[1].isInt() ? static_cast<at::ScalarType>(inputs[1].toInt()) : source.scalar_type();
    return {Crossing::ToDevice, static_cast<int64_t>(source.numel()) * static_cast<int64_t>(c10::elementSize(dtype))};
  }
  return {};
}

Frame* fallen_back() {  // the innermost op running on this thread that fell back, if any
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (it->fell_back) return &*it;
  }
  return nullptr;
}

// The op that ran on the host: the innermost op running on the device beneath which a fallback's move was seen (a copy
// or a move is the fallback's own work, not the op).
Frame* op_running() {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (it->on_device && it->kind != Kind::Copy && it->kind != Kind::ToCpu && it->kind != Kind::Move) return &*it;
  }
  return nullptr;
}

bool inside(Kind kind) {
  for (const Frame& frame : frames) {
    if (frame.kind == kind && frame.on_device) return true;
  }
  return false;
}

void copy_seen(const OpKind& op, c10::ArrayRef<const c10::IValue> inputs, c10::DeviceType type) {
  if (inside(Kind::Copy)) return;  // a copy inside a copy: counted once, at the outermost
  Crossing moved = crossing(op, inputs, type);
  if (moved.direction == Crossing::None) return;
  Frame* running = op_running();
  if (moved.direction == Crossing::ToDevice && running != nullptr && running->factory && fallen_back() == nullptr) {
    running->fell_back = true;  // a factory whose result comes from the host: it ran there (cpu_fallback moves no input)
  }
  Frame* fallback = fallen_back();
  if (fallback != nullptr) {
    fallback->fallback_bytes += moved.bytes;  // the fallback's own copies: its bytes
    return;
  }
  counted_copy(moved.direction == Crossing::ToHost, moved.bytes);
}

void to_cpu_seen() {  // the op on the device beneath which _to_cpu runs fell back
  Frame* running = op_running();
  if (running != nullptr) running->fell_back = true;
}

// Whether a sync-kind op made the host wait on the device: it has a kernel of the device's own (a composite's ops are
// counted where they run: one_hot given its number of classes reads nothing).
bool runs_on_device(const Frame& frame) {
  return frame.handle.has_value() && frame.handle->hasKernelForDispatchKey(watched_key.load());
}

bool masked(c10::ArrayRef<const c10::IValue> inputs) {
  if (inputs.size() < 2 || (!inputs[1].isOptionalTensorList() && !inputs[1].isTensorList())) return false;
  for (const c10::IValue& index : inputs[1].toListRef()) {
    if (index.isTensor() && index.toTensor().defined()) {
      auto dtype = index.toTensor().scalar_type();
      if (dtype == at::kBool || dtype == at::kByte) return true;
    }
  }
  return false;
}

std::unique_ptr<at::ObserverContext> op_started(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const char* overload = fn.overload_name();
  if (name == nullptr) {
    frames.push_back({"", "", Kind::None, false});
    return nullptr;
  }
  c10::DeviceType type = watched;
  const OpKind& op = kind_of(fn, name, overload);
  auto inputs = fn.inputs();
  bool on_device = false, tensors_on_device = false;
  for (const c10::IValue& value : inputs) {
    if (touches(value, type)) {
      on_device = true;
      tensors_on_device = tensors_on_device || !value.isDevice();
    }
  }
  Kind kind = op.kind == Kind::Indexing ? (on_device && masked(inputs) ? Kind::Sync : Kind::None) : op.kind;
  if (kind == Kind::ToCpu && on_device) to_cpu_seen();
  if (kind == Kind::Copy) copy_seen(op, inputs, type);
  frames.push_back({name, overload, kind, on_device, on_device && !tensors_on_device, kind == Kind::Sync ? op.handle : std::nullopt});
  return nullptr;
}

void op_ended(const at::RecordFunction&, at::ObserverContext*) {
  std::vector<Frame>& running = frames;  // (a thread's own: found once)
  if (running.empty()) return;  // an op begun before observing began
  Frame frame = running.back();
  running.pop_back();
  if (frame.fell_back) {
    std::string op = full_name(frame.name, frame.overload);
    {
      std::lock_guard<std::mutex> lock(mutex);
      totals.fallbacks[op] += 1;
      totals.fallback_bytes += frame.fallback_bytes;
    }
    if (attributing) tell("fallback", op, "", frame.fallback_bytes);
  } else if (frame.kind == Kind::Sync && frame.on_device && !frame.synced && fallen_back() == nullptr && runs_on_device(frame)) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      totals.syncs += 1;
    }
    if (attributing) tell("sync", full_name(frame.name, frame.overload), "", 0);
    frame.synced = true;
  }
  if (frame.synced && !running.empty()) running.back().synced = true;  // counted once: at the innermost op that made the host wait
}

// Which device's costs are counted: a device type torch knows by this name ('cuda', 'neuron', 'hostdev').
void watch(const std::string& device) {
  std::lock_guard<std::mutex> lock(mutex);
  c10::Device parsed(device);
  watched = parsed.type();
  watched_key = c10::computeDispatchKey(std::nullopt, std::nullopt, parsed);
}

// Start counting every event (its totals from zero), telling `callback` of each while attributing; stop with None.
void observe(pybind11::object callback) {
  std::lock_guard<std::mutex> lock(mutex);
  if (handle.has_value()) {
    at::removeCallback(*handle);
    handle.reset();
  }
  delete observer;
  observer = nullptr;
  attributing = false;
  if (callback.is_none()) return;
  observer = new pybind11::object(callback);
  totals = Totals();
  attributing = true;
  handle = at::addGlobalCallback(at::RecordFunctionCallback(&op_started, &op_ended).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

void attribute(bool on) {
  attributing = on;
}

void graph_running(bool) {}  // the observer follows every op, in compiled graphs too: nothing to switch

std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, std::map<std::string, int64_t>> observed_totals() {
  std::lock_guard<std::mutex> lock(mutex);
  return {totals.to_host, totals.to_device, totals.bytes_to_host, totals.bytes_to_device, totals.syncs, totals.collective_copies,
          totals.fallback_bytes, totals.fallbacks};
}

void set_collective(const std::string& name) {
  collective = name;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.doc() = "neurondev's observer of the dispatcher: a native device's copies, syncs and fallbacks, from RecordFunction";
  module.def("watch", &watch, "count the costs of the device type torch knows by this name");
  module.def("observe", &observe, "count every event from now, telling callback(kind, op, direction, bytes, called, collective) of each "
             "while attributing; None stops");
  module.def("attribute", &attribute, "whether the observer is told of each event (True) or they are only counted (False)");
  module.def("graph_running", &graph_running, "a compiled graph begins or ends (nothing changes: every op is followed)");
  module.def("observed_totals", &observed_totals,
             "(to_host, to_device, bytes_to_host, bytes_to_device, syncs, collective_copies, fallback_bytes, fallbacks) since observe()");
  module.def("set_collective", &set_collective, "the collective running on this thread ('' for none): its copies are said to be its");
}
