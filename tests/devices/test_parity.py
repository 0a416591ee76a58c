"""The host test device at parity with a real out-of-tree device on what a user touches, after PyTorch's own tests
of its OpenReg backend: views of another dtype and complex tensors, checkpoints, recurrent modules, autocast,
torch.accelerator, generators, one device index, and the device checks of a real backend's kernels."""

from __future__ import annotations

import io

import pytest
import torch

import neurondev


@pytest.fixture
def device():
    yield neurondev.host_device()
    neurondev.host_device()


def test_views_of_another_dtype_give_the_cpus_values_and_share_the_devices_memory(device):
    pairs = torch.arange(8.0).reshape(2, 2, 2)
    complex_ = torch.view_as_complex(pairs.to(device))
    assert complex_.dtype == torch.complex64 and torch.equal(complex_.cpu(), torch.view_as_complex(pairs))
    assert torch.equal(torch.view_as_real(complex_).cpu(), pairs) and torch.equal(complex_.real.cpu(), pairs[..., 0])
    assert torch.equal(complex_.imag.cpu(), pairs[..., 1]) and "j" in repr(complex_)
    complex_.real.add_(1)  # a view: writing it writes the complex tensor's memory
    assert torch.equal(complex_.real.cpu(), pairs[..., 0] + 1)


def rotary(x, frequencies):
    rotated = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2)) * frequencies
    return torch.view_as_real(rotated).flatten(-2)


def test_complex_rotary_embeddings_equal_the_cpus(device):
    x = torch.randn(2, 4, 8)
    frequencies = torch.polar(torch.ones(4, 4), torch.randn(4, 4))
    assert torch.equal(rotary(x.to(device), frequencies.to(device)).cpu(), rotary(x, frequencies))


def test_a_checkpoint_saves_and_loads_on_the_device_and_maps_to_it_and_from_it(device):
    state = {"weight": torch.randn(3, 2).to(device)}
    saved = io.BytesIO()
    torch.save(state, saved)
    for map_location, expected in ((None, device), ("hostdev", device), ("cpu", torch.device("cpu"))):
        saved.seek(0)
        loaded = torch.load(saved, map_location=map_location)["weight"]
        assert loaded.device == expected and torch.equal(loaded.cpu(), state["weight"].cpu())
    host = io.BytesIO()
    torch.save(torch.ones(2), host)
    host.seek(0)
    assert torch.load(host, map_location="hostdev").device == device


@pytest.mark.parametrize("kind", [torch.nn.GRU, torch.nn.LSTM])
def test_recurrent_modules_run_and_train_with_the_cpus_values(device, kind):
    torch.manual_seed(0)
    module, x = kind(4, 3, batch_first=True), torch.randn(2, 5, 4)
    expected, _ = module(x)
    expected.sum().backward()
    grads = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    on_device = module.to(device)
    out, _ = on_device(x.to(device))
    out.sum().backward()
    torch.testing.assert_close(out.cpu(), expected)
    for mine, theirs in zip((p.grad for p in on_device.parameters()), grads):
        torch.testing.assert_close(mine.cpu(), theirs)


def test_autocast_casts_matrix_products_and_keeps_reductions_in_float32(device):
    assert torch.amp.is_autocast_available("hostdev") and device.type == "hostdev"
    a = torch.randn(4, 4).to(device)
    with torch.autocast("hostdev", enabled=False):
        assert (a @ a).dtype == torch.float32
    with torch.autocast("hostdev", dtype=torch.bfloat16):
        product = a @ a
        assert product.dtype == torch.bfloat16 and torch.softmax(product, -1).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = a.cpu() @ a.cpu()
    assert torch.equal(product.cpu(), expected)


def test_the_accelerator_api_and_the_device_module(device):
    assert torch.accelerator.current_accelerator() == torch.device("hostdev") and torch.accelerator.device_count() == 1
    torch.accelerator.synchronize()
    with torch.hostdev.device(0):
        assert torch.hostdev.current_device() == 0
    assert torch.hostdev.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_the_devices_memory_statistics_count_what_it_holds_as_a_trainer_reads_them(device):
    """torch.accelerator's memory figures (what accelerate and transformers' Trainer read on a device): the bytes the
    device holds now and at most, each allocation counted, the peak reset on request."""
    start, allocations = torch.accelerator.memory_allocated(), torch.accelerator.memory_stats()["num_device_alloc"]
    held = torch.empty(1000, dtype=torch.float32, device=device)
    assert torch.accelerator.memory_allocated() - start == held.nbytes == 4000
    assert torch.accelerator.max_memory_allocated() >= start + 4000
    assert torch.accelerator.memory_stats()["num_device_alloc"] == allocations + 1
    del held
    assert torch.accelerator.memory_allocated() == start
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == start
    torch.empty(10, device="cpu")  # the host's memory is not the device's
    assert torch.accelerator.memory_allocated() == start


