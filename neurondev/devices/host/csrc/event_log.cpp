// The device's own event log (every copy, sync and fallback, read back by Python: the ground truth neurondev's
// accounting is tested against) and its observer: it counts every event in C++ and, while it attributes, calls back
// into Python with each one, so that Python runs only at events, never at every op. The op the program called (the
// outermost op on the thread, which a fallback happened beneath) comes from a RecordFunction callback.
#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "python_api.h"

namespace hostdev {

thread_local std::string falling_back;
thread_local int64_t fallback_bytes = 0;

namespace {

struct Event {
  std::string kind;
  std::string op;
  std::string direction;
  int64_t bytes;
};

std::mutex log_mutex;
std::vector<Event> event_log;
thread_local std::string collective;  // the collective running on this thread (said from Python), whose copies these are

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
  pybind11::error_scope pending;  // an error Python has set (an op raising through us) is kept, and given back after
  if (observer == nullptr) return;
  try {
    (*observer)(event.kind, event.op, event.direction, event.bytes, outermost_depth >= 0 ? outermost : event.op, collective);
  } catch (pybind11::error_already_set& error) {  // the observer's own failure never reaches the program
    error.discard_as_unraisable("neurondev's host device observer");
  }
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

}  // namespace

void record(const std::string& kind, const std::string& op, const std::string& direction, int64_t bytes) {
  Event event{kind, op, direction, bytes};
  bool part_of_fallback = kind == "copy" && !op.empty();
  if (part_of_fallback && direction != "on_device") fallback_bytes += bytes;  // what crossed the boundary: the host's cost
  {
    std::lock_guard<std::mutex> lock(log_mutex);
    event_log.push_back(event);
    if (observed && !part_of_fallback) count(event);
  }
  if (observed && attributing && !part_of_fallback && direction != "on_device") tell(event);
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

}  // namespace hostdev
