// The host device's one translation unit: every file of the device, each one concern (hostdev.h says which),
// compiled together. torch's headers are most of the build's time; parsed once, a cold build takes 34 s here, where
// compiling the files apart took 64 s on two cores (100 s of CPU) for the same library.
#include "event_log.cpp"
#include "memory.cpp"
#include "kernels.cpp"
#include "kernels_nn.cpp"
#include "native.cpp"
#include "fallback.cpp"
#include "registration.cpp"
