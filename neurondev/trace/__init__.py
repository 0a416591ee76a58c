"""Tracing on CPU: the recording backend (capture), aot_autograd's graphs (aten), user source lines (source)."""
