"""torch.compile(backend="loupe") on CUDA tensors: every graph compiled, traced and correct.

Each result is compared with a float64 reference on the same inputs (float64_reference.py). Device
memory Loupe takes is filled with NaN bit patterns first (LOUPE_POISON_DEVICE_MEMORY), so a
kernel that reads what no one wrote cannot pass, and a NaN never compares equal. Strict mode:
an internal error raises instead of running eagerly. Skipped without a CUDA device."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
from float64_reference import assert_close_to_reference

from conftest import query, show_json

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.fixture(autouse=True)
def poisoned_device_memory(monkeypatch):
    monkeypatch.setenv("LOUPE_POISON_DEVICE_MEMORY", "1")


def compile_strict(fn, trace_path, **options):
    return torch.compile(
        fn, backend="loupe", options={"trace": trace_path, "strict": True, **options}
    )


def run_three_ways(fn, inputs):
    """(loupe's result with the compiled fn, eager's, the float64 reference)."""
    eager = fn(*inputs)
    reference = fn(*[x.double() if x.is_floating_point() else x for x in inputs])
    return eager, reference


def pointwise_chain(x, y):
    return torch.sigmoid(x) * y + torch.tanh(x) * 0.5 - torch.exp(-x.abs()) / (1 + y * y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_pointwise_chain(trace_path, dtype):
    compiled = compile_strict(pointwise_chain, trace_path)
    for n in (1 << 20, 1000, 3):  # vectorised, with a tail, tiny
        x = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.randn(n, device="cuda", dtype=dtype)
        eager, reference = run_three_ways(pointwise_chain, (x, y))
        assert_close_to_reference(compiled(x, y), eager, reference, f"n={n}")
        torch._dynamo.reset()


def test_broadcast_and_strided_inputs(trace_path):
    def f(x, bias, column):
        return torch.relu(x.t() + bias) * column

    compiled = compile_strict(f, trace_path)
    x = torch.randn(96, 64, device="cuda")
    bias = torch.randn(96, device="cuda")
    column = torch.randn(64, 1, device="cuda")
    eager, reference = run_three_ways(f, (x, bias, column))
    assert_close_to_reference(compiled(x, bias, column), eager, reference)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("cols", [10, 1000, 5000])
def test_softmax_and_layer_norm(trace_path, dtype, cols):
    def f(x, w, b):
        return F.layer_norm(torch.softmax(x, dim=-1) * 10, (x.shape[-1],), w, b)

    compiled = compile_strict(f, trace_path)
    x = torch.randn(37, cols, device="cuda", dtype=dtype)
    w = torch.randn(cols, device="cuda", dtype=dtype)
    b = torch.randn(cols, device="cuda", dtype=dtype)
    eager, reference = run_three_ways(f, (x, w, b))
    assert_close_to_reference(compiled(x, w, b), eager, reference)


@pytest.mark.parametrize("cols", [10, 1000, 5000])
def test_softmax_and_layer_norm_are_one_row_kernel_each(trace_path, cols):
    def f(x, w, b):
        return torch.softmax(x, dim=-1), F.layer_norm(x, (x.shape[-1],), w, b)

    compiled = compile_strict(f, trace_path)
    x = torch.randn(37, cols, device="cuda")
    w = torch.randn(cols, device="cuda")
    b = torch.randn(cols, device="cuda")
    eager, reference = run_three_ways(f, (x, w, b))
    for got, e, r in zip(compiled(x, w, b), eager, reference):
        assert_close_to_reference(got, e, r)
    kernels = query(trace_path, "SELECT kind, op_summary, source FROM kernels")
    generated = [k for k in kernels if k[0] == "generated"]
    assert len(generated) == 2, kernels
    assert all("acc1" in source for _, _, source in generated), generated
    decisions = query(trace_path, "SELECT description FROM decisions")
    assert any("row-fusion" in d and "cuda:0" in d for (d,) in decisions), decisions


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("cols", [64, 1024, 5000])
def test_a_residual_add_is_computed_inside_the_layer_norm_row_kernel(trace_path, dtype, cols):
    """A post-norm block's `layer_norm(x + h)` is one row kernel reading x and h: the add is
    computed in each pass over the row, never written to memory."""

    def f(x, h, w, b):
        return F.layer_norm(x + h, (x.shape[-1],), w, b)

    compiled = compile_strict(f, trace_path)
    torch.manual_seed(0)
    x, h = (torch.randn(37, cols, device="cuda", dtype=dtype) for _ in range(2))
    w, b = (torch.randn(cols, device="cuda", dtype=dtype) for _ in range(2))
    eager, reference = run_three_ways(f, (x, h, w, b))
    assert_close_to_reference(compiled(x, h, w, b), eager, reference)
    summaries = [s for (s,) in query(trace_path, "SELECT op_summary FROM kernels")]
    assert len([s for s in summaries if "generated:row" in s]) == 1, summaries
    assert not any(s.startswith("aten.add.Tensor") for s in summaries), summaries
    decisions = query(trace_path, "SELECT description FROM decisions")
    # The add (in bf16 a pointwise group: the add and its cast to f32) joins the row group.
    assert any("row-fusion: fuse" in d and "computed in each pass" in d for (d,) in decisions)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_layer_norm_and_softmax_train_as_generated_kernels_in_every_dtype(trace_path, dtype):
    """Low-precision layer norm and softmax compute in f32 inside generated kernels, forward and
    backward (layer norm's backward included): no aten fallback anywhere in the trace."""

    def f(x, w, b):
        return torch.softmax(F.layer_norm(x, (x.shape[-1],), w, b), dim=-1)

    compiled = compile_strict(f, trace_path)
    torch.manual_seed(0)
    leaves = [
        torch.randn(48, 3, 300, device="cuda", dtype=dtype),
        torch.randn(300, device="cuda", dtype=dtype),
        torch.randn(300, device="cuda", dtype=dtype),
    ]
    grad = torch.randn(48, 3, 300, device="cuda", dtype=dtype)

    def run(fn, tensors):
        tensors = [t.detach().clone().requires_grad_() for t in tensors]
        out = fn(*tensors)
        out.backward(grad.to(out.dtype))
        return [out.detach()] + [t.grad for t in tensors]

    got = run(compiled, leaves)
    eager = run(f, leaves)
    reference = run(f, [t.double() for t in leaves])
    for what, g, e, r in zip(["out", "grad x", "grad w", "grad b"], got, eager, reference):
        assert_close_to_reference(g, e, r, what)
    kinds = query(trace_path, "SELECT DISTINCT kind FROM kernels")
    assert ("fallback",) not in kinds, kinds
    rows = query(trace_path, "SELECT op_summary FROM kernels WHERE op_summary LIKE '%row%'")
    assert len(rows) >= 2, rows  # the forward's row group, and grad_input's


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_linear_bias_is_added_in_the_cublaslt_epilogue(trace_path, dtype):
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 200).cuda().to(dtype)
    compiled = compile_strict(linear, trace_path)
    x = torch.randn(37, 96, device="cuda", dtype=dtype)
    with torch.no_grad():
        eager = linear(x)
        reference = F.linear(x.double(), linear.weight.double(), linear.bias.double())
        assert_close_to_reference(compiled(x), eager, reference)
    kernels = query(trace_path, "SELECT kind, op_summary, reason FROM kernels")
    biased = [k for k in kernels if "cublaslt:matmul+bias" in k[1]]
    assert biased and biased[0][0] == "library", kernels
    assert not any(k[0] == "generated" for k in kernels), kernels  # no kernel left for the add


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [False, True])
def test_an_odd_vocabulary_runs_split_into_aligned_columns(trace_path, dtype, bias):
    """GPT-2's logits: n = 50257 is not a multiple of 8. The product runs as two cuBLASLt calls
    (50256 columns, then 1) into padded rows, copied out: every column, the last included, and
    the bias of each, match the float64 reference, and the kernel's reason says so."""
    torch.manual_seed(0)
    head = torch.nn.Linear(768, 50257, bias=bias, device="cuda", dtype=dtype)
    compiled = compile_strict(head, trace_path)
    x = torch.randn(4, 128, 768, device="cuda", dtype=dtype)
    with torch.no_grad():
        got = compiled(x)
        eager = head(x)
        reference = F.linear(x.double(), head.weight.double(), head.bias.double() if bias else None)
    assert got.is_contiguous()
    assert_close_to_reference(got, eager, reference, "logits")
    assert_close_to_reference(got[..., -1:], eager[..., -1:], reference[..., -1:], "last column")
    reasons = [r for (r,) in query(trace_path, "SELECT reason FROM kernels WHERE kind = 'library'")]
    assert any("the first 50256 columns and the last 1 run as two calls" in r for r in reasons), (
        reasons
    )


