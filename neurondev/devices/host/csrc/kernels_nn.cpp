// The device's kernels for what a network calls that has no CPU kernel for a fallback to reach: convolution (run as
// the CPU's on the same memory, or falling back when named in set_fallback()), the fused recurrent cells, and
// autocast's policy for the device.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include "hostdev.h"

namespace hostdev {

namespace {

// --- convolution ----------------------------------------------------------------------------------
// On a backend that is neither CPU nor CUDA, torch's convolution calls convolution_overrideable (and its backward),
// which have no CPU kernel for a fallback to reach. The device runs the CPU's convolution on the same memory; named in
// set_fallback(), it falls back as cpu_fallback does: its inputs copied to the host with aten::_to_cpu (what a profiler,
// or neurondev's observer of the dispatcher, sees beneath an op that fell back), its results copied back.
const char* kConvolution = "aten::convolution_overrideable";
const char* kConvolutionBackward = "aten::convolution_backward_overrideable";

struct ConvolutionRun {  // where a convolution's operands are for the CPU's kernel: aliases, or host copies
  bool fell_back;
  std::string outer;
  int64_t outer_bytes;
  const char* name;
  at::Tensor host(const at::Tensor& tensor) const { return fell_back ? at::_to_cpu({tensor})[0] : on_cpu(tensor); }
  at::Tensor device(const at::Tensor& result) const {
    if (!result.defined()) return result;
    return fell_back ? result.to(kDevice) : alias_on(result, kDevice, kDeviceKeys, device_memory());
  }
};

// A host weight or bias beside the device's input is refused, as every other op of the device refuses a host tensor (and
// as CUDA's convolution does): the CPU's convolution on the aliases would take it.
void refuse_host_tensors(const char* name, std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* tensor : tensors) {
    TORCH_CHECK(tensor == nullptr || !tensor->defined() || on_device(*tensor),
                "Expected all tensors to be on the same device, but found at least two devices, hostdev:0 and ", tensor->device(),
                "! (when checking ", name, ")");
  }
}

ConvolutionRun start_convolution(const char* name) {
  bool fell = falls_back(std::string(name).substr(6));
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
  refuse_host_tensors(kConvolution, {&input, &weight, bias.has_value() ? &*bias : nullptr});
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
  refuse_host_tensors(kConvolutionBackward, {&grad_output, &input, &weight});
  ConvolutionRun run = start_convolution(kConvolutionBackward);
  std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(run.host(grad_output), run.host(input), run.host(weight),
                                                                       at::OptionalIntArrayRef(bias_sizes), stride, padding, dilation,
                                                                       transposed, output_padding, groups, output_mask);
  std::tuple<at::Tensor, at::Tensor, at::Tensor> result{run.device(grad_input), run.device(grad_weight), run.device(grad_bias)};
  end_convolution(run);
  return result;
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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", convolution);
  m.impl("convolution_backward_overrideable", convolution_backward);
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

}  // namespace hostdev
