"""deltaproof.check on callables with FLA's signature: the torch references
(deltaproof.reference) green on small committed fixtures of every op, dense,
packed and grouped; each broken candidate caught: one that raises (a
CandidateError naming the call), NaN (red), a misshapen output or a gradient
that never reaches its input (an InputError naming the tensor); the inputs
the candidate receives are FLA's (dtypes, scale, h0, cu_seqlens, options)."""

import re

import pytest

torch = pytest.importorskip("torch")

import deltaproof  # noqa: E402
from conftest import KDA, ROOT  # noqa: E402
from deltaproof import reference  # noqa: E402

# small fixtures (T <= 64): every op dense, packed (gen --cu-seqlens) and grouped (HV > H)
SMALL = [
    "kda/t40-c16",
    "gdn/t40-c16",
    "gdn2/t40-c16",
    "kda/t40-c16-b2h3",
    "kda/varlen-hv2-c32",
    "gdn2/varlen-c16",
    "gdn/hv4-t40-c16",
    "kda/hv2-t65-c64-k8",
    "gdn2/t16-c16-mild",
]


def _scale_gradient(x, factor):
    """x in the forward; its gradient times factor in the backward."""

    class ScaleGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, value):
            return value.view_as(value)

        @staticmethod
        def backward(ctx, gradient):
            return gradient * factor

    return ScaleGradient.apply(x)


def fixture_path(name):
    return str(ROOT / "fixtures" / f"{name}.safetensors")


@pytest.mark.parametrize("name", SMALL)
def test_reference_green_at_f32(name):
    fixture = deltaproof.load_fixture(fixture_path(name))
    report = deltaproof.check(reference.for_op(fixture.op), fixture, precision="f32")
    assert report.passed, report.summary()
    gate = report.data["gates"][0]
    assert gate["phase"] == "bwd" and gate["name"] == f"check.{fixture.op}.{fixture.op}"
    assert [t["term"] for t in gate["terms"]] == fixture.output_names("bwd")


def test_reference_forward_only_and_bf16():
    report = deltaproof.check(reference.kda, fixture_path("kda/t40-c16"), "f32", phase="fwd")
    assert report.passed and [t["term"] for t in report.data["gates"][0]["terms"]] == ["o", "ht"]
    report = deltaproof.check(reference.kda, fixture_path("kda/t32-c16-bf16"), "bf16")
    assert report.passed, report.summary()


def test_fixture_by_name_path_or_object():
    by_object = deltaproof.check(
        reference.gdn, deltaproof.load_fixture(fixture_path("gdn/t40-c16"))
    )
    by_path = deltaproof.check(reference.gdn, fixture_path("gdn/t40-c16"))
    by_name = deltaproof.check(reference.gdn, "gdn/t40-c16", op="gdn")
    terms = [r.data["gates"][0]["terms"] for r in (by_object, by_path, by_name)]
    assert terms[0] == terms[1] == terms[2]
    with pytest.raises(
        deltaproof.InputError, match="op 'kda' was asked for, and the fixture is a gdn"
    ):
        deltaproof.check(reference.kda, "gdn/t40-c16", op="kda")


def scaled(factor, term="o"):
    """The reference with o (or the gradient of q) multiplied by factor."""

    def kda_scaled(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        if term == "dq":
            q = _scale_gradient(q, factor)
        o, ht = reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state)
        return (o * factor if term == "o" else o), ht

    return kda_scaled


def test_red_on_a_scaled_candidate():
    report = deltaproof.check(scaled(1.001), KDA)
    assert not report.passed
    assert re.search(r"^FAIL check\.kda\.kda_scaled +worst o rel 1\.00e-03", report.summary(), re.M)
    report = deltaproof.check(scaled(1.03, "dq"), KDA)
    statuses = {t["term"]: t["status"] for t in report.data["gates"][0]["terms"]}
    assert statuses.pop("dq") == "fail" and set(statuses.values()) == {"pass"}