def test_a_generator_of_the_device_is_the_devices_and_draws_as_the_cpus_with_the_same_seed(device):
    generator = torch.Generator(device="hostdev").manual_seed(3)
    assert generator.device == device
    reference = torch.Generator().manual_seed(3)
    for _ in range(2):  # its state advances with each draw
        assert torch.equal(torch.rand(4, device=device, generator=generator).cpu(), torch.rand(4, generator=reference))
    assert torch.equal(generator.get_state(), reference.get_state())


def test_there_is_one_device_and_another_index_is_refused(device):
    assert torch.hostdev.device_count() == 1
    for make in (lambda: torch.empty(2, device="hostdev:1"), lambda: torch.ones(2).to("hostdev:1")):
        with pytest.raises(RuntimeError, match="hostdev has one device, hostdev:0; got hostdev:1"):
            make()


def test_a_host_tensor_beside_a_device_tensor_is_refused_as_a_real_backend_refuses_it(device):
    x = torch.ones(3).to(device)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + torch.ones(3)
    assert (x + torch.tensor(2.0)).device == device  # a 0-dim host tensor is a scalar
    rows = torch.ones(4, 2).to(device)[torch.tensor([0, 2])]  # host indices, as on CUDA
    assert rows.device == device and rows.shape == (2, 2)


def test_an_op_made_to_fall_back_takes_host_and_device_tensors_as_a_cpu_fallback_does(device):
    with pytest.raises(RuntimeError, match="when checking aten::dot"):
        torch.dot(torch.ones(3).to(device), torch.ones(3))  # run on the device: refused
    neurondev.host_device(fallback=("aten::dot",))
    result = torch.dot(torch.ones(3).to(device), torch.ones(3))  # at::native::cpu_fallback moves what is on the device
    assert result.device == device and result.item() == 3.0


def _raised(run):
    try:
        run()
    except RuntimeError as error:
        return str(error).splitlines()[0]
    return None


@pytest.mark.parametrize(
    "name",
    ["mul out=", "ldexp_"],
)
def test_an_output_that_is_an_input_is_not_resized_where_the_cpu_refuses(device, name):
    """One tensor passed as an input and as the out= (or in place) is one tensor to the CPU's kernel on the device too:
    it raises as on the CPU, where the device resized the user's tensor (two aliases of one memory hid it)."""

    def run(on):
        x, z = torch.ones(3, 1, device=on), torch.ones(3, 4, device=on)
        if name == "ldexp_":
            x.ldexp_(z)
        else:
            torch.mul(x, z, out=x)
        return x

    refused = _raised(lambda: run("cpu"))
    assert refused is not None and _raised(lambda: run(device)) == refused
    kept = torch.ones(3, 1, device=device)
    with pytest.raises(RuntimeError):
        torch.mul(kept, torch.ones(3, 4, device=device), out=kept)
    assert kept.shape == (3, 1)  # the user's tensor as it was


def test_a_convolution_refuses_a_host_weight_beside_the_devices_input_as_every_other_op_does(device):
    x = torch.randn(1, 1, 5, 5, device=device)
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*hostdev:0 and cpu"):
        torch.nn.functional.conv2d(x, torch.randn(2, 1, 3, 3))
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device"):
        torch.nn.functional.conv2d(x, torch.randn(2, 1, 3, 3, device=device), torch.zeros(2))
    assert torch.nn.functional.conv2d(x, torch.ones(2, 1, 3, 3, device=device)).device == device


def test_an_output_its_kernel_leaves_lazily_conjugated_holds_the_cpus_values(device):
    """lu_solve(left=False, out=) on complex solves the adjoint problem and flips its output's conjugate bit at the
    end: the device's out= held the conjugate (the bit was set on the CPU's alias, not on the user's tensor)."""
    torch.manual_seed(0)
    a, b = torch.randn(3, 3, dtype=torch.complex64), torch.randn(2, 3, dtype=torch.complex64)
    lu, pivots = torch.linalg.lu_factor(a)
    expected = torch.empty(2, 3, dtype=torch.complex64)
    torch.linalg.lu_solve(lu, pivots, b, left=False, out=expected)
    out = torch.empty(2, 3, dtype=torch.complex64, device=device)
    torch.linalg.lu_solve(lu.to(device), pivots.to(device), b.to(device), left=False, out=out)
    assert torch.equal(out.cpu().resolve_conj(), expected.resolve_conj()) and out.is_conj() == expected.is_conj()


def test_a_composite_that_calls_the_cpus_kernel_itself_runs_as_on_the_cpu(device):
    """torch.svd(out=) on complex conjugates V in place through conj_physical_, whose composite kernel calls a
    DispatchStub that has kernels for the CPU and CUDA, none for a device that registers none: an internal assert."""
    torch.manual_seed(0)
    a = torch.randn(4, 3, dtype=torch.complex128)
    expected = torch.svd(a)
    outs = (
        torch.empty(0, dtype=a.dtype, device=device),
        torch.empty(0, dtype=torch.float64, device=device),
        torch.empty(0, dtype=a.dtype, device=device),
    )
    torch.svd(a.to(device), out=outs)
    assert all(torch.equal(out.cpu(), want) for out, want in zip(outs, expected))
    z = a.to(device)
    assert torch.equal(z.conj_physical_().cpu(), a.conj_physical())