@pytest.mark.parametrize(
    "dtype, activation, implementation",
    [
        (torch.float32, torch.relu, "cublaslt:matmul+bias+relu"),
        (torch.bfloat16, torch.relu, "cublaslt:matmul+bias+relu"),
        # cuBLASLt's GELU is too coarse for f32 (kernel selection leaves it to a generated kernel).
        (torch.bfloat16, lambda y: F.gelu(y, approximate="tanh"), "cublaslt:matmul+bias+gelu"),
        (torch.float16, lambda y: F.gelu(y, approximate="tanh"), "cublaslt:matmul+bias+gelu"),
    ],
)
def test_a_linear_activation_runs_in_the_cublaslt_epilogue(
    trace_path, dtype, activation, implementation
):
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 200).cuda().to(dtype)

    def f(x, weight, bias):
        return activation(F.linear(x, weight, bias))

    compiled = compile_strict(lambda x: f(x, linear.weight, linear.bias), trace_path)
    x = torch.randn(37, 96, device="cuda", dtype=dtype)
    with torch.no_grad():
        eager = f(x, linear.weight, linear.bias)
        reference = f(x.double(), linear.weight.double(), linear.bias.double())
        assert_close_to_reference(compiled(x), eager, reference)
    kernels = query(trace_path, "SELECT kind, op_summary FROM kernels")
    ran = [(kind, op) for kind, op in kernels if kind != "view"]
    assert [kind for kind, _ in ran] == ["library"], kernels  # no kernel for the activation
    assert implementation in ran[0][1], kernels


