// What Python calls on the host device: registration.cpp binds these into the extension's module.
#pragma once

#include <torch/extension.h>

#include "hostdev.h"

namespace hostdev {

bool install();
std::tuple<std::vector<std::string>, std::vector<std::string>> set_fallback(const std::vector<std::string>& names);
std::vector<std::string> fallback_ops();
std::vector<std::tuple<std::string, std::string, std::string, int64_t>> events(size_t start);
size_t event_count();
void observe(pybind11::object callback);
void attribute(bool on);
void graph_running(bool begins);
std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, std::map<std::string, int64_t>> observed_totals();
void set_collective(const std::string& name);

}  // namespace hostdev