def test_the_inputs_are_flas():
    seen = {}

    def spy(
        q,
        k,
        v,
        g,
        beta,
        scale=None,
        initial_state=None,
        output_final_state=False,
        cu_seqlens=None,
        use_qk_l2norm_in_kernel=True,
        head_first=True,
        cu_seqlens_cpu=None,
    ):
        seen.update(
            q=q,
            g=g,
            beta=beta,
            h0=initial_state,
            scale=scale,
            cu=cu_seqlens,
            cu_cpu=cu_seqlens_cpu,
            l2norm=use_qk_l2norm_in_kernel,
            head_first=head_first,
            final=output_final_state,
        )
        return reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens)

    packed = deltaproof.load_fixture(fixture_path("kda/varlen-hv2-c32"))
    assert deltaproof.check(spy, packed, precision="bf16").data["gates"][0]["terms"]
    assert seen["q"].dtype == torch.bfloat16 and seen["beta"].dtype == torch.bfloat16
    assert seen["g"].dtype == torch.float32 and seen["h0"].dtype == torch.float32
    assert seen["q"].shape == (1, packed.T, packed.H, packed.K) and seen["q"].requires_grad
    assert seen["scale"] == packed.scale and seen["final"] is True
    assert seen["cu"].tolist() == packed.cu_seqlens and seen["cu"].dtype == torch.long
    assert seen["cu_cpu"].tolist() == packed.cu_seqlens
    assert seen["l2norm"] is False and seen["head_first"] is False
    torch.testing.assert_close(seen["h0"].double(), torch.from_numpy(packed.tensors["h0"]))


def test_poison_tail():
    seen = {}

    def reads_one_past_q(
        q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False
    ):
        o, ht = reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state)
        seen["storage"] = q.untyped_storage().nbytes() // q.element_size()
        if seen["storage"] > q.numel():  # a load past q's end, as a kernel without a mask makes
            o = o + 0 * torch.as_strided(q, (q.numel() + 1,), (1,))[-1]
        return o, ht

    assert deltaproof.check(reads_one_past_q, KDA, phase="fwd").passed
    assert seen["storage"] == 1 * 40 * 2 * 8
    report = deltaproof.check(reads_one_past_q, KDA, phase="fwd", poison_tail=True)
    assert seen["storage"] == 1 * 40 * 2 * 8 + deltaproof.candidate.POISON_PAD
    assert not report.passed and report.data["gates"][0]["terms"][0]["non_finite"] > 0


def test_nan_output_is_red():
    def with_nan(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        o, ht = reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state)
        mask = torch.zeros_like(o)
        mask[0, 5, 1, 2] = float("nan")
        return o + mask, ht

    report = deltaproof.check(with_nan, KDA, phase="fwd")
    assert not report.passed
    o = report.data["gates"][0]["terms"][0]
    assert o["term"] == "o" and o["status"] == "fail" and o["non_finite"] == 1


def test_a_candidate_that_raises():
    def kda_that_raises(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        raise ValueError("K must be a multiple of 16")

    with pytest.raises(deltaproof.CandidateError) as caught:
        deltaproof.check(kda_that_raises, KDA)
    message = str(caught.value)
    assert re.match(
        r"\S*kda_that_raises\(q, k, v, g, beta, scale=0\.35\d*, initial_state=h0, "
        r"output_final_state=True\) raised ValueError: K must be a multiple of 16$",
        message,
    ), message
    assert caught.value.stage == "forward" and isinstance(caught.value.__cause__, ValueError)


def test_a_backward_that_raises():
    class Broken(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, gradient):
            raise RuntimeError("illegal memory access")

    def kda_bad_backward(
        q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False
    ):
        return reference.kda(
            Broken.apply(q), k, v, g, beta, scale, initial_state, output_final_state
        )

    with pytest.raises(
        deltaproof.CandidateError,
        match=r"^the backward of \S*kda_bad_backward\(q, k, "
        r".*\) \(torch.autograd.backward of o and final_state with the fixture's do "
        r"and dht\) raised RuntimeError: illegal memory access$",
    ) as caught:
        deltaproof.check(kda_bad_backward, KDA)
    assert caught.value.stage == "backward"
    assert deltaproof.check(kda_bad_backward, KDA, phase="fwd").passed  # the forward is fine


def returning(make):
    """A kda candidate returning make(o, ht) instead of (o, ht)."""

    def candidate(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        return make(*reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state))

    return candidate


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda o, ht: (o.transpose(1, 2), ht),
            r"returned o of shape \(1, 2, 40, 8\); a kda fixture's o is \[B,T,HV,V\] = "
            r"\(1, 40, 2, 8\)",
        ),
        (
            lambda o, ht: (o, ht[..., :4]),
            r"returned final_state \(ht\) of shape \(1, 2, 8, 4\); a kda fixture's ht is "
            r"\[N,HV,K,V\] = \(1, 2, 8, 8\)",
        ),
        (
            lambda o, ht: (o, None),
            r"returned no final_state \(ht\) \(None\), although " r"output_final_state=True",
        ),
        (lambda o, ht: o, r"returned a Tensor; a candidate returns \(o, final_state\)"),
        (lambda o, ht: (o.detach().numpy(), ht), r"returned o as a ndarray; a tensor is expected"),
    ],
)
def test_a_misshapen_output(make, message):
    with pytest.raises(
        deltaproof.InputError, match=r"candidate\(q, k, v, g, beta, .*\) " + message
    ):
        deltaproof.check(returning(make), KDA)