@pytest.mark.parametrize(
    "dtype, activation, implementation",
    [
        (torch.float32, torch.relu, "cublaslt:matmul+bias+relu"),
        (torch.bfloat16, lambda y: F.gelu(y, approximate="tanh"), "cublaslt:matmul+bias+gelu"),
    ],
)
def test_a_linear_on_3d_rows_keeps_its_activation_in_the_epilogue(
    trace_path, dtype, activation, implementation
):
    """A Linear on [B, T, C] multiplies the flattened rows and views the product back to 3-d
    before the activation: the activation moves before that view, into cuBLASLt's epilogue."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 200).cuda().to(dtype)

    def f(x, weight, bias):
        return activation(F.linear(x, weight, bias))

    compiled = compile_strict(lambda x: f(x, linear.weight, linear.bias), trace_path)
    x = torch.randn(3, 37, 96, device="cuda", dtype=dtype)
    with torch.no_grad():
        eager = f(x, linear.weight, linear.bias)
        reference = f(x.double(), linear.weight.double(), linear.bias.double())
        got = compiled(x)
        assert got.shape == eager.shape
        assert_close_to_reference(got, eager, reference)
    kernels = query(trace_path, "SELECT kind, op_summary FROM kernels")
    ran = [(kind, op) for kind, op in kernels if kind != "view"]
    assert [kind for kind, _ in ran] == ["library"], kernels  # no kernel for the activation
    assert implementation in ran[0][1], kernels


@pytest.mark.parametrize("batched", [False, True])
def test_a_large_product_with_unaligned_rows_is_right(trace_path, batched):
    """An odd N (a vocabulary of 5003): output rows that do not start at 16-byte boundaries,
    which leave cuBLASLt its unaligned kernels only."""
    torch.manual_seed(0)
    shape = (2, 256, 512) if batched else (256, 512)
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(5003, 512, device="cuda", dtype=torch.bfloat16) / 16

    def f(x, w):
        return torch.matmul(x, w.t()) if not batched else torch.bmm(x, w.t().expand(2, -1, -1))

    compiled = compile_strict(f, trace_path)
    eager, reference = run_three_ways(f, (x, w))
    assert_close_to_reference(compiled(x, w), eager, reference)


def test_a_split_products_padded_rows_are_planned_in_the_arena(trace_path):
    """GPT-2's logits in bf16 (n not a multiple of 8, m >= 128) run as two cuBLASLt calls into
    rows padded to 16 bytes, then copied out. Those rows are the kernel's scratch in the arena:
    the plan lists them, and a call allocates nothing but its output."""
    torch.manual_seed(0)
    m, k, n = 256, 512, 8197
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) / 16

    def f(x, w):
        return torch.relu(x) @ w

    compiled = compile_strict(f, trace_path, cuda_graphs=False)
    eager, reference = run_three_ways(f, (x, w))
    for _ in range(2):  # the first call lays the arena out and takes cuBLASLt's workspace
        assert_close_to_reference(compiled(x, w), eager, reference)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = compiled(x, w)
    torch.cuda.synchronize()
    grew = torch.cuda.max_memory_allocated() - before
    assert_close_to_reference(out, eager, reference)
    pitch = (n // 8 + 1) * 8
    assert grew < m * n * 2 + 4096, f"a call took {grew} bytes; its output is {m * n * 2}"
    buffers = query(trace_path, "SELECT name, size_bytes, offset FROM buffers")
    scratch = [b for b in buffers if b[0].endswith(".scratch")]
    assert len(scratch) == 1 and scratch[0][1] == m * pitch * 2, buffers
    assert scratch[0][2] is not None, buffers  # in the arena
    reasons = query(trace_path, "SELECT reason FROM kernels WHERE kind = 'library'")
    assert any("the kernel's scratch" in r for (r,) in reasons), reasons


def test_a_relu_epilogue_trains(trace_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)
    ).cuda()
    reference_model = [p.detach().double().requires_grad_(True) for p in model.parameters()]
    compiled = compile_strict(model, trace_path)
    x = torch.randn(16, 64, device="cuda")
    compiled(x).square().sum().backward()
    w1, b1, w2, b2 = reference_model
    F.linear(torch.relu(F.linear(x.double(), w1, b1)), w2, b2).square().sum().backward()
    for parameter, expected in zip(model.parameters(), reference_model):
        torch.testing.assert_close(parameter.grad.double(), expected.grad, rtol=1e-4, atol=1e-4)
    ops = [op for (op,) in query(trace_path, "SELECT op_summary FROM kernels")]
    assert any("cublaslt:matmul+bias+relu" in op for op in ops), ops


class TanhGeluMlp(torch.nn.Module):
    def __init__(self, d=64, hidden=256):
        super().__init__()
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)

    def forward(self, x):
        return self.down(F.gelu(self.up(x), approximate="tanh"))


@pytest.mark.parametrize("shape", [(32, 64), (4, 8, 64)])
def test_a_tanh_gelu_epilogue_trains_saving_its_input(trace_path, shape):
    """Training saves the GELU's input (the first Linear's output) for GELU's backward: the
    forward's Linear and GELU are still one cuBLASLt call, which writes that input from its
    epilogue beside the GELU, and the backward's gelu_backward runs in the epilogue of the
    product that makes its gradient, reading the saved input back. Two steps in bf16 (the second
    may replay a CUDA graph), every gradient within 4x eager's error against float64. On a 3-d
    input the Linear views its product back to 3-d before the GELU: the GELU, and in the
    backward gelu_backward, move before that view into the epilogues all the same."""
    torch.manual_seed(0)
    model = TanhGeluMlp().cuda().to(torch.bfloat16)
    eager_model = TanhGeluMlp().cuda().to(torch.bfloat16)
    eager_model.load_state_dict(model.state_dict())
    reference_model = TanhGeluMlp().cuda().double()
    reference_model.load_state_dict(model.state_dict())
    compiled = compile_strict(model, trace_path)
    for step in range(2):
        for m in (model, eager_model, reference_model):
            m.zero_grad()
        x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        xe = x.detach().clone().requires_grad_()
        x64 = x.detach().double().requires_grad_()
        out = compiled(x)
        grad = torch.randn_like(out)
        out.backward(grad)
        eager_out = eager_model(xe)
        eager_out.backward(grad)
        ref_out = reference_model(x64)
        ref_out.backward(grad.double())
        assert_close_to_reference(out.detach(), eager_out.detach(), ref_out.detach(), "output")
        grads = zip(
            [x.grad] + [p.grad for p in model.parameters()],
            [xe.grad] + [p.grad for p in eager_model.parameters()],
            [x64.grad] + [p.grad for p in reference_model.parameters()],
        )
        for i, (got, e, r) in enumerate(grads):
            assert_close_to_reference(got, e, r, f"step {step}, gradient {i}")
    ops = [op for (op,) in query(trace_path, "SELECT op_summary FROM kernels")]
    assert any("cublaslt:matmul+bias+gelu+aux" in op for op in ops), ops
    assert any("cublaslt:matmul+dgelu" in op for op in ops), ops
    # No GELU left as a kernel of its own in the forward: the epilogue computed it.
    forward = query(
        trace_path,
        "SELECT k.op_summary FROM kernels k JOIN compiles c ON k.compile_id = c.id "
        "WHERE c.graph_kind = 'forward'",
    )
    assert not any("gelu" in op and "cublaslt" not in op for (op,) in forward), forward


def test_reductions_over_outer_and_inner_dims(trace_path):
    def f(x):
        return x.sum(0), x.amax(-1), x.mean((0, 2), keepdim=True)

    compiled = compile_strict(f, trace_path)
    x = torch.randn(33, 65, 129, device="cuda")
    eager, reference = run_three_ways(f, (x,))
    for got, e, r in zip(compiled(x), eager, reference):
        assert_close_to_reference(got, e, r)


class Mlp(torch.nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.down(F.gelu(self.up(x))))


def test_a_layer_norm_whose_rows_fill_48_kb_of_cache(trace_path):
    """A residual add and a layer norm in bf16 over 2048 rows 768 wide: four inputs walk each
    row (the two addends, the weight and the bias, read as bf16), a warp a row and 8 rows a
    block (enough rows to fill the GPU that way), exactly 48 KB of row cache. With the
    reductions' partials that is more than a block may take: the row entry must run uncached
    rather than fail to launch."""

    def f(x, y, w, b):
        return F.layer_norm(x + y, (768,), w, b)

    compiled = compile_strict(f, trace_path)
    x, y = (torch.randn(16, 128, 768, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    w, b = (torch.randn(768, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    eager, reference = run_three_ways(f, (x, y, w, b))
    assert_close_to_reference(compiled(x, y, w, b), eager, reference)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mlp_forward_and_backward(trace_path, dtype):
    torch.manual_seed(0)
    model = Mlp().cuda().to(dtype)
    reference_model = Mlp().cuda().double()
    reference_model.load_state_dict(model.state_dict())
    compiled = compile_strict(model, trace_path)
    x = torch.randn(64, 256, device="cuda", dtype=dtype, requires_grad=True)
    x64 = x.detach().double().requires_grad_()

    out = compiled(x)
    grad = torch.randn_like(out)
    out.backward(grad)
    loupe_grads = [x.grad] + [p.grad for p in model.parameters()]
    eager_model = Mlp().cuda().to(dtype)
    eager_model.load_state_dict(model.state_dict())
    xe = x.detach().clone().requires_grad_()
    eager_out = eager_model(xe)
    eager_out.backward(grad)
    eager_grads = [xe.grad] + [p.grad for p in eager_model.parameters()]
    ref_out = reference_model(x64)
    ref_out.backward(grad.double())
    ref_grads = [x64.grad] + [p.grad for p in reference_model.parameters()]

    assert_close_to_reference(out.detach(), eager_out.detach(), ref_out.detach())
    for i, (got, e, r) in enumerate(zip(loupe_grads, eager_grads, ref_grads)):
        assert_close_to_reference(got, e, r, f"gradient {i}")
    kinds = {row[0] for row in query(trace_path, "SELECT DISTINCT graph_kind FROM compiles")}
    assert {"forward", "backward"} <= kinds


def test_dynamic_batch_is_one_kernel_for_every_size(trace_path):
    compiled = torch.compile(
        pointwise_chain,
        backend="loupe",
        dynamic=True,
        options={"trace": trace_path, "strict": True},
    )
    for n in (17, 4096, 100_000):
        x = torch.randn(n, 8, device="cuda")
        y = torch.randn(n, 8, device="cuda")
        eager, reference = run_three_ways(pointwise_chain, (x, y))
        assert_close_to_reference(compiled(x, y), eager, reference, f"n={n}")
    assert query(trace_path, "SELECT COUNT(*) FROM compiles WHERE status = 'ok'") == [(1,)]


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second CUDA device")
def test_a_graph_on_the_second_device(trace_path):
    """cuda:1: kernels built for it and launched on its current stream, its memory from its
    own caching allocator, results and gradients right, and the caller's current device left
    as it was."""
    torch.manual_seed(0)
    device = torch.device("cuda:1")
    model = Mlp(128).to(device)
    compiled = compile_strict(model, trace_path)
    x = torch.randn(16, 128, device=device)
    current = torch.cuda.current_device()
    out = compiled(x)
    assert torch.cuda.current_device() == current
    out.square().mean().backward()
    assert torch.cuda.current_device() == current
    grads = [p.grad.clone() for p in model.parameters()]
    reference_model = Mlp(128).to(device).double()
    reference_model.load_state_dict(model.state_dict())
    reference = reference_model(x.double())
    reference.square().mean().backward()
    for p in model.parameters():
        p.grad = None
    eager = model(x)
    eager.square().mean().backward()
    assert out.device == device
    assert_close_to_reference(out, eager.detach(), reference.detach())
    for got, e, r in zip(grads, model.parameters(), reference_model.parameters()):
        assert_close_to_reference(got, e.grad, r.grad, "gradient")
    targets = query(trace_path, "SELECT DISTINCT target FROM kernels WHERE kind != 'view'")
    assert targets == [("cuda:1",)], targets


def test_cpu_scalar_feeds_a_cuda_graph(trace_path):
    def f(x, scale):
        return torch.tanh(x) * scale

    compiled = compile_strict(f, trace_path)
    x = torch.randn(1000, device="cuda")
    scale = torch.tensor(3.0)  # on the CPU, as torch allows for 0-d tensors
    eager, reference = run_three_ways(f, (x, scale))
    assert_close_to_reference(compiled(x, scale), eager, reference)


def test_ops_loupe_does_not_generate_run_as_aten_on_the_device(trace_path):
    def f(x):
        return torch.cumsum(torch.relu(x), dim=1) + 1

    compiled = compile_strict(f, trace_path)
    x = torch.randn(64, 300, device="cuda")
    eager, reference = run_three_ways(f, (x,))
    assert_close_to_reference(compiled(x), eager, reference)
    rows = query(trace_path, "SELECT kind, target, op_summary FROM kernels")
    assert any(kind == "fallback" and target == "cuda:0" for kind, target, _ in rows), rows


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("width", [768, 7])  # 16-byte units; units of one element
def test_embedding_is_the_row_gather_kernel(trace_path, dtype, width):
    def f(table, ids, ids32):
        # A table whose rows are narrower than its row stride, and misaligned; int32 indices.
        return F.embedding(ids, table[:, 1:]) * 2, F.embedding(ids32, table)

    compiled = compile_strict(f, trace_path)
    table = torch.randn(103, width, device="cuda", dtype=dtype)
    ids = torch.randint(0, 100, (4, 33), device="cuda")
    ids32 = torch.randint(0, 103, (5,), device="cuda", dtype=torch.int32)
    eager = f(table, ids, ids32)
    result = compiled(table, ids, ids32)
    for got, want in zip(result, eager):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    rows = query(
        trace_path, "SELECT kind, op_summary FROM kernels WHERE op_summary LIKE '%embedding%'"
    )
    assert rows and all("cuda:row-gather" in summary for _, summary in rows), rows


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_upsampling_gathers_are_read_by_the_generated_kernel_that_weights_them(trace_path, mode):
    """Upsampling's _unsafe_index gathers join the generated kernel of their weighted sum (its
    strided entry) and read a channels-last input through its own strides; the result within
    float64 eager's tolerance, no gather left to another kernel."""

    def f(x):
        up = F.interpolate(x, scale_factor=2, mode=mode, align_corners=False)
        return torch.tanh(up) * 2

    compiled = compile_strict(f, trace_path)
    x = torch.randn(2, 3, 9, 11, device="cuda").to(memory_format=torch.channels_last)
    eager, reference = run_three_ways(f, (x,))
    assert_close_to_reference(compiled(x), eager, reference)
    kernels = query(trace_path, "SELECT kind, op_summary, fused_nodes FROM kernels")
    assert any(
        kind == "generated" and "aten._unsafe_index.Tensor" in (nodes or "")
        for kind, _, nodes in kernels
    ), kernels
    assert not any(
        kind != "generated" and "_unsafe_index" in summary for kind, summary, _ in kernels
    ), kernels


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_upsampling_backward_scatters_on_the_scatter_kernel(trace_path, mode):
    """Upsampling's backward adds the gradient into the input's shape with index_put
    (accumulate): the runtime's scatter kernel (atomic adds), not aten's sort-based one through
    the fallback; the gradient within float64 eager's tolerance."""

    def f(x):
        return F.interpolate(x, scale_factor=2, mode=mode).tanh().sum()

    compiled = compile_strict(f, trace_path)
    x = torch.randn(2, 3, 9, 11, device="cuda", requires_grad=True)
    compiled(x).backward()
    got = x.grad.clone()
    x.grad = None
    f(x).backward()
    eager = x.grad.clone()
    x64 = x.detach().double().requires_grad_()
    f(x64).backward()
    assert_close_to_reference(got, eager, x64.grad)
    rows = query(trace_path, "SELECT kind, op_summary FROM kernels")
    puts = [(kind, summary) for kind, summary in rows if "index_put" in summary]
    assert puts and all("cuda:scatter-add" in summary for _, summary in puts), rows


