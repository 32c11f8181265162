"""The FX → .lir conversion, on graphs traced by make_fx (the aten graphs aot_autograd makes)."""

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from loupe import _C
from loupe.fx_to_lir import ConversionError, fx_to_lir

REGISTERED = set(_C.registered_ops())


def convert(fn, *args, registered=REGISTERED):
    return fx_to_lir(make_fx(fn)(*args), "g", registered)


def test_names_types_and_attributes_follow_the_schema():
    def layer_norm(x, w, b):
        return torch.ops.aten.native_layer_norm(x, [4], w, b, 1e-5)[0] * 2.0

    lir = convert(layer_norm, torch.randn(3, 4), torch.randn(4), torch.randn(4))
    assert "graph @g(%x_1: f32[3,4], %w_1: f32[4], %b_1: f32[4]) -> (f32[3,4])" in lir.text
    assert (
        "= aten.native_layer_norm(%x_1, %w_1, %b_1) {eps=1e-05, normalized_shape=[4]}"
        " : (f32[3,4], f32[3,1], f32[3,1])" in lir.text
    )
    # A number in a Tensor slot becomes the .Scalar overload's attribute.
    assert "aten.mul.Scalar(%getitem) {other=2.0} : f32[3,4]" in lir.text
    graph = _C.CompiledGraph(lir.text, _C.resolve_pipeline("default", []))
    (out,) = graph.run([torch.ones(3, 4), torch.ones(4), torch.zeros(4)])
    torch.testing.assert_close(out, torch.zeros(3, 4))


def test_absent_optional_tensor_is_a_none_operand():
    def norm(x):
        return torch.ops.aten.native_layer_norm(x, [4], None, None, 1e-5)[0]

    lir = convert(norm, torch.randn(2, 4))
    assert "aten.native_layer_norm(%x_1, none, none)" in lir.text


def test_non_contiguous_types_print_their_strides():
    lir = convert(lambda x: x.t() + 1.0, torch.randn(2, 3))
    assert "aten.t(%x_1) : f32[3,2]<strides=[1,3]>" in lir.text


def test_unregistered_op_is_opaque_and_runs_through_the_fallback_table():
    lir = convert(lambda x: torch.cumsum(x, 1), torch.randn(2, 3), registered=set())
    assert "%cumsum = aten.cumsum(%x_1) {dim=1} : f32[2,3]" in lir.text
    assert lir.fallbacks["cumsum"].target is torch.ops.aten.cumsum.default


def test_unsupported_dtype_is_a_conversion_error():
    with pytest.raises(ConversionError, match="complex64"):
        convert(lambda x: x * 2, torch.randn(2, dtype=torch.complex64))


def test_symbolic_modulo_is_spelled_as_lir_reads_it():
    def pad_to_eight(x):
        return torch.nn.functional.pad(x, (0, (-x.shape[0]) % 8)) * 2

    lir = fx_to_lir(
        make_fx(pad_to_eight, tracing_mode="symbolic")(torch.randn(37)), "g", REGISTERED
    )
    assert "Mod(" not in lir.text and "%(8)" in lir.text
    graph = _C.CompiledGraph(lir.text, _C.resolve_pipeline("default", []))
    (out,) = graph.run([torch.ones(37)])
    assert out.shape == (40,) and out[:37].eq(2).all() and out[37:].eq(0).all()


def test_ceiling_division_becomes_a_floor_division():
    import sympy
    from torch.utils._sympy.functions import CeilToInt, IntTrueDiv

    from loupe.fx_to_lir import _lir_expression, _without_ceiling_division

    s = sympy.Symbol("s0", integer=True, positive=True)
    # CUDA attention pads its log-sum-exp to a multiple of 32 this way.
    text = _lir_expression(_without_ceiling_division(32 * CeilToInt(IntTrueDiv(s, 32))))
    assert text == "32*(((s0+31)//32))"


def test_int_results_are_left_to_their_uses():
    # cuDNN attention (what torch picks for bf16 on an H100) returns max_q and max_k as ints
    # beside its tensors; traced here with fake CUDA tensors, as Dynamo hands the graph over.
    def attention(q):
        out = torch.ops.aten._scaled_dot_product_cudnn_attention(q, q, q, None, True, 0.0, True)
        return out[0], out[4]

    with torch._subclasses.fake_tensor.FakeTensorMode():
        q = torch.empty(2, 4, 16, 64, dtype=torch.bfloat16, device="cuda")
        gm = make_fx(attention)(q)
    lir = fx_to_lir(gm, "g", REGISTERED)
    line = next(t for t in lir.text.splitlines() if "_scaled_dot_product_cudnn_attention" in t)
    results = line.split(" = ")[0].split(", ")
    assert len(results) == 7 and "%getitem_4" not in results, line  # max_q, max_k left out
    assert "%getitem_5" not in results and "%getitem_6" in results, line
    assert lir.outputs == [0, 16]  # the output, and max_q (the sequence length) as a constant


@pytest.mark.parametrize("dropout", [0.25, 0.0])
def test_efficient_attention_dropout_on_the_gpu_is_refused_for_its_seed(dropout):
    # Efficient attention's dropout seed and offset are CPU tensors outside a CUDA-graph capture
    # (its backward reads them on the host), device tensors inside one; the traced graph says
    # the device. With dropout the graph is refused (it runs eagerly); without, the seed is
    # never read.
    def efficient(q):
        out = torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, True, dropout)
        return out[0], out[2], out[3]

    with torch._subclasses.fake_tensor.FakeTensorMode():
        q = torch.empty(2, 4, 16, 64, device="cuda")
        gm = make_fx(efficient)(q)
    if dropout:
        with pytest.raises(
            ConversionError,
            match=r"_scaled_dot_product_efficient_attention .*draws dropout \(dropout_p=0.25\)",
        ):
            fx_to_lir(gm, "g", REGISTERED)
    else:
        assert "_scaled_dot_product_efficient_attention" in fx_to_lir(gm, "g", REGISTERED).text
    # On the CPU the op returns no such state: nothing to refuse.
    cpu_gm = make_fx(lambda q: torch.ops.aten.scaled_dot_product_attention(q, q, q, None, dropout))
    assert fx_to_lir(cpu_gm(torch.randn(2, 4, 16, 64)), "g", REGISTERED).outputs == [0]
