import os
os.environ.update(TRITON_F32_DEFAULT="ieee", FLA_TRIL_PRECISION="ieee",  # class f32: no TF32 dots
                  FLA_DISABLE_BACKEND_DISPATCH="1")  # FLA's own Triton kernels, no other backend
import deltaproof
from fla.ops.kda import chunk_kda

report = deltaproof.check(chunk_kda, fixture="kda/t64-c64", precision="f32")
print(report.summary())            # each term's rel, bar, worst index; the red chunks
report.save("chunk_kda.json")      # deltaproof report show|html chunk_kda.json
assert report.passed

proof = deltaproof.falsify(chunk_kda, fixture="kda/t64-c64", precision="f32")
print(proof.summary())             # each fault injected into chunk_kda turned the check red
assert proof.passed