def test_index_put_writes_and_adds_with_broadcast_and_negative_indices(trace_path):
    """index_put on the scatter kernel: indices of two dims broadcast against each other (one
    int32, negative entries counted from the end), values broadcast to the indexed shape, a
    `none` slot in front; writing and adding, f32 and i64, as eager does."""

    def f(x, rows, cols, values, counts, at):
        written = torch.ops.aten.index_put(x, [None, rows, cols], values)
        added = torch.ops.aten.index_put(x, [None, rows, cols], values, True)
        tally = torch.ops.aten.index_put(counts, [at], torch.ones_like(at), True)
        return written * 1, added * 1, tally * 1

    compiled = compile_strict(f, trace_path)
    x = torch.randn(3, 7, 5, device="cuda")
    rows = torch.tensor([[0], [-1], [3]], device="cuda")  # [3, 1]
    cols = torch.tensor([1, 4], device="cuda", dtype=torch.int32)  # [2]: a block of [3, 2]
    values = torch.randn(3, 1, 2, device="cuda")  # broadcast over the leading dim's 3
    counts = torch.zeros(6, device="cuda", dtype=torch.int64)
    at = torch.tensor([0, 2, 2, 5, 2], device="cuda")
    args = (x, rows, cols, values, counts, at)
    for got, want in zip(compiled(*args), f(*args)):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    rows_ = query(trace_path, "SELECT kind, op_summary FROM kernels")
    puts = [summary for _, summary in rows_ if "index_put" in summary]
    assert len(puts) == 3 and all("cuda:scatter" in summary for summary in puts), rows_