def test_a_gradient_that_never_arrives():
    def detaches_g(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        return reference.kda(q, k, v, g.detach(), beta, scale, initial_state, output_final_state)

    with pytest.raises(deltaproof.InputError, match=r"no gradient reached g \(dg missing\)"):
        deltaproof.check(detaches_g, KDA)
    assert deltaproof.check(detaches_g, KDA, phase="fwd").passed

    def forward_only(*args, **kwargs):
        with torch.no_grad():
            return reference.kda(*args, **kwargs)

    with pytest.raises(deltaproof.InputError, match="without a graph .* pass phase='fwd'"):
        deltaproof.check(forward_only, KDA)


def test_packed_fixture_needs_cu_seqlens():
    def dense_only(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        return reference.kda(q, k, v, g, beta, scale, initial_state, output_final_state)

    with pytest.raises(
        deltaproof.InputError,
        match=r"dense_only takes no cu_seqlens, and the " r"fixture is packed \(cu_seqlens \[0, ",
    ):
        deltaproof.check(dense_only, fixture_path("kda/varlen-hv2-c32"))


def test_bad_options():
    with pytest.raises(deltaproof.InputError, match="unknown precision class 'fp8'"):
        deltaproof.check(reference.kda, KDA, precision="fp8")
    with pytest.raises(deltaproof.InputError, match="unknown phase 'both'"):
        deltaproof.check(reference.kda, KDA, phase="both")
    with pytest.raises(deltaproof.InputError, match="fixture is a int without 'op'"):
        deltaproof.check(reference.kda, 3)


def test_fixture_names_resolve_in_the_fixtures_folder(monkeypatch, tmp_path):
    with pytest.raises(deltaproof.InputError, match=r"kda/no-such\.safetensors"):
        deltaproof.check(reference.kda, "kda/no-such")
    monkeypatch.setenv("DELTAPROOF_FIXTURES", str(tmp_path))
    with pytest.raises(deltaproof.InputError, match=f"{tmp_path} holds no manifest.json"):
        deltaproof.check(reference.kda, "kda/t40-c16")
    monkeypatch.setenv("DELTAPROOF_FIXTURES", str(ROOT / "fixtures"))
    monkeypatch.chdir(tmp_path)
    assert deltaproof.check(reference.kda, "kda/t40-c16", phase="fwd").passed
    monkeypatch.delenv("DELTAPROOF_FIXTURES")
    with pytest.raises(deltaproof.InputError, match="no fixtures/manifest.json in .* or above it"):
        deltaproof.check(reference.kda, "kda/t40-c16")


def test_candidate_and_reference_need_no_compiled_core(tmp_path):
    """As on the GPU machine: python/ of the repository, no _core built there."""
    import subprocess
    import sys

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import deltaproof, deltaproof.candidate, deltaproof.reference;"
        "assert 'deltaproof._core' not in sys.modules;"
        "print(deltaproof.candidate.FLA_FUNCTIONS['kda'], deltaproof.reference.kda.__name__);"
        "deltaproof.check_outputs"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "python")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "('fla.ops.kda', 'chunk_kda') kda" in done.stdout, done.stderr
    # what needs the core says so
    assert "deltaproof.check_outputs needs the compiled core deltaproof._core" in done.stderr