def test_factory_ops_of_one_value_are_memsets(trace_path):
    def f(x):
        # zeros in f32, ones in bf16, zeros in f64 (two 4-byte words each), a bool mask, and
        # f64 ones, whose 8 bytes are no 4-byte pattern: that one stays with aten.
        return (
            torch.zeros_like(x) + x,
            torch.ones(x.shape, device=x.device, dtype=torch.bfloat16) * 3,
            x.new_zeros(x.shape, dtype=torch.float64) + 1,
            torch.full(x.shape, True, device=x.device) & (x > 0),
            x.new_ones(x.shape, dtype=torch.float64) * 2,
        )

    compiled = compile_strict(f, trace_path)
    x = torch.randn(33, 65, device="cuda")
    for got, want in zip(compiled(x), f(x)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    rows = query(trace_path, "SELECT kind, op_summary FROM kernels")
    fills = [summary for _, summary in rows if "cuda:fill" in summary]
    assert len(fills) == 4, rows
    fallbacks = [summary for kind, summary in rows if kind == "fallback"]
    assert len(fallbacks) == 1 and "new_ones" in fallbacks[0], rows


def test_the_trace_says_what_ran_on_the_gpu(trace_path):
    compiled = compile_strict(Mlp().cuda(), trace_path)
    compiled(torch.randn(8, 256, device="cuda"))
    show_json(trace_path)  # the CLI reads it
    [(compile_id, status)] = query(trace_path, "SELECT id, status FROM compiles")
    assert status == "ok"
    passes = query(trace_path, "SELECT name FROM passes WHERE compile_id = ?", compile_id)
    assert {"kernel-selection", "memory-planning"} <= {p for (p,) in passes}
    kernels = query(
        trace_path, "SELECT kind, target, reason, source, cache, resources FROM kernels"
    )
    generated = [k for k in kernels if k[0] == "generated"]
    assert generated and all(k[1] == "cuda:0" for k in generated)
    assert all("__global__" in k[3] and k[4] in ("hit", "built") for k in generated)
    assert all("registers" in k[5] for k in generated), [k[5] for k in generated]
    assert any(k[0] == "library" and "cuBLASLt" in k[2] for k in kernels)


@pytest.mark.parametrize("how", ["option", "mode"])
def test_cuda_graphs_replay_each_size_they_captured(trace_path, how, capsys, monkeypatch):
    model = Mlp().cuda()
    if how == "option":
        options = {"trace": trace_path, "strict": True, "cuda_graphs": True}
        compiled = torch.compile(model, backend="loupe", dynamic=True, options=options)
    else:  # torch.compile takes a mode or options, not both: the trace from the environment
        monkeypatch.setenv("LOUPE_TRACE", trace_path)
        compiled = torch.compile(model, backend="loupe", dynamic=True, mode="reduce-overhead")
    for batch in (3, 64, 3, 17, 64):  # a size seen before replays its graph
        x = torch.randn(batch, 256, device="cuda")
        with torch.no_grad():
            got = compiled(x)
            eager = model(x)
            reference = Mlp().cuda().double()
            reference.load_state_dict(model.state_dict())
            expected = reference(x.double())
        assert_close_to_reference(got, eager, expected, f"batch {batch}")
    assert "without a CUDA graph" not in capsys.readouterr().err


@pytest.fixture
def cuda_graph_wrappers(monkeypatch) -> list:
    """The CudaGraphedGraph of each graph the test compiles, in order."""
    import loupe.compiled

    wrappers = []

    class Recorded(loupe.compiled.CudaGraphedGraph):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            wrappers.append(self)

    monkeypatch.setattr(loupe.compiled, "CudaGraphedGraph", Recorded)
    return wrappers


# Under compute-sanitizer (scripts/test_gpu.sh --memcheck sets this), a replay's outputs are
# still referenced when the next call looks, so more captures are taken than the tests below
# count; the results stay correct and are still checked, and memcheck still sees every replay.
COUNTING_CAPTURES = os.environ.get("LOUPE_UNDER_MEMCHECK") != "1"


def test_launch_planning_replays_a_host_bound_graph_by_default(trace_path, cuda_graph_wrappers):
    """With no option, a small MLP at batch 8 (a few launches, microseconds of GPU work each) is
    replayed as a CUDA graph, and the trace says why; a graph whose products keep the GPU busy
    for milliseconds, or one compiled with profile on, is launched one by one."""
    model = Mlp().cuda()
    compiled = compile_strict(model, trace_path)
    reference = Mlp().cuda().double()
    reference.load_state_dict(model.state_dict())
    x = torch.randn(8, 256, device="cuda")
    with torch.no_grad():
        for call in range(4):
            assert_close_to_reference(compiled(x), model(x), reference(x.double()), f"call {call}")
    (wrapper,) = cuda_graph_wrappers
    assert not wrapper.asked and not wrapper.uncaptured
    assert [len(c) for c in wrapper.captured.values()] == [1] or not COUNTING_CAPTURES
    [(description, applied)] = query(
        trace_path, "SELECT description, applied FROM decisions WHERE kind = 'cuda-graph'"
    )
    assert applied == 1 and "at least a quarter of the kernels'" in description, description
    # The trace says how the calls ran: the first launched one by one, the second captured and
    # replayed, the last two replayed (the kernel stats count the first call only).
    wrapper.write_stats()
    if COUNTING_CAPTURES:
        [compile_detail] = show_json(trace_path)["detail"][0]["compiles"]
        graphs = compile_detail["cuda_graphs"]
        assert graphs == {
            "chosen_by": "launch-planning",
            "captures": 1,
            "replays": 3,
            "uncaptured_calls": 1,
            "failure": None,
        }, graphs

    with torch.no_grad():  # each compiled afresh (a reset, so that no size is made dynamic)
        torch._dynamo.reset()
        compile_strict(Mlp(d=2048).cuda(), trace_path)(torch.randn(8192, 2048, device="cuda"))
        torch._dynamo.reset()
        profiled = compile_strict(Mlp().cuda(), trace_path, profile=True)
        for _ in range(3):
            profiled(x)
    assert len(cuda_graph_wrappers) == 1, "the large and the profiled graph are not replayed"
    decisions = query(trace_path, "SELECT compile_id FROM decisions WHERE kind = 'cuda-graph'")
    assert len(decisions) == 2, decisions  # the small graph twice; the large one none


def test_cuda_graphs_capture_parameters_in_place(trace_path, cuda_graph_wrappers):
    model = Mlp().cuda()
    options = {"trace": trace_path, "strict": True, "cuda_graphs": True}
    compiled = torch.compile(model, backend="loupe", options=options)
    reference = Mlp().cuda().double()
    reference.load_state_dict(model.state_dict())
    inputs = [torch.randn(32, 256, device="cuda") for _ in range(4)]  # alive at once: 4 addresses
    with torch.no_grad():
        for step, x in enumerate(inputs):
            assert_close_to_reference(compiled(x), model(x), reference(x.double()), f"call {step}")
        (wrapper,) = cuda_graph_wrappers
        (captures,) = wrapper.captured.values()
        if COUNTING_CAPTURES:
            assert len(captures) == 1, captures  # each call's output is gone before the next
            in_place = [address is not None for address in captures[0].at]
            assert sum(in_place) == len(list(model.parameters())), in_place  # x is copied
        # A parameter that moves is copied from then on: the results follow it, on the call that
        # captures again and on the replays after it, whose check of the addresses read in place
        # now skips a position in the middle.
        model.up.weight.data = model.up.weight.data.clone() * 2
        reference.up.weight.data *= 2
        for step, x in enumerate(inputs):
            expected = reference(x.double())
            assert_close_to_reference(compiled(x), model(x), expected, f"moved weight, {step}")


def test_cuda_graphs_training_reads_saved_activations_in_place(trace_path, cuda_graph_wrappers):
    """A training loop with an optimizer step: the forward's and the backward's graphs both
    replay, the backward reading the forward's saved activations where the forward's replay
    left them (no copy per activation per step), and every step matches eager."""
    torch.manual_seed(0)
    model = Mlp().cuda()
    eager_model = Mlp().cuda()
    reference = Mlp().cuda().double()
    eager_model.load_state_dict(model.state_dict())
    reference.load_state_dict(model.state_dict())
    options = {"trace": trace_path, "strict": True, "cuda_graphs": True}
    compiled = torch.compile(model, backend="loupe", options=options)
    x = torch.randn(64, 256, device="cuda")
    for step in range(6):
        results = []
        for m, run, inputs in (
            (model, compiled, x),
            (eager_model, eager_model, x),
            (reference, reference, x.double()),
        ):
            m.zero_grad(set_to_none=True)
            out = run(inputs)
            out.square().mean().backward()
            results.append([out.detach()] + [p.grad for p in m.parameters()])
        for i, (got, eager, expected) in enumerate(zip(*results)):
            assert_close_to_reference(got, eager, expected, f"step {step}, result {i}")
        with torch.no_grad():  # in place, as optimizers do: the parameters keep their addresses
            for m in (model, eager_model, reference):
                for p in m.parameters():
                    p -= 0.1 * p.grad
    forward, backward = cuda_graph_wrappers
    if not COUNTING_CAPTURES:
        return
    for wrapper in (forward, backward):
        (captures,) = wrapper.captured.values()
        assert 1 <= len(captures) <= 2, captures
    (captures,) = backward.captured.values()
    copied = [position for position, _ in captures[0].copied]
    # At most the gradient of the output moves between steps; the saved activations do not.
    assert len(copied) <= 1, copied


def test_cuda_graph_outputs_are_handed_out_and_never_overwritten_while_held(
    trace_path, cuda_graph_wrappers
):
    """A replay hands out the captured outputs themselves, not copies; a call made while the
    caller still holds earlier outputs takes a second capture, then runs uncaptured: no output
    the caller holds is ever overwritten."""

    def f(x):
        return torch.sin(x) * 2 + 1

    options = {"trace": trace_path, "strict": True, "cuda_graphs": True}
    compiled = torch.compile(f, backend="loupe", options=options)
    xs = [torch.randn(4096, device="cuda") for _ in range(6)]
    held = [compiled(x) for x in xs]
    for step, (x, y) in enumerate(zip(xs, held)):
        torch.testing.assert_close(y, f(x), msg=f"held output {step}")
    (wrapper,) = cuda_graph_wrappers
    (captures,) = wrapper.captured.values()
    assert len(captures) == 2, captures
    del held, y
    addresses = set()
    for step, x in enumerate(xs):  # each output gone before the next call: one capture serves
        y = compiled(x)
        torch.testing.assert_close(y, f(x), msg=f"call {step}")
        addresses.add(y.data_ptr())
        del y
    # A view is all the caller keeps of an output: it holds the capture as the output did.
    kept = compiled(xs[0])[10:]
    later = compiled(xs[1])
    torch.testing.assert_close(kept, f(xs[0])[10:], msg="a view kept of an earlier output")
    torch.testing.assert_close(later, f(xs[1]), msg="the call made while the view was kept")
    if not COUNTING_CAPTURES:
        return
    assert len(addresses) == 1, addresses
    assert addresses <= {out.data_ptr() for c in captures for out in c.outputs}


def test_cudnn_attention_with_its_int_results(trace_path):
    """cuDNN attention (torch's choice for bf16 on an H100) returns max_q and max_k as ints
    beside its tensors: the graph compiles, forward and backward."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    compiled = compile_strict(attention, trace_path)
    shape = (2, 4, 128, 64)
    inputs = [torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for leaf in inputs:
            leaf.requires_grad_(True)
        out = compiled(*inputs)
        grad = torch.randn_like(out)
        out.backward(grad)
        got = [out.detach()] + [t.grad for t in inputs]
        eager_inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
        eager_out = attention(*eager_inputs)
        eager_out.backward(grad)
        eager = [eager_out.detach()] + [t.grad for t in eager_inputs]
    reference_inputs = [t.detach().double().requires_grad_(True) for t in inputs]
    reference_out = attention(*reference_inputs)
    reference_out.backward(grad.double())
    reference = [reference_out.detach()] + [t.grad for t in reference_inputs]
    for i, (g, e, r) in enumerate(zip(got, eager, reference)):
        assert_close_to_reference(g, e, r, f"result {i}")
    ops = {op for (op,) in query(trace_path, "SELECT op_summary FROM kernels")}
    assert any("cudnn_attention" in op for op in ops), ops


def test_attention_with_dropout_runs_eagerly_and_says_why(trace_path, capsys):
    """Efficient attention's dropout seed and offset live on the host or the device by whether
    a CUDA graph is being captured when the op runs (its backward reads them through a host
    pointer outside a capture), which Loupe's CUDA graphs cannot hold: compiled, its backward
    read a device address on the host and crashed the process. The graphs run eagerly, train
    with eager's masks, and the trace says why."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.25)

    compiled = torch.compile(attention, backend="loupe", options={"trace": trace_path})
    shape = (2, 4, 128, 64)
    inputs = [torch.randn(shape, device="cuda") for _ in range(3)]
    grad = torch.randn(shape, device="cuda")

    def step(fn, seed):
        leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
        torch.manual_seed(seed)
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            out = fn(*leaves)
            out.backward(grad)
        return [out.detach()] + [t.grad for t in leaves]

    for seed in range(3):
        got, eager = step(compiled, seed), step(attention, seed)
        for i, (g, e) in enumerate(zip(got, eager)):
            torch.testing.assert_close(g, e, msg=f"call {seed}, result {i}")
    assert "eagerly" in capsys.readouterr().err
    messages = [m for (m,) in query(trace_path, "SELECT error_message FROM compiles")]
    assert messages and all("draws dropout (dropout_p=0.25)" in m for m in messages), messages
